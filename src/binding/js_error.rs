//! The one place core errors become JS `Error` objects with the contract's properties.
use super::js::{ErrorKind, Held, Js, JsRaw, Thrown, Value};
use crate::error::CoreError;

pub fn to_js(js: Js, error: &CoreError) -> Value {
  // H5: V8's own SyntaxError, exactly as `JSON.parse` words it.
  if let CoreError::InvalidJson(text) = error {
    if let Err(super::js::Thrown(syntax_error)) = js.json_parse(text) {
      return syntax_error;
    }
  }
  let value = js.error(ErrorKind::Error, &error.message());
  match error {
    // T4: the agent sets both, `data` even when the server sent none.
    CoreError::Rpc { code, data, .. } => {
      js.set(value, "code", js.number(*code as f64));
      let data = data
        .as_deref()
        .and_then(|text| js.json_parse(text).ok())
        .unwrap_or_else(|| js.undefined());
      js.set(value, "data", data);
    }
    // S5
    CoreError::TransportClosed {
      stderr: Some(stderr),
    } => js.set(value, "stderr", js.string(stderr)),
    // H4/H7
    CoreError::Http {
      status,
      www_authenticate,
      mcp_auth_server,
      ..
    } => {
      js.set(value, "status", js.number(f64::from(*status)));
      if let Some(v) = www_authenticate {
        js.set(value, "wwwAuthenticate", js.string(v));
      }
      if let Some(v) = mcp_auth_server {
        js.set(value, "mcpAuthServer", js.string(v));
      }
    }
    // O1: the name the TS SDK's `UnauthorizedError` has.
    CoreError::Unauthorized => js.set(value, "name", js.string("UnauthorizedError")),
    _ => {}
  }
  if let Some(code) = error.string_code() {
    js.set(value, "code", js.string(code));
  }
  value
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
