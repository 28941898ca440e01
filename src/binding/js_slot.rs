//! A process-wide JS value of ours (A9's timeout resolver, A30's manager instance): one per
//! JS thread, as a module-level variable is one per isolate, and let go of before that
//! thread's environment is torn down.
use std::cell::{Cell, RefCell};
use std::thread::LocalKey;

use super::js::{Held, Js, Value};

#[derive(Default)]
pub struct JsSlot {
  value: RefCell<Option<Held>>,
  hooked: Cell<bool>,
}

impl JsSlot {
  pub const fn new() -> Self {
    JsSlot {
      value: RefCell::new(None),
      hooked: Cell::new(false),
    }
  }

  pub fn get(&self, js: Js) -> Option<Value> {
    self.value.borrow().as_ref().map(|held| held.get(js))
  }

  fn clear(&self) {
    drop(self.value.borrow_mut().take());
  }
}

/// Fills (or with `None` empties) the slot.
pub fn set(slot: &'static LocalKey<JsSlot>, js: Js, value: Option<Value>) {
  let held = value.map(|v| Held::new(js, v));
  slot.with(|s| {
    if held.is_some() && !s.hooked.replace(true) {
      js.on_teardown(move || {
        slot.with(|s| {
          s.clear();
          s.hooked.set(false);
        })
      });
    }
    *s.value.borrow_mut() = held;
  });
}

pub fn clear(slot: &'static LocalKey<JsSlot>) {
  slot.with(JsSlot::clear);
}
