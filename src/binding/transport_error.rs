//! A45 for JS: the export of `MCPTransportError` (defined in `js_error`) and the agent's four
//! helpers around it. What an instance says is decided by `crate::transport_error`.
use napi::bindgen_prelude::{JsValue, Object};
use napi::sys::ValueType;
use napi::Env;
use napi_derive::napi;

use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error::{self, thrown};
use crate::transport_error::{
  self as rules, Code, Data, Diagnostic, Failure, Stage, TransportKind, MAX_DATA_DEPTH,
  MAX_DATA_ENTRIES,
};

/// Defines the error classes and exports them (as the module loads, `super::on_load`).
pub fn export_error_classes(exports: Object, env: Env) -> napi::Result<()> {
  let js = Js::new(env.raw());
  for name in js_error::ERROR_CLASSES {
    let class = js_error::error_class(js, name).map_err(|t| thrown(js, t))?;
    js.set(exports.raw(), name, class);
  }
  Ok(())
}

fn is_instance(js: Js, value: Value) -> bool {
  js_error::transport_error_class(js).is_ok_and(|class| js.instance_of(value, class))
}

fn string_of(js: Js, object: Value, name: &str) -> Option<String> {
  js.get(object, name).ok().and_then(|v| js.rust_string(v))
}

/// A string or number `code`, as the agent reads one.
fn code_of(js: Js, value: Value) -> Option<Code> {
  if let Some(n) = js.number_value(value) {
    return Some(Code::Number(n));
  }
  js.rust_string(value).map(Code::Text)
}

/// The agent's `errorCode`: the first string or number `code` along `error` and its causes.
fn error_code(js: Js, error: Value, depth: usize) -> Option<Code> {
  // A cause chain that loops is cut where the agent's recursion would overflow.
  if depth > 64 || !js.is_record(error) {
    return None;
  }
  let own = js
    .get(error, "code")
    .ok()
    .and_then(|code| code_of(js, code));
  own.or_else(|| {
    let cause = js.get(error, "cause").ok()?;
    error_code(js, cause, depth + 1)
  })
}

/// What `normalizeMCPTransportError` reads of a thrown value.
fn thrown_of(js: Js, error: Value) -> rules::Thrown {
  let global = js.global();
  let instance_of = |name: &str| {
    js.get(global, name)
      .is_ok_and(|class| js.instance_of(error, class))
  };
  let message = if instance_of("Error") {
    js.get(error, "message")
      .map(|m| js.display(m))
      .unwrap_or_default()
  } else {
    js.display(error)
  };
  rules::Thrown {
    message,
    code: error_code(js, error, 0),
    syntax_error: instance_of("SyntaxError"),
  }
}

/// A JS value as the agent's `sanitizeData` walks it: breadth and depth bounded, an object
/// met again is `[circular]`, a secret-named key's value is not read at all.
fn data_of(js: Js, value: Value, depth: usize, seen: &mut Vec<Value>) -> Data {
  if depth > MAX_DATA_DEPTH {
    return Data::Deep;
  }
  match js.type_of(value) {
    ValueType::napi_null => return Data::Null,
    ValueType::napi_string => return Data::Text(js.rust_string(value).unwrap_or_default()),
    ValueType::napi_number => return Data::Number(js.number_value(value).unwrap_or(f64::NAN)),
    ValueType::napi_boolean => return Data::Bool(js.truthy(value)),
    _ => {}
  }
  let array = js.is_array(value);
  if !array && !js.is_record(value) {
    return Data::Other(js.display(value));
  }
  if seen.iter().any(|s| js.strict_equals(*s, value)) {
    return Data::Seen;
  }
  seen.push(value);
  if array {
    let length = js.array_length(value).min(MAX_DATA_ENTRIES as u32);
    let items = (0..length)
      .map(|i| match js.element(value, i) {
        Ok(item) => data_of(js, item, depth + 1, seen),
        Err(_) => Data::Other(String::new()),
      })
      .collect();
    return Data::Array(items);
  }
  let keys = js.keys(value).unwrap_or_default();
  let entries = keys
    .into_iter()
    .take(MAX_DATA_ENTRIES)
    .map(|key| {
      let item = if rules::is_secret_key(&key) {
        Data::Null
      } else {
        match js.get(value, &key) {
          Ok(item) => data_of(js, item, depth + 1, seen),
          Err(_) => Data::Other(String::new()),
        }
      };
      (key, item)
    })
    .collect();
  Data::Object(entries)
}

fn kind_of(js: Js, value: Value) -> TransportKind {
  js.rust_string(value)
    .and_then(|name| TransportKind::from_name(&name))
    .unwrap_or(TransportKind::Unknown)
}

fn finish(js: Js, made: Result<Value, Thrown>) -> napi::Result<JsRaw> {
  made.map(JsRaw).map_err(|t| thrown(js, t))
}

