//! The stdio transport's pipes: the child's stdout read without blocking (by the runtime's
//! reactor, or by the host's loop watching its descriptor) and its stdin written straight
//! from the calling thread while the pipe has room.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe::Receiver;
use tokio::process::{ChildStdin, ChildStdout};

/// What a host's loop watches for readability: the descriptor's number.
pub type RawPipe = RawFd;

/// How much a pipe may hold: Linux's default limit for unprivileged users, so a large
/// message crosses it in 16 times fewer writer/reader wake-ups than with 64 KiB.
pub const PIPE_BYTES: usize = 1024 * 1024;

/// Lets the pipe behind `fd` hold `PIPE_BYTES`. Best effort: a refusal (the user's pipe
/// quota, or a system without the call) leaves the pipe as it was.
fn grow(fd: RawFd) {
  #[cfg(target_os = "linux")]
  // SAFETY: fcntl with F_SETPIPE_SZ takes an int and touches no memory of ours; on a
  // descriptor that is not a pipe it fails harmlessly.
  unsafe {
    libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES as libc::c_int);
  }
  #[cfg(not(target_os = "linux"))]
  let _ = fd;
}

/// Puts `fd` in non-blocking mode.
fn set_nonblocking(fd: RawFd) -> io::Result<()> {
  // SAFETY: fcntl on a descriptor the caller owns; no memory is involved.
  let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
  // SAFETY: as above.
  if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(())
}

/// A second descriptor for what `fd` refers to (close-on-exec).
fn duplicate(fd: RawFd) -> io::Result<OwnedFd> {
  // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor and touches no memory.
  let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
  if copy < 0 {
    return Err(io::Error::last_os_error());
  }
  // SAFETY: `copy` was just created and nothing else owns it.
  Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// The child's stdout, non-blocking, read by whoever is told it is readable.
pub struct ReadEnd(OwnedFd);

impl ReadEnd {
  /// Takes the child's stdout out of tokio's hands, grown and non-blocking.
  pub fn from_stdout(stdout: ChildStdout) -> io::Result<Self> {
    let fd = stdout.into_owned_fd()?;
    set_nonblocking(fd.as_raw_fd())?;
    grow(fd.as_raw_fd());
    Ok(ReadEnd(fd))
  }

  /// The descriptor a host's loop watches.
  pub fn raw(&self) -> Option<RawPipe> {
    Some(self.0.as_raw_fd())
  }

  /// One read of at most `size` bytes onto the end of `buffer`: the bytes read, 0 at end
  /// of input, `WouldBlock` when the pipe is empty.
  pub fn read_into(&self, buffer: &mut BytesMut, size: usize) -> io::Result<usize> {
    buffer.reserve(size);
    let spare = buffer.spare_capacity_mut();
    let size = size.min(spare.len());
    // SAFETY: spare is valid for writes of at least `size` bytes; read(2) writes at most
    // that, into a descriptor this value owns.
    let n = unsafe { libc::read(self.0.as_raw_fd(), spare.as_mut_ptr().cast(), size) };
    if n < 0 {
      return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: read(2) initialised the first n bytes of the spare capacity.
    unsafe { buffer.set_len(buffer.len() + n) };
    Ok(n)
  }

  /// Hands the pipe to the runtime's reactor.
  pub fn into_async(self) -> io::Result<AsyncReadEnd> {
    Receiver::from_owned_fd(self.0).map(AsyncReadEnd)
  }
}

/// Resolves once the pipe behind `raw` has something to read (or is closed), without
/// reading it. The caller keeps the pipe open until then.
pub async fn readable(raw: RawPipe) -> io::Result<()> {
  Receiver::from_owned_fd(duplicate(raw)?)?.readable().await
}

/// The child's stdout read by the runtime's reactor.
pub struct AsyncReadEnd(Receiver);

impl AsyncReadEnd {
  /// Reads what the pipe holds onto the end of `buffer` (room for a full pipe is made).
  pub async fn read_buf(&mut self, buffer: &mut BytesMut) -> io::Result<usize> {
    buffer.reserve(PIPE_BYTES);
    self.0.read_buf(buffer).await
  }

  /// Takes the pipe back from the reactor, still non-blocking.
  pub fn into_read_end(self) -> io::Result<ReadEnd> {
    self.0.into_nonblocking_fd().map(ReadEnd)
  }
}

/// Writes to the child's stdin without owning it: tokio's `ChildStdin` keeps it open.
#[derive(Clone, Copy)]
pub struct WriteEnd(RawFd);

impl WriteEnd {
  /// The stdin's writing end, grown.
  pub fn of(stdin: &ChildStdin) -> Self {
    let fd = stdin.as_raw_fd();
    grow(fd);
    WriteEnd(fd)
  }

  /// One write: the bytes written (0 when the pipe is full or the write failed).
  pub fn write(&self, bytes: &[u8]) -> usize {
    // SAFETY: the buffer is valid for its length; write(2) on a closed descriptor only
    // fails. The caller keeps the `ChildStdin` alive for the call.
    let written = unsafe { libc::write(self.0, bytes.as_ptr().cast(), bytes.len()) };
    written.max(0) as usize
  }
}
