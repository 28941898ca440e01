//! `callMCP`: its arguments, what the answer to one POST becomes, and the failure log. J2 as
//! v12 has it under `compat: "v12"`; A52–A54 (18.3.4) otherwise.
use crate::host::{Callbacks, Values};
use crate::protocol::parse_sse::parse_sse;
use crate::transport::one_shot::Answer;

/// The JSON-RPC envelope of a 2xx answer (read with J1), else the error: `MCP request
/// failed: <status> <statusText>`, or `Failed to parse MCP response` when there is none.
pub fn envelope<H: Values>(host: &H, answer: &Answer) -> Result<H::Value, H::Value> {
  if !(200..300).contains(&answer.status) {
    return Err(host.error(&format!(
      "MCP request failed: {} {}",
      answer.status, answer.status_text
    )));
  }
  match parse_sse(&answer.body, |data| host.json(data), |v| host.truthy(v)) {
    Some(value) if !host.is_nullish(&value) => Ok(value),
    _ => Err(host.error("Failed to parse MCP response")),
  }
}

/// A6: how long a call without the caller's signal may take.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// A6: `work`, unless the caller's `signal` aborts first (its reason is the error) or, with
/// no signal, 60 s pass (an Error named `TimeoutError`, as `AbortSignal.timeout` gives).
pub async fn bounded<H, T>(
  host: &H,
  signal: Option<&H::Value>,
  work: impl std::future::Future<Output = Result<T, H::Value>>,
) -> Result<T, H::Value>
where
  H: crate::host::Signals + crate::host::Clock,
{
  use futures::future::{select, Either};
  if signal.is_some() {
    return crate::host::unless_aborted(host, signal, work).await;
  }
  let timeout = host.error("The operation was aborted due to timeout");
  let _ = host.set_field(&timeout, "name", host.string("TimeoutError"));
  match select(std::pin::pin!(work), host.sleep(DEADLINE)).await {
    Either::Left((outcome, _)) => outcome,
    Either::Right(_) => Err(timeout),
  }
}

/// J2's arguments, checked in the order the agent reads them (E2).
pub struct CallMcpArgs<V> {
  pub url: reqwest::Url,
  /// As given, for the failure log (redacted there).
  pub url_text: String,
  pub method: String,
  /// `params` as JSON text, when given.
  pub params: Option<String>,
  pub signal: Option<V>,
  /// W9: `options.logger`, when it is an object.
  pub logger: Option<V>,
  /// A52: `options.compat === "v12"`: J2's reading of the answer.
  pub v12: bool,
  /// A54: `options.headers`, over the JSON-RPC defaults.
  pub headers: Vec<(String, String)>,
  /// A54: `options.fetch`, the function to send with (else this package's HTTP client).
  pub fetch: Option<V>,
  /// A54: `options.onHttpError(response, body)`: the error to throw for a status outside 2xx.
  pub on_http_error: Option<V>,
  /// A54: `options.onParseError(error)`: the error to throw when the answer cannot be read.
  pub on_parse_error: Option<V>,
}

/// What the arguments were: a TypeError, or what a getter or `JSON.stringify` threw, to
/// reject with.
pub fn read_args<H: Values>(
  h: &H,
  url: &H::Value,
  method: &H::Value,
  params: Option<&H::Value>,
  options: Option<&H::Value>,
) -> Result<CallMcpArgs<H::Value>, H::Value> {
  let url_text = h
    .as_string(url)
    .ok_or_else(|| h.type_error("The \"url\" argument must be a string"))?;
  let parsed = reqwest::Url::parse(&url_text).map_err(|_| {
    h.type_error(&format!(
      "The \"url\" argument must be a valid URL, got {url_text:?}"
    ))
  })?;
  let method = h
    .as_string(method)
    .ok_or_else(|| h.type_error("The \"method\" argument must be a string"))?;
  let params = match params.filter(|p| !h.is_nullish(p)) {
    None => None,
    Some(p) if !h.is_object(p) || h.items(p).is_some() => {
      return Err(h.type_error("The \"params\" argument must be an object"))
    }
    Some(p) => h.to_json(p)?,
  };
  let signal = crate::config::signal_option(h, options).map_err(|m| h.type_error(&m))?;
  let option = |name: &str| {
    options
      .filter(|o| h.is_object(o))
      .and_then(|o| h.field(o, name).ok())
  };
  let function = |name: &str| option(name).filter(|f| h.is_function(f));
  let headers = match option("headers").filter(|v| h.is_object(v)) {
    Some(object) => header_entries(h, &object)?,
    None => Vec::new(),
  };
  Ok(CallMcpArgs {
    url: parsed,
    url_text,
    method,
    params,
    signal,
    logger: option("logger").filter(|l| h.is_object(l)),
    v12: option("compat").and_then(|c| h.as_string(&c)).as_deref() == Some("v12"),
    headers,
    fetch: function("fetch"),
    on_http_error: function("onHttpError"),
    on_parse_error: function("onParseError"),
  })
}

/// A54: a headers object's own entries, each value as `fetch` would send it (a string, or a
/// number or boolean as text); `undefined` and `null` ones are left out.
fn header_entries<H: Values>(h: &H, object: &H::Value) -> Result<Vec<(String, String)>, H::Value> {
  let mut entries = Vec::new();
  for name in h.keys(object)? {
    let value = h.field(object, &name)?;
    let text = if let Some(text) = h.as_string(&value) {
      text
    } else if let Some(number) = h.as_number(&value) {
      if number.fract() == 0.0 && number.abs() < 1e21 {
        format!("{}", number as i128)
      } else {
        number.to_string()
      }
    } else if let Some(flag) = h.as_bool(&value) {
      flag.to_string()
    } else if h.is_nullish(&value) {
      continue;
    } else {
      return Err(h.type_error(&format!("The \"{name}\" header must be a string")));
    };
    entries.push((name, text));
  }
  Ok(entries)
}

/// A52: the request body: a string id, `params` as given or `{}`.
pub fn request_body(id: &str, method: &str, params: Option<&str>) -> String {
  let id = serde_json::Value::from(id);
  let method = serde_json::Value::from(method);
  format!(
    r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":{}}}"#,
    params.unwrap_or("{}")
  )
}

/// A52: the error for a status outside 2xx when there is no `onHttpError`.
pub fn refused_message(status: u16, status_text: &str) -> String {
  format!("MCP request failed: {status} {status_text}")
}

/// A52: what is logged when an answer could not be read.
pub const PARSE_FAILURE: &str = "Failed to parse MCP response";

/// W9: a failure also goes to `logger.error(message, {url, method, error})`, when there is
/// one; the URL and the message without their secrets. What the logger does is its own.
pub fn log_failure<H: Callbacks>(
  h: &H,
  logger: &H::Value,
  message: &str,
  url: &str,
  method: &str,
  cause: &str,
) {
  let Ok(error) = h.field(logger, "error") else {
    return;
  };
  if !h.is_function(&error) {
    return;
  }
  let url = crate::redaction::redact_url_for_log(url);
  let message = crate::redaction::redact_secrets(message);
  let cause = crate::redaction::redact_secrets(cause);
  let context = serde_json::json!({ "url": url, "method": method, "error": cause });
  let context = h
    .json(&context.to_string())
    .unwrap_or_else(|_| h.undefined());
  drop(h.call_method(logger, "error", vec![h.string(&message), context]));
}
