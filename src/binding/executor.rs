//! Runs the core's `!Send` futures on the JS thread, so a flow awaits JS promises and
//! touches JS objects between awaits with no thread hop.
//!
//! A task woken by a JS promise (its `then` callback) is polled at once, inside that
//! callback: a flow continues in the same microtask a hand-written continuation would. A
//! task woken from another thread (a tokio timer or I/O) is polled through one threadsafe
//! function per JS environment. Rust futures run on the shared runtime (real time: JS fake
//! timers do not touch them) and keep the host alive while they are pending, as a timer
//! would; a task waiting only for JS keeps nothing alive.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::Duration;

use futures::future::LocalBoxFuture;

use super::js::{Held, Js, Thrown, Tsfn, Value};

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Task ids woken since the last run, from any thread.
struct Woken {
  ids: Mutex<Vec<u64>>,
  tsfn: Tsfn,
  thread: ThreadId,
}

impl Woken {
  fn push(&self, id: u64) {
    self
      .ids
      .lock()
      .unwrap_or_else(PoisonError::into_inner)
      .push(id);
  }

  fn take(&self) -> Vec<u64> {
    std::mem::take(&mut *self.ids.lock().unwrap_or_else(PoisonError::into_inner))
  }
}

struct TaskWaker {
  id: u64,
  woken: Arc<Woken>,
}

thread_local! {
  /// Set while the executor runs (or is about to) on this thread: a wake needs no hop.
  static RUNNING_HERE: Cell<bool> = const { Cell::new(false) };
  static EXECUTOR: Cell<Option<&'static Executor>> = const { Cell::new(None) };
}

impl Wake for TaskWaker {
  fn wake(self: Arc<Self>) {
    self.wake_by_ref()
  }

  fn wake_by_ref(self: &Arc<Self>) {
    self.woken.push(self.id);
    let here = std::thread::current().id() == self.woken.thread && RUNNING_HERE.with(Cell::get);
    if !here {
      self.woken.tsfn.call();
    }
  }
}

struct Executor {
  env: napi::sys::napi_env,
  tasks: RefCell<HashMap<u64, Task>>,
  next_id: Cell<u64>,
  woken: Arc<Woken>,
  /// Rust futures in flight; while any is, the host stays alive.
  keep_alive: Cell<usize>,
  kept: Cell<bool>,
  polling: Cell<bool>,
}

impl Executor {
  /// This thread's executor, created on first use (and again after a teardown).
  fn get(js: Js) -> Option<&'static Executor> {
    if let Some(executor) = EXECUTOR.with(Cell::get).filter(|e| e.env == js.env) {
      return Some(executor);
    }
    let tsfn = js.threadsafe_function("mcp-native-tasks", run).ok()?;
    let executor: &'static Executor = Box::leak(Box::new(Executor {
      env: js.env,
      tasks: RefCell::new(HashMap::new()),
      next_id: Cell::new(1),
      woken: Arc::new(Woken {
        ids: Mutex::new(Vec::new()),
        tsfn,
        thread: std::thread::current().id(),
      }),
      keep_alive: Cell::new(0),
      kept: Cell::new(false),
      polling: Cell::new(false),
    }));
    EXECUTOR.with(|slot| slot.set(Some(executor)));
    // The env's values are gone after a teardown: pending tasks are leaked, never dropped.
    js.on_teardown(move || {
      std::mem::forget(executor.tasks.take());
      EXECUTOR.with(|slot| {
        if slot.get().is_some_and(|e| std::ptr::eq(e, executor)) {
          slot.set(None);
        }
      });
    });
    Some(executor)
  }

  fn current() -> Option<&'static Executor> {
    EXECUTOR.with(Cell::get)
  }

  fn js(&self) -> Js {
    Js::new(self.env)
  }

  fn update_keep_alive(&self) {
    let wanted = self.keep_alive.get() > 0;
    if wanted != self.kept.replace(wanted) {
      self.woken.tsfn.keep_alive(self.js(), wanted);
    }
  }

  /// Polls every woken task until none is left. Re-entrant calls return at once: the
  /// outer loop picks their work up.
  fn run_ready(&self) {
    if self.polling.replace(true) {
      return;
    }
    let was_running = RUNNING_HERE.with(|r| r.replace(true));
    let runtime = crate::runtime::handle();
    let _context = runtime.as_ref().map(|handle| handle.enter());
    loop {
      let ids = self.woken.take();
      if ids.is_empty() {
        break;
      }
      for id in ids {
        // Out of the map while it is polled: it may spawn or wake other tasks.
        let Some(mut task) = self.tasks.borrow_mut().remove(&id) else {
          continue;
        };
        let waker = Waker::from(Arc::new(TaskWaker {
          id,
          woken: self.woken.clone(),
        }));
        let mut context = Context::from_waker(&waker);
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
          task.as_mut().poll(&mut context)
        }));
        if let Ok(Poll::Pending) = polled {
          self.tasks.borrow_mut().insert(id, task);
        }
      }
    }
    RUNNING_HERE.with(|r| r.set(was_running));
    self.polling.set(false);
    self.update_keep_alive();
  }
}

/// The threadsafe function's call: tasks woken from other threads.
fn run(js: Js) {
  if let Some(executor) = Executor::get(js) {
    executor.run_ready();
  }
}

