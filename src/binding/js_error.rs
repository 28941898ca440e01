//! The one place core errors become JS `Error` objects with the contract's properties.
use super::js::{ErrorKind, Held, Js, JsRaw, Thrown, Value};
use crate::error::{CoreError, ErrorProperty};

pub fn to_js(js: Js, error: &CoreError) -> Value {
  // H5: V8's own SyntaxError, exactly as `JSON.parse` words it.
  if let CoreError::InvalidJson(text) = error {
    if let Err(super::js::Thrown(syntax_error)) = js.json_parse(text) {
      return syntax_error;
    }
  }
  let value = js.error(ErrorKind::Error, &error.message());
  for (name, property) in error.properties() {
    let property = match property {
      ErrorProperty::Number(n) => js.number(n),
      ErrorProperty::Text(text) => js.string(text),
      ErrorProperty::Json(text) => js.json_parse_or_undefined(text),
    };
    js.set(value, name, property);
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
