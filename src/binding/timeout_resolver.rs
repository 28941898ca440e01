//! A9 `setTimeoutResolver(fn | null)`: a process-wide function that replaces §1's
//! `timeout ?? 30000`, asked as each request, notify, connect or listener starts.
use std::time::Duration;

use napi::Env;
use napi_derive::napi;

use super::js::{Js, JsArg, Thrown, Value};
use super::js_slot::{self, JsSlot};

thread_local! {
  static RESOLVER: JsSlot = const { JsSlot::new() };
}

/// A9: a process-wide `(configTimeout?) => ms` that replaces `timeout ?? 30000` for every
/// request, notification and connect; `0` means no timeout, `null` removes it.
#[napi(
  js_name = "setTimeoutResolver",
  ts_args_type = "resolver: ((configTimeout?: number) => number) | null"
)]
pub fn set_timeout_resolver(env: Env, resolver: Option<JsArg>) -> napi::Result<()> {
  let js = Js::new(env.raw());
  let resolver = resolver.map(|r| r.0).filter(|r| !js.is_nullish(*r));
  if resolver.is_some_and(|r| !js.is_function(r)) {
    return Err(napi::Error::new(
      napi::Status::InvalidArg,
      "The \"resolver\" argument must be a function or null",
    ));
  }
  js_slot::set(&RESOLVER, js, resolver);
  Ok(())
}

/// A config's `timeout` as the resolver is given it: the number, or nothing.
pub fn config_input(js: Js, config: Value) -> Option<f64> {
  js.get(config, "timeout")
    .ok()
    .and_then(|v| js.number_value(v))
}

/// The resolver's timeout for a config whose `timeout` is `input`: `None` without a
/// resolver (the transport keeps its own), `Some(None)` for `0` (no timeout). A value that
/// is not a non-negative number falls back to §1's rule; a throw is the caller's error.
pub fn resolve(js: Js, input: Option<f64>) -> Result<Option<Option<Duration>>, Thrown> {
  let Some(resolver) = RESOLVER.with(|slot| slot.get(js)) else {
    return Ok(None);
  };
  let args: Vec<Value> = input.map(|n| js.number(n)).into_iter().collect();
  let answer = js.call(resolver, js.undefined(), &args)?;
  Ok(Some(crate::config::resolved_timeout(
    js.number_value(answer),
    input,
  )))
}
