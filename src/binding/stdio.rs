//! `StdioTransport` and `createStdioTransport` (S1–S8) as seen from JS.
use std::cell::OnceCell;

use napi::bindgen_prelude::This;
use napi::Env;
use napi_derive::napi;

use super::args;
use super::host::JsHost;
use super::host_reader::LoopReader;
use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error::{self, thrown};
use super::js_side::{CallbackSlot, JsSide, Shared};
use super::request_entry::SharedOnly;
use super::transport_class::{
  attach, callback_value, create_connected, runtime_handle, started, transport_class,
  StartableClass,
};
use crate::transport::stdio::{HostReader, StdioConfig, StdioTransport};

/// An MCP server run as a child process, speaking JSON-RPC over stdin/stdout.
#[napi(js_name = "StdioTransport")]
pub struct JsStdioTransport {
  config: StdioConfig,
  side: Shared,
  /// Set once, by the first `connect()`.
  transport: OnceCell<StdioTransport>,
}

transport_class!(JsStdioTransport, "StdioTransport", entered: true);

// SAFETY: every method, getter and setter takes `&self`; the transport is set once
// (`OnceCell`) and the rest changes behind the `side`'s `RefCell`.
unsafe impl SharedOnly for JsStdioTransport {}

impl StartableClass for JsStdioTransport {
  fn build(js: Js, config: Value) -> Result<Self, Thrown> {
    let host = JsHost::new(js);
    let environment = args::host_environment(js);
    let timeout_input = super::timeout_resolver::config_input(js, config);
    let config = crate::config::stdio_config(&host, &host.hold(config), environment)
      .map_err(|message| Thrown(js_error::type_error(js, &message)))?;
    let side = JsSide::new(
      js.env,
      super::pump::deliver,
      crate::transport_error::TransportKind::Stdio,
    )?;
    side.borrow_mut().timeout_input = timeout_input;
    Ok(JsStdioTransport {
      config,
      side,
      transport: OnceCell::new(),
    })
  }

  /// S1: spawns the server; a second call is a no-op.
  fn start(&self, js: Js, this: Value) -> Result<(), Value> {
    if self.transport.get().is_some() {
      return Ok(());
    }
    let handle = runtime_handle(js)?;
    install_bun_exit_hooks(js);
    let sink = self.side.borrow().sink();
    let host_reader = LoopReader::new(js, &self.side);
    let host_reader = host_reader.as_ref().map(|r| r as &dyn HostReader);
    let transport = StdioTransport::spawn(self.config.clone(), sink, &handle, host_reader)
      .map_err(|e| js_error::to_js(js, crate::transport_error::TransportKind::Stdio, &e))?;
    transport.set_forward_stderr(self.side.borrow_mut().has_callback(CallbackSlot::Stderr));
    // A `connect()` that JS re-entered while this one spawned got there first: its stays.
    if self.transport.set(transport).is_err() {
      return Ok(());
    }
    if let Some(transport) = self.transport.get() {
      attach(&self.side, transport.session(), this);
    }
    Ok(())
  }
}

/// S8 under Bun, whose exit runs no `atexit` handlers: the servers are stopped from the
/// env's cleanup hook (a script that ends) and from `process.on("exit")` (`process.exit()`).
fn install_bun_exit_hooks(js: Js) {
  static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
  if !super::js::is_bun(js) || INSTALLED.swap(true, std::sync::atomic::Ordering::AcqRel) {
    return;
  }
  js.on_teardown(crate::transport::process_group::terminate_all);
  let listen = || -> Result<(), Thrown> {
    let process = js.get(js.global(), "process")?;
    let stop = js.closure("mcpNativeStopServers", |js, _| {
      crate::transport::process_group::terminate_all();
      Ok(js.undefined())
    })?;
    super::host::call_method(js, process, "on", &[js.string("exit"), stop]).map(|_| ())
  };
  let _ = listen();
}

impl JsStdioTransport {
  /// The handshake era's one channel already carries everything: nothing to open.
  fn start_handshake_listener(&self, js: Js) -> Result<Value, Thrown> {
    js.resolved(js.undefined())
  }

  fn current_transport(&self) -> Option<&StdioTransport> {
    self.transport.get()
  }

  fn set_slot(&self, slot: CallbackSlot, value: JsArg) {
    self.side.borrow_mut().set_callback(slot, value.0);
    if slot == CallbackSlot::Stderr {
      if let Some(transport) = self.transport.get() {
        transport.set_forward_stderr(self.side.borrow_mut().has_callback(CallbackSlot::Stderr));
      }
    }
  }
}

#[napi]
impl JsStdioTransport {
  /// A stdio transport for `config`, its server not yet spawned (`connect()` does; S1).
  #[napi(constructor, ts_args_type = "config: MCPStdioServerConfig")]
  pub fn new(env: Env, config: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    Self::build(js, config.0).map_err(|t| thrown(js, t))
  }

  /// The server's process id (also its process group id) once connected.
  #[napi(getter, ts_return_type = "number | undefined")]
  pub fn pid(&self) -> JsRaw {
    let js = Js::new(self.side.borrow().env());
    JsRaw(match self.transport.get() {
      Some(t) => js.number(f64::from(t.pid())),
      None => js.undefined(),
    })
  }

  /// Spawns the server (S1). Rejects with an Error carrying `code` (`ENOENT`, …) when the
  /// command cannot be started.
  #[napi(ts_args_type = "", ts_return_type = "Promise<void>")]
  pub fn connect(&self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    started(js, self.start(js, this.object.0))
  }

  /// S5: stderr text of the server, as it arrives.
  #[napi(
    getter,
    js_name = "onStderr",
    ts_return_type = "((chunk: string) => void) | undefined"
  )]
  pub fn get_on_stderr(&self) -> JsRaw {
    callback_value(&self.side, CallbackSlot::Stderr)
  }

  /// S5: stderr text of the server, as it arrives.
  #[napi(
    setter,
    js_name = "onStderr",
    ts_args_type = "callback: ((chunk: string) => void) | undefined"
  )]
  pub fn set_on_stderr(&self, callback: JsArg) {
    self.set_slot(CallbackSlot::Stderr, callback)
  }
}

/// `new StdioTransport(config)` + `connect()` (S1). Never throws: bad config rejects with a
/// TypeError (E2).
#[napi(
  js_name = "createStdioTransport",
  ts_args_type = "config: MCPStdioServerConfig",
  ts_return_type = "Promise<StdioTransport>"
)]
pub fn create_stdio_transport(env: Env, config: JsArg) -> napi::Result<JsRaw> {
  create_connected::<JsStdioTransport>(env, config.0)
}
