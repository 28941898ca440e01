//! The queue between the threads that produce a transport's events and the host thread that
//! delivers them: events wait here until the host's waker (a threadsafe function, say) runs,
//! or until a reader running on the host thread takes them itself.
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Event, EventSink};

/// Asks the host thread to come and take the queued events.
pub trait Wake: Send + Sync + 'static {
  /// False when the host can no longer be reached: the queue then drops its events.
  fn wake(&self) -> bool;
}

pub struct Queued<W> {
  events: Vec<Event>,
  /// A wake-up is on its way: more events ride along with it.
  scheduled: bool,
  /// `None` once the host side is gone: events are then dropped.
  pub waker: Option<W>,
}

pub struct EventQueue<W> {
  queue: Mutex<Queued<W>>,
}

impl<W> Default for EventQueue<W> {
  fn default() -> Self {
    EventQueue {
      queue: Mutex::new(Queued {
        events: Vec::new(),
        scheduled: false,
        waker: None,
      }),
    }
  }
}

impl<W> EventQueue<W> {
  pub fn lock(&self) -> MutexGuard<'_, Queued<W>> {
    self.queue.lock().unwrap_or_else(|p| p.into_inner())
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
    let mut queue = self.lock();
    if queue.waker.is_none() {
      return;
    }
    queue.events.push(event);
    // Called under the lock, so the waker cannot be taken away in between.
    if !queue.scheduled {
      queue.scheduled = true;
      let collected_here = COLLECTING.with(|c| c.get() == self as *const Self as usize);
      if !collected_here && !queue.waker.as_ref().is_some_and(W::wake) {
        queue.events.clear();
        queue.waker = None;
      }
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
    queue.lock().waker = Some(waker.clone());
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
    assert!(queue.lock().waker.is_none());
    queue.emit(Event::Closed);
    assert!(queue.take().is_empty());
    let empty: EventQueue<Arc<Counting>> = EventQueue::default();
    empty.emit(Event::Closed);
    assert!(empty.take().is_empty());
  }

  #[test]
  fn a_reader_on_the_host_thread_takes_its_events_without_a_wake() {
    let (queue, waker) = queue();
    collecting(&queue, || queue.emit(Event::Closed));
    assert_eq!(waker.wakes.load(Ordering::SeqCst), 0);
    assert_eq!(queue.take().len(), 1);
  }
}
