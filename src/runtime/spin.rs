//! When the JS thread's loop should keep polling instead of sleeping while a transport waits
//! for an answer. On a VM, a CPU that halts between a request and its answer costs tens of
//! microseconds to wake (measured: a 2000-call sequence's p50 is ~23–28 µs with an 80 µs
//! window and ~60–100 µs without, against a server that answers in microseconds). Polling pays only
//! when answers come quickly, so a window that runs out before its answer turns spinning
//! off for a while: a slow server costs at most one window per `SKIP_AFTER_MISS` calls.
use std::time::{Duration, Instant};

/// How long the loop polls after a request, or after an answer while more are pending.
pub const WINDOW: Duration = Duration::from_micros(80);
/// Busy periods left without spinning after an answer came too late for its window.
const SKIP_AFTER_MISS: u32 = 32;

/// One transport's spin decisions.
#[derive(Debug)]
pub struct SpinPolicy {
  window: Duration,
  /// The end of the open window, if one is open.
  open_until: Option<Instant>,
  /// Busy periods still to skip after a miss.
  skipping: u32,
}

impl Default for SpinPolicy {
  fn default() -> Self {
    SpinPolicy::with_window(WINDOW)
  }
}

impl SpinPolicy {
  pub fn with_window(window: Duration) -> Self {
    SpinPolicy {
      window,
      open_until: None,
      skipping: 0,
    }
  }

  /// The transport began waiting for answers: until when the loop should poll, if at all.
  pub fn busy(&mut self, now: Instant) -> Option<Instant> {
    if self.skipping > 0 {
      self.skipping -= 1;
      self.open_until = None;
      return None;
    }
    self.open(now)
  }

  /// Messages arrived at `now`: whether a window was open for them (the loop was polling).
  /// An answer after its window ran out turns spinning off for a while.
  pub fn arrived(&mut self, now: Instant) -> bool {
    match self.open_until.take() {
      Some(until) if now > until => {
        self.skipping = SKIP_AFTER_MISS;
        false
      }
      Some(_) => true,
      None => false,
    }
  }

  /// After messages that came in their window, answers are still awaited: poll on.
  pub fn still_busy(&mut self, now: Instant) -> Option<Instant> {
    self.open(now)
  }

  /// Nothing is awaited any more.
  pub fn idle(&mut self) {
    self.open_until = None;
  }

  fn open(&mut self, now: Instant) -> Option<Instant> {
    let until = now + self.window;
    self.open_until = Some(until);
    Some(until)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const W: Duration = Duration::from_micros(60);

  #[test]
  fn a_request_opens_a_window_and_answers_in_time_keep_it_open() {
    let mut policy = SpinPolicy::with_window(W);
    let t = Instant::now();
    assert_eq!(policy.busy(t), Some(t + W));
    let answer = t + Duration::from_micros(20);
    assert!(policy.arrived(answer));
    // More answers pending (64 in flight): the window moves on from this answer.
    assert_eq!(policy.still_busy(answer), Some(answer + W));
    assert!(policy.arrived(answer + Duration::from_micros(5)));
    policy.idle();
    let next = t + Duration::from_micros(30);
    assert_eq!(policy.busy(next), Some(next + W));
  }

  #[test]
  fn a_late_answer_turns_spinning_off_for_a_while_then_it_is_tried_again() {
    let mut policy = SpinPolicy::with_window(W);
    let t = Instant::now();
    policy.busy(t);
    // The server took a millisecond: spinning did not pay.
    assert!(!policy.arrived(t + Duration::from_millis(1)));
    policy.idle();
    for _ in 0..SKIP_AFTER_MISS {
      assert_eq!(policy.busy(t), None);
      assert!(!policy.arrived(t));
      policy.idle();
    }
    assert_eq!(policy.busy(t), Some(t + W));
  }

  #[test]
  fn messages_outside_any_window_change_nothing() {
    let mut policy = SpinPolicy::with_window(W);
    let t = Instant::now();
    // A notification while nothing is awaited, long after the last window closed.
    policy.busy(t);
    policy.idle();
    assert!(!policy.arrived(t + Duration::from_secs(1)));
    assert_eq!(policy.busy(t), Some(t + W));
  }
}
