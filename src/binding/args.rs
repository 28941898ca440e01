//! Loose JS arguments to typed Rust values. Errors are TypeError messages naming the field
//! (E2); callers turn them into rejections, never synchronous throws.
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::js::{Js, Value};
use crate::transport::http::HttpConfig;
use crate::transport::stdio::{StdioConfig, DEFAULT_MAX_MESSAGE_BYTES};

pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;

pub type ArgResult<T> = Result<T, String>;

fn field(js: Js, object: Value, name: &str) -> ArgResult<Option<Value>> {
  let value = js
    .get(object, name)
    .map_err(|_| format!("The \"{name}\" field could not be read"))?;
  Ok((!js.is_nullish(value)).then_some(value))
}

/// T7/§1: `timeout` in ms, default 30000, `0` disables.
pub fn timeout(js: Js, config: Value) -> ArgResult<Option<Duration>> {
  let ms = match field(js, config, "timeout")? {
    None => DEFAULT_TIMEOUT_MS,
    Some(v) => js
      .number_value(v)
      .filter(|n| n.is_finite() && *n >= 0.0)
      .ok_or("The \"timeout\" field must be a non-negative number of milliseconds")?,
  };
  Ok((ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0)))
}

/// E3: `maxMessageBytes`, default 64 MiB.
pub fn max_message_bytes(js: Js, config: Value) -> ArgResult<usize> {
  match field(js, config, "maxMessageBytes")? {
    None => Ok(DEFAULT_MAX_MESSAGE_BYTES),
    Some(v) => js
      .number_value(v)
      .filter(|n| n.is_finite() && *n >= 1.0)
      .map(|n| n as usize)
      .ok_or_else(|| "The \"maxMessageBytes\" field must be a positive number".to_string()),
  }
}

/// S1: the stdio config. The child environment is the host's `process.env` (read from JS,
/// so runtimes that keep it apart from the C environment still agree) overlaid with `env`.
pub fn stdio_config(js: Js, config: Value) -> ArgResult<StdioConfig> {
  if !js.is_record(config) {
    return Err("The \"config\" argument must be an object".to_string());
  }
  let command = field(js, config, "command")?
    .and_then(|v| js.rust_string(v))
    .filter(|c| !c.is_empty())
    .ok_or("The \"command\" field must be a non-empty string")?;
  let args = match field(js, config, "args")? {
    None => Vec::new(),
    Some(v) if js.is_array(v) => {
      let mut args = Vec::new();
      for i in 0..js.array_length(v) {
        let arg = js
          .element(v, i)
          .ok()
          .and_then(|a| js.rust_string(a))
          .ok_or("The \"args\" field must be an array of strings")?;
        args.push(arg);
      }
      args
    }
    Some(_) => return Err("The \"args\" field must be an array of strings".to_string()),
  };
  let mut env = host_environment(js);
  for (key, value) in string_record(js, config, "env")? {
    let key = OsString::from(key);
    env.retain(|(k, _)| *k != key);
    env.push((key, OsString::from(value)));
  }
  let cwd = match field(js, config, "cwd")? {
    None => None,
    Some(v) => Some(PathBuf::from(
      js.rust_string(v)
        .ok_or("The \"cwd\" field must be a string")?,
    )),
  };
  Ok(StdioConfig {
    command,
    args,
    env: Some(env),
    cwd,
    timeout: timeout(js, config)?,
    max_message_bytes: max_message_bytes(js, config)?,
  })
}

/// H1/H2: the HTTP config (`type` "http" or "sse").
pub fn http_config(js: Js, config: Value) -> ArgResult<HttpConfig> {
  if !js.is_record(config) {
    return Err("The \"config\" argument must be an object".to_string());
  }
  let kind = field(js, config, "type")?.and_then(|v| js.rust_string(v));
  let allow_legacy = match kind.as_deref() {
    Some("http") => false,
    Some("sse") => true,
    _ => return Err("The \"type\" field must be \"http\" or \"sse\"".to_string()),
  };
  let url = field(js, config, "url")?
    .and_then(|v| js.rust_string(v))
    .filter(|u| !u.is_empty())
    .ok_or("The \"url\" field must be a non-empty string")?;
  let url = reqwest::Url::parse(&url)
    .ok()
    .filter(|u| matches!(u.scheme(), "http" | "https"))
    .ok_or_else(|| format!("The \"url\" field must be an http(s) URL, got {url:?}"))?;
  Ok(HttpConfig {
    url,
    headers: string_record(js, config, "headers")?,
    timeout: timeout(js, config)?,
    max_message_bytes: max_message_bytes(js, config)?,
    allow_legacy,
  })
}

/// A `Record<string, string>` field; `undefined` entries are skipped, numbers become text.
fn string_record(js: Js, object: Value, name: &str) -> ArgResult<Vec<(String, String)>> {
  let Some(record) = field(js, object, name)? else {
    return Ok(Vec::new());
  };
  if !js.is_record(record) {
    return Err(format!("The \"{name}\" field must be an object of strings"));
  }
  let keys = js
    .keys(record)
    .map_err(|_| format!("The \"{name}\" field could not be read"))?;
  let mut entries = Vec::with_capacity(keys.len());
  for key in keys {
    let Some(value) = field(js, record, &key)? else {
      continue;
    };
    let value = js
      .rust_string(value)
      .or_else(|| js.number_value(value).map(|n| n.to_string()))
      .ok_or_else(|| format!("The \"{name}.{key}\" field must be a string"))?;
    entries.push((key, value));
  }
  Ok(entries)
}

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

/// T2: `method` must be a string.
pub fn method(js: Js, value: Value) -> ArgResult<String> {
  js.rust_string(value)
    .ok_or_else(|| "The \"method\" argument must be a string".to_string())
}

/// T2: `params` is an object (or absent); returned as JSON text.
pub fn params(js: Js, value: Option<Value>) -> Result<Option<String>, ParamsError> {
  let Some(value) = value.filter(|v| !js.is_nullish(*v)) else {
    return Ok(None);
  };
  if !js.is_record(value) {
    return Err(ParamsError::Type(
      "The \"params\" argument must be an object".to_string(),
    ));
  }
  js.json_stringify(value)
    .map_err(|t| ParamsError::Thrown(t.0))
}

pub enum ParamsError {
  Type(String),
  /// `JSON.stringify` threw (a cycle, a BigInt): rejected with that error as is.
  Thrown(Value),
}

/// T8: `options.signal`, if any. Anything with `aborted` and `addEventListener` will do.
pub fn signal(js: Js, options: Option<Value>) -> ArgResult<Option<Value>> {
  let Some(options) = options.filter(|v| !js.is_nullish(*v)) else {
    return Ok(None);
  };
  if js.type_of(options) != napi::sys::ValueType::napi_object {
    return Err("The \"options\" argument must be an object".to_string());
  }
  let Some(signal) = field(js, options, "signal")? else {
    return Ok(None);
  };
  let listens = js
    .get(signal, "addEventListener")
    .map(|f| js.is_function(f))
    .unwrap_or(false);
  if !listens {
    return Err("The \"options.signal\" field must be an AbortSignal".to_string());
  }
  Ok(Some(signal))
}
