//! T11/P6: a server's request handed to `onRequest`, answered with what it returns or
//! throws, and aborted through its `{signal}` when the server cancels it.
use std::rc::Rc;

use napi::sys;

use super::executor;
use super::host::{self, ready, JsHost};
use super::js::{Js, Thrown, Value};
use super::js_side::{CallbackSlot, Shared};
use crate::client::server_requests;

/// T11: hand a server request to `onRequest` and send back what it returns or throws.
pub(super) fn answer(
  js: Js,
  side: &Shared,
  id: String,
  method: &str,
  params: Option<&serde_json::value::RawValue>,
) {
  let Some(session) = side.borrow().session.clone() else {
    return;
  };
  let host = JsHost::new(js);
  let handler = side.borrow_mut().callback(CallbackSlot::Request);
  let handled = handler.map(|handler| {
    let mut args = vec![
      js.string(method),
      js.json_parse_or_undefined(params.map(|p| p.get())),
    ];
    // P6: the handler's `{signal}` aborts when the server cancels its request.
    if let Some((controller, extra)) = abort_controller(js) {
      args.push(extra);
      let controller = js.new_ref(controller, 1);
      if let Some(old) = side.borrow_mut().serving.insert(id.clone(), controller) {
        js.delete_ref(old);
      }
    }
    match js.call(handler, js.undefined(), &args) {
      // A promise (or any thenable) is answered when it settles, anything else at once.
      Ok(value) if is_thenable(js, value) => executor::settled(js, value),
      Ok(value) => ready(Ok(host.hold(value))),
      Err(Thrown(exception)) => ready(Err(host.hold(exception))),
    }
  });
  let served = Rc::downgrade(side);
  executor::spawn(js, async move {
    let answer = server_requests::answer(&host, handled).await;
    if let Some(side) = served.upgrade() {
      let controller = side.borrow_mut().serving.remove(&id);
      if let Some(controller) = controller {
        js.delete_ref(controller);
      }
    }
    session.answer(&id, answer.as_deref());
  });
}

/// P6: the server cancelled `id`: its handler's signal aborts.
pub(super) fn cancel(js: Js, side: &Shared, id: &str) {
  let controller = side.borrow_mut().serving.remove(id);
  if let Some(controller) = controller {
    if let Some(value) = js.ref_value(controller) {
      let _ = host::call_method(js, value, "abort", &[]);
    }
    js.delete_ref(controller);
  }
}

/// A new `AbortController` and `{signal}` for a handler, where the runtime has one.
fn abort_controller(js: Js) -> Option<(Value, Value)> {
  let class = js.get(js.global(), "AbortController").ok()?;
  if !js.is_function(class) {
    return None;
  }
  let controller = js.construct(class, &[]).ok()?;
  let extra = js.object().ok()?;
  js.set(extra, "signal", js.get(controller, "signal").ok()?);
  Some((controller, extra))
}

fn is_thenable(js: Js, value: Value) -> bool {
  js.type_of(value) == sys::ValueType::napi_object
    && js.get(value, "then").is_ok_and(|then| js.is_function(then))
}