/// Runs `future` on this JS thread; it is polled for the first time before this returns
/// (unless a task is being polled right now, which then polls it before yielding to JS).
pub fn spawn(js: Js, future: impl Future<Output = ()> + 'static) -> bool {
  let Some(executor) = Executor::get(js) else {
    return false;
  };
  let id = executor.next_id.get();
  executor.next_id.set(id + 1);
  executor.tasks.borrow_mut().insert(id, Box::pin(future));
  executor.woken.push(id);
  executor.run_ready();
  true
}

/// A promise settled by `future`: resolved with its `Ok`, rejected with its `Err`.
pub fn promise(
  js: Js,
  future: impl Future<Output = Result<Held, Held>> + 'static,
) -> Result<Value, Thrown> {
  let (deferred, promise) = js.create_promise()?;
  let spawned = spawn(js, async move {
    let outcome = future.await;
    let js = Executor::current().map_or(js, Executor::js);
    match outcome {
      Ok(value) => js.resolve(deferred, value.get(js)),
      Err(error) => js.reject(deferred, error.get(js)),
    }
  });
  if !spawned {
    let error = js.error(
      super::js::ErrorKind::Error,
      "The task executor could not start",
    );
    js.reject(deferred, error);
  }
  Ok(promise)
}

#[derive(Default)]
struct Slot {
  outcome: Option<Result<Held, Held>>,
  waker: Option<Waker>,
}

/// The outcome of a JS value as a promise (`Promise.resolve(value)`: thenables and plain
/// values work too). The callbacks are attached at once, so nothing is missed before the
/// first poll.
pub fn settled(js: Js, value: Value) -> LocalBoxFuture<'static, Result<Held, Held>> {
  let slot = Rc::new(RefCell::new(Slot::default()));
  let attached = attach(js, value, &slot);
  if let Err(Thrown(error)) = attached {
    return Box::pin(std::future::ready(Err(Held::new(js, error))));
  }
  Box::pin(std::future::poll_fn(move |context| {
    let mut slot = slot.borrow_mut();
    match slot.outcome.take() {
      Some(outcome) => Poll::Ready(outcome),
      None => {
        slot.waker = Some(context.waker().clone());
        Poll::Pending
      }
    }
  }))
}

fn attach(js: Js, value: Value, slot: &Rc<RefCell<Slot>>) -> Result<(), Thrown> {
  let promise_class = js.get(js.global(), "Promise")?;
  let resolve = js.get(promise_class, "resolve")?;
  let promise = js.call(resolve, promise_class, &[value])?;
  let then = js.get(promise, "then")?;
  let settle = |ok: bool| {
    let slot = slot.clone();
    move |js: Js, args: super::js::Args<'_>| {
      let value = Held::new(js, args.get(0));
      let waker = {
        let mut slot = slot.borrow_mut();
        slot.outcome = Some(if ok { Ok(value) } else { Err(value) });
        slot.waker.take()
      };
      if let Some(waker) = waker {
        wake_here(js, &waker);
      }
      Ok(js.undefined())
    }
  };
  let on_ok = js.closure("onFulfilled", settle(true))?;
  let on_err = js.closure("onRejected", settle(false))?;
  js.call(then, promise, &[on_ok, on_err])?;
  Ok(())
}

/// Wakes a task from JS-thread code outside the executor and polls it right away.
pub fn wake_here(js: Js, waker: &Waker) {
  let was = RUNNING_HERE.with(|r| r.replace(true));
  waker.wake_by_ref();
  RUNNING_HERE.with(|r| r.set(was));
  if let Some(executor) = Executor::get(js) {
    executor.run_ready();
  }
}

/// Counts a Rust future in flight towards keeping the host alive.
struct KeepAlive(&'static Executor);

impl KeepAlive {
  fn new(js: Js) -> Option<Self> {
    let executor = Executor::get(js)?;
    executor.keep_alive.set(executor.keep_alive.get() + 1);
    executor.update_keep_alive();
    Some(KeepAlive(executor))
  }
}

impl Drop for KeepAlive {
  fn drop(&mut self) {
    self.0.keep_alive.set(self.0.keep_alive.get() - 1);
    self.0.update_keep_alive();
  }
}

/// Aborts the runtime task when its awaiting future is dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
  fn drop(&mut self) {
    self.0.abort();
  }
}

/// Runs `future` on the shared runtime; `None` if the runtime is not available or the
/// future panicked. Awaited from a task of this executor.
pub fn on_runtime<T: Send + 'static>(
  js: Js,
  future: impl Future<Output = T> + Send + 'static,
) -> LocalBoxFuture<'static, Option<T>> {
  let Some(handle) = crate::runtime::handle() else {
    return Box::pin(std::future::ready(None));
  };
  let task = handle.spawn(future);
  let guards = (KeepAlive::new(js), AbortOnDrop(task.abort_handle()));
  Box::pin(async move {
    let output = task.await.ok();
    drop(guards);
    output
  })
}

/// A real-time delay (tokio's timer) that keeps the host alive while it runs.
pub fn sleep(js: Js, delay: Duration) -> LocalBoxFuture<'static, ()> {
  let slept = on_runtime(js, async move { tokio::time::sleep(delay).await });
  Box::pin(async move {
    slept.await;
  })
}
