//! Keeps the JS thread's event loop polling, instead of sleeping in the kernel, until a
//! deadline `crate::runtime::spin` chose: an answer expected within microseconds is then
//! seen as it lands, with no halted CPU to wake. One spinner per JS thread serves all its
//! transports. Under Node it is a libuv idle handle (an active one makes the loop poll
//! without blocking; it runs no JS and, unreferenced, keeps nothing alive). Bun has no
//! libuv exports, so there a chain of `setImmediate`s does the same.
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::ptr;
use std::time::Instant;

use napi::sys;

use super::js::is_bun;
use super::js::timer_function;
use super::js::Js;
use super::uv::{uv, Uv, UV_IDLE};

enum Spinner {
  Node(&'static IdleHandle),
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
    IdleHandle::new(js).map_or(Spinner::Off, Spinner::Node)
  }
}

/// The loop's idle handle, freed by its close callback when the env goes away.
struct IdleHandle {
  uv: &'static Uv,
  handle: *mut c_void,
  layout: std::alloc::Layout,
  deadline: Cell<Instant>,
  active: Cell<bool>,
}

impl IdleHandle {
  fn new(js: Js) -> Option<&'static IdleHandle> {
    let uv = uv()?;
    let mut event_loop = ptr::null_mut();
    // SAFETY: env is this JS thread's env; the call only reads it.
    let status = unsafe { sys::napi_get_uv_event_loop(js.env, &mut event_loop) };
    if status != sys::Status::napi_ok || event_loop.is_null() {
      return None;
    }
    // SAFETY: uv_handle_size has no preconditions.
    let size = unsafe { (uv.handle_size)(UV_IDLE) };
    let layout = std::alloc::Layout::from_size_align(size.max(1), 16).ok()?;
    // SAFETY: layout has a non-zero size.
    let handle = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<c_void>();
    if handle.is_null() {
      return None;
    }
    // SAFETY: handle is zeroed memory of uv_idle_t's size; the loop is this thread's.
    if unsafe { (uv.idle_init)(event_loop.cast(), handle) } != 0 {
      // SAFETY: allocated above with this layout; libuv did not take the handle.
      unsafe { std::alloc::dealloc(handle.cast(), layout) };
      return None;
    }
    // Lives until the close callback, which the env's teardown requests.
    let idle: &'static IdleHandle = Box::leak(Box::new(IdleHandle {
      uv,
      handle,
      layout,
      deadline: Cell::new(Instant::now()),
      active: Cell::new(false),
    }));
    let data = (idle as *const IdleHandle).cast_mut().cast::<c_void>();
    // SAFETY: the handle was initialised above; an unreferenced handle never keeps the
    // host alive; the hook runs once, with this data, when the env is torn down.
    unsafe {
      (uv.set_data)(handle, data);
      (uv.unref)(handle);
      sys::napi_add_env_cleanup_hook(js.env, Some(on_idle_teardown), data);
    }
    Some(idle)
  }

  fn until(&self, deadline: Instant) {
    if deadline > self.deadline.get() {
      self.deadline.set(deadline);
    }
    if !self.active.replace(true) {
      // SAFETY: the handle is live: it closes only in the env's teardown, which also takes
      // the spinner out of this thread's slot.
      unsafe { (self.uv.idle_start)(self.handle, on_idle) };
    }
  }

  fn tick(&self) {
    if Instant::now() >= self.deadline.get() {
      self.active.set(false);
      // SAFETY: called from the handle's own callback: it is live.
      unsafe { (self.uv.idle_stop)(self.handle) };
    }
  }
}

unsafe extern "C" fn on_idle(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: the data is the leaked IdleHandle set in `new`, freed only after the close.
  let idle = unsafe { &*((uv.get_data)(handle) as *const IdleHandle) };
  idle.tick();
}

unsafe extern "C" fn on_idle_teardown(data: *mut c_void) {
  let _ = SPINNER.try_with(|spinner| spinner.borrow_mut().replace(Spinner::Off));
  // SAFETY: data is the leaked IdleHandle registered in `new`; the close is requested once.
  let idle = unsafe { &*(data as *const IdleHandle) };
  // SAFETY: the handle is live until this close; on_idle_closed frees it afterwards.
  unsafe { (idle.uv.close)(idle.handle, on_idle_closed) };
}

unsafe extern "C" fn on_idle_closed(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: libuv is done with the handle; the data is the IdleHandle leaked in `new`,
  // whose only other user (the thread's slot) was emptied by the teardown.
  let idle = unsafe { Box::from_raw((uv.get_data)(handle) as *mut IdleHandle) };
  // SAFETY: allocated in `new` with this layout.
  unsafe { std::alloc::dealloc(idle.handle.cast(), idle.layout) };
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
    // SAFETY: env is live; the hook runs once when it is torn down, with no data.
    unsafe { sys::napi_add_env_cleanup_hook(js.env, Some(on_bun_teardown), ptr::null_mut()) };
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

unsafe extern "C" fn on_bun_teardown(_data: *mut c_void) {
  let _ = SPINNER.try_with(|spinner| spinner.borrow_mut().replace(Spinner::Off));
}
