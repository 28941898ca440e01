//! `host::Transports` over JS: a transport is whatever JS object `connection.transport` is
//! (C5), asked through its methods; ours are created from a config here.
use std::time::Duration;

use super::executor;
use super::host::{call_method, ready, OnJs};
use super::js::{Held, Js, Thrown, Value};
use crate::host::{Pending, Transports, Values};

impl<T: OnJs> Transports for T {
  fn create_transport(&self, config: &Held) -> Pending<Held> {
    self.create_transport_as(config, false)
  }

  fn create_transport_as(&self, config: &Held, legacy_sse: bool) -> Pending<Held> {
    let js = self.on().js;
    match super::client::create_transport_value(js, config.get(js), legacy_sse) {
      Ok(created) => executor::settled(js, created),
      Err(Thrown(error)) => ready(Err(self.on().hold(error))),
    }
  }

  fn request(
    &self,
    transport: &Held,
    method: &str,
    params: Held,
    options: Option<Held>,
  ) -> Pending<Held> {
    let js = self.on().js;
    let mut args = vec![js.string(method), params.get(js)];
    if let Some(options) = options.filter(|o| !self.is_nullish(o)) {
      args.push(options.get(js));
    }
    self.on().call_method(transport, "request", &args)
  }

  fn notify(&self, transport: &Held, method: &str) -> Pending<Held> {
    self
      .on()
      .call_method(transport, "notify", &[self.on().js.string(method)])
  }

  fn close(&self, transport: &Held) -> Pending<Held> {
    self.on().call_method(transport, "close", &[])
  }

  fn connect_timeout_error(&self, name: &str, timeout_ms: f64, message: &str) -> Held {
    let js = self.on().js;
    match super::js_error::connect_timeout_error(js, name, timeout_ms) {
      Ok(error) => self.on().hold(error),
      Err(_) => self.error(message),
    }
  }

  fn start_listener(&self, transport: &Held, filter: Option<&Held>) {
    // It settles when the listener stops and never rejects (H8).
    let js = self.on().js;
    let args: Vec<Value> = filter.iter().map(|f| f.get(js)).collect();
    call_if_present(js, transport, "startSSEListener", &args);
  }

  fn listen(&self, transport: &Held) -> Pending<Held> {
    let js = self.on().js;
    match call_own(js, transport, "startSSEListener", &[]) {
      Some(started) => executor::settled(js, started),
      None => ready(Ok(self.on().hold(js.undefined()))),
    }
  }

  fn set_protocol_version(&self, transport: &Held, version: &str) {
    let js = self.on().js;
    call_if_present(js, transport, "setProtocolVersion", &[js.string(version)]);
  }

  fn attach_connection(&self, transport: &Held, connection: &Held) {
    let js = self.on().js;
    call_if_present(js, transport, "_attachConnection", &[connection.get(js)]);
  }

  fn set_stateless(&self, transport: &Held, era: Option<(&str, &str)>) -> bool {
    let js = self.on().js;
    let args = match era {
      Some((version, meta)) => vec![js.string(version), js.string(meta)],
      None => Vec::new(),
    };
    call_own(js, transport, "_setStateless", &args).is_some()
  }

  fn set_meta_entry(&self, transport: &Held, key: &str, value: &str) -> bool {
    let js = self.on().js;
    call_own(
      js,
      transport,
      "_setMetaEntry",
      &[js.string(key), js.string(value)],
    )
    .is_some_and(|done| js.truthy(done))
  }

  fn user_wait(&self, transport: &Held) -> Duration {
    let js = self.on().js;
    call_own(js, transport, "_userWaitMs", &[])
      .and_then(|ms| js.number_value(ms))
      .filter(|ms| ms.is_finite() && *ms > 0.0)
      .map_or(Duration::ZERO, |ms| Duration::from_secs_f64(ms / 1000.0))
  }
}

/// Calls `object[method](...args)` when the object has that method (ours do, a caller's own
/// transport may not); the outcome is not awaited.
fn call_if_present(js: Js, object: &Held, method: &str, args: &[Value]) {
  let _ = call_own(js, object, method, args);
}

/// What `object[method](...args)` returned, when the object has that method and it did not
/// throw.
fn call_own(js: Js, object: &Held, method: &str, args: &[Value]) -> Option<Value> {
  let object = object.get(js);
  if !js.get(object, method).is_ok_and(|f| js.is_function(f)) {
    return None;
  }
  call_method(js, object, method, args).ok()
}
