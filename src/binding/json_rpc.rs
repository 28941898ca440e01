//! J1 `parseSSE` and J2 `callMCP`: the agent's one-shot JSON-RPC helpers.
use std::sync::atomic::{AtomicU64, Ordering};

use napi::Env;
use napi_derive::napi;

use super::args::{self, ParamsError};
use super::executor;
use super::host::JsHost;
use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::{finish, thrown};
use crate::client::call_mcp::{bounded, envelope};
use crate::host::Values;
use crate::protocol::{message, parse_sse};
use crate::transport::one_shot;

/// J1 with V8's `JSON.parse` and JS truthiness.
fn parse_sse_value(js: Js, text: &str) -> Value {
  let value = parse_sse::parse_sse(text, |data| js.json_parse(data), |v| js.truthy(*v));
  value.unwrap_or_else(|| js.null())
}

/// Parses an MCP answer that may be an SSE stream or plain JSON (J1): the first truthy JSON
/// value of a `data: ` line (lines that are not JSON are skipped, A5), else the whole text
/// as JSON, else `null`.
#[napi(
  js_name = "parseSSE",
  ts_args_type = "text: string",
  ts_return_type = "unknown"
)]
pub fn parse_sse(env: Env, text: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let Some(text) = js.rust_string(text.0) else {
    let error = js_error::type_error(js, "The \"text\" argument must be a string");
    return Err(thrown(js, Thrown(error)));
  };
  Ok(JsRaw(parse_sse_value(js, &text)))
}

/// W9: failures are also reported to `options.logger.error`, when given.
fn log_failure(js: Js, logger: Value, message: &str, url: &str, method: &str) {
  let Some(error) = js.get(logger, "error").ok().filter(|f| js.is_function(*f)) else {
    return;
  };
  let url = crate::redaction::redact_url_for_log(url);
  let message = &crate::redaction::redact_secrets(message);
  let context = js
    .json_parse(&serde_json::json!({ "url": url, "method": method, "error": message }).to_string());
  let context = context.unwrap_or_else(|_| js.undefined());
  let _ = js.call(error, logger, &[js.string(message), context]);
}

/// J2: one JSON-RPC request by POST (no session); resolves with the whole envelope
/// `{jsonrpc, id, result?, error?}`. A6: `options.signal` aborts it; without one it gives up
/// after 60 s (an Error named `TimeoutError`).
#[napi(
  js_name = "callMCP",
  ts_generic_types = "T = unknown",
  ts_args_type = "url: string, method: string, params?: Record<string, unknown>, options?: CallMcpOptions",
  ts_return_type = "Promise<JsonRpcResponse<T>>"
)]
pub fn call_mcp(
  env: Env,
  url: JsArg,
  method: JsArg,
  params: Option<JsArg>,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  static NEXT_ID: AtomicU64 = AtomicU64::new(1);
  let js = Js::new(env.raw());
  let invalid = |message: String| {
    js.rejected(js_error::type_error(js, &message))
      .map(JsRaw)
      .map_err(|t| thrown(js, t))
  };
  let Some(url_text) = js.rust_string(url.0) else {
    return invalid("The \"url\" argument must be a string".to_string());
  };
  let Ok(parsed_url) = reqwest::Url::parse(&url_text) else {
    return invalid(format!(
      "The \"url\" argument must be a valid URL, got {url_text:?}"
    ));
  };
  let method = match args::method(js, method.0) {
    Ok(m) => m,
    Err(message) => return invalid(message),
  };
  let params = match args::params(js, params.map(|p| p.0)) {
    Ok(p) => p,
    Err(ParamsError::Type(message)) => return invalid(message),
    Err(ParamsError::Thrown(e)) => return js.rejected(e).map(JsRaw).map_err(|t| thrown(js, t)),
  };
  let signal = match args::signal(js, options.map(|o| o.0)) {
    Ok(signal) => signal,
    Err(message) => return invalid(message),
  };
  let logger = options
    .map(|o| o.0)
    .filter(|o| js.type_of(*o) == napi::sys::ValueType::napi_object)
    .and_then(|o| js.get(o, "logger").ok())
    .filter(|l| js.type_of(*l) == napi::sys::ValueType::napi_object);
  let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
  let frame = message::request_frame(id, &method, params.as_deref());
  let host = JsHost::new(js);
  let logger = logger.map(|l| host.hold(l));
  let signal = signal.map(|s| host.hold(s));
  let answering = executor::on_runtime(js, one_shot::post(parsed_url, frame));
  let calling = async move {
    let answered = async {
      match answering.await {
        None => Err(host.error("The async runtime could not start")),
        Some(Err(error)) => Err(host.hold(js_error::to_js(js, &error))),
        Some(Ok(answer)) => envelope(&host, &answer),
      }
    };
    let outcome = bounded(&host, signal.as_ref(), answered).await;
    if let (Err(error), Some(logger)) = (&outcome, &logger) {
      log_failure(js, logger.get(js), &host.message(error), &url_text, &method);
    }
    outcome
  };
  finish(js, executor::promise(js, calling))
}