/// A45 `normalizeMCPTransportError`: an `MCPTransportError` as it is; anything else
/// classified by its code and words, with itself as the cause.
#[napi(
  js_name = "normalizeMCPTransportError",
  ts_args_type = "error: unknown, options: { transport: MCPTransportKind; stage: MCPFailureStage; traceId?: string }",
  ts_return_type = "MCPTransportError"
)]
pub fn normalize_mcp_transport_error(
  env: Env,
  error: JsArg,
  options: JsArg,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  if is_instance(js, error.0) {
    return Ok(JsRaw(error.0));
  }
  let options = options.0;
  let transport = js
    .get(options, "transport")
    .map_or(TransportKind::Unknown, |v| kind_of(js, v));
  let stage = string_of(js, options, "stage")
    .and_then(|name| Stage::from_name(&name))
    .unwrap_or(Stage::Protocol);
  let trace_id = string_of(js, options, "traceId");
  let diagnostic = rules::classify(
    &thrown_of(js, error.0),
    transport,
    stage,
    trace_id.as_deref(),
  );
  finish(
    js,
    js_error::transport_error(js, &diagnostic, Some(error.0)),
  )
}

/// A45 `createMCPJsonRpcError`: a server's JSON-RPC error, its `data` bounded and redacted.
#[napi(
  js_name = "createMCPJsonRpcError",
  ts_args_type = "transport: MCPTransportKind, error: JsonRpcError, traceId?: string",
  ts_return_type = "MCPTransportError"
)]
pub fn create_mcp_json_rpc_error(
  env: Env,
  transport: JsArg,
  error: JsArg,
  trace_id: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let error = error.0;
  let code = js.get(error, "code").ok().and_then(|c| code_of(js, c));
  let message = js
    .get(error, "message")
    .map(|m| js.display(m))
    .unwrap_or_default();
  let data = match js.get(error, "data") {
    Ok(data) if js.type_of(data) != ValueType::napi_undefined => {
      Some(data_of(js, data, 0, &mut Vec::new()))
    }
    _ => None,
  };
  let trace_id = trace_id.and_then(|t| js.rust_string(t.0));
  let diagnostic = rules::json_rpc(
    kind_of(js, transport.0),
    code.as_ref(),
    &message,
    data.as_ref(),
    trace_id.as_deref(),
  );
  finish(js, js_error::transport_error(js, &diagnostic, None))
}

/// A45 `mcpTraceIdFromHeaders`: a safe request or trace id from a `Headers`.
#[napi(
  js_name = "mcpTraceIdFromHeaders",
  ts_args_type = "headers: Headers",
  ts_return_type = "string | undefined"
)]
pub fn mcp_trace_id_from_headers(env: Env, headers: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let get = js.get(headers.0, "get").map_err(|t| thrown(js, t))?;
  let mut failure = None;
  let trace_id = rules::trace_id_from_headers(|name| {
    if failure.is_some() {
      return None;
    }
    match js.call(get, headers.0, &[js.string(name)]) {
      Ok(value) => js.rust_string(value),
      Err(t) => {
        failure = Some(t);
        None
      }
    }
  });
  if let Some(t) = failure {
    return Err(thrown(js, t));
  }
  Ok(JsRaw(trace_id.map_or(js.undefined(), |t| js.string(&t))))
}

/// What an `MCPTransportError` instance says, read back from its fields.
fn diagnostic_of(js: Js, error: Value) -> Diagnostic {
  let name = |field: &str| string_of(js, error, field).unwrap_or_default();
  Diagnostic {
    transport: TransportKind::from_name(&name("transport")).unwrap_or(TransportKind::Unknown),
    stage: Stage::from_name(&name("stage")).unwrap_or(Stage::Protocol),
    failure: Failure::from_name(&name("failure")).unwrap_or(Failure::Unknown),
    message: name("message"),
    retryable: js.get(error, "retryable").is_ok_and(|v| js.truthy(v)),
    code: js.get(error, "code").ok().and_then(|c| code_of(js, c)),
    data: string_of(js, error, "data"),
    trace_id: string_of(js, error, "traceId"),
  }
}

/// A45 `formatMCPToolFailure`: the report the agent's tool bridge gives the model.
#[napi(
  js_name = "formatMCPToolFailure",
  ts_args_type = "error: unknown, serverName: string, toolName: string",
  ts_return_type = "string"
)]
pub fn format_mcp_tool_failure(
  env: Env,
  error: JsArg,
  server_name: JsArg,
  tool_name: JsArg,
) -> napi::Result<String> {
  let js = Js::new(env.raw());
  let diagnostic = if is_instance(js, error.0) {
    diagnostic_of(js, error.0)
  } else {
    rules::classify(
      &thrown_of(js, error.0),
      TransportKind::Unknown,
      Stage::Protocol,
      None,
    )
  };
  Ok(rules::format_tool_failure(
    &diagnostic,
    &js.display(server_name.0),
    &js.display(tool_name.0),
  ))
}
