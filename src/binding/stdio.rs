//! `StdioTransport` and `createStdioTransport` (S1–S8) as seen from JS.
use napi::bindgen_prelude::{JavaScriptClassExt, This};
use napi::{Env, Status};
use napi_derive::napi;

use super::args;
use super::calls;
use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::pump::{CallbackSlot, JsSide, Shared};
use crate::runtime;
use crate::transport::stdio::{StdioConfig, StdioTransport};

fn thrown(js: Js, Thrown(error): Thrown) -> napi::Error {
  js.throw(error);
  napi::Error::new(Status::PendingException, String::new())
}

/// An MCP server run as a child process, speaking JSON-RPC over stdin/stdout.
#[napi(js_name = "StdioTransport")]
pub struct JsStdioTransport {
  config: StdioConfig,
  side: Shared,
  transport: Option<StdioTransport>,
}

impl JsStdioTransport {
  fn build(js: Js, config: Value) -> Result<Self, Thrown> {
    let config = args::stdio_config(js, config)
      .map_err(|message| Thrown(js_error::type_error(js, &message)))?;
    Ok(JsStdioTransport {
      config,
      side: JsSide::new(js.env)?,
      transport: None,
    })
  }

  /// S1: spawns the server; a second call is a no-op.
  fn start(&mut self, js: Js, this: Value) -> Result<(), Value> {
    if self.transport.is_some() {
      return Ok(());
    }
    let Some(handle) = runtime::handle() else {
      return Err(js.error(
        super::js::ErrorKind::Error,
        "The async runtime could not start",
      ));
    };
    let sink = self.side.borrow().sink();
    let transport = StdioTransport::spawn(self.config.clone(), sink, &handle)
      .map_err(|e| js_error::to_js(js, &e))?;
    let forward_stderr = self.side.borrow_mut().has_callback(CallbackSlot::Stderr);
    transport.set_forward_stderr(forward_stderr);
    {
      let mut side = self.side.borrow_mut();
      side.session = Some(transport.session().clone());
      side.hold(this);
    }
    self.transport = Some(transport);
    Ok(())
  }

  fn callback(&self, slot: CallbackSlot) -> JsRaw {
    let env = self.side.borrow().env();
    let js = Js::new(env);
    JsRaw(
      self
        .side
        .borrow_mut()
        .callback(slot)
        .unwrap_or_else(|| js.undefined()),
    )
  }

  fn set_callback(&mut self, slot: CallbackSlot, value: JsArg) {
    self.side.borrow_mut().set_callback(slot, value.0);
    if slot == CallbackSlot::Stderr {
      if let Some(transport) = &self.transport {
        transport.set_forward_stderr(self.side.borrow_mut().has_callback(CallbackSlot::Stderr));
      }
    }
  }
}

#[napi]
impl JsStdioTransport {
  #[napi(constructor, ts_args_type = "config: MCPStdioServerConfig")]
  pub fn new(env: Env, config: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    Self::build(js, config.0).map_err(|t| thrown(js, t))
  }

  /// True between a successful `connect()` and the close (S1, S4, S6).
  #[napi(getter)]
  pub fn connected(&self) -> bool {
    self
      .transport
      .as_ref()
      .is_some_and(|t| t.session().is_connected())
  }

  /// The server's process id (also its process group id) once connected.
  #[napi(getter)]
  pub fn pid(&self) -> Option<u32> {
    self.transport.as_ref().map(|t| t.pid())
  }

