//! Loose JS arguments of the hot calls (`request`, `notify`) to typed Rust values, and the
//! host's environment. Errors are TypeError messages naming the field (E2); callers turn
//! them into rejections, never synchronous throws. Config objects are read by `crate::config`.
use std::borrow::Cow;
use std::ffi::OsString;
use std::mem::MaybeUninit;

use napi::sys::ValueType;

use super::js::{Js, Thrown, Value};

pub type ArgResult<T> = Result<T, String>;

/// The calling runtime's `process.env` (S1, M3), or the C environment without one.
pub fn host_environment(js: Js) -> Vec<(OsString, OsString)> {
  let from_js = (|| {
    let process = js.get(js.global(), "process").ok()?;
    let env = js.get(process, "env").ok()?;
    let keys = js.keys(env).ok()?;
    Some(
      keys
        .into_iter()
        .filter_map(|k| {
          let v = js.get(env, &k).ok().and_then(|v| js.rust_string(v))?;
          Some((OsString::from(k), OsString::from(v)))
        })
        .collect::<Vec<_>>(),
    )
  })();
  from_js.unwrap_or_else(|| std::env::vars_os().collect())
}

/// One variable of the calling runtime's `process.env` as it is now (Bun keeps its own
/// apart from the C environment).
pub fn env_var(js: Js, name: &str) -> Option<String> {
  let process = js.get(js.global(), "process").ok()?;
  let env = js.get(process, "env").ok()?;
  js.get(env, name).ok().and_then(|v| js.rust_string(v))
}

/// H10: the proxy variables as the calling runtime has them now.
pub fn proxy_vars(js: Js) -> crate::http_client::ProxyVars {
  let vars = crate::http_client::PROXY_VARIABLES
    .iter()
    .filter_map(|name| Some((name.to_string(), env_var(js, name)?)))
    .collect();
  crate::http_client::ProxyVars(vars)
}

/// H10: `NODE_TLS_REJECT_UNAUTHORIZED` as the calling runtime has it now: `"0"` turns
/// certificate checks off, with Node's warning once per process (`process.emitWarning`).
pub fn tls_insecure(js: Js) -> bool {
  static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
  let value = env_var(js, "NODE_TLS_REJECT_UNAUTHORIZED");
  let insecure = crate::http_client::insecure_by(value.as_deref());
  if insecure && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
    let process = js.get(js.global(), "process");
    let emit = process.and_then(|p| Ok((p, js.get(p, "emitWarning")?)));
    if let Ok((process, emit)) = emit {
      if js.is_function(emit) {
        let _ = js.call(
          emit,
          process,
          &[js.string(crate::http_client::INSECURE_WARNING)],
        );
      }
    }
  }
  insecure
}

/// T2: `method` must be a string; read into `buf` when it fits.
pub fn method(js: Js, value: Value, buf: &mut [MaybeUninit<u8>]) -> ArgResult<Cow<'_, str>> {
  js.str_in(value, buf)
    .ok_or_else(|| "The \"method\" argument must be a string".to_string())
}

/// T2: `params` is an object (or absent); returned as JSON text, in `buf` when it fits.
/// What is sent must be a JSON object too: an array, or an object whose `toJSON` gives
/// anything but an object (a `Date`), is refused as well.
pub fn params(
  js: Js,
  value: Option<Value>,
  buf: &mut [MaybeUninit<u8>],
) -> Result<Option<Cow<'_, str>>, ParamsError> {
  let not_an_object = || ParamsError::Type("The \"params\" argument must be an object".to_string());
  let Some(value) = value else {
    return Ok(None);
  };
  // One type check for both questions: absent, or an object. The JSON text tells an
  // array apart, without another call into the runtime.
  match js.type_of(value) {
    ValueType::napi_undefined | ValueType::napi_null => return Ok(None),
    ValueType::napi_object => {}
    _ => return Err(not_an_object()),
  }
  match js.json_stringify_in(value, buf) {
    Ok(Some(text)) if !text.starts_with('{') => Err(not_an_object()),
    Ok(text) => Ok(text),
    Err(Thrown(thrown)) => Err(ParamsError::Thrown(thrown)),
  }
}

pub enum ParamsError {
  Type(String),
  /// `JSON.stringify` threw (a cycle, a BigInt): rejected with that error as is.
  Thrown(Value),
}

/// T8: `options.signal`, if any. Anything with `aborted` and `addEventListener` will do.
/// `options` is `None` when absent or nullish.
pub fn signal(js: Js, options: Option<Value>) -> ArgResult<Option<Value>> {
  let Some(options) = options else {
    return Ok(None);
  };
  if js.type_of(options) != napi::sys::ValueType::napi_object {
    return Err("The \"options\" argument must be an object".to_string());
  }
  let signal = js
    .get(options, "signal")
    .map_err(|_| "The \"signal\" field could not be read")?;
  if js.is_nullish(signal) {
    return Ok(None);
  }
  let listens = js
    .get(signal, "addEventListener")
    .map(|f| js.is_function(f))
    .unwrap_or(false);
  if !listens {
    return Err("The \"options.signal\" field must be an AbortSignal".to_string());
  }
  Ok(Some(signal))
}

/// P4: `onProgress`, `timeout`, `resetTimeoutOnProgress` and `maxTotalTimeout` of a
/// request's options (already checked to be an object by `signal`).
pub fn request_options(
  js: Js,
  options: Option<Value>,
) -> ArgResult<(Option<Value>, crate::session::RequestOptions)> {
  use crate::session::{OptionField, RequestOptions};
  let Some(options) = options else {
    return Ok((None, RequestOptions::default()));
  };
  let field = |name: &str| js.get(options, name).ok().filter(|v| !js.is_nullish(*v));
  let on_progress = field("onProgress");
  if on_progress.is_some_and(|f| !js.is_function(f)) {
    return Err("The \"options.onProgress\" field must be a function".to_string());
  }
  let number = |name: &str| match field(name) {
    None => OptionField::Absent,
    Some(value) => js
      .number_value(value)
      .map_or(OptionField::Other, OptionField::Number),
  };
  let timeout = number("timeout");
  let max_total = number("maxTotalTimeout");
  let reset_on_progress = field("resetTimeoutOnProgress").is_some_and(|v| js.truthy(v));
  let options =
    RequestOptions::from_fields(on_progress.is_some(), timeout, max_total, reset_on_progress)?;
  Ok((on_progress, options))
}

/// T8: the rejection is `signal.reason` when it is an Error, else `Error("Aborted")`; the
/// text goes into `notifications/cancelled`.
pub fn abort_reason(js: Js, signal: Value) -> (Value, String) {
  let reason = js.get(signal, "reason").unwrap_or_else(|_| js.undefined());
  if js.is_error(reason) {
    let text = js
      .get(reason, "message")
      .ok()
      .and_then(|m| js.rust_string(m))
      .filter(|m| !m.is_empty())
      .unwrap_or_else(|| "Aborted".to_string());
    (reason, text)
  } else {
    (
      js.error(super::js::ErrorKind::Error, "Aborted"),
      "Aborted".to_string(),
    )
  }
}
