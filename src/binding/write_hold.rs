//! Holds the requests JS makes while it runs a delivery's continuations, and writes them
//! together from a microtask queued behind those continuations.
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use napi::sys;

use super::js::Js;
use crate::session::Session;

struct Holder {
  queue_microtask: sys::napi_ref,
  release: sys::napi_ref,
  held: Vec<Weak<Session>>,
}

thread_local! {
  static HOLDER: RefCell<Option<Holder>> = const { RefCell::new(None) };
}

/// Holds `session`'s requests until the microtasks queued so far have run.
pub fn hold(js: Js, session: &Arc<Session>) {
  HOLDER.with(|holder| {
    let mut holder = holder.borrow_mut();
    if holder.is_none() {
      *holder = make(js);
    }
    let Some(holder) = holder.as_mut() else {
      return;
    };
    let first = holder.held.is_empty();
    if holder
      .held
      .iter()
      .any(|s| std::ptr::eq(s.as_ptr(), Arc::as_ptr(session)))
    {
      return;
    }
    let queued = !first
      || match (
        js.ref_value(holder.queue_microtask),
        js.ref_value(holder.release),
      ) {
        (Some(queue), Some(release)) => js.call(queue, js.undefined(), &[release]).is_ok(),
        _ => false,
      };
    if queued {
      session.hold_requests();
      holder.held.push(Arc::downgrade(session));
    }
  });
}

fn make(js: Js) -> Option<Holder> {
  let queue = js
    .get(js.global(), "queueMicrotask")
    .ok()
    .filter(|f| js.is_function(*f))?;
  let release = js
    .closure("mcpNativeRelease", |js, _| {
      let held = HOLDER.with(|h| h.borrow_mut().as_mut().map(|h| std::mem::take(&mut h.held)));
      for session in held.into_iter().flatten().filter_map(|s| s.upgrade()) {
        session.release_requests();
      }
      Ok(js.undefined())
    })
    .ok()?;
  Some(Holder {
    queue_microtask: js.new_ref(queue, 1),
    release: js.new_ref(release, 1),
    held: Vec::new(),
  })
}
