//! A11/A12 `resolveStdioSpawnCommand` and A15 `terminateStdioProcess`: the v18 agent's
//! helpers for spawning a stdio server itself (with `Bun.spawn`, say) and stopping it. The
//! spawn decisions are `crate::transport::spawn_command`'s; this reads the arguments, runs
//! the file checks off the JS thread, and sequences the signals with real-time timers.
use std::time::Duration;

use futures::future::{select, Either, LocalBoxFuture};
use napi::Env;
use napi_derive::napi;

use super::executor;
use super::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error::finish;
use super::js_error::type_error;
use crate::sys::process::{group_gone, signal_group, Signal};
use crate::transport::process_group::{AFTER_KILL, KILL_GRACE};
use crate::transport::spawn_command::{
  self, Environment, HostFiles, SpawnCommand, Target, WindowsRequest,
};

/// What a bad argument rejects with: a TypeError naming it (E2), or what a getter threw.
type Rejection = Value;

fn thrown(Thrown(error): Thrown) -> Rejection {
  error
}

/// `object[name]`, `None` when nullish.
fn field(js: Js, object: Value, name: &str) -> Result<Option<Value>, Rejection> {
  let value = js.get(object, name).map_err(thrown)?;
  Ok((!js.is_nullish(value)).then_some(value))
}

/// `process.platform` of the calling runtime; the build target's name without one.
fn host_platform(js: Js) -> String {
  let from_js = js
    .get(js.global(), "process")
    .and_then(|process| js.get(process, "platform"))
    .ok()
    .and_then(|platform| js.rust_string(platform));
  from_js.unwrap_or_else(|| {
    match std::env::consts::OS {
      "macos" => "darwin",
      "windows" => "win32",
      other => other,
    }
    .to_string()
  })
}

/// A platform (`what` names the field or argument): a string, or nullish for the host's.
fn platform(js: Js, value: Option<Value>, what: &str) -> Result<Option<String>, Rejection> {
  match value {
    None => Ok(None),
    Some(value) => js
      .rust_string(value)
      .map(Some)
      .ok_or_else(|| type_error(js, &format!("The {what} must be a string"))),
  }
}

/// The spawn request of A11, as the Windows rules or the plain argv need it.
enum Request {
  Windows(WindowsRequest),
  Other(SpawnCommand),
}

fn command_and_args(js: Js, config: Value) -> Result<(String, Vec<String>), Rejection> {
  let fail = |message: &str| type_error(js, message);
  if !js.is_record(config) {
    return Err(fail("The \"config\" argument must be an object"));
  }
  let command = field(js, config, "command")?
    .and_then(|command| js.rust_string(command))
    .filter(|command| !command.is_empty())
    .ok_or_else(|| fail("The \"command\" field must be a non-empty string"))?;
  let args = match field(js, config, "args")? {
    None => Vec::new(),
    Some(args) if js.is_array(args) => (0..js.array_length(args))
      .map(|i| js.element(args, i).ok().and_then(|arg| js.rust_string(arg)))
      .collect::<Option<Vec<_>>>()
      .ok_or_else(|| fail("The \"args\" field must be an array of strings"))?,
    Some(_) => return Err(fail("The \"args\" field must be an array of strings")),
  };
  Ok((command, args))
}

/// `options.env`: every own key, with `undefined` (or any non-string) as unset.
fn environment(js: Js, env: Value) -> Result<Environment, Rejection> {
  let vars = js
    .keys(env)
    .map_err(thrown)?
    .into_iter()
    .map(|key| {
      let value = js.get(env, &key).map_err(thrown)?;
      Ok((key, js.rust_string(value)))
    })
    .collect::<Result<Vec<_>, Rejection>>()?;
  Ok(Environment::new(vars))
}

