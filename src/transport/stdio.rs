//! S1–S8: an MCP server as a child process speaking newline-delimited JSON-RPC.
//!
//! Four tasks per server: the writer (ordered frames to stdin), the reader (stdout frames
//! into the session), the stderr drain, and the supervisor, which owns the close sequence so
//! that it runs exactly once whichever side ends first.
use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::pipe_writer::PipeWriter;
use super::process_group::{self, AFTER_KILL, KILL_GRACE};
use super::stderr_tail::{StderrTail, Utf8Chunks};
use crate::error::{errno_name, CoreError};
use crate::protocol::framing::{Frame, LineFramer};
use crate::session::{Event, EventSink, Session};

pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Pipe buffer size asked for (Linux caps unprivileged pipes at 1 MiB by default).
const PIPE_BYTES: libc::c_int = 1024 * 1024;
/// S5: how long a server that closed stdout gets to finish its last stderr words.
const STDERR_SETTLE: Duration = Duration::from_millis(200);

#[derive(Debug, Clone)]
pub struct StdioConfig {
  pub command: String,
  pub args: Vec<String>,
  /// The complete environment of the child, or `None` to inherit the host's.
  pub env: Option<Vec<(OsString, OsString)>>,
  pub cwd: Option<PathBuf>,
  /// Per-request timeout; `None` disables it.
  pub timeout: Option<Duration>,
  pub max_message_bytes: usize,
  /// A7 `requestIdFormat: "string"`.
  pub string_ids: bool,
}

/// Shared between the handle and the I/O tasks.
struct Shared {
  close_requested: CancellationToken,
  want_stderr: AtomicBool,
  stderr_tail: Mutex<StderrTail>,
}

impl Shared {
  fn stderr_text(&self) -> String {
    self
      .stderr_tail
      .lock()
      .map(|tail| tail.text())
      .unwrap_or_default()
  }
}

/// A running stdio server. Dropping it closes it.
pub struct StdioTransport {
  session: Arc<Session>,
  shared: Arc<Shared>,
  pid: u32,
}

