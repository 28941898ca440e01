//! J1 `parseSSE` and `callMCP` (J2, A52–A54): the agent's one-shot JSON-RPC helpers.
use std::sync::atomic::{AtomicU64, Ordering};

use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::{finish, thrown};
use super::response_reader::{read_response, select_error};
use crate::client::call_mcp;
use crate::host::{Callbacks, Values};
use crate::protocol::{message, parse_sse};
use crate::transport::one_shot;
use crate::transport_error::TransportKind;

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

/// One JSON-RPC request by POST (no session); resolves with the answer's envelope
/// `{jsonrpc, id, result | error}`. A52–A54 (18.3.4): `options.fetch` sends it (else this
/// package's HTTP client), `options.headers` go over the defaults, the answer is read as
/// `readMcpJsonRpcResponse` reads it, `onHttpError` / `onParseError` make the errors; without
/// `options.signal` it gives up after 60 s. J2 (v12) with `compat: "v12"`.
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
  if args.v12 {
    return finish(js, executor::promise(js, call_v12(host, args)));
  }
  // A52: the agent's `AbortSignal.timeout(60_000)` when the caller gives no signal.
  let signal = match args.signal.clone() {
    Some(signal) => signal,
    None => {
      let timeout = js
        .get(js.global(), "AbortSignal")
        .and_then(|class| {
          let function = js.get(class, "timeout")?;
          js.call(
            function,
            class,
            &[js.number(call_mcp::DEADLINE.as_millis() as f64)],
          )
        })
        .map_err(|error| thrown(js, error))?;
      host.hold(timeout)
    }
  };
  finish(js, executor::promise(js, call(host, args, signal)))
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// J2 (v12): the first truthy `data:` line or the whole text; every failure logged.
async fn call_v12(host: JsHost, args: call_mcp::CallMcpArgs<Held>) -> Result<Held, Held> {
  let js = host.js;
  let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
  let frame = message::request_frame(id, &args.method, args.params.as_deref());
  let answering = executor::on_runtime(js, one_shot::post(args.url.clone(), frame));
  let answered = async {
    match answering.await {
      None => Err(js_error::runtime_failure(js)),
      Some(Err(error)) => Err(host.hold(js_error::to_js(js, TransportKind::Http, &error))),
      Some(Ok(answer)) => call_mcp::envelope(&host, &answer),
    }
  };
  let outcome = call_mcp::bounded(&host, args.signal.as_ref(), answered).await;
  if let (Err(error), Some(logger)) = (&outcome, &args.logger) {
    let message = host.message(error);
    call_mcp::log_failure(
      &host,
      logger,
      &message,
      &args.url_text,
      &args.method,
      &message,
    );
  }
  outcome
}

/// How an A52 call failed.
enum Failure {
  /// Thrown as it is: a network failure, the signal's reason, a refused status's error.
  Thrown(Held),
  /// The answer could not be read: logged, then `onParseError(error) ?? error` is thrown.
  Unreadable(Held),
}

/// A52–A54 (18.3.4).
async fn call(host: JsHost, args: call_mcp::CallMcpArgs<Held>, signal: Held) -> Result<Held, Held> {
  let id = NEXT_ID.fetch_add(1, Ordering::Relaxed).to_string();
  let body = call_mcp::request_body(&id, &args.method, args.params.as_deref());
  let exchange = async {
    match &args.fetch {
      Some(fetch) => via_fetch(host, &args, fetch, body, &id, &signal).await,
      None => via_client(host, &args, body, &id).await,
    }
  };
  let outcome = call_mcp::bounded(&host, Some(&signal), async { Ok(exchange.await) }).await;
  // W9: every failure also goes to the logger, when there is one.
  let log = |message: &str, error: &Held| {
    if let Some(logger) = &args.logger {
      let error = host.message(error);
      call_mcp::log_failure(&host, logger, message, &args.url_text, &args.method, &error);
    }
  };
  let failure = match outcome {
    Ok(Ok(answer)) => return Ok(answer),
    Ok(Err(failure)) => failure,
    Err(reason) => Failure::Thrown(reason),
  };
  match failure {
    Failure::Thrown(error) => {
      log(&host.message(&error), &error);
      Err(error)
    }
    Failure::Unreadable(error) => {
      log(call_mcp::PARSE_FAILURE, &error);
      let Some(on_parse_error) = &args.on_parse_error else {
        return Err(error);
      };
      match host.call_now(
        on_parse_error,
        "call",
        vec![host.undefined(), error.clone()],
      ) {
        Ok(made) if !host.is_nullish(&made) => Err(made),
        Ok(_) => Err(error),
        Err(thrown) => Err(thrown),
      }
    }
  }
}