fn request(js: Js, config: Value, options: Value) -> Result<Request, Rejection> {
  let (command, args) = command_and_args(js, config)?;
  if !js.is_record(options) {
    return Err(type_error(js, "The \"options\" argument must be an object"));
  }
  let platform = platform(
    js,
    field(js, options, "platform")?,
    "\"options.platform\" field",
  )?;
  let detached = match spawn_command::target(platform.as_deref(), &host_platform(js)) {
    Target::Windows => None,
    Target::Other { detached } => Some(detached),
  };
  if let Some(detached) = detached {
    return Ok(Request::Other(spawn_command::plain_command(
      &command, &args, detached,
    )));
  }
  let cwd = field(js, options, "cwd")?
    .and_then(|cwd| js.rust_string(cwd))
    .ok_or_else(|| type_error(js, "The \"options.cwd\" field must be a string"))?;
  let env = field(js, options, "env")?
    .filter(|env| js.is_record(*env))
    .ok_or_else(|| type_error(js, "The \"options.env\" field must be an object"))?;
  let host_has_inheritable_console =
    field(js, options, "hostHasInheritableConsole")?.is_some_and(|value| js.truthy(value));
  // With its working directory deleted, Node's process.cwd() throws; `/` stands in so that
  // a relative cwd still names somewhere.
  let process_cwd = std::env::current_dir()
    .map(|dir| dir.to_string_lossy().into_owned())
    .unwrap_or_else(|_| "/".to_string());
  Ok(Request::Windows(WindowsRequest {
    command,
    args,
    cwd,
    env: environment(js, env)?,
    host_has_inheritable_console,
    process_cwd,
  }))
}

fn command_value(js: Js, command: &SpawnCommand) -> Result<Value, Thrown> {
  let object = js.object()?;
  let cmd = js.array(command.cmd.len())?;
  for (index, part) in (0u32..).zip(&command.cmd) {
    js.set_element(cmd, index, js.string(part))?;
  }
  js.set(object, "cmd", cmd);
  if let Some(hide) = command.windows_hide {
    js.set(object, "windowsHide", js.boolean(hide));
  }
  js.set(object, "detached", js.boolean(command.detached));
  if command.windows_verbatim_arguments {
    js.set(object, "windowsVerbatimArguments", js.boolean(true));
  }
  Ok(object)
}

fn resolved(js: Js, command: &SpawnCommand) -> Result<Held, Held> {
  command_value(js, command)
    .map(|value| Held::new(js, value))
    .map_err(|Thrown(error)| Held::new(js, error))
}

/// A11/A12: the argv and spawn flags for `config` on `options.platform`. Rejects (never
/// throws) with a TypeError for a bad argument, and with an Error when a `cmd.exe` line
/// would need NUL, CR or LF.
#[napi(
  js_name = "resolveStdioSpawnCommand",
  ts_args_type = "config: MCPStdioServerConfig, options: ResolveStdioSpawnOptions",
  ts_return_type = "Promise<StdioSpawnCommand>"
)]
pub fn resolve_stdio_spawn_command(env: Env, config: JsArg, options: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let outcome = match request(js, config.0, options.0) {
    Err(error) => js.rejected(error),
    Ok(Request::Other(command)) => command_value(js, &command).and_then(|value| js.resolved(value)),
    Ok(Request::Windows(request)) => {
      // The checks and reads block: a shim on a network share must not stall the JS thread.
      let decided = executor::on_runtime(js, async move {
        tokio::task::spawn_blocking(move || request.resolve(&HostFiles))
          .await
          .ok()
      });
      executor::promise(js, async move {
        match decided.await.flatten() {
          Some(Ok(command)) => resolved(js, &command),
          Some(Err(error)) => Err(Held::new(
            js,
            js.error(ErrorKind::Error, &error.to_string()),
          )),
          None => Err(Held::new(
            js,
            js.error(
              ErrorKind::Error,
              "The stdio spawn command could not be resolved",
            ),
          )),
        }
      })
    }
  };
  finish(js, outcome)
}

/// What became of a signal.
enum Signalled {
  Delivered,
  /// The process group is gone (ESRCH): there is nothing left to stop.
  GroupGone,
}

/// A15's sequence for one process.
struct Termination {
  proc: Held,
  /// Settles with `proc.exited` (either way), from the start: a settlement is never missed.
  exited: LocalBoxFuture<'static, Result<Held, Held>>,
  /// The process group to signal, when the process leads one that we may signal.
  group: Option<i32>,
  detached: bool,
  /// `None` waits for the exit without a limit.
  grace: Option<Duration>,
}

impl Termination {
  fn send(&self, js: Js, signal: Signal) -> Signalled {
    if let Some(pgid) = self.group {
      if signal_group(pgid, signal) {
        return Signalled::Delivered;
      }
      // errno is still that of the kill: nothing ran in between.
      if group_gone() {
        return Signalled::GroupGone;
      }
    }
    let proc = self.proc.get(js);
    // A kill that throws (a process already reaped, say) changes nothing: the waits that
    // follow decide what happens next.
    let _ = js
      .get(proc, "kill")
      .and_then(|kill| js.call(kill, proc, &[js.string(signal.name())]));
    Signalled::Delivered
  }

