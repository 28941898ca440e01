//! The core's host traits over JS: values are held JS values, transports are whatever JS
//! object `connection.transport` is (C5; our own classes answer without leaving Rust for
//! the I/O), signals are `AbortSignal`s, and the clock is the JS thread's executor.
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use napi::sys;

use super::executor;
use super::js::{ErrorKind, Held, Js, Thrown, Value};
use super::js_error;
use crate::host::{Callbacks, Clock, HostFn, Pending, Signals, Values};

#[derive(Clone, Copy)]
pub struct JsHost {
  pub js: Js,
}

impl JsHost {
  pub fn new(js: Js) -> Self {
    JsHost { js }
  }

  pub fn hold(&self, value: Value) -> Held {
    Held::new(self.js, value)
  }

  fn held(&self, result: Result<Value, Thrown>) -> Result<Held, Held> {
    result
      .map(|value| self.hold(value))
      .map_err(|Thrown(error)| self.hold(error))
  }

  /// `object[method](...args)`, then its outcome as a promise would settle.
  pub fn call_method(&self, object: &Held, method: &str, args: &[Value]) -> Pending<Held> {
    let js = self.js;
    match call_method(js, object.get(js), method, args) {
      Ok(value) => executor::settled(js, value),
      Err(Thrown(error)) => ready(Err(self.hold(error))),
    }
  }

  /// A JS call whose outcome (a promise or a plain value) is awaited.
  pub fn call(&self, function: Value, this: Value, args: &[Value]) -> Pending<Held> {
    match self.js.call(function, this, args) {
      Ok(value) => executor::settled(self.js, value),
      Err(Thrown(error)) => ready(Err(self.hold(error))),
    }
  }
}

pub fn ready<T: 'static>(value: T) -> LocalBoxFuture<'static, T> {
  Box::pin(std::future::ready(value))
}

/// Calls `object[method](...args)`; a missing method is a TypeError.
pub fn call_method(js: Js, object: Value, method: &str, args: &[Value]) -> Result<Value, Thrown> {
  let function = js.get(object, method)?;
  if !js.is_function(function) {
    let error = js_error::type_error(js, &format!("The transport has no \"{method}\" method"));
    return Err(Thrown(error));
  }
  js.call(function, object, args)
}

/// A host that lives on a JS thread: its values, clock, transports and signals are JS's.
pub trait OnJs: Clone + 'static {
  fn on(&self) -> JsHost;
}

impl OnJs for JsHost {
  fn on(&self) -> JsHost {
    *self
  }
}

impl<T: OnJs> Values for T {
  type Value = Held;

  fn undefined(&self) -> Held {
    self.on().hold(self.on().js.undefined())
  }

  fn string(&self, text: &str) -> Held {
    self.on().hold(self.on().js.string(text))
  }

  fn number(&self, value: f64) -> Held {
    self.on().hold(self.on().js.number(value))
  }

  fn json(&self, text: &str) -> Result<Held, Held> {
    self.on().held(self.on().js.json_parse(text))
  }

  fn object(&self, fields: Vec<(&str, Held)>) -> Result<Held, Held> {
    let js = self.on().js;
    let object = js.object().map_err(|Thrown(e)| self.on().hold(e))?;
    for (name, value) in fields {
      js.set(object, name, value.get(js));
    }
    Ok(self.on().hold(object))
  }

  fn array(&self, items: Vec<Held>) -> Result<Held, Held> {
    let js = self.on().js;
    let array = js
      .array(items.len())
      .map_err(|Thrown(e)| self.on().hold(e))?;
    for (index, item) in items.iter().enumerate() {
      js.set_element(array, index as u32, item.get(js))
        .map_err(|Thrown(e)| self.on().hold(e))?;
    }
    Ok(self.on().hold(array))
  }

  fn map(&self, entries: Vec<(String, Held)>) -> Result<Held, Held> {
    let js = self.on().js;
    let built = (|| {
      let map = js.construct(js.get(js.global(), "Map")?, &[])?;
      let set = js.get(map, "set")?;
      for (key, value) in &entries {
        js.call(set, map, &[js.string(key), value.get(js)])?;
      }
      Ok(map)
    })();
    self.on().held(built)
  }

