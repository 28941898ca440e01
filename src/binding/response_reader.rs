//! A53 `readMcpJsonRpcResponse`: a JS `Response` read chunk by chunk into
//! `protocol::response_select`, which decides what the answer is.
use std::rc::Rc;

use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{ErrorKind, Held, Js, JsArg, JsRaw, Value};
use super::js_error::finish;
use crate::host::{unless_aborted, Callbacks, Signals, Values};
use crate::protocol::response_select::{ResponseSelector, SelectError};

/// The JS error a selection failure is: a `SyntaxError` for a malformed message, else an
/// `Error`, with the agent's words.
pub fn select_error(js: Js, error: SelectError) -> Value {
  let kind = if error.is_syntax() {
    ErrorKind::SyntaxError
  } else {
    ErrorKind::Error
  };
  js.error(kind, error.message())
}

/// A request id as `===` compares it: a string or a number, else nothing matches.
pub fn request_id(host: &JsHost, id: &Held) -> serde_json::Value {
  if let Some(text) = host.as_string(id) {
    return serde_json::Value::String(text);
  }
  host
    .as_number(id)
    .and_then(serde_json::Number::from_f64)
    .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn aborted(host: &JsHost, signal: Option<&Held>) -> Result<(), Held> {
  match signal.and_then(|s| host.abort_reason(s)) {
    Some(reason) => Err(reason),
    None => Ok(()),
  }
}

/// Lets the rest of a body go; a failure to cancel is nobody's concern.
fn cancel(host: &JsHost, reader: &Held) {
  if let Ok(cancelling) = host.call_now(reader, "cancel", Vec::new()) {
    if let Ok(ignore) = host.procedure("ignore", Rc::new(|| {})) {
      drop(host.call_now(&cancelling, "catch", vec![ignore]));
    }
  }
}

/// The answer to `expected` in `response`, as the agent's reader finds it: events of a
/// `text/event-stream` body until the answer (the rest of the stream is cancelled), else
/// the whole body as JSON. `signal` aborts the reading.
pub async fn read_response(
  host: JsHost,
  response: Held,
  expected: serde_json::Value,
  signal: Option<Held>,
) -> Result<Held, Held> {
  let js = host.js;
  let signal = signal.as_ref();
  aborted(&host, signal)?;
  let headers = host.field(&response, "headers")?;
  let content_type = host.call_now(&headers, "get", vec![host.string("Content-Type")])?;
  let mut selector = ResponseSelector::new(expected, host.as_string(&content_type).as_deref());
  let selected = if selector.is_event_stream() {
    let body = host.field(&response, "body")?;
    if host.is_nullish(&body) {
      return Err(host.hold(select_error(js, SelectError::NoBody)));
    }
    let reader = host.call_now(&body, "getReader", Vec::new())?;
    loop {
      let read = unless_aborted(&host, signal, host.call_method(&reader, "read", &[])).await;
      let read = match read {
        Ok(read) => read,
        Err(error) => {
          cancel(&host, &reader);
          return Err(error);
        }
      };
      if host.truthy(&host.field(&read, "done")?) {
        break selector.finish();
      }
      let chunk = host.field(&read, "value")?;
      let pushed = match host.bytes(&chunk) {
        Some(bytes) => selector.push(&bytes),
        None => selector.push(host.as_string(&chunk).unwrap_or_default().as_bytes()),
      };
      match pushed {
        Ok(None) => {}
        Ok(Some(answer)) => {
          cancel(&host, &reader);
          break Ok(answer);
        }
        Err(error) => {
          cancel(&host, &reader);
          break Err(error);
        }
      }
    }
  } else {
    let text = unless_aborted(&host, signal, host.call_method(&response, "text", &[])).await?;
    selector
      .push(host.as_string(&text).unwrap_or_default().as_bytes())
      .and_then(|_| selector.finish())
  };
  aborted(&host, signal)?;
  match selected {
    Ok(answer) => host.json(&answer),
    Err(error) => Err(host.hold(select_error(js, error))),
  }
}

/// A53: the JSON-RPC answer to request `expectedId` in a `Response` (JSON or SSE):
/// notifications and server requests are skipped; rejects with `MCP response ID did not
/// match request ID` when only other requests were answered, and with a `SyntaxError`
/// (`Malformed JSON-RPC message`, …) on a message that is not JSON-RPC.
#[napi(
  js_name = "readMcpJsonRpcResponse",
  ts_args_type = "response: Response, expectedId: string | number, signal?: AbortSignal",
  ts_return_type = "Promise<JsonRpcResponse>"
)]
pub fn read_mcp_json_rpc_response(
  env: Env,
  response: JsArg,
  expected_id: JsArg,
  signal: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let response = host.hold(response.0);
  let expected = request_id(&host, &host.hold(expected_id.0));
  let signal = signal
    .map(|s| host.hold(s.0))
    .filter(|s| !host.is_nullish(s));
  finish(
    js,
    executor::promise(js, read_response(host, response, expected, signal)),
  )
}
