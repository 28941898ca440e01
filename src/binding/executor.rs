//! The JS thread's executor (`crate::runtime::local`): the core's `!Send` flows run on it,
//! so they await JS promises and touch JS objects between awaits with no thread hop.
//!
//! A task woken by a JS promise is polled inside that promise's callback: a flow continues
//! in the same microtask a hand-written continuation would. A wake from another thread (a
//! tokio timer or I/O) comes back through one threadsafe function per JS environment. Rust
//! futures run on the shared runtime (real time: JS fake timers do not touch them) and keep
//! the host alive while pending, as a timer would; a task waiting only for JS keeps nothing
//! alive.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use futures::FutureExt;

use super::js::{Args, ErrorKind, Held, Js, Thrown, Tsfn, Value};
use crate::runtime::local::{LocalExecutor, Wakeup};

struct Schedule(Tsfn);

impl Wakeup for Schedule {
  fn schedule(&self) {
    self.0.call();
  }
}

struct Executor {
  js: Js,
  tasks: LocalExecutor,
  tsfn: Tsfn,
  /// Rust futures in flight; while any is, the host stays alive.
  in_flight: Cell<usize>,
}

thread_local! {
  // Leaked, never dropped: no thread-local destructor runs after the env is gone.
  static EXECUTOR: Cell<Option<&'static Executor>> = const { Cell::new(None) };
}

impl Executor {
  /// This thread's executor, created on first use (and again after a teardown).
  fn get(js: Js) -> Option<&'static Executor> {
    if let Some(executor) = EXECUTOR.with(Cell::get).filter(|e| e.js.env == js.env) {
      return Some(executor);
    }
    let tsfn = js.threadsafe_function("mcp-native-tasks", run).ok()?;
    let executor: &'static Executor = Box::leak(Box::new(Executor {
      js,
      tasks: LocalExecutor::new(Schedule(tsfn.clone())),
      tsfn,
      in_flight: Cell::new(0),
    }));
    EXECUTOR.with(|slot| slot.set(Some(executor)));
    js.on_teardown(move || {
      executor.tasks.abandon();
      EXECUTOR.with(|slot| {
        if slot.get().is_some_and(|e| std::ptr::eq(e, executor)) {
          slot.set(None);
        }
      });
    });
    Some(executor)
  }

  /// Polls the woken tasks.
  fn run_ready(&self) {
    in_runtime(|| self.tasks.run_ready());
  }

  fn count_in_flight(&self, change: isize) {
    let before = self.in_flight.get();
    let after = before.saturating_add_signed(change);
    self.in_flight.set(after);
    if (before == 0) != (after == 0) {
      self.tsfn.keep_alive(self.js, after > 0);
    }
  }
}

/// Runs `f`, which may poll tasks, inside the shared runtime's context: tokio timers and
/// tasks created while polling need it.
pub fn in_runtime<T>(f: impl FnOnce() -> T) -> T {
  let runtime = crate::runtime::handle();
  let _context = runtime.as_ref().map(|handle| handle.enter());
  f()
}

/// The threadsafe function's call: tasks woken from other threads.
fn run(js: Js) {
  if let Some(executor) = Executor::get(js) {
    executor.run_ready();
  }
}

/// Runs `future` on this JS thread; it is polled for the first time before this returns
/// (or, from inside a task, before the executor yields to JS).
pub fn spawn(js: Js, future: impl Future<Output = ()> + 'static) -> bool {
  let Some(executor) = Executor::get(js) else {
    return false;
  };
  in_runtime(|| executor.tasks.spawn(future));
  true
}

/// A promise settled by `future`: resolved with its `Ok`, rejected with its `Err`.
pub fn promise(
  js: Js,
  future: impl Future<Output = Result<Held, Held>> + 'static,
) -> Result<Value, Thrown> {
  let (deferred, promise) = js.create_promise()?;
  let spawned = spawn(js, async move {
    match future.await {
      Ok(value) => js.resolve(deferred, value.get(js)),
      Err(error) => js.reject(deferred, error.get(js)),
    }
  });
  if !spawned {
    js.reject(
      deferred,
      js.error(ErrorKind::Error, "The task executor could not start"),
    );
  }
  Ok(promise)
}

/// Completes a channel from a JS callback and polls whoever was waiting, right away.
pub fn complete<T>(js: Js, sender: &RefCell<Option<oneshot::Sender<T>>>, value: T) {
  if let Some(sender) = sender.borrow_mut().take() {
    send(js, sender, value);
  }
}

fn send<T>(js: Js, sender: oneshot::Sender<T>, value: T) {
  match Executor::get(js) {
    Some(executor) => in_runtime(|| {
      executor.tasks.wake_here(|| {
        let _ = sender.send(value);
      })
    }),
    None => {
      let _ = sender.send(value);
    }
  }
}

/// The outcome of a JS value as a promise (`Promise.resolve(value)`: thenables and plain
/// values work too). The callbacks are attached at once, so nothing is missed before the
/// first poll.
pub fn settled(js: Js, value: Value) -> LocalBoxFuture<'static, Result<Held, Held>> {
  let (sender, receiver) = oneshot::channel();
  let sender = Rc::new(RefCell::new(Some(sender)));
  let attached = attach(js, value, &sender);
  outcome(js, attached, receiver)
}

