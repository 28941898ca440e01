//! S7: the ordered write path into a child's stdin. When nothing is queued, the calling
//! (JS) thread writes the frame itself with one non-blocking `write` — no hand-off to
//! another thread for the common case of a small request on an idle pipe. Anything that
//! does not fit at once, and everything behind it, goes through the writer task, which
//! waits for the pipe (backpressure) without blocking the caller.
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::CoreError;
use crate::session::{Ack, FrameSink, Outgoing, Sent, Session};

/// Frames queued together are written with one syscall, up to this many bytes.
const WRITE_BATCH_BYTES: usize = 1024 * 1024;

#[derive(Clone, Copy, PartialEq)]
enum State {
  /// Nothing queued: the next frame may be written directly.
  Idle,
  /// The writer task has bytes to write; new frames queue behind them.
  Busy,
  /// The writer is gone and the descriptor closed (or about to be).
  Closed,
}

struct Chunk {
  bytes: Vec<u8>,
  ack: Ack,
  /// A13: a notification's method, for the error if it cannot be written.
  method: Option<String>,
}

pub struct PipeWriter {
  fd: RawFd,
  state: Mutex<State>,
  queue: mpsc::UnboundedSender<Chunk>,
}

/// The writer task before it runs: it needs the session, which needs the writer first.
pub struct WriterTask {
  stdin: ChildStdin,
  chunks: mpsc::UnboundedReceiver<Chunk>,
  writer: Arc<PipeWriter>,
}

impl PipeWriter {
  pub fn new(stdin: ChildStdin) -> (Arc<PipeWriter>, WriterTask) {
    let (queue, chunks) = mpsc::unbounded_channel();
    let writer = Arc::new(PipeWriter {
      fd: stdin.as_raw_fd(),
      state: Mutex::new(State::Idle),
      queue,
    });
    let task = WriterTask {
      stdin,
      chunks,
      writer: writer.clone(),
    };
    (writer, task)
  }

  fn state(&self) -> MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(|p| p.into_inner())
  }
}

impl WriterTask {
  /// `broken` is cancelled when a notification cannot be written (A13: the transport
  /// closes).
  pub fn spawn(
    self,
    session: Weak<Session>,
    stop: CancellationToken,
    broken: CancellationToken,
    runtime: &tokio::runtime::Handle,
  ) -> tokio::task::JoinHandle<()> {
    runtime.spawn(write_chunks(
      self.stdin,
      self.chunks,
      self.writer,
      session,
      Stops { stop, broken },
    ))
  }
}

impl FrameSink for PipeWriter {
  fn send(&self, out: Outgoing) -> Result<Sent, Outgoing> {
    let mut state = self.state();
    if *state == State::Closed {
      return Err(out);
    }
    let mut bytes = out.frame.into_bytes();
    bytes.push(b'\n');
    let mut written = 0;
    if *state == State::Idle {
      // The descriptor stays open while the state is not Closed, and the state cannot
      // change while we hold its lock.
      let n = crate::sys::process::write(self.fd, &bytes);
      if n as usize == bytes.len() {
        return Ok(Sent::Written);
      }
      // EAGAIN (pipe full), a partial write or an error: the writer task takes it from here
      // and reports any error against this frame.
      written = n.max(0) as usize;
      *state = State::Busy;
    }
    let method = match out.ack {
      Ack::Notify(_) => crate::protocol::message::method_of(&bytes),
      _ => None,
    };
    bytes.drain(..written);
    let chunk = Chunk {
      bytes,
      ack: out.ack,
      method,
    };
    match self.queue.send(chunk) {
      Ok(()) => Ok(Sent::Queued),
      Err(_) => {
        *state = State::Closed;
        Err(Outgoing {
          frame: String::new(),
          ack: out.ack,
          cancel: out.cancel,
          session_timed: out.session_timed,
          subscription: out.subscription,
          timeout: out.timeout,
        })
      }
    }
  }
}

struct Stops {
  stop: CancellationToken,
  broken: CancellationToken,
}

/// Writes queued chunks in order, several per syscall; pipe backpressure suspends this
/// task, never the JS thread. Marks the writer idle again once the queue is drained.
async fn write_chunks(
  mut stdin: ChildStdin,
  mut chunks: mpsc::UnboundedReceiver<Chunk>,
  writer: Arc<PipeWriter>,
  session: Weak<Session>,
  stops: Stops,
) {
  let Stops { stop, broken } = stops;
  let mut batch: Vec<Chunk> = Vec::new();
  let mut bytes: Vec<u8> = Vec::new();
  loop {
    let first = tokio::select! {
      biased;
      _ = stop.cancelled() => break,
      next = chunks.recv() => match next {
        Some(first) => first,
        None => break,
      },
    };
    batch.push(first);
    let mut size = batch[0].bytes.len();
    while size < WRITE_BATCH_BYTES {
      match chunks.try_recv() {
        Ok(next) => {
          size += next.bytes.len();
          batch.push(next);
        }
        Err(_) => break,
      }
    }
    bytes.clear();
    for chunk in &batch {
      bytes.extend_from_slice(&chunk.bytes);
    }
    let written = tokio::select! {
      biased;
      _ = stop.cancelled() => break,
      written = stdin.write_all(&bytes) => written,
    };
    let Some(session) = session.upgrade() else {
      break;
    };
    let mut notify_lost = false;
    for chunk in batch.drain(..) {
      match (&written, chunk.ack) {
        (Ok(()), ack) => session.write_done(ack),
        (Err(_), Ack::Notify(_)) => {
          let method = chunk.method.unwrap_or_default();
          session.write_failed(chunk.ack, CoreError::NotifyUnwritable(method));
          notify_lost = true;
        }
        (Err(e), ack) => session.write_failed(ack, CoreError::Write(e.to_string())),
      }
    }
    if notify_lost {
      // A13/S4: a server that cannot be told things any more is gone.
      session.disconnect(CoreError::TransportClosed { stderr: None });
      broken.cancel();
    }
    if bytes.capacity() > 4 * WRITE_BATCH_BYTES {
      bytes = Vec::new();
    }
    let mut state = writer.state();
    if *state == State::Busy && chunks.is_empty() {
      *state = State::Idle;
    }
  }
  // S6: the descriptor closes when `stdin` drops below; no direct write may follow.
  *writer.state() = State::Closed;
  drop(stdin);
  // What was never written still owes its caller an answer: a notify has no pending entry
  // the session's disconnect would reject, so without this it would never settle.
  chunks.close();
  if let Some(session) = session.upgrade() {
    let unwritten = batch
      .drain(..)
      .chain(std::iter::from_fn(|| chunks.try_recv().ok()));
    for chunk in unwritten {
      session.write_failed(chunk.ack, CoreError::TransportClosed { stderr: None });
    }
  }
}
