//! The one place core errors become JS `Error` objects with the contract's properties, and
//! the home of A45's `MCPTransportError` class (JS, `mcp_transport_error.js`, so that it is
//! a real `Error` subclass in every engine).
use super::js::{ErrorKind, Held, Js, JsRaw, Thrown, Value};
use super::js_slot::{self, JsSlot};
use crate::client::handshake::connect_timeout_diagnostic;
use crate::error::{CoreError, ErrorProperty, LegacySseError};
use crate::transport_error::{self as rules, sanitize_message, Code, Diagnostic, TransportKind};

/// A45: a failure of a `transport` as the JS error the contract gives it: an
/// `MCPTransportError` classified as the agent's own transports classify it, with the
/// contract's other properties (`status`, `stderr`, …) on it.
pub fn to_js(js: Js, transport: TransportKind, error: &CoreError) -> Value {
  // A48: what close() aborted rejects as aborted work does.
  if let CoreError::Aborted(closed) = error {
    return js.dom_exception(closed.message(), "AbortError");
  }
  // A47: the legacy endpoint's timeout has a class of its own.
  if let CoreError::LegacySse(LegacySseError::EndpointTimeout(limit)) = error {
    let class = error_class(js, "LegacySseConnectionTimeoutError");
    let timeout_ms = js.number(limit.as_millis() as f64);
    if let Ok(value) = class.and_then(|class| js.construct(class, &[timeout_ms])) {
      return value;
    }
  }
  // H5: V8's own SyntaxError, exactly as `JSON.parse` words it, is the cause.
  let syntax_error = match error {
    CoreError::InvalidJson(text) => js.json_parse(text).err().map(|Thrown(e)| e),
    _ => None,
  };
  if let Some(mut diagnostic) = error.diagnostic(transport) {
    if let Some(syntax_error) = syntax_error {
      diagnostic.message = sanitize_message(&js.error_message(syntax_error));
    }
    if let Ok(value) = transport_error(js, &diagnostic, syntax_error) {
      set_properties(js, value, error, true);
      return value;
    }
  }
  syntax_error.unwrap_or_else(|| reported(js, error))
}

/// A failure given to `onError` rather than rejected with: a plain `Error` (a `SyntaxError`
/// for a payload that is not JSON), as the agent's transports report them.
pub fn reported(js: Js, error: &CoreError) -> Value {
  if let CoreError::InvalidJson(text) = error {
    if let Err(Thrown(syntax_error)) = js.json_parse(text) {
      return syntax_error;
    }
  }
  let value = js.error(ErrorKind::Error, &error.message());
  set_properties(js, value, error, false);
  value
}

/// The contract's properties; on an `MCPTransportError`, its own `code` and `data` stay.
fn set_properties(js: Js, value: Value, error: &CoreError, classified: bool) {
  for (name, property) in error.properties() {
    if classified && matches!(name, "code" | "data") {
      continue;
    }
    let property = match property {
      ErrorProperty::Number(n) => js.number(n),
      ErrorProperty::Text(text) => js.string(text),
      ErrorProperty::Json(text) => js.json_parse_or_undefined(text),
    };
    js.set(value, name, property);
  }
}

pub fn type_error(js: Js, message: &str) -> Value {
  js.error(ErrorKind::TypeError, message)
}

pub fn thrown(js: Js, Thrown(error): Thrown) -> napi::Error {
  js.throw(error);
  napi::Error::new(napi::Status::PendingException, String::new())
}

/// A promise-returning export's result: a failure to even build the promise is thrown.
pub fn finish(js: Js, result: Result<Value, Thrown>) -> napi::Result<JsRaw> {
  result.map(JsRaw).map_err(|t| thrown(js, t))
}

/// The rejection when the shared async runtime could not start.
pub fn runtime_failure(js: Js) -> Held {
  Held::new(
    js,
    js.error(ErrorKind::Error, "The async runtime could not start"),
  )
}

thread_local! {
  /// A45/A47: `{MCPTransportError, MCPConnectionTimeoutError, LegacySseConnectionTimeoutError}`.
  static CLASSES: JsSlot = const { JsSlot::new() };
}

