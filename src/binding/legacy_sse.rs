//! `LegacySseTransport` / `createSseTransport` (A22, A23): the legacy HTTP+SSE protocol of
//! MCP 2024-11-05, as seen from JS.
use napi::bindgen_prelude::{JavaScriptClassExt, This};
use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::{finish, thrown};
use super::js_side::{CallbackSlot, JsSide, Shared};
use super::transport_class::{auth_error_accessors, runtime_handle, transport_class};
use crate::transport::legacy_sse::{LegacySseConfig, LegacySseTransport, State};

/// An MCP server that only speaks the legacy HTTP+SSE protocol (2024-11-05): `connect()`
/// opens its event stream, whose `endpoint` event names where messages are POSTed; the
/// answers come on that stream.
#[napi(js_name = "LegacySseTransport")]
pub struct JsLegacySseTransport {
  config: LegacySseConfig,
  side: Shared,
  /// From the first `connect()` on; a failed connect's is dropped again.
  transport: Option<LegacySseTransport>,
  /// The promise of the connect under way, which a second `connect()` gets too.
  connecting: Option<Held>,
}

// Not entered: a failed connect replaces its transport, through `&mut self`.
transport_class!(JsLegacySseTransport, "LegacySseTransport", entered: false);
auth_error_accessors!(JsLegacySseTransport);

impl JsLegacySseTransport {
  fn build(js: Js, config: Value) -> Result<Self, Thrown> {
    let host = JsHost::new(js);
    let timeout_input = super::timeout_resolver::config_input(js, config);
    let mut config = crate::config::legacy_sse_config(&host, &host.hold(config))
      .map_err(|message| Thrown(js_error::type_error(js, &message)))?;
    config.trust.insecure = super::args::tls_insecure(js);
    config.trust.proxies = Some(super::args::proxy_vars(js));
    let side = JsSide::new(
      js.env,
      super::pump::deliver,
      crate::transport_error::TransportKind::Http,
    )?;
    side.borrow_mut().timeout_input = timeout_input;
    Ok(JsLegacySseTransport {
      config,
      side,
      transport: None,
      connecting: None,
    })
  }

  /// A22: the connect promise. Connected or closed: a no-op; connecting: the same promise.
  fn start(&mut self, js: Js, this: Value) -> Result<Value, Thrown> {
    match self.transport.as_ref().map(LegacySseTransport::state) {
      Some(State::Open | State::Closed) => return js.resolved(js.undefined()),
      Some(State::Opening) => {
        if let Some(promise) = &self.connecting {
          return Ok(promise.get(js));
        }
      }
      Some(State::Failed) | None => {}
    }
    // A9: the connect timeout is resolved as the connect starts.
    let input = self.side.borrow().timeout_input;
    let limit = match super::timeout_resolver::resolve(js, input) {
      Ok(resolved) => resolved.unwrap_or(self.config.timeout),
      Err(Thrown(error)) => return js.rejected(error),
    };
    let handle = match runtime_handle(js) {
      Ok(handle) => handle,
      Err(error) => return js.rejected(error),
    };
    let sink = self.side.borrow().sink();
    let transport = match LegacySseTransport::new(self.config.clone(), sink, &handle) {
      Ok(transport) => transport,
      Err(error) => {
        return js.rejected(js_error::to_js(
          js,
          crate::transport_error::TransportKind::Http,
          &error,
        ))
      }
    };
    let session = transport.session().clone();
    // Set now, unconnected: requests meanwhile get T10's error, and a server request that
    // arrives right after the endpoint finds the session to answer through.
    self.side.borrow_mut().session = Some(session.clone());
    let opened = executor::on_runtime(js, transport.open(limit));
    self.transport = Some(transport);
    let side = self.side.clone();
    let this = Held::new(js, this);
    let promise = executor::promise(js, async move {
      let outcome = opened
        .await
        .ok_or_else(|| super::js_error::runtime_failure(js))?;
      match outcome {
        Ok(()) => {
          // Held while connected (released when `Closed` arrives); a stream that already
          // ended has its `Closed` on the way, and nothing to hold.
          if session.is_connected() {
            side.borrow_mut().hold(this.get(js));
          }
          Ok(Held::new(js, js.undefined()))
        }
        Err(error) => {
          forget_failed_connect(js, &this);
          Err(Held::new(
            js,
            js_error::to_js(js, crate::transport_error::TransportKind::Http, &error),
          ))
        }
      }
    })?;
    self.connecting = Some(Held::new(js, promise));
    Ok(promise)
  }

