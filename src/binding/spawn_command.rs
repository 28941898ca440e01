//! A11/A12 `resolveStdioSpawnCommand` and A15 `terminateStdioProcess`: the v18 agent's
//! helpers for spawning a stdio server itself (with `Bun.spawn`, say) and stopping it. The
//! decisions are the core's (`crate::transport::{spawn_request, spawn_command,
//! termination}`); this runs the file checks off the JS thread, and gives the sequence the
//! process object and real-time timers.
use std::time::Duration;

use futures::future::{select, Either, LocalBoxFuture};
use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error::finish;
use crate::sys::process::Signal;
use crate::transport::spawn_command::{HostFiles, SpawnCommand};
use crate::transport::spawn_request::{self, build_platform, SpawnRequest};
use crate::transport::termination::{self, Process};

/// `process.platform` of the calling runtime; the build target's name without one.
fn host_platform(js: Js) -> String {
  js.get(js.global(), "process")
    .and_then(|process| js.get(process, "platform"))
    .ok()
    .and_then(|platform| js.rust_string(platform))
    .unwrap_or_else(|| build_platform().to_string())
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
  let host = JsHost::new(js);
  let read = spawn_request::read(&host, &host.hold(config.0), &host.hold(options.0), || {
    host_platform(js)
  });
  let outcome = match read {
    Err(error) => js.rejected(error.get(js)),
    Ok(SpawnRequest::Other(command)) => {
      command_value(js, &command).and_then(|value| js.resolved(value))
    }
    Ok(SpawnRequest::Windows(request)) => {
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

/// The process object of A15, and its `exited` settling from the start (so a settlement is
/// never missed).
struct JsProcess {
  js: Js,
  proc: Held,
  exited: LocalBoxFuture<'static, Result<Held, Held>>,
}

impl Process for JsProcess {
  fn kill(&self, signal: Signal) {
    let js = self.js;
    let proc = self.proc.get(js);
    let _ = js
      .get(proc, "kill")
      .and_then(|kill| js.call(kill, proc, &[js.string(signal.name())]));
  }

  fn wait(&mut self, limit: Option<Duration>) -> LocalBoxFuture<'_, bool> {
    let js = self.js;
    Box::pin(async move {
      let Some(limit) = limit else {
        let _ = (&mut self.exited).await;
        return true;
      };
      let slept = executor::sleep(js, limit);
      matches!(select(&mut self.exited, slept).await, Either::Left(_))
    })
  }
}

fn js_process(js: Js, proc: Value) -> Result<JsProcess, Thrown> {
  let exited = js.get(proc, "exited")?;
  Ok(JsProcess {
    js,
    proc: Held::new(js, proc),
    exited: executor::settled(js, exited),
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
  let host = JsHost::new(js);
  let plan = termination::read_plan(
    &host,
    &host.hold(proc.0),
    &host.hold(detached.0),
    &host.hold(platform.0),
    &host.hold(term_grace_ms.0),
    || host_platform(js),
  )
  .map_err(|error| error.get(js))
  .and_then(|plan| Ok((plan, js_process(js, proc.0).map_err(|Thrown(e)| e)?)));
  let outcome = match plan {
    Err(error) => js.rejected(error),
    Ok((plan, mut process)) => executor::promise(js, async move {
      termination::terminate(&mut process, &plan).await;
      Ok(Held::new(js, js.undefined()))
    }),
  };
  finish(js, outcome)
}
