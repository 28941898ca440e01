//! S1–S8: an MCP server as a child process speaking newline-delimited JSON-RPC.
//!
//! Four tasks per server: the writer (ordered frames to stdin), the reader (stdout frames
//! into the session), the stderr drain, and the supervisor, which owns the close sequence so
//! that it runs exactly once whichever side ends first. The reader runs on the runtime, or
//! on the host's own event loop when the binding offers one (`HostReader`): an answer then
//! reaches JS without waking a runtime thread first.
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::pipe_writer::PipeWriter;
use super::process_group::{self, AFTER_KILL, KILL_GRACE};
use super::spawn_command::{plain_command, Environment, HostFiles, SpawnCommand, WindowsRequest};
use super::stderr_tail::{StderrTail, Utf8Chunks};
use crate::error::{errno_name, CoreError};
use crate::protocol::framing::{Frame, LineFramer};
use crate::session::{Event, EventSink, Session};
use crate::sys::pipe::{self, RawPipe, ReadEnd};

pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// S5: how long a server that closed stdout gets to finish its last stderr words.
const STDERR_SETTLE: Duration = Duration::from_millis(200);
/// A49: how long an ended stdout waits for the exit code.
const EXIT_SETTLE: Duration = Duration::from_millis(20);

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

/// Reads a server's stdout on the host's event loop instead of a runtime thread.
pub trait HostReader {
  /// Takes `reader` over (calling `read_ready` whenever its descriptor is readable, and
  /// dropping it once that returns `Ended` or the transport closed), or hands it back.
  ///
  /// # Errors
  /// The reader itself, when the host cannot watch its descriptor.
  fn start(&self, reader: Box<StdoutReader>) -> Result<(), Box<StdoutReader>>;
}

/// What one `StdoutReader::read_ready` call found.
#[derive(Debug, PartialEq, Eq)]
pub enum Readiness {
  /// The pipe is empty for now.
  Drained,
  /// The call's budget ran out with data possibly left: call again.
  More,
  /// End of input or a read error: the supervisor has been told; drop the reader.
  Ended,
}

/// An incomplete line this long goes to the runtime (see `StdoutReader::receiving_long_line`):
/// half the length at which it would move into a region, so the region's fresh pages are
/// faulted in there too.
const HANDOVER_BYTES: usize = crate::protocol::framing::LONG_LINE_BYTES / 2;

fn receiving_long_line(framer: &LineFramer) -> bool {
  framer.in_long_line() || framer.buffered_len() >= HANDOVER_BYTES
}

/// What one `read_ready` call reads between lines: about what a JS stream reads per
/// `data` event, so a flood of small messages costs the host loop at most ~1 ms per call.
const READ_BYTES: usize = 64 * 1024;
/// Inside a long line a read only extends the line (no messages to handle): read more.
const LONG_LINE_READ_BYTES: usize = pipe::PIPE_BYTES;

/// S2/S3/E3: the reading half of a transport, whichever thread drives it: stdout frames
/// into the session until EOF or a read error.
pub struct StdoutReader {
  stdout: ReadEnd,
  frames: StdoutFrames,
}

struct StdoutFrames {
  framer: LineFramer,
  max_message_bytes: usize,
  session: Arc<Session>,
  /// Tells the supervisor that the stream ended (with the read error, if any).
  ended: Option<oneshot::Sender<Option<io::Error>>>,
}

impl StdoutReader {
  /// The non-blocking descriptor to watch for readability, where the OS has one.
  pub fn fd(&self) -> Option<RawPipe> {
    self.stdout.raw()
  }

  /// Reads what the pipe holds (a few reads at most) and hands complete frames to the
  /// session.
  pub fn read_ready(&mut self) -> Readiness {
    if self.frames.ended.is_none() {
      return Readiness::Ended;
    }
    loop {
      let framer = &mut self.frames.framer;
      let size = if framer.in_long_line() {
        LONG_LINE_READ_BYTES
      } else {
        READ_BYTES
      };
      match self.stdout.read_into(&mut framer.buffer, size) {
        Ok(0) => return self.frames.end(None),
        Ok(_) => {
          self.frames.received();
          return Readiness::More;
        }
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Readiness::Drained,
        Err(e) => return self.frames.end(Some(e)),
      }
    }
  }
}

