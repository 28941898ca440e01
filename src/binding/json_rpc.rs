//! J1 `parseSSE` and J2 `callMCP`: the agent's one-shot JSON-RPC helpers.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use napi::bindgen_prelude::{FromNapiValue, Unknown};
use napi::Env;
use napi_derive::napi;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use super::args::{self, ParamsError};
use super::js::{ErrorKind, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::transport_class::thrown;
use crate::error::CoreError;
use crate::protocol::{message, parse_sse};
use crate::runtime;

/// J1 with V8's `JSON.parse` and JS truthiness.
fn parse_sse_value(js: Js, text: &str) -> Result<Value, Thrown> {
  let value = parse_sse::parse_sse(text, |data| js.json_parse(data), |v| js.truthy(*v))?;
  Ok(value.unwrap_or_else(|| js.null()))
}

/// Parses an MCP answer that may be an SSE stream or plain JSON (J1). Throws when a `data:`
/// line is not JSON.
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
  parse_sse_value(js, &text)
    .map(JsRaw)
    .map_err(|t| thrown(js, t))
}

fn client() -> Option<&'static reqwest::Client> {
  static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
  CLIENT
    .get_or_init(|| {
      let _context = runtime::handle()?.enter();
      reqwest::Client::builder().build().ok()
    })
    .as_ref()
}

struct Answer {
  status: u16,
  status_text: String,
  body: String,
}

async fn post(url: reqwest::Url, frame: String) -> Result<Answer, CoreError> {
  let client = client().ok_or_else(|| CoreError::Network {
    message: "The HTTP client could not start".to_string(),
    code: None,
  })?;
  let response = client
    .post(url.clone())
    .header(CONTENT_TYPE, "application/json")
    .header(ACCEPT, "application/json, text/event-stream")
    .body(frame)
    .send()
    .await
    .map_err(|e| crate::transport::http::network_error(&url, &e))?;
  let status = response.status();
  let body = response
    .text()
    .await
    .map_err(|e| crate::transport::http::network_error(&url, &e))?;
  Ok(Answer {
    status: status.as_u16(),
    status_text: status.canonical_reason().unwrap_or_default().to_string(),
    body,
  })
}

fn reject_with(js: Js, value: Value) -> napi::Error {
  // SAFETY: value is a live value of this env, used on the JS thread.
  match unsafe { Unknown::from_napi_value(js.env, value) } {
    Ok(unknown) => napi::Error::from(unknown),
    Err(e) => e,
  }
}

/// W9: failures are also reported to `options.logger.error`, when given.
fn log_failure(js: Js, logger: Option<Value>, message: &str, url: &str, method: &str) {
  let Some(logger) = logger else { return };
  let Some(error) = js.get(logger, "error").ok().filter(|f| js.is_function(*f)) else {
    return;
  };
  let context = js
    .json_parse(&serde_json::json!({ "url": url, "method": method, "error": message }).to_string());
  let context = context.unwrap_or_else(|_| js.undefined());
  let _ = js.call(error, logger, &[js.string(message), context]);
}

/// J2: one JSON-RPC request by POST (no session, no timeout); resolves with the whole
/// envelope `{jsonrpc, id, result?, error?}`.
#[napi(
  js_name = "callMCP",
  ts_generic_types = "T = unknown",
  ts_args_type = "url: string, method: string, params?: Record<string, unknown>, options?: { logger?: { error?: (message: string, context?: Record<string, unknown>) => void } }",
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
  let logger = options
    .map(|o| o.0)
    .filter(|o| js.type_of(*o) == napi::sys::ValueType::napi_object)
    .and_then(|o| js.get(o, "logger").ok())
    .filter(|l| js.type_of(*l) == napi::sys::ValueType::napi_object);
  // The logger must outlive this call: keep it referenced until the answer.
  let logger_ref = logger.map(|l| js.new_ref(l, 1) as usize);
  let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
  let frame = message::request_frame(id, &method, params.as_deref());
  let Some(handle) = runtime::handle() else {
    return invalid("The async runtime could not start".to_string());
  };
  let task = handle.spawn(post(parsed_url, frame));
  let work = async move {
    task
      .await
      .map_err(|e| napi::Error::from_reason(e.to_string()))
  };
  let promise = env.spawn_future_with_callback(work, move |env, answer| {
    let js = Js::new(env.raw());
    let logger = logger_ref.and_then(|r| {
      let r = r as napi::sys::napi_ref;
      let value = js.ref_value(r);
      js.delete_ref(r);
      value
    });
    let outcome = match answer {
      Err(error) => Err(js_error::to_js(js, &error)),
      Ok(answer) if !(200..300).contains(&answer.status) => Err(js.error(
        ErrorKind::Error,
        &format!(
          "MCP request failed: {} {}",
          answer.status, answer.status_text
        ),
      )),
      Ok(answer) => match parse_sse_value(js, &answer.body) {
        Err(Thrown(e)) => Err(e),
        Ok(value) if js.is_nullish(value) => {
          Err(js.error(ErrorKind::Error, "Failed to parse MCP response"))
        }
        Ok(value) => Ok(value),
      },
    };
    match outcome {
      Ok(value) => Ok(JsRaw(value)),
      Err(error) => {
        let message = js
          .get(error, "message")
          .ok()
          .and_then(|m| js.rust_string(m))
          .unwrap_or_default();
        log_failure(js, logger, &message, &url_text, &method);
        Err(reject_with(js, error))
      }
    }
  });
  match promise {
    Ok(promise) => Ok(JsRaw(napi::JsValue::value(&promise).value)),
    Err(e) => Err(e),
  }
}
