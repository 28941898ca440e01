//! Keeps the JS thread's event loop polling, instead of sleeping in the kernel, until a
//! deadline `crate::runtime::spin` chose: an answer expected within microseconds is then
//! seen as it lands, with no halted CPU to wake. One spinner per JS thread serves all its
//! transports. Under Node it is a libuv idle handle (an active one makes the loop poll
//! without blocking; it runs no JS and, unreferenced, keeps nothing alive). Bun has no
//! libuv exports, so there a chain of `setImmediate`s does the same.
use std::cell::{Cell, RefCell};
use std::time::Instant;

use napi::sys;

use super::js::is_bun;
use super::js::timer_function;
use super::js::Js;
use super::uv::Idle;

enum Spinner {
  Node(&'static Idle),
  Bun(BunImmediates),
  /// Neither works here (or the env is gone): never spin.
  Off,
}

thread_local! {
  static SPINNER: RefCell<Option<Spinner>> = const { RefCell::new(None) };
}

/// Polls the loop until at least `deadline`.
pub fn until(js: Js, deadline: Instant) {
  SPINNER.with(|spinner| {
    let mut spinner = spinner.borrow_mut();
    let spinner = spinner.get_or_insert_with(|| Spinner::new(js));
    match spinner {
      Spinner::Node(idle) => idle.until(deadline),
      Spinner::Bun(bun) => {
        if !bun.until(js, deadline) {
          *spinner = Spinner::Off;
        }
      }
      Spinner::Off => {}
    }
  });
}

impl Spinner {
  fn new(js: Js) -> Spinner {
    if is_bun(js) {
      return BunImmediates::new(js).map_or(Spinner::Off, Spinner::Bun);
    }
    // At the env's teardown, before the handle closes, this thread stops using it.
    let forget = || {
      let _ = SPINNER.try_with(|spinner| spinner.borrow_mut().replace(Spinner::Off));
    };
    Idle::new(js, forget).map_or(Spinner::Off, Spinner::Node)
  }
}

/// Bun's stand-in: a `setImmediate` callback that schedules itself again until the
/// deadline. Its references are released by the env's teardown.
struct BunImmediates {
  env: sys::napi_env,
  set_immediate: sys::napi_ref,
  callback: sys::napi_ref,
  state: std::rc::Rc<BunState>,
}

struct BunState {
  deadline: Cell<Instant>,
  scheduled: Cell<bool>,
}

impl BunImmediates {
  fn new(js: Js) -> Option<BunImmediates> {
    let set_immediate = timer_function(js, "setImmediate")?;
    let state = std::rc::Rc::new(BunState {
      deadline: Cell::new(Instant::now()),
      scheduled: Cell::new(false),
    });
    let tick_state = state.clone();
    let callback = js
      .closure("mcpNativeSpin", move |js, _| {
        if Instant::now() < tick_state.deadline.get() {
          crate::runtime::spin::share_the_core();
          let again = SPINNER.with(|s| match &*s.borrow() {
            Some(Spinner::Bun(bun)) => bun.schedule(js),
            _ => false,
          });
          tick_state.scheduled.set(again);
        } else {
          tick_state.scheduled.set(false);
        }
        Ok(js.undefined())
      })
      .ok()?;
    let spinner = BunImmediates {
      env: js.env,
      set_immediate: js.new_ref(set_immediate, 1),
      callback: js.new_ref(callback, 1),
      state,
    };
    js.on_teardown(|| {
      let _ = SPINNER.try_with(|spinner| spinner.borrow_mut().replace(Spinner::Off));
    });
    Some(spinner)
  }

  /// False when setImmediate cannot be called: the caller turns spinning off.
  fn until(&self, js: Js, deadline: Instant) -> bool {
    if deadline > self.state.deadline.get() {
      self.state.deadline.set(deadline);
    }
    if self.state.scheduled.get() {
      return true;
    }
    let scheduled = self.schedule(js);
    self.state.scheduled.set(scheduled);
    scheduled
  }

  fn schedule(&self, js: Js) -> bool {
    let (Some(set_immediate), Some(callback)) = (
      js.ref_value(self.set_immediate),
      js.ref_value(self.callback),
    ) else {
      return false;
    };
    js.call(set_immediate, js.undefined(), &[callback]).is_ok()
  }
}

impl Drop for BunImmediates {
  fn drop(&mut self) {
    let js = Js::new(self.env);
    js.delete_ref(self.set_immediate);
    js.delete_ref(self.callback);
  }
}
