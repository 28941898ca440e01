//! Promise continuations and Rust-timed callbacks on the JS thread, for the client
//! functions that orchestrate several requests over any `MCPTransport` (C5).
//!
//! Timers and other Rust futures run in tokio (real time: JS fake timers do not touch them) and come back through
//! one threadsafe function per JS environment; the closures they run stay on the JS thread.
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::future::Future;
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::sys;

use super::js::{Js, Thrown, Value};
use crate::runtime;

type Continuation = Box<dyn FnOnce(Js, Result<Value, Value>)>;

/// Calls `done` once `value` settles (`Promise.resolve(value)`, so thenables and plain values
/// work too). `done` gets `Ok(result)` or `Err(reason)`.
pub fn when_settled(js: Js, value: Value, done: impl FnOnce(Js, Result<Value, Value>) + 'static) {
  let slot: Rc<RefCell<Option<Continuation>>> = Rc::new(RefCell::new(Some(Box::new(done))));
  let attached = (|| {
    let promise_class = js.get(js.global(), "Promise")?;
    let resolve = js.get(promise_class, "resolve")?;
    let promise = js.call(resolve, promise_class, &[value])?;
    let then = js.get(promise, "then")?;
    let on_ok = js.function("onFulfilled", settle_ok, slot.clone())?;
    let on_err = js.function("onRejected", settle_err, slot.clone())?;
    js.call(then, promise, &[on_ok, on_err])?;
    Ok::<(), Thrown>(())
  })();
  if let Err(Thrown(error)) = attached {
    let done = slot.borrow_mut().take();
    if let Some(done) = done {
      done(js, Err(error));
    }
  }
}

unsafe extern "C" fn settle_ok(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  settle(env, info, true)
}

unsafe extern "C" fn settle_err(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  settle(env, info, false)
}

fn settle(env: sys::napi_env, info: sys::napi_callback_info, ok: bool) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the slot given to js.function.
  let ([value], data) = unsafe { js.args::<1>(info) };
  let slot = unsafe { &*(data as *const Rc<RefCell<Option<Continuation>>>) };
  let done = slot.borrow_mut().take();
  if let Some(done) = done {
    done(js, if ok { Ok(value) } else { Err(value) });
  }
  js.undefined()
}

/// A timer's closure and the tokio task that will fire it.
type Scheduled = (Box<dyn FnOnce(Js)>, tokio::task::JoinHandle<()>);

/// Timers of this JS thread: id → closure, fired through `Timers::tsfn`.
struct Timers {
  tsfn: sys::napi_threadsafe_function,
  fired: Arc<Mutex<Vec<u64>>>,
  callbacks: HashMap<u64, Scheduled>,
  next_id: u64,
}

struct SendTsfn(sys::napi_threadsafe_function);
// SAFETY: napi_call_threadsafe_function may be called from any thread.
unsafe impl Send for SendTsfn {}
unsafe impl Sync for SendTsfn {}

thread_local! {
  static TIMERS: RefCell<Option<Timers>> = const { RefCell::new(None) };
}

/// A pending `after` callback; `cancel()` (or firing) ends it.
pub struct Timer(u64);

impl Timer {
  pub fn cancel(&self) {
    let entry = TIMERS.with(|t| {
      t.borrow_mut()
        .as_mut()
        .and_then(|timers| timers.callbacks.remove(&self.0))
    });
    if let Some((_callback, task)) = entry {
      task.abort();
    }
    update_reference(None);
  }
}

/// Pending timers keep the host alive, as `setTimeout` does.
fn update_reference(env: Option<sys::napi_env>) {
  TIMERS.with(|t| {
    let timers = t.borrow();
    let Some(timers) = timers.as_ref() else {
      return;
    };
    let Some(env) = env.or_else(current_env) else {
      return;
    };
    // SAFETY: both calls are made on the JS thread that owns the tsfn.
    unsafe {
      if timers.callbacks.is_empty() {
        sys::napi_unref_threadsafe_function(env, timers.tsfn);
      } else {
        sys::napi_ref_threadsafe_function(env, timers.tsfn);
      }
    }
  });
}

