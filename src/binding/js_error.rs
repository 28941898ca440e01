//! The one place core errors become JS `Error` objects with the contract's properties.
use super::js::{ErrorKind, Js, Value};
use crate::error::CoreError;

pub fn to_js(js: Js, error: &CoreError) -> Value {
  let value = js.error(ErrorKind::Error, &error.to_string());
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
