//! S7: the ordered write path into a child's stdin. When nothing is queued, the calling
//! (JS) thread writes the frame itself with one non-blocking `write` — no hand-off to
//! another thread for the common case of a small request on an idle pipe. Anything that
//! does not fit at once, and everything behind it, goes through the writer task, which
//! waits for the pipe (backpressure) without blocking the caller.
//!
//! While JS runs the continuations of a delivery, the binding holds the requests they
//! make and writes them together when those continuations are done: one write and one
//! wake-up of the server per few dozen requests instead of one each.
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::CoreError;
use crate::session::{Ack, FrameSink, Outgoing, Sent, Session};
use crate::sys::pipe::WriteEnd;

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
  stdin: WriteEnd,
  state: Mutex<Inner>,
  queue: mpsc::UnboundedSender<Chunk>,
}

struct Inner {
  state: State,
  /// Requests held while JS runs the continuations of a delivery, written together.
  held: Option<Held>,
}

#[derive(Default)]
struct Held {
  bytes: Vec<u8>,
  /// Where each held request ends in `bytes`, with its ack.
  frames: Vec<(usize, Ack)>,
}

/// Held requests are written once this many are held: enough to cut the writes (and the
/// server's wake-ups) per burst by an order of magnitude, few enough that the server starts
/// on the first ones while JS still issues the rest. Holding a whole burst makes the two
/// processes take turns, which measured slower than not holding at all.
const HOLD_FRAMES: usize = 24;
/// A request that would take the held bytes past this goes out at once, uncopied.
const HOLD_BYTES: usize = 64 * 1024;

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
      stdin: WriteEnd::of(&stdin),
      state: Mutex::new(Inner {
        state: State::Idle,
        held: None,
      }),
      queue,
    });
    let task = WriterTask {
      stdin,
      chunks,
      writer: writer.clone(),
    };
    (writer, task)
  }

  fn state(&self) -> MutexGuard<'_, Inner> {
    self.state.lock().unwrap_or_else(|p| p.into_inner())
  }

  /// On an idle pipe, writes `bytes` at once and returns how many went; a partial write
  /// (EAGAIN, a full pipe, an error) leaves the rest to the writer task, which reports any
  /// error against its frames. On a busy pipe nothing is written.
  fn write_now(&self, state: &mut State, bytes: &[u8]) -> usize {
    if *state != State::Idle {
      return 0;
    }
    // The descriptor stays open while the state is not Closed, and the state cannot change
    // while the caller holds its lock.
    let written = self.stdin.write(bytes);
    if written != bytes.len() {
      *state = State::Busy;
    }
    written
  }

  /// Writes what is held, directly; what does not fit goes to the writer task.
  fn write_held(&self, inner: &mut Inner) {
    let Some(held) = inner.held.as_mut() else {
      return;
    };
    if held.frames.is_empty() {
      return;
    }
    let bytes = std::mem::take(&mut held.bytes);
    let frames = std::mem::take(&mut held.frames);
    if inner.state == State::Closed {
      // The session disconnects once its writer is gone, which rejects these requests.
      return;
    }
    let written = self.write_now(&mut inner.state, &bytes);
    if written == bytes.len() {
      held.bytes = bytes;
      held.bytes.clear();
      return;
    }
    let mut start = 0;
    for (end, ack) in frames {
      let from = start.max(written);
      start = end;
      if from >= end {
        continue;
      }
      let chunk = Chunk {
        bytes: bytes[from..end].to_vec(),
        ack,
        method: None,
      };
      if self.queue.send(chunk).is_err() {
        // The runtime dropped the writer task: the session is being torn down.
        inner.state = State::Closed;
        return;
      }
    }
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
  fn hold(&self) -> bool {
    let mut inner = self.state();
    if inner.state == State::Closed {
      return false;
    }
    inner.held.get_or_insert_with(Held::default);
    true
  }

  fn release(&self) {
    let mut inner = self.state();
    self.write_held(&mut inner);
    inner.held = None;
  }

  fn send(&self, out: Outgoing) -> Result<Sent, Outgoing> {
    let mut inner = self.state();
    if inner.state == State::Closed {
      return Err(out);
    }
    // S7: only requests on an idle pipe are held; anything else first writes what is held.
    let idle = inner.state == State::Idle;
    if let (Some(held), Ack::Request(_), true) = (inner.held.as_mut(), out.ack, idle) {
      if held.bytes.len() + out.frame.len() < HOLD_BYTES {
        held.bytes.extend_from_slice(out.frame.as_bytes());
        held.bytes.push(b'\n');
        held.frames.push((held.bytes.len(), out.ack));
        if held.frames.len() >= HOLD_FRAMES {
          self.write_held(&mut inner);
        }
        return Ok(Sent::Queued);
      }
    }
    self.write_held(&mut inner);
    let state = &mut inner.state;
    let mut bytes = out.frame.into_bytes();
    bytes.push(b'\n');
    let written = self.write_now(state, &bytes);
    if written == bytes.len() {
      return Ok(Sent::Written);
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
          route: None,
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
    let mut inner = writer.state();
    if inner.state == State::Busy && chunks.is_empty() {
      inner.state = State::Idle;
    }
  }
  // S6: the descriptor closes when `stdin` drops below; no direct write may follow.
  writer.state().state = State::Closed;
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

#[cfg(test)]
mod tests {
  use std::process::Stdio;
  use std::time::Duration;

  use tokio::io::{AsyncReadExt, BufReader};
  use tokio::process::{Child, ChildStdout, Command};
  use tokio::runtime::Handle;

  use super::*;
  use crate::session::tests::Recorder;

  fn outgoing(frame: String, ack: Ack) -> Outgoing {
    Outgoing {
      frame,
      ack,
      cancel: None,
      session_timed: false,
      subscription: false,
      timeout: None,
      route: None,
    }
  }

  fn request(id: u64) -> Outgoing {
    outgoing(format!(r#"{{"id":{id}}}"#), Ack::Request(id))
  }

  /// A writer into `sh -c script`'s stdin, its task running for a live session.
  struct Rig {
    child: Child,
    stdout: BufReader<ChildStdout>,
    writer: Arc<PipeWriter>,
    session: Arc<Session>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
  }

  fn rig(script: &str) -> Rig {
    let mut child = Command::new("sh")
      .args(["-c", script])
      .stdin(Stdio::piped())
      .stdout(Stdio::piped())
      .kill_on_drop(true)
      .spawn()
      .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (writer, task) = PipeWriter::new(stdin);
    let events = Arc::new(Recorder::default());
    let session = Session::new(writer.clone(), events, None, Handle::current(), false);
    let stop = CancellationToken::new();
    let task = task.spawn(
      Arc::downgrade(&session),
      stop.clone(),
      CancellationToken::new(),
      &Handle::current(),
    );
    Rig {
      child,
      stdout,
      writer,
      session,
      stop,
      task,
    }
  }

  impl Rig {
    async fn read(&mut self, len: usize) -> String {
      let mut buf = vec![0; len];
      let read = self.stdout.read_exact(&mut buf);
      tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .unwrap()
        .unwrap();
      String::from_utf8(buf).unwrap()
    }

    async fn nothing_to_read(&mut self) -> bool {
      let mut byte = [0u8; 1];
      let read = self.stdout.read(&mut byte);
      tokio::time::timeout(Duration::from_millis(50), read)
        .await
        .is_err()
    }
  }

  fn ids(range: std::ops::Range<u64>) -> String {
    range.map(|id| format!("{{\"id\":{id}}}\n")).collect()
  }

  #[tokio::test]
  async fn held_requests_wait_for_release_then_go_out_in_order() {
    let mut rig = rig("cat");
    assert!(rig.writer.hold());
    for id in 1..4 {
      assert_eq!(rig.writer.send(request(id)).ok(), Some(Sent::Queued));
    }
    assert!(rig.nothing_to_read().await);
    rig.writer.release();
    let expected = ids(1..4);
    assert_eq!(rig.read(expected.len()).await, expected);
    // Released: the next request is written at once again.
    assert_eq!(rig.writer.send(request(4)).ok(), Some(Sent::Written));
    assert_eq!(rig.read(9).await, "{\"id\":4}\n");
  }

  #[tokio::test]
  async fn s7_a_notification_or_response_writes_the_held_requests_before_itself() {
    let mut rig = rig("cat");
    assert!(rig.writer.hold());
    rig.writer.send(request(1)).ok();
    rig.writer.send(request(2)).ok();
    let cancel = r#"{"method":"notifications/cancelled"}"#.to_string();
    assert_eq!(
      rig
        .writer
        .send(outgoing(cancel.clone(), Ack::Notify(9)))
        .ok(),
      Some(Sent::Written)
    );
    rig.writer.send(request(3)).ok();
    rig
      .writer
      .send(outgoing("{\"result\":{}}".into(), Ack::None))
      .ok();
    let expected = format!("{}{cancel}\n{}{{\"result\":{{}}}}\n", ids(1..3), ids(3..4));
    assert_eq!(rig.read(expected.len()).await, expected);
    rig.writer.release();
    assert!(rig.nothing_to_read().await);
  }

  #[tokio::test]
  async fn held_requests_are_written_once_enough_are_held() {
    let mut rig = rig("cat");
    assert!(rig.writer.hold());
    let last = HOLD_FRAMES as u64;
    for id in 1..=last + 1 {
      rig.writer.send(request(id)).ok();
    }
    let expected = ids(1..last + 1);
    assert_eq!(rig.read(expected.len()).await, expected);
    assert!(rig.nothing_to_read().await);
    rig.writer.release();
    let expected = ids(last + 1..last + 2);
    assert_eq!(rig.read(expected.len()).await, expected);
  }

  #[tokio::test]
  async fn a_large_request_is_not_held_and_keeps_its_place() {
    let mut rig = rig("cat");
    assert!(rig.writer.hold());
    rig.writer.send(request(1)).ok();
    let large = format!("{{\"id\":2,\"pad\":\"{}\"}}", "x".repeat(HOLD_BYTES));
    rig
      .writer
      .send(outgoing(large.clone(), Ack::Request(2)))
      .ok();
    let expected = format!("{}{large}\n", ids(1..2));
    assert_eq!(rig.read(expected.len()).await, expected);
    rig.writer.release();
  }

  #[tokio::test]
  async fn s7_held_requests_beyond_a_full_pipe_go_through_the_writer_task_in_order() {
    // The reader starts late, so the pipe fills and writes are partial.
    let mut rig = rig("sleep 0.3; cat");
    let pad = "y".repeat(2000);
    let frame = |id: u64| format!("{{\"id\":{id},\"pad\":\"{pad}\"}}");
    let mut expected = String::new();
    for round in 0..20u64 {
      assert!(rig.writer.hold());
      for i in 0..30 {
        let id = round * 30 + i;
        expected.push_str(&frame(id));
        expected.push('\n');
        rig.writer.send(outgoing(frame(id), Ack::Request(id))).ok();
      }
      rig.writer.release();
    }
    assert!(expected.len() > 1024 * 1024);
    assert_eq!(rig.read(expected.len()).await, expected);
    assert!(rig.nothing_to_read().await);
  }

  #[tokio::test]
  async fn held_requests_are_dropped_not_written_once_the_writer_is_closed() {
    let mut rig = rig("cat");
    assert!(rig.writer.hold());
    rig.writer.send(request(1)).ok();
    rig.stop.cancel();
    (&mut rig.task).await.unwrap();
    rig.writer.release();
    assert!(rig.writer.send(request(2)).is_err());
    let mut rest = String::new();
    let read = rig.stdout.read_to_string(&mut rest);
    tokio::time::timeout(Duration::from_secs(10), read)
      .await
      .unwrap()
      .unwrap();
    assert_eq!(rest, "");
    drop(rig.session);
    rig.child.wait().await.unwrap();
  }
}