/// What the callbacks send on `receiver`, or what attaching them threw.
fn outcome(
  js: Js,
  attached: Result<(), Thrown>,
  receiver: oneshot::Receiver<Result<Held, Held>>,
) -> LocalBoxFuture<'static, Result<Held, Held>> {
  if let Err(Thrown(error)) = attached {
    return Box::pin(std::future::ready(Err(Held::new(js, error))));
  }
  let abandoned = move |_| Err(Held::new(js, js.error(ErrorKind::Error, "Abandoned")));
  Box::pin(receiver.map(move |outcome| outcome.unwrap_or_else(abandoned)))
}

type Outcome = oneshot::Sender<Result<Held, Held>>;
type Settle = Rc<RefCell<Option<Outcome>>>;

/// The outcomes of promises that settle in the order they were made (a stream reader's
/// `read()`s), through one pair of JS callbacks made once: per promise, only its `then`.
pub struct InTurn {
  on_ok: Held,
  on_err: Held,
  then: Held,
  waiting: Rc<RefCell<VecDeque<Outcome>>>,
}

impl InTurn {
  pub fn new(js: Js) -> Result<InTurn, Thrown> {
    let waiting = Rc::new(RefCell::new(VecDeque::new()));
    let settle = |ok: bool| {
      let waiting = Rc::clone(&waiting);
      move |js: Js, args: Args<'_>| {
        let next = waiting.borrow_mut().pop_front();
        if let Some(sender) = next {
          let value = Held::new(js, args.get(0));
          send(js, sender, if ok { Ok(value) } else { Err(value) });
        }
        Ok(js.undefined())
      }
    };
    let on_ok = js.closure("onFulfilled", settle(true))?;
    let on_err = js.closure("onRejected", settle(false))?;
    let promise_class = js.get(js.global(), "Promise")?;
    let prototype = js.get(promise_class, "prototype")?;
    let then = js.get(prototype, "then")?;
    Ok(InTurn {
      on_ok: Held::new(js, on_ok),
      on_err: Held::new(js, on_err),
      then: Held::new(js, then),
      waiting,
    })
  }

  /// The outcome of `promise`, which must settle after those passed before it; anything
  /// else that is not a promise goes through `settled`.
  pub fn settled(&self, js: Js, promise: Value) -> LocalBoxFuture<'static, Result<Held, Held>> {
    if !js.is_promise(promise) {
      return settled(js, promise);
    }
    let (sender, receiver) = oneshot::channel();
    self.waiting.borrow_mut().push_back(sender);
    let callbacks = [self.on_ok.get(js), self.on_err.get(js)];
    let attached = js.call(self.then.get(js), promise, &callbacks).map(drop);
    if attached.is_err() {
      self.waiting.borrow_mut().pop_back();
    }
    outcome(js, attached, receiver)
  }
}

fn attach(js: Js, value: Value, sender: &Settle) -> Result<(), Thrown> {
  // A promise is its own `Promise.resolve` (a stream's `read()` is one, per chunk).
  let promise = if js.is_promise(value) {
    value
  } else {
    let promise_class = js.get(js.global(), "Promise")?;
    let resolve = js.get(promise_class, "resolve")?;
    js.call(resolve, promise_class, &[value])?
  };
  let then = js.get(promise, "then")?;
  let settle = |ok: bool| {
    let sender = sender.clone();
    move |js: Js, args: Args<'_>| {
      let value = Held::new(js, args.get(0));
      complete(js, &sender, if ok { Ok(value) } else { Err(value) });
      Ok(js.undefined())
    }
  };
  let on_ok = js.closure("onFulfilled", settle(true))?;
  let on_err = js.closure("onRejected", settle(false))?;
  js.call(then, promise, &[on_ok, on_err])?;
  Ok(())
}

/// Counts a Rust future in flight towards keeping the host alive.
struct InFlight(&'static Executor);

impl InFlight {
  fn new(js: Js) -> Option<Self> {
    let executor = Executor::get(js)?;
    executor.count_in_flight(1);
    Some(InFlight(executor))
  }
}

impl Drop for InFlight {
  fn drop(&mut self) {
    self.0.count_in_flight(-1);
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
/// future panicked.
pub fn on_runtime<T: Send + 'static>(
  js: Js,
  future: impl Future<Output = T> + Send + 'static,
) -> LocalBoxFuture<'static, Option<T>> {
  let Some(handle) = crate::runtime::handle() else {
    return Box::pin(std::future::ready(None));
  };
  let task = handle.spawn(future);
  let guards = (InFlight::new(js), AbortOnDrop(task.abort_handle()));
  Box::pin(async move {
    let output = task.await.ok();
    drop(guards);
    output
  })
}

/// A real-time delay that does not keep the host alive: if nothing else does, the process
/// may exit before it ends (an unref'd timer).
pub fn idle_sleep(delay: Duration) -> LocalBoxFuture<'static, ()> {
  let Some(handle) = crate::runtime::handle() else {
    return Box::pin(std::future::pending());
  };
  let task = handle.spawn(tokio::time::sleep(delay));
  let guard = AbortOnDrop(task.abort_handle());
  Box::pin(async move {
    let _ = task.await;
    drop(guard);
  })
}

/// A real-time delay (tokio's timer) that keeps the host alive while it runs.
pub fn sleep(js: Js, delay: Duration) -> LocalBoxFuture<'static, ()> {
  let slept = on_runtime(js, async move { tokio::time::sleep(delay).await });
  Box::pin(slept.map(|_| ()))
}
