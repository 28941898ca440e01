//! `HttpTransport` / `createHttpTransport` (H1–H11), `callMCP` and `parseSSE` (J1, J2).
use std::cell::OnceCell;

use napi::bindgen_prelude::This;
use napi::Env;
use napi_derive::napi;

use super::host::JsHost;
use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error::{self, thrown};
use super::js_side::{CallbackSlot, JsSide, Shared};
use super::request_entry::SharedOnly;
use super::transport_class::{
  attach, auth_error_accessors, create_connected, runtime_handle, started, transport_class,
  StartableClass,
};
use crate::transport::http::{HttpConfig, HttpTransport};

/// An MCP server over Streamable HTTP (`type: "http"`), or over HTTP+SSE (`type: "sse"`,
/// including servers that only speak the 2024-11-05 protocol).
#[napi(js_name = "HttpTransport")]
pub struct JsHttpTransport {
  config: HttpConfig,
  side: Shared,
  /// Set once, by the first `connect()`.
  transport: OnceCell<HttpTransport>,
}

transport_class!(JsHttpTransport, "HttpTransport", entered: true);

// SAFETY: every method, getter and setter takes `&self`; the transport is set once
// (`OnceCell`), the rest changes behind the `side`'s `RefCell` or an atomic.
unsafe impl SharedOnly for JsHttpTransport {}
auth_error_accessors!(JsHttpTransport);

impl StartableClass for JsHttpTransport {
  fn build(js: Js, config: Value) -> Result<Self, Thrown> {
    let host = JsHost::new(js);
    let config_value = config;
    let mut config = crate::config::http_config(&host, &host.hold(config))
      .map_err(|message| Thrown(js_error::type_error(js, &message)))?;
    config.trust.insecure = super::args::tls_insecure(js);
    config.trust.proxies = Some(super::args::proxy_vars(js));
    let side = JsSide::new(
      js.env,
      super::pump::deliver,
      crate::transport_error::TransportKind::Http,
    )?;
    side.borrow_mut().timeout_input = super::timeout_resolver::config_input(js, config_value);
    if let Some(settings) = &config.oauth {
      let field = if settings.provider {
        "authProvider"
      } else {
        "oauth"
      };
      if let Ok(oauth) = js.get(config_value, field) {
        side.borrow_mut().set_auth(oauth);
      }
    }
    Ok(JsHttpTransport {
      config,
      side,
      transport: OnceCell::new(),
    })
  }

  /// H1: marks the transport connected; no network traffic.
  fn start(&self, js: Js, this: Value) -> Result<(), Value> {
    if self.transport.get().is_some() {
      return Ok(());
    }
    let handle = runtime_handle(js)?;
    let sink = self.side.borrow().sink();
    let transport = HttpTransport::connect(self.config.clone(), sink, &handle)
      .map_err(|e| js_error::to_js(js, crate::transport_error::TransportKind::Http, &e))?;
    attach(&self.side, transport.session(), this);
    // No JS ran since the check above: the cell is still empty.
    let _ = self.transport.set(transport);
    Ok(())
  }
}

impl JsHttpTransport {
  fn current_transport(&self) -> Option<&HttpTransport> {
    self.transport.get()
  }

  fn set_slot(&self, slot: CallbackSlot, value: JsArg) {
    self.side.borrow_mut().set_callback(slot, value.0);
  }
}