/// A4: `url` for a log line: the values of query parameters whose name matches
/// `/key|token|secret|auth/i` (and passwords, signatures, credentials) become `[redacted]`,
/// as does the userinfo; text that is not a URL keeps only what precedes its `?`.
#[napi(js_name = "redactUrlForLog")]
pub fn redact_url_for_log(url: String) -> String {
  crate::redaction::redact_url_for_log(&url)
}

/// `text` with every secret the client knows how to spot replaced by `[redacted]`: secret
/// query parameters and userinfo of URLs in it, `Bearer`/`Basic` credentials, secret-named
/// `name: value` pairs. What every error message of this package already went through.
#[napi(js_name = "redactSecrets")]
pub fn redact_secrets(text: String) -> String {
  crate::redaction::redact_secrets(&text)
}

/// A1: the protocol version the agent offers.
#[napi(js_name = "MCP_PROTOCOL_VERSION")]
pub const MCP_PROTOCOL_VERSION: &str = crate::client::handshake::DEFAULT_PROTOCOL_VERSION;

/// A1: where the agent's `.mcp.json` schema lives.
#[napi(js_name = "MCP_CONFIG_SCHEMA_URL")]
pub const MCP_CONFIG_SCHEMA_URL: &str =
  "https://raw.githubusercontent.com/can1357/oh-my-pi/main/packages/coding-agent/src/config/mcp-schema.json";

/// A1: the server notifications the agent acts on, under the agent's key names.
#[allow(non_camel_case_types)]
#[napi(string_enum, js_name = "MCPNotificationMethods")]
pub enum McpNotificationMethods {
  #[napi(value = "notifications/tools/list_changed")]
  TOOLS_LIST_CHANGED,
  #[napi(value = "notifications/resources/list_changed")]
  RESOURCES_LIST_CHANGED,
  #[napi(value = "notifications/prompts/list_changed")]
  PROMPTS_LIST_CHANGED,
  #[napi(value = "notifications/resources/updated")]
  RESOURCES_UPDATED,
}

/// A3: a thrown value as a JSON-RPC error object `{code, message}`.
#[napi(
  js_name = "toJsonRpcError",
  ts_args_type = "error: unknown",
  ts_return_type = "{ code: number; message: string }"
)]
pub fn to_json_rpc_error(env: Env, error: JsArg) -> napi::Result<JsRaw> {
  use crate::client::server_requests::{self, ThrownShape};
  let js = Js::new(env.raw());
  let value = error.0;
  let field = |name: &str| {
    (js.type_of(value) == napi::sys::ValueType::napi_object)
      .then(|| js.get(value, name).ok())
      .flatten()
  };
  let code = field("code").and_then(|c| js.number_value(c));
  let shape = if js.is_error(value) {
    ThrownShape::Error {
      code,
      message: js.error_message(value),
    }
  } else if js.type_of(value) == napi::sys::ValueType::napi_object {
    ThrownShape::Object {
      code,
      message: field("message").and_then(|m| {
        (js.type_of(m) == napi::sys::ValueType::napi_string)
          .then(|| js.rust_string(m))
          .flatten()
      }),
    }
  } else {
    ThrownShape::Other
  };
  let (code, message) = server_requests::to_json_rpc_error(shape);
  let built = (|| {
    let object = js.object()?;
    js.set(object, "code", js.number(code));
    js.set(object, "message", js.string(&message));
    Ok::<_, Thrown>(object)
  })();
  built.map(JsRaw).map_err(|t| thrown(js, t))
}