impl StdoutReader {
  /// Bytes the host read from the descriptor itself (a runtime whose loop reads pipes but
  /// cannot watch a descriptor for us).
  pub fn feed(&mut self, bytes: &[u8]) {
    if self.frames.ended.is_some() {
      self.frames.framer.buffer.extend_from_slice(bytes);
      self.frames.received();
    }
  }

  /// Whether a line long enough for the runtime to receive is coming in: a host reader
  /// then hands it over (`read_long_line`), before the line moves into a region of its own.
  pub fn receiving_long_line(&self) -> bool {
    receiving_long_line(&self.frames.framer)
  }

  /// The host's reading ended: at end of input (`None`) or with its error.
  pub fn end(&mut self, error: Option<io::Error>) {
    if self.frames.ended.is_some() {
      self.frames.end(error);
    }
  }
}

impl StdoutFrames {
  /// Hands the complete frames of the latest read to the session.
  fn received(&mut self) {
    while let Some(frame) = self.framer.next_frame() {
      self.deliver(frame);
    }
  }

  fn deliver(&mut self, frame: Frame) {
    match frame {
      Frame::Line(line) => self.session.handle_line(line, self.framer.take_line_scan()),
      Frame::TooLarge => self
        .session
        .events()
        .emit(Event::Error(CoreError::MessageTooLarge {
          limit: self.max_message_bytes,
        })),
    }
  }

  /// End of input (a last line without its newline still counts) or a read error.
  fn end(&mut self, error: Option<io::Error>) -> Readiness {
    if error.is_none() {
      while let Some(frame) = self.framer.finish() {
        self.deliver(frame);
      }
    }
    if let Some(ended) = self.ended.take() {
      let _ = ended.send(error);
    }
    Readiness::Ended
  }
}

/// Resolves once the reader's pipe has something to read (or is closed), without reading
/// it: a host that reads the pipe itself only while busy learns when to read again.
pub async fn readable(fd: RawPipe) -> io::Result<()> {
  pipe::readable(fd).await
}

/// Reads on the runtime from now on (no host reader, or one that can no longer read).
pub fn read_on(runtime: &Handle, reader: Box<StdoutReader>) -> JoinHandle<()> {
  runtime.spawn(async move {
    read_on_runtime(reader, false).await;
  })
}

/// Reads on the runtime until the long line being received is complete, then gives the
/// reader back (`None` once the stream ended). A host reader hands such lines over: the
/// megabytes are copied, scanned and their fresh pages faulted in off the JS thread.
pub async fn read_long_line(reader: Box<StdoutReader>) -> Option<Box<StdoutReader>> {
  read_on_runtime(reader, true).await
}

