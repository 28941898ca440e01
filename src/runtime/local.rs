//! A single-threaded executor for `!Send` futures, driven by its host's event loop: the
//! addon runs one per JS thread, so the core's flows can hold JS values across awaits.
//!
//! A task is polled for the first time inside `spawn`. Wakes on the owning thread while the
//! executor runs (or inside `wake_here`, whose caller runs it right after) are picked up by
//! that run; any other wake asks the host, through `Wakeup`, to call `run_ready` soon.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// How a wake from elsewhere reaches the owning thread (a threadsafe function in the addon).
pub trait Wakeup: Send + Sync + 'static {
  /// Asks the owning thread to call `run_ready`; callable from any thread, any number of
  /// times (several requests may be served by one run).
  fn schedule(&self);
}

thread_local! {
  /// Set while an executor of this thread runs, or inside `wake_here`.
  static RUNNING: Cell<bool> = const { Cell::new(false) };
}

struct Woken {
  ids: Mutex<Vec<u64>>,
  thread: ThreadId,
  wakeup: Box<dyn Wakeup>,
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

impl Wake for TaskWaker {
  fn wake(self: Arc<Self>) {
    self.wake_by_ref()
  }

  fn wake_by_ref(self: &Arc<Self>) {
    self.woken.push(self.id);
    let picked_up = std::thread::current().id() == self.woken.thread && RUNNING.with(Cell::get);
    if !picked_up {
      self.woken.wakeup.schedule();
    }
  }
}

pub struct LocalExecutor {
  tasks: RefCell<HashMap<u64, Task>>,
  next_id: Cell<u64>,
  woken: Arc<Woken>,
  polling: Cell<bool>,
}

impl LocalExecutor {
  /// An executor owned by the calling thread.
  pub fn new(wakeup: impl Wakeup) -> Self {
    LocalExecutor {
      tasks: RefCell::new(HashMap::new()),
      next_id: Cell::new(1),
      woken: Arc::new(Woken {
        ids: Mutex::new(Vec::new()),
        thread: std::thread::current().id(),
        wakeup: Box::new(wakeup),
      }),
      polling: Cell::new(false),
    }
  }

  /// Runs `future` to completion on this thread. It is polled before `spawn` returns, or,
  /// when called from a task, before the running executor yields to its host.
  pub fn spawn(&self, future: impl Future<Output = ()> + 'static) {
    let id = self.next_id.get();
    self.next_id.set(id + 1);
    self.tasks.borrow_mut().insert(id, Box::pin(future));
    self.woken.push(id);
    self.run_ready();
  }

  /// Runs `wake` (code that wakes tasks, say by completing a channel) and then the woken
  /// tasks, without a round trip through the host.
  pub fn wake_here(&self, wake: impl FnOnce()) {
    let was = RUNNING.with(|r| r.replace(true));
    wake();
    RUNNING.with(|r| r.set(was));
    self.run_ready();
  }

  /// Polls every woken task until none is left. A nested call returns at once: the outer
  /// loop picks its work up.
  pub fn run_ready(&self) {
    if self.polling.replace(true) {
      return;
    }
    let was = RUNNING.with(|r| r.replace(true));
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
        // A panicking task is dropped; the others go on.
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
          task.as_mut().poll(&mut context)
        }));
        if let Ok(Poll::Pending) = polled {
          self.tasks.borrow_mut().insert(id, task);
        }
      }
    }
    RUNNING.with(|r| r.set(was));
    self.polling.set(false);
  }

  /// Tasks not finished yet.
  pub fn len(&self) -> usize {
    self.tasks.borrow().len()
  }

  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// Forgets every task without dropping it: after its host is torn down, dropping what a
  /// task holds could touch what is gone.
  pub fn abandon(&self) {
    std::mem::forget(self.tasks.take());
  }
}

#[cfg(test)]
mod tests {
  use std::rc::Rc;
  use std::sync::atomic::{AtomicUsize, Ordering};

  use futures::channel::oneshot;

  use super::*;

  #[derive(Clone, Default)]
  struct Counter(Arc<AtomicUsize>);

  impl Wakeup for Counter {
    fn schedule(&self) {
      self.0.fetch_add(1, Ordering::SeqCst);
    }
  }

  impl Counter {
    fn count(&self) -> usize {
      self.0.load(Ordering::SeqCst)
    }
  }

  #[test]
  fn a_task_runs_until_its_first_await_inside_spawn() {
    let executor = LocalExecutor::new(Counter::default());
    let log = Rc::new(RefCell::new(Vec::new()));
    let (sender, receiver) = oneshot::channel::<u32>();
    let task_log = log.clone();
    executor.spawn(async move {
      task_log.borrow_mut().push("started");
      let value = receiver.await.unwrap_or(0);
      task_log
        .borrow_mut()
        .push(if value == 7 { "got 7" } else { "lost" });
    });
    assert_eq!(*log.borrow(), ["started"]);
    assert_eq!(executor.len(), 1);
    executor.wake_here(|| {
      let _ = sender.send(7);
    });
    assert_eq!(*log.borrow(), ["started", "got 7"]);
    assert!(executor.is_empty());
  }

  #[test]
  fn wakes_on_the_owning_thread_inside_a_run_need_no_host_round_trip() {
    let counter = Counter::default();
    let executor = Rc::new(LocalExecutor::new(counter.clone()));
    let (sender, receiver) = oneshot::channel::<()>();
    executor.spawn(async move {
      let _ = receiver.await;
    });
    let inner = executor.clone();
    // A task that completes another task's channel, and spawns a third.
    executor.spawn(async move {
      let _ = sender.send(());
      inner.spawn(async {});
    });
    assert!(executor.is_empty());
    assert_eq!(counter.count(), 0);
  }

  #[test]
  fn a_wake_from_another_thread_asks_the_host_to_run() {
    let counter = Counter::default();
    let executor = LocalExecutor::new(counter.clone());
    let (sender, receiver) = oneshot::channel::<()>();
    let done = Rc::new(Cell::new(false));
    let flag = done.clone();
    executor.spawn(async move {
      let _ = receiver.await;
      flag.set(true);
    });
    std::thread::spawn(move || {
      let _ = sender.send(());
    })
    .join()
    .unwrap();
    assert_eq!(counter.count(), 1);
    assert!(!done.get());
    executor.run_ready();
    assert!(done.get());
  }

  #[test]
  fn a_panicking_task_is_dropped_and_the_rest_go_on() {
    let executor = LocalExecutor::new(Counter::default());
    let done = Rc::new(Cell::new(false));
    executor.spawn(async { panic!("task failure") });
    let flag = done.clone();
    executor.spawn(async move { flag.set(true) });
    assert!(done.get());
    assert!(executor.is_empty());
  }
}
