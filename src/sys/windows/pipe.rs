//! The stdio transport's pipes on Windows. An anonymous pipe can be neither watched by the
//! host's loop (libuv polls only sockets there) nor written without blocking, so stdout is
//! always read by the runtime and stdin always written by the writer task.
use std::io;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};

/// What a host's loop would watch; Windows pipes offer nothing to watch.
pub type RawPipe = i32;

/// How much one read takes at most: the size of the pipes Unix grows to, so a large
/// message costs as few reads here.
pub const PIPE_BYTES: usize = 1024 * 1024;

/// The child's stdout.
pub struct ReadEnd(ChildStdout);

fn unsupported() -> io::Error {
  io::Error::new(
    io::ErrorKind::Unsupported,
    "a Windows pipe cannot be polled",
  )
}

impl ReadEnd {
  pub fn from_stdout(stdout: ChildStdout) -> io::Result<Self> {
    Ok(ReadEnd(stdout))
  }

  /// Nothing a host's loop could watch.
  pub fn raw(&self) -> Option<RawPipe> {
    None
  }

  /// Never called: without `raw`, no host loop reads this pipe.
  pub fn read_into(&self, _buffer: &mut BytesMut, _size: usize) -> io::Result<usize> {
    Err(unsupported())
  }

  pub fn into_async(self) -> io::Result<AsyncReadEnd> {
    Ok(AsyncReadEnd(self.0))
  }
}

/// Never called: without `ReadEnd::raw`, no host loop waits for this pipe.
pub async fn readable(_raw: RawPipe) -> io::Result<()> {
  Err(unsupported())
}

/// The child's stdout read by the runtime.
pub struct AsyncReadEnd(ChildStdout);

impl AsyncReadEnd {
  /// Reads what the pipe holds onto the end of `buffer`.
  pub async fn read_buf(&mut self, buffer: &mut BytesMut) -> io::Result<usize> {
    buffer.reserve(PIPE_BYTES);
    self.0.read_buf(buffer).await
  }

  pub fn into_read_end(self) -> io::Result<ReadEnd> {
    Ok(ReadEnd(self.0))
  }
}

/// The child's stdin, written by the writer task only.
#[derive(Clone, Copy)]
pub struct WriteEnd;

impl WriteEnd {
  pub fn of(_stdin: &ChildStdin) -> Self {
    WriteEnd
  }

  /// Nothing is written from the calling thread: the frame goes to the writer task.
  pub fn write(&self, _bytes: &[u8]) -> usize {
    0
  }
}
