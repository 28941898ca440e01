//! The binding's libuv glue: the libuv functions it calls, looked up in the host process
//! (Node exports libuv; Bun does not, and `None` tells it apart), and the two handles it
//! keeps on the JS thread's loop behind safe types: `Idle` (the loop polls instead of
//! sleeping) and `Poll` (a descriptor read on the loop). With `js.rs` (Node-API) and `sys/`
//! (the OS) the only `unsafe` code.
use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

use napi::sys;

use super::js::Js;

/// `UV_IDLE` and `UV_POLL` in libuv's `uv_handle_type`, `UV_READABLE` in `uv_poll_event`
/// (stable ABI).
pub const UV_IDLE: c_int = 6;
pub const UV_POLL: c_int = 8;
pub const UV_READABLE: c_int = 1;

pub type PollCallback = unsafe extern "C" fn(*mut c_void, c_int, c_int);
pub type CloseCallback = unsafe extern "C" fn(*mut c_void);

type HandleSize = unsafe extern "C" fn(c_int) -> usize;
type PollInit = unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int;
type PollStart = unsafe extern "C" fn(*mut c_void, c_int, PollCallback) -> c_int;
pub type IdleCallback = unsafe extern "C" fn(*mut c_void);
type IdleInit = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type IdleStart = unsafe extern "C" fn(*mut c_void, IdleCallback) -> c_int;
type HandleOp = unsafe extern "C" fn(*mut c_void) -> c_int;
type Close = unsafe extern "C" fn(*mut c_void, CloseCallback);
type Unref = unsafe extern "C" fn(*mut c_void);
type SetData = unsafe extern "C" fn(*mut c_void, *mut c_void);
type GetData = unsafe extern "C" fn(*const c_void) -> *mut c_void;

/// The libuv functions used, looked up in the host process.
pub struct Uv {
  pub handle_size: HandleSize,
  pub poll_init: PollInit,
  pub poll_start: PollStart,
  pub poll_stop: HandleOp,
  pub close: Close,
  pub unref: Unref,
  pub set_data: SetData,
  pub get_data: GetData,
  pub idle_init: IdleInit,
  pub idle_start: IdleStart,
  pub idle_stop: HandleOp,
}

/// Looks libuv up once. `None` when the host does not export it.
pub fn uv() -> Option<&'static Uv> {
  static UV: OnceLock<Option<Uv>> = OnceLock::new();
  UV.get_or_init(|| {
    fn find(name: &std::ffi::CStr) -> Option<*mut c_void> {
      crate::sys::host_symbol::find(name).map(std::ptr::NonNull::as_ptr)
    }
    // SAFETY (each transmute): a non-null symbol of that name is libuv's function of the
    // signature it is given here (libuv's public, stable C API).
    unsafe {
      Some(Uv {
        handle_size: std::mem::transmute::<*mut c_void, HandleSize>(find(c"uv_handle_size")?),
        poll_init: std::mem::transmute::<*mut c_void, PollInit>(find(c"uv_poll_init")?),
        poll_start: std::mem::transmute::<*mut c_void, PollStart>(find(c"uv_poll_start")?),
        poll_stop: std::mem::transmute::<*mut c_void, HandleOp>(find(c"uv_poll_stop")?),
        close: std::mem::transmute::<*mut c_void, Close>(find(c"uv_close")?),
        unref: std::mem::transmute::<*mut c_void, Unref>(find(c"uv_unref")?),
        set_data: std::mem::transmute::<*mut c_void, SetData>(find(c"uv_handle_set_data")?),
        get_data: std::mem::transmute::<*mut c_void, GetData>(find(c"uv_handle_get_data")?),
        idle_init: std::mem::transmute::<*mut c_void, IdleInit>(find(c"uv_idle_init")?),
        idle_start: std::mem::transmute::<*mut c_void, IdleStart>(find(c"uv_idle_start")?),
        idle_stop: std::mem::transmute::<*mut c_void, HandleOp>(find(c"uv_idle_stop")?),
      })
    }
  })
  .as_ref()
}

/// An idle handle of the JS thread's loop, active until a deadline: while it is, the loop
/// polls instead of sleeping. Unreferenced, it never keeps the host alive. It lives until the
/// env's teardown, which runs `on_teardown` and then closes and frees it.
pub struct Idle {
  uv: &'static Uv,
  handle: *mut c_void,
  layout: std::alloc::Layout,
  deadline: Cell<Instant>,
  active: Cell<bool>,
  on_teardown: fn(),
}

