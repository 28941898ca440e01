//! `request` and `notify` for any transport whose JS side is a `JsSide` (T2, T8, T10).
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::args::abort_reason;
use super::args::{self, ParamsError};
use super::js::{room, Js, Room, Thrown, Value, STACK_STRING};
use super::js_error;
use super::js_side::{abort_pending, JsSide, Shared};
use super::request_hooks;
use super::timeout_resolver;
use crate::error::CoreError;
use crate::session::{Hooks, RequestOptions};

fn type_error(js: Js, message: &str) -> Result<Value, Thrown> {
  js.rejected(js_error::type_error(js, message))
}

/// Stack room for a call's method name and its params' JSON: most calls need no heap.
struct CallText {
  method: Room<256>,
  params: Room<STACK_STRING>,
}

impl CallText {
  fn new() -> Self {
    CallText {
      method: room(),
      params: room(),
    }
  }
}

type MethodAndParams<'b> = (Cow<'b, str>, Option<Cow<'b, str>>);

/// T2/E2: the method name and the params as JSON text, or the value to reject with.
fn method_and_params(
  js: Js,
  method: Value,
  params: Option<Value>,
  room: &mut CallText,
) -> Result<MethodAndParams<'_>, Value> {
  let method =
    args::method(js, method, &mut room.method).map_err(|m| js_error::type_error(js, &m))?;
  let params = args::params(js, params, &mut room.params).map_err(|e| match e {
    ParamsError::Type(message) => js_error::type_error(js, &message),
    ParamsError::Thrown(thrown) => thrown,
  })?;
  Ok((method, params))
}

fn connected_session(side: &Shared) -> Option<std::sync::Arc<crate::session::Session>> {
  side.borrow().session.clone().filter(|s| s.is_connected())
}

pub fn request(
  js: Js,
  side: &Shared,
  method: Value,
  params: Option<Value>,
  options: Option<Value>,
) -> Result<Value, Thrown> {
  let mut room = CallText::new();
  let (method, params) = match method_and_params(js, method, params, &mut room) {
    Ok(both) => both,
    Err(rejection) => return js.rejected(rejection),
  };
  // One type check for "absent": `signal` checks the rest.
  let options = options.filter(|v| !js.is_nullish(*v));
  let signal = match args::signal(js, options) {
    Ok(s) => s,
    Err(message) => return type_error(js, &message),
  };
  let (on_progress, request_options) = match args::request_options(js, options) {
    Ok(both) => both,
    Err(message) => return type_error(js, &message),
  };
  // T8: already aborted: nothing is sent.
  if let Some(signal) = signal {
    if js.truthy(js.get(signal, "aborted")?) {
      return js.rejected(abort_reason(js, signal).0);
    }
  }
  let Some(session) = connected_session(side) else {
    return js.rejected(js_error::to_js(
      js,
      transport_of(side),
      &CoreError::NotConnected,
    ));
  };
  let input = side.borrow().timeout_input;
  let request_options = match timeout_resolver::resolve(js, input) {
    Ok(base_timeout) => RequestOptions {
      base_timeout,
      ..request_options
    },
    Err(Thrown(error)) => return js.rejected(error),
  };
  let (deferred, promise) = js.create_promise()?;
  let hooks = Hooks {
    progress: on_progress.map(|f| request_hooks::of_value(js, f)),
    ..Hooks::promise(request_hooks::of_deferred(deferred))
  };
  let id = match session.request_tracked(&method, params.as_deref(), request_options, hooks) {
    Ok(id) => id,
    Err(e) => {
      js.reject(
        request_hooks::release(js, hooks),
        js_error::to_js(js, transport_of(side), &e),
      );
      return Ok(promise);
    }
  };
  side.borrow_mut().update_keep_alive();
  if let Some(signal) = signal {
    let target = AbortTarget {
      side: Rc::downgrade(side),
      id,
    };
    let listener = js.closure("onAbort", move |js, _| {
      target.aborted(js);
      Ok(js.undefined())
    })?;
    let add = js.get(signal, "addEventListener")?;
    js.call(add, signal, &[js.string("abort"), listener])?;
    let (signal, listener) = (
      request_hooks::of_value(js, signal),
      request_hooks::of_value(js, listener),
    );
    if !session.set_abort(id, signal, listener) {
      request_hooks::drop_ref(js, signal);
      request_hooks::drop_ref(js, listener);
    }
  }
  Ok(promise)
}

pub fn notify(
  js: Js,
  side: &Shared,
  method: Value,
  params: Option<Value>,
) -> Result<Value, Thrown> {
  let mut room = CallText::new();
  let (method, params) = match method_and_params(js, method, params, &mut room) {
    Ok(both) => both,
    Err(rejection) => return js.rejected(rejection),
  };
  let Some(session) = connected_session(side) else {
    return js.rejected(js_error::to_js(
      js,
      transport_of(side),
      &CoreError::NotConnected,
    ));
  };
  let input = side.borrow().timeout_input;
  let base_timeout = match timeout_resolver::resolve(js, input) {
    Ok(base) => base,
    Err(Thrown(error)) => return js.rejected(error),
  };
  let (deferred, promise) = js.create_promise()?;
  let hooks = Hooks::promise(request_hooks::of_deferred(deferred));
  match session.notify_tracked(&method, params.as_deref(), base_timeout, hooks) {
    Ok(_) => side.borrow_mut().update_keep_alive(),
    Err(e) => js.reject(deferred, js_error::to_js(js, transport_of(side), &e)),
  }
  Ok(promise)
}

struct AbortTarget {
  side: Weak<RefCell<JsSide>>,
  id: u64,
}

impl AbortTarget {
  fn aborted(&self, js: Js) {
    let Some(side) = self.side.upgrade() else {
      return;
    };
    // None once the request has settled: a late abort changes nothing.
    let Some(signal) = side.borrow().abort_signal(self.id) else {
      return;
    };
    let (reason, text) = abort_reason(js, signal);
    // T9: the core drops the entry and tells the server.
    abort_pending(&side, self.id, reason, &text);
  }
}

/// A45: the transport `side`'s errors name.
fn transport_of(side: &Shared) -> crate::transport_error::TransportKind {
  side.borrow().transport
}
