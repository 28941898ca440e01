//! When the JS thread's loop should keep polling instead of sleeping while a transport waits
//! for an answer. On a VM, a CPU that halts between a request and its answer costs tens of
//! microseconds to wake (measured: a 2000-call sequence's p50 is ~23–28 µs with an 80 µs
//! window and ~60–100 µs without, against a server that answers in microseconds). Polling
//! pays only when answers come quickly. The window is sized by what answers took lately
//! (a loopback HTTP round trip outlasts the 80 µs a pipe needs), a window that runs out
//! before its answer turns spinning off for a while, and a server slower than the longest
//! window is not polled for at all.
use std::time::{Duration, Instant};

/// The shortest window: after a request, or after an answer while more are pending.
pub const WINDOW: Duration = Duration::from_micros(80);
/// The longest. An answer expected later than this is not polled for: a loopback HTTP
/// round trip takes 50–100 µs on a VM, a remote server milliseconds.
pub const MAX_WINDOW: Duration = Duration::from_micros(400);
/// Busy periods left without spinning after an answer came too late for its window.
const SKIP_AFTER_MISS: u32 = 32;
/// One wait counts at most this much in the average, so one slow answer is soon forgotten.
const LONGEST_LEARNED: Duration = Duration::from_millis(2);

/// Called between two polls: a thread the answer needs (the runtime's, the server's) that
/// waits for this core runs first. On two cores, with the loop polling through a whole HTTP
/// round trip, HTTP seq p99 went from 155 to 100 µs (Node) and from 322 to 205 µs (Bun).
pub fn share_the_core() {
  std::thread::yield_now();
}

/// One transport's spin decisions.
#[derive(Debug)]
pub struct SpinPolicy {
  min: Duration,
  max: Duration,
  /// How long messages took to come lately (a moving average, 1/8 per arrival), from the
  /// start of a wait: what the next window is sized by.
  typical: Option<Duration>,
  /// When the current wait began, whether or not a window is open for it.
  waiting_since: Option<Instant>,
  /// The end of the open window, if one is open.
  open_until: Option<Instant>,
  /// Busy periods still to skip after a miss.
  skipping: u32,
}

impl Default for SpinPolicy {
  fn default() -> Self {
    SpinPolicy::with_windows(WINDOW, MAX_WINDOW)
  }
}

impl SpinPolicy {
  pub fn with_windows(min: Duration, max: Duration) -> Self {
    SpinPolicy {
      min,
      max,
      typical: None,
      waiting_since: None,
      open_until: None,
      skipping: 0,
    }
  }

  /// The transport began waiting for answers: until when the loop should poll, if at all.
  pub fn busy(&mut self, now: Instant) -> Option<Instant> {
    self.waiting_since = Some(now);
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
    let waited = self
      .waiting_since
      .take()
      .map(|since| now.saturating_duration_since(since));
    if let Some(waited) = waited {
      self.learn(waited);
    }
    match self.open_until.take() {
      Some(until) if now > until => {
        // Later than the window but within the longest: the window grows as it learns.
        if waited.is_none_or(|waited| waited > self.max) {
          self.skipping = SKIP_AFTER_MISS;
        }
        false
      }
      Some(_) => true,
      None => false,
    }
  }

  /// After messages that came in their window, answers are still awaited: poll on.
  pub fn still_busy(&mut self, now: Instant) -> Option<Instant> {
    self.waiting_since = Some(now);
    self.open(now)
  }

  /// Nothing is awaited any more.
  pub fn idle(&mut self) {
    self.open_until = None;
    self.waiting_since = None;
  }

  /// Twice what messages took lately, within `min..=max`; none when they take longer
  /// than `max`, so a slow server is not polled for at all.
  fn window(&self) -> Option<Duration> {
    match self.typical {
      None => Some(self.min),
      Some(typical) if typical > self.max => None,
      Some(typical) => Some((typical * 2).clamp(self.min, self.max)),
    }
  }

  fn learn(&mut self, waited: Duration) {
    let waited = waited.min(LONGEST_LEARNED);
    self.typical = Some(match self.typical {
      None => waited,
      Some(typical) => (typical * 7 + waited) / 8,
    });
  }

  fn open(&mut self, now: Instant) -> Option<Instant> {
    let until = now + self.window()?;
    self.open_until = Some(until);
    Some(until)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const W: Duration = Duration::from_micros(60);
  const MAX: Duration = Duration::from_micros(300);

  #[test]
  fn a_request_opens_a_window_and_answers_in_time_keep_it_open() {
    let mut policy = SpinPolicy::with_windows(W, MAX);
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
    let mut policy = SpinPolicy::with_windows(W, MAX);
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

  /// `rounds` sequential calls whose answers take `each`, from `t` on.
  fn calls(policy: &mut SpinPolicy, t: &mut Instant, each: Duration, rounds: usize) {
    for _ in 0..rounds {
      policy.busy(*t);
      *t += each;
      policy.arrived(*t);
      policy.idle();
    }
  }

  #[test]
  fn the_window_is_twice_what_answers_take_within_its_bounds() {
    let mut policy = SpinPolicy::with_windows(W, MAX);
    let mut t = Instant::now();
    // A loopback HTTP server: later than the shortest window. The first answer misses;
    // once the skipped calls are over, the window fits.
    calls(&mut policy, &mut t, Duration::from_micros(100), 40);
    assert_eq!(policy.busy(t), Some(t + Duration::from_micros(200)));
    t += Duration::from_micros(100);
    assert!(policy.arrived(t));
    policy.idle();
    // A quick server: the shortest window.
    calls(&mut policy, &mut t, Duration::from_micros(10), 40);
    assert_eq!(policy.busy(t), Some(t + W));
    policy.idle();
    // Close to the longest: the longest.
    calls(&mut policy, &mut t, Duration::from_micros(250), 80);
    assert_eq!(policy.busy(t), Some(t + MAX));
  }

  #[test]
  fn a_server_slower_than_the_longest_window_is_not_polled_for() {
    let mut policy = SpinPolicy::with_windows(W, MAX);
    let mut t = Instant::now();
    calls(&mut policy, &mut t, Duration::from_millis(1), 1);
    for _ in 0..100 {
      assert_eq!(policy.busy(t), None);
      t += Duration::from_millis(1);
      assert!(!policy.arrived(t));
      policy.idle();
    }
    // Quick again: polled for again once its average says so.
    calls(&mut policy, &mut t, Duration::from_micros(10), 40);
    assert_eq!(policy.busy(t), Some(t + W));
  }

  #[test]
  fn messages_outside_any_window_change_nothing() {
    let mut policy = SpinPolicy::with_windows(W, MAX);
    let t = Instant::now();
    // A notification while nothing is awaited, long after the last window closed.
    policy.busy(t);
    policy.idle();
    assert!(!policy.arrived(t + Duration::from_secs(1)));
    assert_eq!(policy.busy(t), Some(t + W));
  }
}