/// The reader driven by the runtime's reactor: to the end of the stream, or with
/// `line_only` until no long line is being received.
async fn read_on_runtime(reader: Box<StdoutReader>, line_only: bool) -> Option<Box<StdoutReader>> {
  let StdoutReader { stdout, mut frames } = *reader;
  let mut pipe = match stdout.into_async() {
    Ok(pipe) => pipe,
    Err(e) => {
      frames.end(Some(e));
      return None;
    }
  };
  while !line_only || receiving_long_line(&frames.framer) {
    match pipe.read_buf(&mut frames.framer.buffer).await {
      Ok(0) => {
        frames.end(None);
        return None;
      }
      Ok(_) => frames.received(),
      Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
      Err(e) => {
        frames.end(Some(e));
        return None;
      }
    }
  }
  match pipe.into_read_end() {
    Ok(stdout) => Some(Box::new(StdoutReader { stdout, frames })),
    Err(e) => {
      frames.end(Some(e));
      None
    }
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
    host: Option<&dyn HostReader>,
  ) -> Result<Self, CoreError> {
    let _context = runtime.enter();
    process_group::install_exit_hooks();
    let launch = launch_command(&config)?;
    let Some((program, args)) = launch.cmd.split_first() else {
      return Err(spawn_error(
        &config.command,
        &io::Error::other("no command"),
      ));
    };
    let mut command = Command::new(program);
    for arg in args {
      if launch.windows_verbatim_arguments {
        crate::sys::process::verbatim_arg(&mut command, arg);
      } else {
        command.arg(arg);
      }
    }
    command
      .stdin(Stdio::piped())
      .stdout(Stdio::piped())
      .stderr(Stdio::piped())
      .kill_on_drop(false);
    crate::sys::process::own_session(&mut command, launch.windows_hide.unwrap_or(false));
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
    // A server that cannot be put in a group of its own is still stopped by close().
    let _ = crate::sys::process::enter_group(&child);
    process_group::register(pgid);
    let (Some(stdin), Some(stdout), Some(stderr)) =
      (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
      // Unreachable with piped stdio; still, never leave the child behind.
      process_group::signal_group(pgid, process_group::Signal::Kill);
      process_group::unregister(pgid);
      return Err(spawn_error(
        &config.command,
        &io::Error::other("no stdio pipes"),
      ));
    };

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
    let (ended, reader_end) = oneshot::channel();
    // Larger pipes mean fewer wake-ups per megabyte (both ends are grown, best effort).
    let stdout = ReadEnd::from_stdout(stdout);
    let reader_task = match stdout {
      Ok(stdout) => {
        let reader = Box::new(StdoutReader {
          stdout,
          frames: StdoutFrames {
            framer: LineFramer::new(config.max_message_bytes),
            max_message_bytes: config.max_message_bytes,
            session: session.clone(),
            ended: Some(ended),
          },
        });
        let unwatched = match host {
          Some(host) => host.start(reader).err(),
          None => Some(reader),
        };
        unwatched.map(|reader| read_on(runtime, reader))
      }
      Err(e) => {
        let _ = ended.send(Some(e));
        None
      }
    };
    let drain = runtime.spawn(drain_stderr(stderr, shared.clone(), events.clone()));
    runtime.spawn(supervise(Supervised {
      session: session.clone(),
      shared: shared.clone(),
      child,
      pgid,
      writer,
      stop_writing,
      reader_end,
      reader_task,
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

/// A13: the argv A11/A12 decide for the platform this runs on: on Windows a PATH/PATHEXT
/// walk, npm shims run by node, and cmd.exe for the other batch files; elsewhere the
/// command and its arguments as they are.
fn launch_command(config: &StdioConfig) -> Result<SpawnCommand, CoreError> {
  if crate::sys::build_platform() != "win32" {
    return Ok(plain_command(&config.command, &config.args, true));
  }
  let text = |value: &std::ffi::OsStr| value.to_string_lossy().into_owned();
  let vars: Vec<(String, Option<String>)> = match &config.env {
    Some(env) => env.iter().map(|(k, v)| (text(k), Some(text(v)))).collect(),
    None => std::env::vars_os()
      .map(|(k, v)| (text(&k), Some(text(&v))))
      .collect(),
  };
  let process_cwd = std::env::current_dir()
    .map(|dir| text(dir.as_os_str()))
    .unwrap_or_default();
  let request = WindowsRequest {
    command: config.command.clone(),
    args: config.args.clone(),
    cwd: config
      .cwd
      .as_ref()
      .map_or_else(|| process_cwd.clone(), |dir| text(dir.as_os_str())),
    env: Environment::new(vars),
    host_has_inheritable_console: crate::sys::process::host_has_console(),
    process_cwd,
  };
  request
    .resolve(&HostFiles)
    .map_err(|error| CoreError::CommandLine(error.to_string()))
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

/// A49: the server's exit code, if it has exited by now (a process that only closed its
/// stdout lives on; one ended by a signal has none).
async fn exit_code(child: &mut Child) -> Option<i32> {
  if let Ok(Some(status)) = child.try_wait() {
    return status.code();
  }
  // Its pipes close just before it is reaped: a moment covers that.
  match tokio::time::timeout(EXIT_SETTLE, child.wait()).await {
    Ok(Ok(status)) => status.code(),
    _ => None,
  }
}

struct Supervised {
  session: Arc<Session>,
  shared: Arc<Shared>,
  child: Child,
  pgid: i32,
  writer: JoinHandle<()>,
  stop_writing: CancellationToken,
  /// The reader's end of stream: its read error, if any (a dropped reader counts as EOF).
  reader_end: oneshot::Receiver<Option<io::Error>>,
  /// The reader, when it runs on the runtime (a host reader stops on the host's side).
  reader_task: Option<JoinHandle<()>>,
  drain: JoinHandle<()>,
}

/// S4/S6: the single close sequence, whether the server ended or `close()` was called.
async fn supervise(mut s: Supervised) {
  let ended_by_server = tokio::select! {
    read = &mut s.reader_end => Some(read.ok().flatten()),
    _ = s.shared.close_requested.cancelled() => None,
  };
  let reader_ended = ended_by_server.is_some();
  if let Some(read_error) = ended_by_server {
    if let Some(error) = read_error {
      s.session
        .events()
        .emit(Event::Error(CoreError::Read(error.to_string())));
    }
    let _ = tokio::time::timeout(STDERR_SETTLE, &mut s.drain).await;
    s.session.disconnect(CoreError::ServerEnded {
      exit_code: exit_code(&mut s.child).await,
      stderr: Some(s.shared.stderr_text()),
    });
  }
  // S6/A14: close stdin, then SIGTERM, then SIGKILL after 1 s, group-wide.
  s.stop_writing.cancel();
  let _ = (&mut s.writer).await;
  stop_process_group(&mut s.child, s.pgid).await;
  if !reader_ended {
    // Every writer of the pipe is dead now, so EOF is near; A14 bounds it anyway.
    let _ = tokio::time::timeout(AFTER_KILL, &mut s.reader_end).await;
  }
  if let Some(task) = s.reader_task.take() {
    task.abort();
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
  process_group::signal_group(pgid, process_group::Signal::Terminate);
  let deadline = tokio::time::Instant::now() + KILL_GRACE;
  let leader_exited = tokio::time::timeout_at(deadline, child.wait())
    .await
    .is_ok();
  // Grandchildren (npx-style wrappers) may outlive the leader: wait for the whole group.
  while process_group::group_alive(pgid) && tokio::time::Instant::now() < deadline {
    tokio::time::sleep(Duration::from_millis(10)).await;
  }
  if process_group::group_alive(pgid) || !leader_exited {
    process_group::signal_group(pgid, process_group::Signal::Kill);
    // A14: waited for 0.5 s at most; the exit-time reaper and PDEATHSIG cover the rest.
    let _ = tokio::time::timeout(AFTER_KILL, child.wait()).await;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::tests::Recorder;

  fn sh(script: &str, max_message_bytes: usize) -> StdioConfig {
    StdioConfig {
      command: "sh".to_string(),
      args: vec!["-c".to_string(), script.to_string()],
      env: None,
      cwd: None,
      timeout: Some(Duration::from_secs(5)),
      max_message_bytes,
      string_ids: false,
    }
  }

  async fn until(recorder: &Recorder, found: impl Fn(&Event) -> bool) {
    for _ in 0..500 {
      if recorder.0.lock().unwrap().iter().any(&found) {
        return;
      }
      tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for an event");
  }

  fn outcome(recorder: &Recorder, ticket: u64) -> Option<Result<String, CoreError>> {
    recorder.0.lock().unwrap().iter().find_map(|e| match e {
      Event::Settled { ticket: t, outcome } if *t == ticket => Some(
        outcome
          .clone()
          .map(|r| r.as_ref().map_or("", |r| r.get()).to_string()),
      ),
      _ => None,
    })
  }

  const ANSWER_ONE: &str =
    r#"read line; echo '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'; cat >/dev/null"#;

  #[tokio::test]
  async fn s3_a_request_is_written_and_its_answer_read_from_stdout() {
    let recorder = Arc::new(Recorder::default());
    let transport = StdioTransport::spawn(
      sh(ANSWER_ONE, 1 << 20),
      recorder.clone(),
      &Handle::current(),
      None,
    )
    .unwrap();
    let ticket = transport.session().request("ping", None).unwrap();
    until(&recorder, |e| matches!(e, Event::Settled { .. })).await;
    assert_eq!(
      outcome(&recorder, ticket),
      Some(Ok(r#"{"ok":true}"#.to_string()))
    );
    transport.close();
    until(&recorder, |e| matches!(e, Event::Closed)).await;
  }

  #[tokio::test]
  async fn s1_a_command_that_does_not_exist_names_its_errno() {
    let mut config = sh("", 1 << 20);
    config.command = "/nonexistent/mcp-server".to_string();
    let recorder = Arc::new(Recorder::default());
    let error = StdioTransport::spawn(config, recorder, &Handle::current(), None)
      .err()
      .unwrap();
    assert_eq!(
      error.to_string(),
      "Failed to start MCP server \"/nonexistent/mcp-server\": No such file or directory (ENOENT)"
    );
    assert_eq!(error.string_code(), Some("ENOENT"));
  }

  #[tokio::test]
  async fn s4_s5_a49_a_server_that_exits_rejects_pending_requests_with_its_code_and_stderr() {
    let recorder = Arc::new(Recorder::default());
    let script = "read line; echo 'fatal: no config' >&2; exit 3";
    let transport = StdioTransport::spawn(
      sh(script, 1 << 20),
      recorder.clone(),
      &Handle::current(),
      None,
    )
    .unwrap();
    let ticket = transport.session().request("tools/list", None).unwrap();
    until(&recorder, |e| matches!(e, Event::Closed)).await;
    let Some(Err(CoreError::ServerEnded { exit_code, stderr })) = outcome(&recorder, ticket) else {
      panic!("{:?}", outcome(&recorder, ticket));
    };
    assert_eq!(exit_code, Some(3));
    assert!(stderr.unwrap_or_default().contains("fatal: no config"));
    assert!(!transport.session().is_connected());
  }

  #[tokio::test]
  async fn a49_a_server_that_only_closes_its_stdout_has_no_exit_code() {
    let recorder = Arc::new(Recorder::default());
    let transport = StdioTransport::spawn(
      sh("read line; exec 1>&-; sleep 5", 1 << 20),
      recorder.clone(),
      &Handle::current(),
      None,
    )
    .unwrap();
    let ticket = transport.session().request("tools/list", None).unwrap();
    until(&recorder, |e| matches!(e, Event::Settled { .. })).await;
    let Some(Err(error)) = outcome(&recorder, ticket) else {
      panic!("{:?}", outcome(&recorder, ticket));
    };
    assert_eq!(
      error.to_string(),
      "MCP subprocess closed stdout before responding"
    );
    transport.close();
  }

  #[tokio::test]
  async fn e3_a_line_over_the_limit_is_reported_and_the_next_one_read() {
    let recorder = Arc::new(Recorder::default());
    let script = r#"read line; head -c 5000 /dev/zero | tr '\0' x; echo; echo '{"jsonrpc":"2.0","id":1,"result":1}'; cat >/dev/null"#;
    let transport =
      StdioTransport::spawn(sh(script, 1024), recorder.clone(), &Handle::current(), None).unwrap();
    let ticket = transport.session().request("ping", None).unwrap();
    until(&recorder, |e| matches!(e, Event::Settled { .. })).await;
    assert_eq!(outcome(&recorder, ticket), Some(Ok("1".to_string())));
    assert!(recorder
      .0
      .lock()
      .unwrap()
      .iter()
      .any(|e| matches!(e, Event::Error(CoreError::MessageTooLarge { limit: 1024 }))));
    transport.close();
  }

  #[tokio::test]
  async fn s6_close_rejects_what_is_pending_and_stops_the_server() {
    let recorder = Arc::new(Recorder::default());
    let transport = StdioTransport::spawn(
      sh("cat >/dev/null", 1 << 20),
      recorder.clone(),
      &Handle::current(),
      None,
    )
    .unwrap();
    let pid = transport.pid();
    let ticket = transport.session().request("slow", None).unwrap();
    transport.close();
    assert_eq!(
      outcome(&recorder, ticket),
      Some(Err(CoreError::TransportClosed { stderr: None }))
    );
    until(&recorder, |e| matches!(e, Event::Closed)).await;
    // Gone (and reaped): signal 0 to its pid fails.
    let gone = std::process::Command::new("kill")
      .args(["-0", &pid.to_string()])
      .stderr(Stdio::null())
      .status()
      .map(|s| !s.success())
      .unwrap_or(true);
    assert!(gone, "server {pid} still running");
  }
}