  /// Spawns the server (S1). Rejects with an Error carrying `code` (`ENOENT`, …) when the
  /// command cannot be started.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn connect(&mut self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = match self.start(js, this.object.0) {
      Ok(()) => js.resolved(js.undefined()),
      Err(error) => js.rejected(error),
    };
    result.map(JsRaw).map_err(|t| thrown(js, t))
  }

  /// Sends a JSON-RPC request and resolves with its `result` (T2–T9).
  #[napi(
    ts_generic_types = "T = unknown",
    ts_args_type = "method: string, params?: Record<string, unknown>, options?: MCPRequestOptions",
    ts_return_type = "Promise<T>"
  )]
  pub fn request(
    &self,
    env: Env,
    method: JsArg,
    params: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    calls::request(
      js,
      &self.side,
      method.0,
      params.map(|p| p.0),
      options.map(|o| o.0),
    )
    .map(JsRaw)
    .map_err(|t| thrown(js, t))
  }

  /// Sends a JSON-RPC notification; resolves once it is written (T2, S7).
  #[napi(
    ts_args_type = "method: string, params?: Record<string, unknown>",
    ts_return_type = "Promise<void>"
  )]
  pub fn notify(&self, env: Env, method: JsArg, params: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    calls::notify(js, &self.side, method.0, params.map(|p| p.0))
      .map(JsRaw)
      .map_err(|t| thrown(js, t))
  }

  /// Stops the server (S6): stdin closed, SIGTERM, SIGKILL after 2 s, whole process group.
  /// Resolves after `onClose` has fired. Idempotent.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn close(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let Some(transport) = &self.transport else {
        return js.resolved(js.undefined());
      };
      if self.side.borrow().close_fired() {
        return js.resolved(js.undefined());
      }
      let (deferred, promise) = js.create_promise()?;
      self.side.borrow_mut().add_close_waiter(deferred);
      transport.close();
      Ok(promise)
    })();
    result.map(JsRaw).map_err(|t| thrown(js, t))
  }

  #[napi(
    getter,
    js_name = "onClose",
    ts_return_type = "(() => void) | undefined"
  )]
  pub fn get_on_close(&self) -> JsRaw {
    self.callback(CallbackSlot::Close)
  }

  #[napi(
    setter,
    js_name = "onClose",
    ts_args_type = "callback: (() => void) | undefined"
  )]
  pub fn set_on_close(&mut self, callback: JsArg) {
    self.set_callback(CallbackSlot::Close, callback)
  }

  #[napi(
    getter,
    js_name = "onError",
    ts_return_type = "((error: Error) => void) | undefined"
  )]
  pub fn get_on_error(&self) -> JsRaw {
    self.callback(CallbackSlot::Error)
  }

  #[napi(
    setter,
    js_name = "onError",
    ts_args_type = "callback: ((error: Error) => void) | undefined"
  )]
  pub fn set_on_error(&mut self, callback: JsArg) {
    self.set_callback(CallbackSlot::Error, callback)
  }

  #[napi(
    getter,
    js_name = "onNotification",
    ts_return_type = "((method: string, params: unknown) => void) | undefined"
  )]
  pub fn get_on_notification(&self) -> JsRaw {
    self.callback(CallbackSlot::Notification)
  }

  #[napi(
    setter,
    js_name = "onNotification",
    ts_args_type = "callback: ((method: string, params: unknown) => void) | undefined"
  )]
  pub fn set_on_notification(&mut self, callback: JsArg) {
    self.set_callback(CallbackSlot::Notification, callback)
  }

  #[napi(
    getter,
    js_name = "onRequest",
    ts_return_type = "((method: string, params: unknown) => unknown | Promise<unknown>) | undefined"
  )]
  pub fn get_on_request(&self) -> JsRaw {
    self.callback(CallbackSlot::Request)
  }

  #[napi(
    setter,
    js_name = "onRequest",
    ts_args_type = "callback: ((method: string, params: unknown) => unknown | Promise<unknown>) | undefined"
  )]
  pub fn set_on_request(&mut self, callback: JsArg) {
    self.set_callback(CallbackSlot::Request, callback)
  }

  #[napi(
    getter,
    js_name = "onStderr",
    ts_return_type = "((chunk: string) => void) | undefined"
  )]
  pub fn get_on_stderr(&self) -> JsRaw {
    self.callback(CallbackSlot::Stderr)
  }

  #[napi(
    setter,
    js_name = "onStderr",
    ts_args_type = "callback: ((chunk: string) => void) | undefined"
  )]
  pub fn set_on_stderr(&mut self, callback: JsArg) {
    self.set_callback(CallbackSlot::Stderr, callback)
  }
}

impl Drop for JsStdioTransport {
  fn drop(&mut self) {
    // Collected: closed (or never connected), so stop delivering and free the channel.
    drop(self.transport.take());
    // A finalizer never runs inside our own dispatch, but never panic in one if it did.
    if let Ok(mut side) = self.side.try_borrow_mut() {
      side.release();
    }
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
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match JsStdioTransport::build(js, config.0) {
      Ok(t) => t,
      Err(Thrown(error)) => return js.rejected(error),
    };
    let instance = transport
      .into_instance(&env)
      .map_err(|e| Thrown(js.error(super::js::ErrorKind::Error, &e.reason)))?;
    let this = instance.value;
    let mut instance = instance;
    match instance.start(js, this) {
      Ok(()) => js.resolved(this),
      Err(error) => js.rejected(error),
    }
  })();
  result.map(JsRaw).map_err(|t| thrown(js, t))
}