  fn shallow_copy(&self, object: &Held) -> Result<Held, Held> {
    let js = self.on().js;
    let copied = (|| {
      let assign = js.get(js.get(js.global(), "Object")?, "assign")?;
      js.call(assign, js.undefined(), &[js.object()?, object.get(js)])
    })();
    self.on().held(copied)
  }

  fn field(&self, value: &Held, name: &str) -> Result<Held, Held> {
    let js = self.on().js;
    let value = value.get(js);
    if !matches!(
      js.type_of(value),
      sys::ValueType::napi_object | sys::ValueType::napi_function
    ) {
      return Ok(self.undefined());
    }
    self.on().held(js.get(value, name))
  }

  fn set_field(&self, object: &Held, name: &str, value: Held) -> Result<(), Held> {
    let js = self.on().js;
    let object = object.get(js);
    js.set_property(object, js.string(name), value.get(js))
      .map_err(|Thrown(e)| self.on().hold(e))
  }

  fn is_undefined(&self, value: &Held) -> bool {
    self.on().js.type_of(value.get(self.on().js)) == sys::ValueType::napi_undefined
  }

  fn is_nullish(&self, value: &Held) -> bool {
    self.on().js.is_nullish(value.get(self.on().js))
  }

  fn is_object(&self, value: &Held) -> bool {
    self.on().js.type_of(value.get(self.on().js)) == sys::ValueType::napi_object
  }

  fn truthy(&self, value: &Held) -> bool {
    self.on().js.truthy(value.get(self.on().js))
  }

  fn is_function(&self, value: &Held) -> bool {
    self.on().js.is_function(value.get(self.on().js))
  }

  fn is_error(&self, value: &Held) -> bool {
    self.on().js.is_error(value.get(self.on().js))
  }

  fn as_string(&self, value: &Held) -> Option<String> {
    self.on().js.rust_string(value.get(self.on().js))
  }

  fn as_number(&self, value: &Held) -> Option<f64> {
    self.on().js.number_value(value.get(self.on().js))
  }

  fn as_bool(&self, value: &Held) -> Option<bool> {
    let js = self.on().js;
    let value = value.get(js);
    (js.type_of(value) == sys::ValueType::napi_boolean).then(|| js.truthy(value))
  }

  fn bytes(&self, value: &Held) -> Option<Vec<u8>> {
    let js = self.on().js;
    js.with_bytes(value.get(js), <[u8]>::to_vec)
  }

  fn to_json(&self, value: &Held) -> Result<Option<String>, Held> {
    self
      .on()
      .js
      .json_stringify(value.get(self.on().js))
      .map_err(|Thrown(error)| self.on().hold(error))
  }

  fn keys(&self, object: &Held) -> Result<Vec<String>, Held> {
    self
      .on()
      .js
      .keys(object.get(self.on().js))
      .map_err(|Thrown(error)| self.on().hold(error))
  }

  fn delete_field(&self, object: &Held, name: &str) {
    self.on().js.delete(object.get(self.on().js), name);
  }

  fn items(&self, value: &Held) -> Option<Vec<Held>> {
    let js = self.on().js;
    let array = value.get(js);
    if !js.is_array(array) {
      return None;
    }
    (0..js.array_length(array))
      .map(|i| js.element(array, i).ok().map(|item| self.on().hold(item)))
      .collect()
  }

  fn error(&self, message: &str) -> Held {
    self
      .on()
      .hold(self.on().js.error(ErrorKind::Error, message))
  }

  fn type_error(&self, message: &str) -> Held {
    self.on().hold(js_error::type_error(self.on().js, message))
  }

  fn message(&self, error: &Held) -> String {
    self.on().js.error_message(error.get(self.on().js))
  }
}

