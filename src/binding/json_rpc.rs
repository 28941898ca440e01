//! J1 `parseSSE` and J2 `callMCP`: the agent's one-shot JSON-RPC helpers.
use std::sync::atomic::{AtomicU64, Ordering};

use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::{finish, thrown};
use crate::client::call_mcp;
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
  let host = JsHost::new(js);
  let held = |value: Option<JsArg>| value.map(|v| host.hold(v.0));
  let (params, options) = (held(params), held(options));
  let args = call_mcp::read_args(
    &host,
    &host.hold(url.0),
    &host.hold(method.0),
    params.as_ref(),
    options.as_ref(),
  );
  let args = match args {
    Ok(args) => args,
    Err(error) => return finish(js, js.rejected(error.get(js))),
  };
  let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
  let frame = message::request_frame(id, &args.method, args.params.as_deref());
  let answering = executor::on_runtime(js, one_shot::post(args.url.clone(), frame));
  let calling = async move {
    let answered = async {
      match answering.await {
        None => Err(host.error("The async runtime could not start")),
        Some(Err(error)) => Err(host.hold(js_error::to_js(
          js,
          crate::transport_error::TransportKind::Http,
          &error,
        ))),
        Some(Ok(answer)) => call_mcp::envelope(&host, &answer),
      }
    };
    let outcome = call_mcp::bounded(&host, args.signal.as_ref(), answered).await;
    if let (Err(error), Some(logger)) = (&outcome, &args.logger) {
      let message = host.message(error);
      call_mcp::log_failure(&host, logger, &message, &args.url_text, &args.method);
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
  let js = Js::new(env.raw());
  let h = JsHost::new(js);
  crate::client::server_requests::json_rpc_error_value(&h, &h.hold(error.0))
    .map(|value| JsRaw(value.get(js)))
    .map_err(|error| thrown(js, Thrown(error.get(js))))
}
