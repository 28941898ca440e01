//! The libuv functions the binding calls, looked up in the host process (Node exports
//! libuv; Bun does not, and `None` tells it apart).
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

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
      // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up.
      let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
      (!symbol.is_null()).then_some(symbol)
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