/// The names of the error classes the package exports.
pub const ERROR_CLASSES: [&str; 3] = [
  "MCPTransportError",
  "MCPConnectionTimeoutError",
  "LegacySseConnectionTimeoutError",
];

fn define(js: Js) -> Result<Value, Thrown> {
  let factory = js.run_script(include_str!("mcp_transport_error.js"))?;
  let sanitize = js.closure("sanitize", |js, args| {
    let text = js.rust_string(args.get(0)).unwrap_or_default();
    Ok(js.string(&rules::sanitize_message(&text)))
  })?;
  let connect_timeout = js.closure("connectTimeout", |js, args| {
    let name = js.rust_string(args.get(0)).unwrap_or_default();
    let timeout_ms = js.number_value(args.get(1)).unwrap_or(f64::NAN);
    options(js, &connect_timeout_diagnostic(&name, timeout_ms), None)
  })?;
  let legacy_timeout = js.closure("legacyTimeout", |js, args| {
    let timeout_ms = js.number_value(args.get(0)).unwrap_or(0.0).max(0.0);
    let error = CoreError::LegacySse(LegacySseError::EndpointTimeout(
      std::time::Duration::from_secs_f64(timeout_ms / 1000.0),
    ));
    match error.diagnostic(TransportKind::Http) {
      Some(diagnostic) => options(js, &diagnostic, None),
      None => Ok(js.undefined()),
    }
  })?;
  let classes = js.call(
    factory,
    js.undefined(),
    &[sanitize, connect_timeout, legacy_timeout],
  )?;
  js_slot::set(&CLASSES, js, Some(classes));
  Ok(classes)
}

/// One of `ERROR_CLASSES` of this JS thread (defined as the module loads).
pub fn error_class(js: Js, name: &str) -> Result<Value, Thrown> {
  let classes = match CLASSES.with(|slot| slot.get(js)) {
    Some(classes) => classes,
    None => define(js)?,
  };
  js.get(classes, name)
}

/// A45: `MCPTransportError` of this JS thread.
pub fn transport_error_class(js: Js) -> Result<Value, Thrown> {
  error_class(js, "MCPTransportError")
}

/// A47: `new MCPConnectionTimeoutError(name, timeoutMs)`.
pub fn connect_timeout_error(js: Js, name: &str, timeout_ms: f64) -> Result<Value, Thrown> {
  let class = error_class(js, "MCPConnectionTimeoutError")?;
  js.construct(class, &[js.string(name), js.number(timeout_ms)])
}

/// `new MCPTransportError(...)` saying `diagnostic`, caused by `cause`.
pub fn transport_error(
  js: Js,
  diagnostic: &Diagnostic,
  cause: Option<Value>,
) -> Result<Value, Thrown> {
  let options = options(js, diagnostic, cause)?;
  js.construct(transport_error_class(js)?, &[options])
}

/// The constructor options of an `MCPTransportError` saying `diagnostic`.
fn options(js: Js, diagnostic: &Diagnostic, cause: Option<Value>) -> Result<Value, Thrown> {
  let options = js.object()?;
  let text = |text: &Option<String>| text.as_deref().map_or(js.undefined(), |t| js.string(t));
  js.set(options, "transport", js.string(diagnostic.transport.name()));
  js.set(options, "stage", js.string(diagnostic.stage.name()));
  js.set(options, "failure", js.string(diagnostic.failure.name()));
  js.set(options, "message", js.string(&diagnostic.message));
  js.set(options, "retryable", js.boolean(diagnostic.retryable));
  let code = match &diagnostic.code {
    Some(Code::Number(n)) => js.number(*n),
    Some(Code::Text(t)) => js.string(t),
    None => js.undefined(),
  };
  js.set(options, "code", code);
  js.set(options, "data", text(&diagnostic.data));
  js.set(options, "traceId", text(&diagnostic.trace_id));
  if let Some(cause) = cause {
    js.set(options, "cause", cause);
  }
  Ok(options)
}
