//! A request's JS handles as the session's table keeps them (`HostRef`): its promise's
//! deferred and references to its `onProgress`, abort signal and listener. Made here, and
//! released here when the table hands them back.
use napi::sys;

use super::js::{Js, Value};
use crate::session::{Hooks, HostRef};

pub fn of_deferred(deferred: sys::napi_deferred) -> HostRef {
  HostRef::new(deferred as usize)
}

fn deferred(handle: HostRef) -> sys::napi_deferred {
  handle.raw() as sys::napi_deferred
}

/// A strong reference to `value`, as a handle; `release` (or `drop_ref`) deletes it.
pub fn of_value(js: Js, value: Value) -> HostRef {
  HostRef::new(js.new_ref(value, 1) as usize)
}

fn reference(handle: HostRef) -> sys::napi_ref {
  handle.raw() as sys::napi_ref
}

pub fn value(js: Js, handle: HostRef) -> Option<Value> {
  js.ref_value(reference(handle))
}

pub fn drop_ref(js: Js, handle: HostRef) {
  js.delete_ref(reference(handle));
}

/// Everything but the promise goes: the abort listener is detached from its signal (T8:
/// no listener leak) and the references are deleted. The promise's deferred comes back,
/// to be settled.
pub fn release(js: Js, hooks: Hooks<HostRef>) -> sys::napi_deferred {
  if let Some(progress) = hooks.progress {
    drop_ref(js, progress);
  }
  if let Some((signal, listener)) = hooks.abort {
    if let (Some(signal), Some(listener)) = (value(js, signal), value(js, listener)) {
      if let Ok(remove) = js.get(signal, "removeEventListener") {
        let _ = js.call(remove, signal, &[js.string("abort"), listener]);
      }
    }
    drop_ref(js, signal);
    drop_ref(js, listener);
  }
  deferred(hooks.promise)
}