  /// The one stream already carries everything: nothing more to open.
  fn start_handshake_listener(&self, js: Js) -> Result<Value, Thrown> {
    js.resolved(js.undefined())
  }

  fn current_transport(&self) -> Option<&LegacySseTransport> {
    self.transport.as_ref()
  }

  fn set_slot(&self, slot: CallbackSlot, value: JsArg) {
    self.side.borrow_mut().set_callback(slot, value.0);
  }
}

/// A failed connect leaves nothing to close (`close()` is then a no-op without `onClose`,
/// A21) and lets a later `connect()` start afresh. The instance is reached through its JS
/// object, as the connect settles after the call that started it has returned.
fn forget_failed_connect(js: Js, this: &Held) {
  let this = this.get(js);
  if let Ok(forget) = js.get(this, "_forgetFailedConnect") {
    if js.is_function(forget) {
      let _ = js.call(forget, this, &[]);
    }
  }
}

#[napi]
impl JsLegacySseTransport {
  /// A legacy HTTP+SSE transport for `config`, not yet connected (`connect()` opens the GET stream; A22).
  #[napi(constructor, ts_args_type = "config: MCPSseServerConfig")]
  pub fn new(env: Env, config: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    Self::build(js, config.0).map_err(|t| thrown(js, t))
  }

  /// The server URL (the event stream's).
  #[napi(getter)]
  pub fn url(&self) -> String {
    self.config.url.to_string()
  }

  /// GETs `url` and resolves once its `endpoint` event names where messages go (A22).
  /// Rejects with `HTTP <status>: <body>`, `Legacy SSE endpoint event not received`,
  /// `Legacy SSE endpoint timeout after <ms>ms`, … A second call while connected is a
  /// no-op; while connecting it gets the same promise.
  #[napi(ts_args_type = "", ts_return_type = "Promise<void>")]
  pub fn connect(&mut self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = self.start(js, this.object.0);
    finish(js, result)
  }

  /// See `forget_failed_connect`; not part of the typed API.
  #[napi(js_name = "_forgetFailedConnect", skip_typescript)]
  pub fn forget_failed(&mut self) {
    if self
      .transport
      .as_ref()
      .is_some_and(|t| t.state() == State::Failed)
    {
      self.transport = None;
      self.connecting = None;
      self.side.borrow_mut().session = None;
    }
  }
}

/// `new LegacySseTransport(config)` + `connect()`. Never throws: a bad config rejects with
/// a TypeError (E2).
#[napi(
  js_name = "createSseTransport",
  ts_args_type = "config: MCPSseServerConfig",
  ts_return_type = "Promise<LegacySseTransport>"
)]
pub fn create_sse_transport(env: Env, config: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match JsLegacySseTransport::build(js, config.0) {
      Ok(transport) => transport,
      Err(Thrown(error)) => return js.rejected(error),
    };
    let mut instance = transport
      .into_instance(&env)
      .map_err(|e| Thrown(js.error(ErrorKind::Error, &e.reason)))?;
    let this = instance.value;
    let connected = executor::settled(js, instance.start(js, this)?);
    let this = Held::new(js, this);
    executor::promise(js, async move { connected.await.map(|_| this) })
  })();
  finish(js, result)
}