impl<T: OnJs> Clock for T {
  fn sleep(&self, delay: Duration) -> LocalBoxFuture<'static, ()> {
    executor::sleep(self.on().js, delay)
  }

  fn idle_sleep(&self, delay: Duration) -> LocalBoxFuture<'static, ()> {
    executor::idle_sleep(delay)
  }

  fn spawn(&self, work: LocalBoxFuture<'static, ()>) {
    executor::spawn(self.on().js, work);
  }
}

impl<T: OnJs> Callbacks for T {
  fn call(&self, function: &Held, args: Vec<Held>) -> Pending<Held> {
    let js = self.on().js;
    let args: Vec<Value> = args.iter().map(|a| a.get(js)).collect();
    self.on().call(function.get(js), js.undefined(), &args)
  }

  fn call_method(&self, object: &Held, name: &str, args: Vec<Held>) -> Pending<Held> {
    let js = self.on().js;
    let args: Vec<Value> = args.iter().map(|a| a.get(js)).collect();
    self.on().call_method(object, name, &args)
  }

  fn call_now(&self, object: &Held, name: &str, args: Vec<Held>) -> Result<Held, Held> {
    let js = self.on().js;
    let args: Vec<Value> = args.iter().map(|a| a.get(js)).collect();
    self.on().held(call_method(js, object.get(js), name, &args))
  }

  fn function(&self, name: &str, body: HostFn<Held>) -> Result<Held, Held> {
    let on = self.on();
    let function = on.js.closure(name, move |js, args| {
      let args = (0..args.len())
        .map(|i| Held::new(js, args.get(i)))
        .collect();
      executor::promise(js, body(args))
    });
    on.held(function)
  }

  fn procedure(&self, name: &str, body: std::rc::Rc<dyn Fn()>) -> Result<Held, Held> {
    let on = self.on();
    let function = on.js.closure(name, move |js, _| {
      body();
      Ok(js.undefined())
    });
    on.held(function)
  }
}

impl<T: OnJs> Signals for T {
  fn abort_reason(&self, signal: &Held) -> Option<Held> {
    let js = self.on().js;
    let signal = signal.get(js);
    let aborted = js.get(signal, "aborted").ok()?;
    js.truthy(aborted)
      .then(|| self.on().hold(super::args::abort_reason(js, signal).0))
  }

  fn when_aborted(&self, signal: &Held) -> LocalBoxFuture<'static, Held> {
    match AbortWatch::start(self.on().js, signal.clone()) {
      Ok(watch) => Box::pin(watch),
      Err(_) => Box::pin(std::future::pending()),
    }
  }
}

/// An `abort` listener on a signal; removed when the watch is dropped.
struct AbortWatch {
  signal: Held,
  listener: Held,
  fired: oneshot::Receiver<Held>,
}

impl AbortWatch {
  fn start(js: Js, signal: Held) -> Result<Self, Thrown> {
    let (sender, fired) = oneshot::channel();
    let sender = RefCell::new(Some(sender));
    let target = signal.clone();
    let listener = js.closure("onAbort", move |js, _| {
      let reason = Held::new(js, super::args::abort_reason(js, target.get(js)).0);
      executor::complete(js, &sender, reason);
      Ok(js.undefined())
    })?;
    call_method(
      js,
      signal.get(js),
      "addEventListener",
      &[js.string("abort"), listener],
    )?;
    Ok(AbortWatch {
      signal,
      listener: Held::new(js, listener),
      fired,
    })
  }
}

impl Future for AbortWatch {
  type Output = Held;

  fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Held> {
    match self.fired.poll_unpin(context) {
      Poll::Ready(Ok(reason)) => Poll::Ready(reason),
      // The listener is gone only with the watch itself.
      Poll::Ready(Err(_)) | Poll::Pending => Poll::Pending,
    }
  }
}

impl Drop for AbortWatch {
  fn drop(&mut self) {
    let js = self.signal.js();
    let _ = call_method(
      js,
      self.signal.get(js),
      "removeEventListener",
      &[js.string("abort"), self.listener.get(js)],
    );
  }
}
