//! S7: holds the requests JS makes while it runs the continuations of a delivery, and
//! writes them together from a microtask queued behind those continuations.
//!
//! Only the first round of continuations is covered: code behind async wrappers runs in
//! later rounds and writes directly. Holding for four rounds measured no faster with three
//! wrappers in between, and 5-10 % slower with none.
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use napi::sys;

use super::js::Js;
use crate::session::Session;

struct Holder {
  /// A settled promise: its `then` queues a microtask. Not `queueMicrotask`, which Jest's
  /// fake timers replace; they leave promises alone.
  settled: sys::napi_ref,
  then: sys::napi_ref,
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
    if holder
      .held
      .iter()
      .any(|s| std::ptr::eq(s.as_ptr(), Arc::as_ptr(session)))
    {
      return;
    }
    // Only a sink that holds (a stdio pipe) needs the release; HTTP sends at once.
    if !session.hold_requests() {
      return;
    }
    if holder.held.is_empty() && !queue_release(js, holder) {
      // No way to wait for the continuations: nothing stays held.
      session.release_requests();
      return;
    }
    holder.held.push(Arc::downgrade(session));
  });
}

fn queue_release(js: Js, holder: &Holder) -> bool {
  let refs = [holder.settled, holder.then, holder.release].map(|r| js.ref_value(r));
  match refs {
    [Some(settled), Some(then), Some(release)] => js.call(then, settled, &[release]).is_ok(),
    _ => false,
  }
}

/// The release microtask: writes what is held.
fn release() {
  let held = HOLDER.with(|holder| {
    holder
      .borrow_mut()
      .as_mut()
      .map(|h| std::mem::take(&mut h.held))
  });
  for session in held.into_iter().flatten().filter_map(|s| s.upgrade()) {
    session.release_requests();
  }
}

fn make(js: Js) -> Option<Holder> {
  let promise = js.get(js.global(), "Promise").ok()?;
  let resolve = js
    .get(promise, "resolve")
    .ok()
    .filter(|f| js.is_function(*f))?;
  let settled = js.call(resolve, promise, &[]).ok()?;
  let then = js
    .get(settled, "then")
    .ok()
    .filter(|f| js.is_function(*f))?;
  let release = js
    .closure("mcpNativeRelease", |js, _| {
      release();
      Ok(js.undefined())
    })
    .ok()?;
  Some(Holder {
    settled: js.new_ref(settled, 1),
    then: js.new_ref(then, 1),
    release: js.new_ref(release, 1),
    held: Vec::new(),
  })
}
