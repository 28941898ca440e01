//! The queue between the threads that produce a transport's events and the host thread that
//! delivers them: events wait here until the host's waker (a threadsafe function, say) runs,
//! or until a reader running on the host thread takes them itself.
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use super::{Event, EventSink};

/// Asks the host thread to come and take the queued events.
pub trait Wake: Send + Sync + 'static {
  /// False when the host can no longer be reached: the queue then drops its events.
  fn wake(&self) -> bool;
}

struct Queued {
  events: Vec<Event>,
  /// A wake-up is on its way: more events ride along with it.
  scheduled: bool,
}

pub struct EventQueue<W> {
  queue: Mutex<Queued>,
  /// `None` once the host side is gone: events are then dropped. Apart from the events, so
  /// a wake-up (a threadsafe function's call, which takes the host's own lock) holds only a
  /// shared lock: producers do not wait for each other's, nor the host for theirs, and the
  /// waker still cannot be taken away during one.
  waker: RwLock<Option<W>>,
}

impl<W> Default for EventQueue<W> {
  fn default() -> Self {
    EventQueue {
      queue: Mutex::new(Queued {
        events: Vec::new(),
        scheduled: false,
      }),
      waker: RwLock::new(None),
    }
  }
}

impl<W> EventQueue<W> {
  fn lock(&self) -> MutexGuard<'_, Queued> {
    self.queue.lock().unwrap_or_else(|p| p.into_inner())
  }

  fn waker(&self) -> RwLockReadGuard<'_, Option<W>> {
    self.waker.read().unwrap_or_else(|p| p.into_inner())
  }

  /// Replaces the waker; `None` drops every event from now on. Returns the one it replaced,
  /// which no producer uses any more.
  pub fn set_waker(&self, waker: Option<W>) -> Option<W> {
    let mut slot = self.waker.write().unwrap_or_else(|p| p.into_inner());
    std::mem::replace(&mut *slot, waker)
  }

  /// Whether the host side is still there.
  pub fn has_waker(&self) -> bool {
    self.waker().is_some()
  }

  /// Everything queued so far; the next event wakes the host again.
  pub fn take(&self) -> Vec<Event> {
    let mut queue = self.lock();
    queue.scheduled = false;
    std::mem::take(&mut queue.events)
  }

  /// Gives an emptied `take` buffer back, so a steady stream does not regrow one per read.
  pub fn recycle(&self, buffer: Vec<Event>) {
    const KEPT_EVENTS: usize = 4096;
    let mut queue = self.lock();
    if buffer.is_empty() && queue.events.capacity() == 0 && buffer.capacity() <= KEPT_EVENTS {
      queue.events = buffer;
    }
  }
}

thread_local! {
  /// The queue whose events this thread takes itself once its read is done.
  static COLLECTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `read` with the events it emits on `queue` kept for the caller to take, instead of
/// waking the host.
pub fn collecting<W, T>(queue: &Arc<EventQueue<W>>, read: impl FnOnce() -> T) -> T {
  let previous = COLLECTING.with(|c| c.replace(Arc::as_ptr(queue) as usize));
  let result = read();
  COLLECTING.with(|c| c.set(previous));
  result
}

impl<W: Wake> EventSink for EventQueue<W> {
  fn emit(&self, event: Event) {
    let waker = self.waker();
    let Some(wake) = waker.as_ref() else {
      return;
    };
    let first = {
      let mut queue = self.lock();
      queue.events.push(event);
      !std::mem::replace(&mut queue.scheduled, true)
    };
    if !first || COLLECTING.with(|c| c.get() == self as *const Self as usize) {
      return;
    }
    if !wake.wake() {
      drop(waker);
      self.set_waker(None);
      self.lock().events.clear();
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

  #[derive(Default)]
  struct Counting {
    wakes: AtomicUsize,
    gone: AtomicBool,
  }

  impl Wake for Arc<Counting> {
    fn wake(&self) -> bool {
      self.wakes.fetch_add(1, Ordering::SeqCst);
      !self.gone.load(Ordering::SeqCst)
    }
  }

  fn queue() -> (Arc<EventQueue<Arc<Counting>>>, Arc<Counting>) {
    let queue = Arc::new(EventQueue::default());
    let waker = Arc::new(Counting::default());
    queue.set_waker(Some(waker.clone()));
    (queue, waker)
  }

  #[test]
  fn t3_one_wake_per_batch_in_order() {
    let (queue, waker) = queue();
    queue.emit(Event::Stderr("a".into()));
    queue.emit(Event::Stderr("b".into()));
    assert_eq!(waker.wakes.load(Ordering::SeqCst), 1);
    let taken = queue.take();
    assert!(matches!(&taken[..], [Event::Stderr(a), Event::Stderr(b)] if a == "a" && b == "b"));
    queue.emit(Event::Closed);
    assert_eq!(waker.wakes.load(Ordering::SeqCst), 2);
  }

  #[test]
  fn events_are_dropped_once_the_host_is_gone() {
    let (queue, waker) = queue();
    waker.gone.store(true, Ordering::SeqCst);
    queue.emit(Event::Closed);
    assert!(!queue.has_waker());
    queue.emit(Event::Closed);
    assert!(queue.take().is_empty());
    let empty: EventQueue<Arc<Counting>> = EventQueue::default();
    empty.emit(Event::Closed);
    assert!(empty.take().is_empty());
  }

  /// A waker whose wake-ups wait until the gate opens.
  struct Gated {
    gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
    started: Arc<AtomicUsize>,
  }

  impl Wake for Gated {
    fn wake(&self) -> bool {
      self.started.fetch_add(1, Ordering::SeqCst);
      let (open, opened) = &*self.gate;
      let mut open = open.lock().unwrap();
      while !*open {
        open = opened.wait(open).unwrap();
      }
      true
    }
  }

  #[test]
  fn a_wake_under_way_holds_up_neither_the_host_nor_other_producers() {
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let started = Arc::new(AtomicUsize::new(0));
    let queue = Arc::new(EventQueue::default());
    queue.set_waker(Some(Gated {
      gate: gate.clone(),
      started: started.clone(),
    }));
    let producer = {
      let queue = queue.clone();
      std::thread::spawn(move || queue.emit(Event::Closed))
    };
    while started.load(Ordering::SeqCst) == 0 {
      std::thread::yield_now();
    }
    // The first producer is inside its wake: another event rides along, and the host takes
    // both, without waiting for it.
    queue.emit(Event::Stderr("b".into()));
    assert_eq!(queue.take().len(), 2);
    assert!(queue.has_waker());
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    producer.join().unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 1);
  }

  #[test]
  fn a_reader_on_the_host_thread_takes_its_events_without_a_wake() {
    let (queue, waker) = queue();
    collecting(&queue, || queue.emit(Event::Closed));
    assert_eq!(waker.wakes.load(Ordering::SeqCst), 0);
    assert_eq!(queue.take().len(), 1);
  }
}