/// A54: the status error: `onHttpError(response, body)`'s value, else `MCP request failed: …`.
fn refused(
  host: JsHost,
  args: &call_mcp::CallMcpArgs<Held>,
  response: Held,
  body: &str,
) -> Failure {
  let (status, status_text) = (
    host
      .field(&response, "status")
      .ok()
      .and_then(|s| host.as_number(&s))
      .unwrap_or(0.0),
    host
      .field(&response, "statusText")
      .ok()
      .and_then(|s| host.as_string(&s))
      .unwrap_or_default(),
  );
  match &args.on_http_error {
    Some(on_http_error) => {
      let made = host.call_now(
        on_http_error,
        "call",
        vec![host.undefined(), response, host.string(body)],
      );
      Failure::Thrown(made.unwrap_or_else(|thrown| thrown))
    }
    None => Failure::Thrown(host.error(&call_mcp::refused_message(status as u16, &status_text))),
  }
}

/// A54: the caller's `fetch(url, {method, headers, body, signal})`, its `Response` read here.
async fn via_fetch(
  host: JsHost,
  args: &call_mcp::CallMcpArgs<Held>,
  fetch: &Held,
  body: String,
  id: &str,
  signal: &Held,
) -> Result<Held, Failure> {
  let mut headers = vec![
    ("Content-Type".to_string(), host.string("application/json")),
    (
      "Accept".to_string(),
      host.string("application/json, text/event-stream"),
    ),
  ];
  headers.extend(
    args
      .headers
      .iter()
      .map(|(name, value)| (name.clone(), host.string(value))),
  );
  let headers: Vec<(&str, Held)> = headers
    .iter()
    .map(|(n, v)| (n.as_str(), v.clone()))
    .collect();
  let init = host
    .object(vec![
      ("method", host.string("POST")),
      ("headers", host.object(headers).map_err(Failure::Thrown)?),
      ("body", host.string(&body)),
      ("signal", signal.clone()),
    ])
    .map_err(Failure::Thrown)?;
  let response = Callbacks::call(&host, fetch, vec![host.string(&args.url_text), init])
    .await
    .map_err(Failure::Thrown)?;
  let ok = host.field(&response, "ok").map_err(Failure::Thrown)?;
  if !host.truthy(&ok) {
    let text = Callbacks::call_method(&host, &response, "text", Vec::new())
      .await
      .map_err(Failure::Thrown)?;
    return Err(refused(
      host,
      args,
      response,
      &host.as_string(&text).unwrap_or_default(),
    ));
  }
  let expected = serde_json::Value::from(id);
  read_response(host, response, expected, Some(signal.clone()))
    .await
    .map_err(Failure::Unreadable)
}

/// This package's HTTP client: the body read on the runtime until the answer is in it.
async fn via_client(
  host: JsHost,
  args: &call_mcp::CallMcpArgs<Held>,
  body: String,
  id: &str,
) -> Result<Held, Failure> {
  let js = host.js;
  let exchange = one_shot::exchange(
    args.url.clone(),
    body,
    args.headers.clone(),
    serde_json::Value::from(id),
  );
  match executor::on_runtime(js, exchange).await {
    None => Err(Failure::Thrown(js_error::runtime_failure(js))),
    Some(Err(error)) => Err(Failure::Thrown(host.hold(js_error::to_js(
      js,
      TransportKind::Http,
      &error,
    )))),
    Some(Ok(one_shot::Exchange::Answered(Ok(answer)))) => {
      host.json(&answer).map_err(Failure::Unreadable)
    }
    Some(Ok(one_shot::Exchange::Answered(Err(error)))) => {
      Err(Failure::Unreadable(host.hold(select_error(js, error))))
    }
    Some(Ok(one_shot::Exchange::Refused {
      status,
      status_text,
      headers,
      body,
    })) => {
      let response = match response_value(js, status, &status_text, &headers, &body) {
        Ok(response) => host.hold(response),
        Err(Thrown(error)) => return Err(Failure::Thrown(host.hold(error))),
      };
      Err(refused(host, args, response, &body))
    }
  }
}

/// A54: the refused answer as a `Response` for `onHttpError` (its body already read, as the
/// agent's is when it calls it).
fn response_value(
  js: Js,
  status: u16,
  status_text: &str,
  headers: &[(String, String)],
  body: &str,
) -> Result<Value, Thrown> {
  let init = js.object()?;
  js.set(init, "status", js.number(f64::from(status)));
  js.set(init, "statusText", js.string(status_text));
  let header_list = js.array(headers.len())?;
  for (index, (name, value)) in headers.iter().enumerate() {
    let pair = js.array(2)?;
    js.set_element(pair, 0, js.string(name))?;
    js.set_element(pair, 1, js.string(value))?;
    js.set_element(header_list, index as u32, pair)?;
  }
  js.set(init, "headers", header_list);
  // A status that may not carry a body gets none.
  let body = if matches!(status, 101 | 204 | 205 | 304) {
    js.null()
  } else {
    js.string(body)
  };
  js.construct(js.get(js.global(), "Response")?, &[body, init])
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