impl Idle {
  pub fn new(js: Js, on_teardown: fn()) -> Option<&'static Idle> {
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
    let idle: &'static Idle = Box::leak(Box::new(Idle {
      uv,
      handle,
      layout,
      deadline: Cell::new(Instant::now()),
      active: Cell::new(false),
      on_teardown,
    }));
    let data = (idle as *const Idle).cast_mut().cast::<c_void>();
    // SAFETY: the handle was initialised above; an unreferenced handle never keeps the
    // host alive; the hook runs once, with this data, when the env is torn down.
    unsafe {
      (uv.set_data)(handle, data);
      (uv.unref)(handle);
      sys::napi_add_env_cleanup_hook(js.env, Some(on_idle_teardown), data);
    }
    Some(idle)
  }

  /// Keeps the loop polling until at least `deadline`.
  pub fn until(&self, deadline: Instant) {
    if deadline > self.deadline.get() {
      self.deadline.set(deadline);
    }
    if !self.active.replace(true) {
      // SAFETY: the handle is live: it closes only in the env's teardown, whose
      // `on_teardown` first stops every use of it.
      unsafe { (self.uv.idle_start)(self.handle, on_idle) };
    }
  }

  fn tick(&self) {
    if Instant::now() >= self.deadline.get() {
      self.active.set(false);
      // SAFETY: called from the handle's own callback: it is live.
      unsafe { (self.uv.idle_stop)(self.handle) };
    } else {
      crate::runtime::spin::share_the_core();
    }
  }
}

unsafe extern "C" fn on_idle(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: the data is the leaked Idle set in `new`, freed only after the close.
  let idle = unsafe { &*((uv.get_data)(handle) as *const Idle) };
  idle.tick();
}

unsafe extern "C" fn on_idle_teardown(data: *mut c_void) {
  // SAFETY: data is the leaked Idle registered in `new`; the close is requested once.
  let idle = unsafe { &*(data as *const Idle) };
  (idle.on_teardown)();
  // SAFETY: the handle is live until this close; on_idle_closed frees it afterwards.
  unsafe { (idle.uv.close)(idle.handle, on_idle_closed) };
}

unsafe extern "C" fn on_idle_closed(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: libuv is done with the handle; the data is the Idle leaked in `new`, whose
  // users stopped in `on_teardown`.
  let idle = unsafe { Box::from_raw((uv.get_data)(handle) as *mut Idle) };
  // SAFETY: allocated in `new` with this layout.
  unsafe { std::alloc::dealloc(idle.handle.cast(), idle.layout) };
}

type OnReadable = Box<dyn FnMut(Js)>;

/// A poll handle of the JS thread's loop on one descriptor. `on_readable` runs whenever the
/// descriptor is readable (or in error), inside a handle scope and a callback scope, whose
/// close runs the microtasks its deliveries queue, as a threadsafe function's call would.
/// Unreferenced, it never keeps the host alive. `stop` (or the env's teardown) closes it;
/// `on_closed` runs once libuv is done with it, and both callbacks are dropped then.
pub struct Poll {
  uv: &'static Uv,
  env: sys::napi_env,
  /// The `uv_poll_t`, allocated here; freed when the poll drops, after its close callback.
  handle: *mut c_void,
  layout: std::alloc::Layout,
  on_readable: RefCell<Option<OnReadable>>,
  on_closed: RefCell<Option<Box<dyn FnOnce()>>>,
  context: Cell<sys::napi_async_context>,
  closing: Cell<bool>,
  in_callback: Cell<bool>,
}

impl Poll {
  /// Starts watching `fd`, which must stay open until `on_closed`; `None` where the host's
  /// loop cannot (no libuv exports, or libuv refused the descriptor).
  pub fn start(
    js: Js,
    fd: c_int,
    on_readable: impl FnMut(Js) + 'static,
    on_closed: impl FnOnce() + 'static,
  ) -> Option<Rc<Poll>> {
    let uv = uv()?;
    let mut event_loop = ptr::null_mut();
    // SAFETY: env is this JS thread's env; the call only reads it.
    let status = unsafe { sys::napi_get_uv_event_loop(js.env, &mut event_loop) };
    if status != sys::Status::napi_ok || event_loop.is_null() {
      return None;
    }
    // SAFETY: uv_handle_size has no preconditions.
    let size = unsafe { (uv.handle_size)(UV_POLL) };
    let layout = std::alloc::Layout::from_size_align(size.max(1), 16).ok()?;
    // SAFETY: layout has a non-zero size.
    let handle = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<c_void>();
    if handle.is_null() {
      return None;
    }
    // SAFETY: handle is zeroed memory of uv_poll_t's size; the loop is this thread's; fd is
    // an open, non-blocking descriptor its owner keeps until the close callback.
    if unsafe { (uv.poll_init)(event_loop.cast(), handle, fd) } != 0 {
      // SAFETY: allocated above with this layout; libuv did not take the handle.
      unsafe { std::alloc::dealloc(handle.cast(), layout) };
      return None;
    }
    let mut context = ptr::null_mut();
    // SAFETY: env is live; a null resource makes napi create one.
    unsafe {
      sys::napi_async_init(
        js.env,
        ptr::null_mut(),
        js.string("mcp-native:stdout"),
        &mut context,
      )
    };
    let poll = Rc::new(Poll {
      uv,
      env: js.env,
      handle,
      layout,
      on_readable: RefCell::new(Some(Box::new(on_readable))),
      on_closed: RefCell::new(Some(Box::new(on_closed))),
      context: Cell::new(context),
      closing: Cell::new(false),
      in_callback: Cell::new(false),
    });
    // libuv holds one strong count until the close callback gives it back.
    let data = Rc::into_raw(poll.clone()).cast_mut().cast::<c_void>();
    // SAFETY: handle was initialised by uv_poll_init above; the callbacks match libuv's
    // signatures; the handle does not keep the host alive (pending promises do).
    unsafe {
      (uv.set_data)(handle, data);
      (uv.unref)(handle);
      (uv.poll_start)(handle, UV_READABLE, on_poll_readable);
      sys::napi_add_env_cleanup_hook(js.env, Some(on_poll_teardown), data);
    }
    Some(poll)
  }

