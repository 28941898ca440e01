//! The queue between the core's threads and the JS thread: events wait here until the
//! transport's threadsafe function (or a host reader reading on the JS thread) takes them.
use std::sync::{Arc, Mutex, MutexGuard};

use super::js::Tsfn;
use crate::session::{Event, EventSink};

#[derive(Default)]
pub(super) struct Queue {
  events: Vec<Event>,
  scheduled: bool,
  /// `None` once the JS side is gone: events are then dropped.
  pub(super) tsfn: Option<Tsfn>,
}

#[derive(Default)]
pub struct EventPump {
  queue: Mutex<Queue>,
}

impl EventPump {
  pub(super) fn queue(&self) -> MutexGuard<'_, Queue> {
    self.queue.lock().unwrap_or_else(|p| p.into_inner())
  }

  pub(super) fn take(&self) -> Vec<Event> {
    let mut queue = self.queue();
    queue.scheduled = false;
    std::mem::take(&mut queue.events)
  }

  /// Gives an emptied `take` buffer back, so a steady stream does not regrow one per read.
  pub(super) fn recycle(&self, buffer: Vec<Event>) {
    const KEPT_EVENTS: usize = 4096;
    let mut queue = self.queue();
    if buffer.is_empty() && queue.events.capacity() == 0 && buffer.capacity() <= KEPT_EVENTS {
      queue.events = buffer;
    }
  }
}

thread_local! {
  /// The pump whose events this thread's host reader delivers itself once its read is done.
  static COLLECTING: std::cell::Cell<*const EventPump> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Runs `read` with the events it emits on `pump` kept for the caller to deliver, instead of
/// scheduling the threadsafe function.
pub(super) fn collecting<T>(pump: &Arc<EventPump>, read: impl FnOnce() -> T) -> T {
  let previous = COLLECTING.with(|c| c.replace(Arc::as_ptr(pump)));
  let result = read();
  COLLECTING.with(|c| c.set(previous));
  result
}

impl EventSink for EventPump {
  fn emit(&self, event: Event) {
    let mut queue = self.queue();
    if queue.tsfn.is_none() {
      return;
    }
    queue.events.push(event);
    // Called under the lock, so the function cannot be released in between.
    if !queue.scheduled {
      queue.scheduled = true;
      let collected_here = COLLECTING.with(|c| std::ptr::eq(c.get(), self));
      if !collected_here && !queue.tsfn.as_ref().is_some_and(Tsfn::call) {
        queue.events.clear();
        queue.tsfn = None;
      }
    }
  }
}