impl StdioTransport {
  /// S1/A13: spawns the server in a session (and process group) of its own and starts its
  /// I/O tasks. Must run on a thread that lives as long as the host (the JS thread): the
  /// child's parent-death signal is tied to it.
  ///
  /// # Errors
  /// `Spawn` when the command cannot be started (its `code` is the errno name).
  pub fn spawn(
    config: StdioConfig,
    events: Arc<dyn EventSink>,
    runtime: &Handle,
  ) -> Result<Self, CoreError> {
    let _context = runtime.enter();
    process_group::install_exit_hooks();
    let mut command = Command::new(&config.command);
    command
      .args(&config.args)
      .stdin(Stdio::piped())
      .stdout(Stdio::piped())
      .stderr(Stdio::piped())
      .kill_on_drop(false);
    crate::sys::process::own_session(&mut command);
    if let Some(env) = &config.env {
      command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(cwd) = &config.cwd {
      command.current_dir(cwd);
    }
    crate::sys::process::die_with_parent(&mut command);
    let mut child = command
      .spawn()
      .map_err(|e| spawn_error(&config.command, &e))?;
    let pid = child.id().unwrap_or_default();
    let pgid = pid as i32;
    process_group::register(pgid);
    let (Some(stdin), Some(stdout), Some(stderr)) =
      (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
      // Unreachable with piped stdio; still, never leave the child behind.
      process_group::signal_group(pgid, libc::SIGKILL);
      process_group::unregister(pgid);
      return Err(spawn_error(
        &config.command,
        &io::Error::other("no stdio pipes"),
      ));
    };

    // Larger pipes mean fewer wake-ups per megabyte; the kernel may refuse (best effort).
    for fd in [stdin.as_raw_fd(), stdout.as_raw_fd()] {
      crate::sys::process::set_pipe_size(fd, PIPE_BYTES);
    }
    let (pipe, writer_task) = PipeWriter::new(stdin);
    let session = Session::new(pipe, events.clone(), config.timeout, runtime.clone(), false);
    if config.string_ids {
      session.use_string_ids();
    }
    let shared = Arc::new(Shared {
      close_requested: CancellationToken::new(),
      want_stderr: AtomicBool::new(false),
      stderr_tail: Mutex::new(StderrTail::default()),
    });
    let stop_writing = CancellationToken::new();
    let writer = writer_task.spawn(
      Arc::downgrade(&session),
      stop_writing.clone(),
      shared.close_requested.clone(),
      runtime,
    );
    let reader = runtime.spawn(read_frames(
      stdout,
      config.max_message_bytes,
      session.clone(),
    ));
    let drain = runtime.spawn(drain_stderr(stderr, shared.clone(), events.clone()));
    runtime.spawn(supervise(Supervised {
      session: session.clone(),
      shared: shared.clone(),
      child,
      pgid,
      writer,
      stop_writing,
      reader,
      drain,
    }));
    Ok(StdioTransport {
      session,
      shared,
      pid,
    })
  }

  pub fn session(&self) -> &Arc<Session> {
    &self.session
  }

  pub fn pid(&self) -> u32 {
    self.pid
  }

  /// S5: whether stderr chunks are forwarded as `Event::Stderr`.
  pub fn set_forward_stderr(&self, forward: bool) {
    self.shared.want_stderr.store(forward, Ordering::Release);
  }

  /// S6: disconnects at once (pending requests reject with "Transport closed") and starts
  /// stopping the server; `Event::Closed` follows once it is gone.
  pub fn close(&self) {
    self
      .session
      .disconnect(CoreError::TransportClosed { stderr: None });
    self.shared.close_requested.cancel();
  }
}

impl Drop for StdioTransport {
  fn drop(&mut self) {
    self.close();
  }
}

fn spawn_error(command: &str, error: &io::Error) -> CoreError {
  let code = match error.raw_os_error() {
    Some(errno) => errno_name(errno),
    None => "ESPAWN".to_string(),
  };
  let reason = match error.raw_os_error() {
    // io::Error's text ends with "(os error N)"; the JS side has `code` for that.
    Some(errno) => io::Error::from_raw_os_error(errno)
      .to_string()
      .split(" (os error")
      .next()
      .unwrap_or_default()
      .to_string(),
    None => error.to_string(),
  };
  CoreError::Spawn {
    command: command.to_string(),
    reason,
    code,
  }
}

/// S2/S3/E3: stdout frames into the session until EOF (`None`) or a read error.
async fn read_frames(
  mut stdout: ChildStdout,
  max_message_bytes: usize,
  session: Arc<Session>,
) -> Option<io::Error> {
  let mut framer = LineFramer::new(max_message_bytes);
  let deliver = |frame: Frame, framer: &mut LineFramer| match frame {
    Frame::Line(line) => session.handle_line(line, framer.take_line_scan()),
    Frame::TooLarge => session
      .events()
      .emit(Event::Error(CoreError::MessageTooLarge {
        limit: max_message_bytes,
      })),
  };
  loop {
    framer.buffer.reserve(PIPE_BYTES as usize);
    match stdout.read_buf(&mut framer.buffer).await {
      Ok(0) => {
        while let Some(frame) = framer.finish() {
          deliver(frame, &mut framer);
        }
        return None;
      }
      Ok(_) => {
        while let Some(frame) = framer.next_frame() {
          deliver(frame, &mut framer);
        }
      }
      Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
      Err(e) => return Some(e),
    }
  }
}

/// S5: stderr is always read, so a chatty server never blocks on a full pipe.
async fn drain_stderr(mut stderr: ChildStderr, shared: Arc<Shared>, events: Arc<dyn EventSink>) {
  let mut chunk = vec![0u8; 16 * 1024];
  let mut text = Utf8Chunks::default();
  loop {
    let n = match stderr.read(&mut chunk).await {
      Ok(0) | Err(_) => return,
      Ok(n) => n,
    };
    if let Ok(mut tail) = shared.stderr_tail.lock() {
      tail.push(&chunk[..n]);
    }
    if shared.want_stderr.load(Ordering::Acquire) {
      let decoded = text.decode(&chunk[..n]);
      if !decoded.is_empty() {
        events.emit(Event::Stderr(decoded));
      }
    }
  }
}

struct Supervised {
  session: Arc<Session>,
  shared: Arc<Shared>,
  child: Child,
  pgid: i32,
  writer: JoinHandle<()>,
  stop_writing: CancellationToken,
  reader: JoinHandle<Option<io::Error>>,
  drain: JoinHandle<()>,
}

/// S4/S6: the single close sequence, whether the server ended or `close()` was called.
async fn supervise(mut s: Supervised) {
  let ended_by_server = tokio::select! {
    read = &mut s.reader => Some(read.ok().flatten()),
    _ = s.shared.close_requested.cancelled() => None,
  };
  if let Some(read_error) = ended_by_server {
    if let Some(error) = read_error {
      s.session
        .events()
        .emit(Event::Error(CoreError::Read(error.to_string())));
    }
    let _ = tokio::time::timeout(STDERR_SETTLE, &mut s.drain).await;
    s.session.disconnect(CoreError::TransportClosed {
      stderr: Some(s.shared.stderr_text()),
    });
  }
  // S6/A14: close stdin, then SIGTERM, then SIGKILL after 1 s, group-wide.
  s.stop_writing.cancel();
  let _ = (&mut s.writer).await;
  stop_process_group(&mut s.child, s.pgid).await;
  if !s.reader.is_finished() {
    // Every writer of the pipe is dead now, so EOF is near; A14 bounds it anyway.
    if tokio::time::timeout(AFTER_KILL, &mut s.reader)
      .await
      .is_err()
    {
      s.reader.abort();
    }
  }
  // A JoinHandle must not be polled again once it has returned.
  if !s.drain.is_finished()
    && tokio::time::timeout(STDERR_SETTLE, &mut s.drain)
      .await
      .is_err()
  {
    s.drain.abort();
  }
  process_group::unregister(s.pgid);
  s.session.events().emit(Event::Closed);
}

async fn stop_process_group(child: &mut Child, pgid: i32) {
  process_group::signal_group(pgid, libc::SIGTERM);
  let deadline = tokio::time::Instant::now() + KILL_GRACE;
  let leader_exited = tokio::time::timeout_at(deadline, child.wait())
    .await
    .is_ok();
  // Grandchildren (npx-style wrappers) may outlive the leader: wait for the whole group.
  while process_group::group_alive(pgid) && tokio::time::Instant::now() < deadline {
    tokio::time::sleep(Duration::from_millis(10)).await;
  }
  if process_group::group_alive(pgid) || !leader_exited {
    process_group::signal_group(pgid, libc::SIGKILL);
    // A14: waited for 0.5 s at most; the exit-time reaper and PDEATHSIG cover the rest.
    let _ = tokio::time::timeout(AFTER_KILL, child.wait()).await;
  }
}