thread_local! {
  static ENV: std::cell::Cell<sys::napi_env> = const { std::cell::Cell::new(ptr::null_mut()) };
}

fn current_env() -> Option<sys::napi_env> {
  let env = ENV.with(|e| e.get());
  (!env.is_null()).then_some(env)
}

/// Runs `callback` on this JS thread after `delay` (tokio-timed).
pub fn after(js: Js, delay: Duration, callback: impl FnOnce(Js) + 'static) -> Option<Timer> {
  // The sleep is created inside the runtime: a tokio timer needs its context.
  when_done(
    js,
    async move { tokio::time::sleep(delay).await },
    move |js, ()| callback(js),
  )
}

/// Runs `future` on the shared runtime and then `callback` with its output on this JS
/// thread. The pending callback keeps the host alive, as a pending promise would.
pub fn when_done<T: Send + 'static>(
  js: Js,
  future: impl Future<Output = T> + Send + 'static,
  callback: impl FnOnce(Js, T) + 'static,
) -> Option<Timer> {
  ENV.with(|e| e.set(js.env));
  let handle = runtime::handle()?;
  let ready = TIMERS.with(|t| {
    let mut timers = t.borrow_mut();
    if timers.is_none() {
      let fired = Arc::new(Mutex::new(Vec::new()));
      let mut tsfn = ptr::null_mut();
      // SAFETY: fire_timers matches the call_js signature; the context is unused.
      let status = unsafe {
        sys::napi_create_threadsafe_function(
          js.env,
          ptr::null_mut(),
          ptr::null_mut(),
          js.string("mcp-native-timers"),
          0,
          1,
          ptr::null_mut(),
          None,
          ptr::null_mut(),
          Some(fire_timers),
          &mut tsfn,
        )
      };
      if status != sys::Status::napi_ok {
        return None;
      }
      *timers = Some(Timers {
        tsfn,
        fired,
        callbacks: HashMap::new(),
        next_id: 1,
      });
    }
    let timers = timers.as_mut()?;
    let id = timers.next_id;
    timers.next_id += 1;
    Some((id, timers.fired.clone(), SendTsfn(timers.tsfn)))
  })?;
  let (id, fired, tsfn) = ready;
  let output: Arc<Mutex<Option<T>>> = Arc::new(Mutex::new(None));
  let slot = output.clone();
  let task = handle.spawn(async move {
    let value = future.await;
    if let Ok(mut slot) = slot.lock() {
      *slot = Some(value);
    }
    if let Ok(mut fired) = fired.lock() {
      fired.push(id);
    }
    let tsfn = tsfn;
    // SAFETY: the tsfn lives as long as the JS environment (it is never released).
    unsafe {
      sys::napi_call_threadsafe_function(
        tsfn.0,
        ptr::null_mut(),
        sys::ThreadsafeFunctionCallMode::nonblocking,
      )
    };
  });
  let run = move |js: Js| {
    let value = output.lock().ok().and_then(|mut slot| slot.take());
    if let Some(value) = value {
      callback(js, value);
    }
  };
  TIMERS.with(|t| {
    if let Some(timers) = t.borrow_mut().as_mut() {
      timers.callbacks.insert(id, (Box::new(run), task));
    }
  });
  update_reference(Some(js.env));
  Some(Timer(id))
}

unsafe extern "C" fn fire_timers(
  env: sys::napi_env,
  _callback: Value,
  _context: *mut c_void,
  _data: *mut c_void,
) {
  if env.is_null() {
    return;
  }
  let ids = TIMERS.with(|t| {
    t.borrow()
      .as_ref()
      .and_then(|timers| {
        timers
          .fired
          .lock()
          .ok()
          .map(|mut f| std::mem::take(&mut *f))
      })
      .unwrap_or_default()
  });
  let js = Js::new(env);
  for id in ids {
    let callback = TIMERS.with(|t| {
      t.borrow_mut()
        .as_mut()
        .and_then(|timers| timers.callbacks.remove(&id))
    });
    if let Some((callback, _task)) = callback {
      callback(js);
    }
  }
  update_reference(Some(env));
}