#[napi]
impl JsHttpTransport {
  /// A Streamable HTTP transport for `config`, not yet connected (`connect()` does; H1).
  #[napi(
    constructor,
    ts_args_type = "config: MCPHttpServerConfig | MCPSseServerConfig"
  )]
  pub fn new(env: Env, config: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    Self::build(js, config.0).map_err(|t| thrown(js, t))
  }

  /// The server URL.
  #[napi(getter)]
  pub fn url(&self) -> String {
    self.config.url.to_string()
  }

  /// The `Mcp-Session-Id` the server issued, if any (H3).
  #[napi(getter, ts_return_type = "string | null")]
  pub fn session_id(&self) -> Option<String> {
    self.transport.get().and_then(|t| t.session_id())
  }

  /// Marks the transport connected (H1). A second call is a no-op.
  #[napi(ts_args_type = "", ts_return_type = "Promise<void>")]
  pub fn connect(&self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    started(js, self.start(js, this.object.0))
  }

  /// O1: completes the two-step flow of `config.authProvider`: after a request rejected
  /// with `UnauthorizedError` and the user agent came back, `callbackUrl` (or just the
  /// authorization code) is exchanged for tokens, which the provider's `saveTokens` gets.
  #[napi(ts_args_type = "callbackUrl: string", ts_return_type = "Promise<void>")]
  pub fn finish_auth(&self, env: Env, callback: JsArg) -> napi::Result<JsRaw> {
    use super::executor::{on_runtime, promise};
    use super::js::Held;
    let js = Js::new(env.raw());
    let result = (|| {
      let Some(callback) = js.rust_string(callback.0) else {
        return js.rejected(js_error::type_error(
          js,
          "The \"callbackUrl\" argument must be a string",
        ));
      };
      let Some(auth) = self.transport.get().and_then(|t| t.authorizer()) else {
        let error = js.error(
          super::js::ErrorKind::Error,
          "finishAuth() needs a transport with config.authProvider or config.oauth",
        );
        return js.rejected(error);
      };
      let done = on_runtime(js, async move { auth.finish(&callback).await });
      promise(js, async move {
        match done.await {
          None => Err(super::js_error::runtime_failure(js)),
          Some(Ok(())) => Ok(Held::new(js, js.undefined())),
          Some(Err(error)) => Err(Held::new(
            js,
            js_error::to_js(js, crate::transport_error::TransportKind::Http, &error),
          )),
        }
      })
    })();
    super::js_error::finish(js, result)
  }

  /// A17: the negotiated protocol version, sent as `MCP-Protocol-Version` on everything
  /// after (whatever the version). Throws a TypeError for a value a header cannot carry.
  #[napi(js_name = "setProtocolVersion", ts_args_type = "version: string")]
  pub fn set_protocol_version(&self, env: Env, version: JsArg) -> napi::Result<()> {
    let js = Js::new(env.raw());
    let accepted = js.rust_string(version.0).is_some_and(|v| {
      self
        .transport
        .get()
        .is_none_or(|t| t.set_protocol_version(&v))
    });
    if accepted {
      return Ok(());
    }
    let message = "The \"version\" argument must be a string a header can carry";
    Err(thrown(js, Thrown(js_error::type_error(js, message))))
  }

  /// O1: milliseconds the OAuth flow has waited for the user agent (the connect timeout
  /// leaves them out). Not part of the typed API.
  #[napi(js_name = "_userWaitMs", skip_typescript)]
  pub fn user_wait_ms(&self) -> f64 {
    self
      .transport
      .get()
      .map_or(0.0, |t| t.user_wait().as_secs_f64() * 1000.0)
  }
}

impl JsHttpTransport {
  /// H8: the server's GET event stream, delivered until it ends or `close()`.
  fn start_handshake_listener(&self, js: Js) -> Result<Value, Thrown> {
    let session = self.transport.get().map(|t| t.session().clone());
    let Some(session) = session.filter(|s| s.is_connected()) else {
      return js.resolved(js.undefined());
    };
    // A9/A20: the wait for the GET's answer follows the timeout as the resolver gives it.
    let input = self.side.borrow().timeout_input;
    let timeout = super::timeout_resolver::resolve(js, input)?;
    let (deferred, promise) = js.create_promise()?;
    // Until the GET is answered (at most the wait above) a caller awaits this, as it would
    // a fetch: the host stays alive. The stream that follows does not keep it alive (§0).
    let ticket = session.track(crate::session::Hooks::promise(
      super::request_hooks::of_deferred(deferred),
    ));
    self.side.borrow_mut().update_keep_alive();
    if let Some(transport) = self.transport.get() {
      transport.start_listener(ticket, timeout);
    }
    Ok(promise)
  }
}

/// A20: how long `startSSEListener()` waits for the GET's answer, from a config's timeout
/// in ms as the timeout resolver (A9) resolves it (without one, `timeout ?? 30000`): 0 when
/// that is off, else a quarter of it, between 1 ms and 1000 ms.
#[napi(
  js_name = "resolveSSEConnectTimeoutMs",
  ts_args_type = "configTimeout?: number",
  ts_return_type = "number"
)]
pub fn resolve_sse_connect_timeout_ms(env: Env, timeout: Option<JsArg>) -> napi::Result<f64> {
  let js = Js::new(env.raw());
  let input = timeout.and_then(|t| js.number_value(t.0));
  let ms = match super::timeout_resolver::resolve(js, input) {
    Ok(Some(resolved)) => resolved.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    Ok(None) => input.unwrap_or(crate::config::DEFAULT_TIMEOUT_MS),
    Err(error) => return Err(thrown(js, error)),
  };
  Ok(crate::transport::http::sse_connect_timeout_ms(ms))
}

/// `new HttpTransport(config)` + `connect()`. Never throws: a bad config rejects with a
/// TypeError (E2).
#[napi(
  js_name = "createHttpTransport",
  ts_args_type = "config: MCPHttpServerConfig | MCPSseServerConfig, options?: { oauth?: MCPOAuthOptions }",
  ts_return_type = "Promise<HttpTransport>"
)]
pub fn create_http_transport(
  env: Env,
  config: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let config = if js.is_record(config.0) {
    let host = JsHost::new(js);
    let options = options.map(|o| host.hold(o.0));
    match crate::config::with_oauth_option(&host, &host.hold(config.0), options.as_ref()) {
      Ok(config) => config.get(js),
      Err(error) => return super::js_error::finish(js, js.rejected(error.get(js))),
    }
  } else {
    config.0
  };
  create_connected::<JsHttpTransport>(env, config)
}