  /// Stops watching and closes the handle. Idempotent.
  pub fn stop(&self) {
    if self.closing.replace(true) {
      return;
    }
    let data = (self as *const Poll).cast_mut().cast::<c_void>();
    // SAFETY: the handle is live (not closed yet: `closing` was false); env is this
    // thread's; the hook was registered with exactly this function and data.
    unsafe {
      (self.uv.poll_stop)(self.handle);
      (self.uv.close)(self.handle, on_poll_closed);
      sys::napi_remove_env_cleanup_hook(self.env, Some(on_poll_teardown), data);
    }
    if !self.in_callback.get() {
      self.destroy_context();
    }
  }

  /// Whether `stop` has run: the handle is closing or closed.
  pub fn is_closing(&self) -> bool {
    self.closing.get()
  }

  /// Stops watching for a while (the descriptor is read elsewhere meanwhile).
  pub fn pause(&self) {
    if !self.closing.get() {
      // SAFETY: the handle is live (not closing).
      unsafe { (self.uv.poll_stop)(self.handle) };
    }
  }

  /// Watches again after `pause`.
  pub fn resume(&self) {
    if !self.closing.get() {
      // SAFETY: the handle is live (not closing) and was initialised in `start`.
      unsafe { (self.uv.poll_start)(self.handle, UV_READABLE, on_poll_readable) };
    }
  }

  fn destroy_context(&self) {
    let context = self.context.replace(ptr::null_mut());
    if !context.is_null() {
      // SAFETY: created by napi_async_init on this env; destroyed once (nulled above).
      unsafe { sys::napi_async_destroy(self.env, context) };
    }
  }

  fn readable(&self) {
    let js = Js::new(self.env);
    let mut handle_scope = ptr::null_mut();
    let mut callback_scope = ptr::null_mut();
    self.in_callback.set(true);
    // SAFETY: a libuv callback on the JS thread, outside any other scope: open a handle
    // scope for the values made here and a callback scope, whose close runs the microtasks.
    unsafe {
      sys::napi_open_handle_scope(self.env, &mut handle_scope);
      // Node ignores the resource argument: the async context carries it.
      sys::napi_open_callback_scope(
        self.env,
        ptr::null_mut(),
        self.context.get(),
        &mut callback_scope,
      );
    }
    if let Some(on_readable) = self.on_readable.borrow_mut().as_mut() {
      on_readable(js);
    }
    // SAFETY: the scopes opened above, closed in reverse order.
    unsafe {
      sys::napi_close_callback_scope(self.env, callback_scope);
      sys::napi_close_handle_scope(self.env, handle_scope);
    }
    self.in_callback.set(false);
    if self.closing.get() {
      self.destroy_context();
    }
  }
}

impl Drop for Poll {
  fn drop(&mut self) {
    // SAFETY: allocated in `start` with this layout; the close callback has run (libuv's
    // count kept the poll alive until then), so libuv no longer uses the memory.
    unsafe { std::alloc::dealloc(self.handle.cast(), self.layout) };
  }
}

unsafe extern "C" fn on_poll_readable(handle: *mut c_void, _status: c_int, _events: c_int) {
  let Some(uv) = uv() else { return };
  let data = (uv.get_data)(handle) as *const Poll;
  // SAFETY: the data is the Rc<Poll> raw pointer set in `start`, alive until the close
  // callback: this takes one more count of it for the call.
  let poll = unsafe {
    Rc::increment_strong_count(data);
    Rc::from_raw(data)
  };
  let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll.readable()));
}

unsafe extern "C" fn on_poll_closed(handle: *mut c_void) {
  let Some(uv) = uv() else { return };
  // SAFETY: gives back the strong count handed to libuv in `start`; libuv is done with the
  // handle now.
  let poll = unsafe { Rc::from_raw((uv.get_data)(handle) as *const Poll) };
  // The callbacks (and what they hold) go with the handle.
  drop(poll.on_readable.borrow_mut().take());
  let on_closed = poll.on_closed.borrow_mut().take();
  if let Some(on_closed) = on_closed {
    on_closed();
  }
}

/// The env is going away (a worker ends): its loop must not keep our handle.
unsafe extern "C" fn on_poll_teardown(data: *mut c_void) {
  // SAFETY: data is the poll pointer registered in `start`, alive until the close callback,
  // which cannot have run yet: `stop` removes this hook before the close is requested.
  let poll = unsafe { &*(data as *const Poll) };
  poll.stop();
}