  /// Whether `exited` settled within `limit`.
  async fn wait(&mut self, js: Js, limit: Option<Duration>) -> bool {
    let Some(limit) = limit else {
      let _ = (&mut self.exited).await;
      return true;
    };
    let slept = executor::sleep(js, limit);
    matches!(select(&mut self.exited, slept).await, Either::Left(_))
  }

  async fn run(mut self, js: Js) {
    if let Signalled::GroupGone = self.send(js, Signal::Terminate) {
      return;
    }
    let exited = self.wait(js, self.grace).await;
    // A detached leader's exit says nothing of the rest of its group.
    if exited && !self.detached {
      return;
    }
    if let Signalled::GroupGone = self.send(js, Signal::Kill) {
      return;
    }
    if !exited {
      self.wait(js, Some(AFTER_KILL)).await;
    }
  }
}

/// `termGraceMs`: 1000 when omitted; NaN and negative values are no wait, as setTimeout
/// has them; a value too large for any timer waits for the exit however long it takes.
fn grace(js: Js, value: Value) -> Result<Option<Duration>, Rejection> {
  if js.is_nullish(value) {
    return Ok(Some(KILL_GRACE));
  }
  let ms = js
    .number_value(value)
    .ok_or_else(|| type_error(js, "The \"termGraceMs\" argument must be a number"))?;
  if ms.is_nan() || ms <= 0.0 {
    return Ok(Some(Duration::ZERO));
  }
  Ok(Duration::try_from_secs_f64(ms / 1000.0).ok())
}

/// A pid whose negation names its group alone: 0 and 1 would make `kill(-pid)` signal our
/// own group or every process we may signal.
fn group_id(js: Js, pid: Value) -> Option<i32> {
  let pid = js.number_value(pid)?;
  (pid.fract() == 0.0 && pid > 1.0 && pid <= f64::from(i32::MAX)).then_some(pid as i32)
}

fn termination(
  js: Js,
  proc: Value,
  detached: Value,
  platform_arg: Value,
  grace_arg: Value,
) -> Result<Termination, Rejection> {
  if !matches!(
    js.type_of(proc),
    napi::sys::ValueType::napi_object | napi::sys::ValueType::napi_function
  ) {
    return Err(type_error(js, "The \"proc\" argument must be an object"));
  }
  if !field(js, proc, "kill")?.is_some_and(|kill| js.is_function(kill)) {
    return Err(type_error(js, "The \"proc.kill\" field must be a function"));
  }
  let detached = js.truthy(detached);
  let platform_arg = (!js.is_nullish(platform_arg)).then_some(platform_arg);
  let platform =
    platform(js, platform_arg, "\"platform\" argument")?.unwrap_or_else(|| host_platform(js));
  let grace = grace(js, grace_arg)?;
  let pid = js.get(proc, "pid").map_err(thrown)?;
  // Anything else in `pid` is an error to `process.kill(-pid)`: `proc.kill` does instead.
  let group = (detached && platform != "win32")
    .then(|| group_id(js, pid))
    .flatten();
  let exited = js.get(proc, "exited").map_err(thrown)?;
  Ok(Termination {
    proc: Held::new(js, proc),
    exited: executor::settled(js, exited),
    group,
    detached,
    grace,
  })
}

/// A15: SIGTERM, up to `termGraceMs` for `proc.exited` to settle, then SIGKILL (always for
/// a detached process: its group may outlive it) and up to 0.5 s more. A detached process
/// off Windows is signalled as its whole group (`-pid`), else through `proc.kill` alone.
/// Never rejects but for a bad argument.
#[napi(
  js_name = "terminateStdioProcess",
  ts_args_type = "proc: StdioTerminableProcess, detached: boolean, platform?: StdioPlatform, termGraceMs?: number",
  ts_return_type = "Promise<void>"
)]
pub fn terminate_stdio_process(
  env: Env,
  proc: JsArg,
  detached: JsArg,
  platform: JsArg,
  term_grace_ms: JsArg,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let outcome = match termination(js, proc.0, detached.0, platform.0, term_grace_ms.0) {
    Err(error) => js.rejected(error),
    Ok(termination) => executor::promise(js, async move {
      termination.run(js).await;
      Ok(Held::new(js, js.undefined()))
    }),
  };
  finish(js, outcome)
}
