//! P2 (SEP-1699): whether a Streamable HTTP stream that ended or broke may be picked up
//! again, from which event, and after how long. A server cannot make the client hammer it:
//! `retry` has a floor, and a stream is reopened at most `REOPEN_BURST` times a window.
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::sse::SseEvent;

/// The wait before a resumption when the server never sent `retry` (the agent's value).
pub const DEFAULT_RETRY: Duration = Duration::from_millis(3000);
/// Backoff never waits longer than this between two attempts.
const MAX_DELAY: Duration = Duration::from_secs(30);
/// The shortest wait before a reopen, whatever `retry` says (`retry: 0` would be a storm).
pub const MIN_RETRY: Duration = Duration::from_millis(100);
/// At most this many reopens of one stream start within `REOPEN_WINDOW`: a server that ends
/// every stream after one event is polled, not flooded.
pub const REOPEN_BURST: usize = 10;
pub const REOPEN_WINDOW: Duration = Duration::from_secs(10);

/// What one stream has told us so far, and the attempts spent picking it up again.
#[derive(Debug, Clone)]
pub struct Resumption {
  last_event_id: Option<String>,
  retry: Duration,
  /// Attempts since the stream last delivered an event.
  failures: u32,
  max_attempts: u32,
  /// When the last `REOPEN_BURST` attempts were due, oldest first.
  reopens: VecDeque<Instant>,
}

/// The next attempt: GET with `Last-Event-ID: from` (none for a fresh listener) after `wait`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
  pub from: Option<String>,
  pub wait: Duration,
}

impl Resumption {
  pub fn new(max_attempts: u32) -> Self {
    Resumption {
      last_event_id: None,
      retry: DEFAULT_RETRY,
      failures: 0,
      max_attempts,
      // Made on first use: every HTTP request has one, and few ever resume.
      reopens: VecDeque::new(),
    }
  }

  /// Every event counts, priming ones included: they carry the id and the `retry` to use.
  pub fn observe(&mut self, event: &SseEvent) {
    if let Some(id) = &event.id {
      // An empty `id` resets the last event id (WHATWG).
      self.last_event_id = (!id.is_empty()).then(|| id.clone());
    }
    if let Some(ms) = event.retry {
      self.retry = Duration::from_millis(ms).max(MIN_RETRY);
    }
    self.failures = 0;
  }

  /// A20: whether an event came since the last attempt (or ever, before the first).
  pub fn progressed(&self) -> bool {
    self.failures == 0
  }

  pub fn last_event_id(&self) -> Option<&str> {
    self.last_event_id.as_deref()
  }

  /// The attempt after an end or a break at `now`, or `None` when resumption is impossible:
  /// no event id seen (unless `fresh_allowed`, for the GET listener after a break), or the
  /// attempts ran out. Each failed attempt doubles the wait; past the reopen rate, the
  /// attempt waits until the window allows it.
  pub fn next_attempt(&mut self, fresh_allowed: bool, now: Instant) -> Option<Attempt> {
    if self.failures >= self.max_attempts {
      return None;
    }
    let from = self.last_event_id.clone();
    if from.is_none() && !fresh_allowed {
      return None;
    }
    let backoff = self
      .retry
      .saturating_mul(1u32 << self.failures.min(16))
      .min(MAX_DELAY.max(self.retry));
    let mut due = now + backoff;
    if self.reopens.len() == REOPEN_BURST {
      if let Some(oldest) = self.reopens.pop_front() {
        due = due.max(oldest + REOPEN_WINDOW);
      }
    }
    self.reopens.push_back(due);
    self.failures += 1;
    Some(Attempt {
      from,
      wait: due - now,
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn now() -> Instant {
    Instant::now()
  }

  fn event(id: Option<&str>, retry: Option<u64>) -> SseEvent {
    SseEvent {
      event: None,
      data: String::new(),
      id: id.map(str::to_string),
      retry,
    }
  }

  #[test]
  fn p2_no_event_id_means_no_resumption() {
    let mut r = Resumption::new(2);
    r.observe(&event(None, Some(500)));
    assert_eq!(r.next_attempt(false, now()), None);
  }

  #[test]
  fn p2_waits_the_servers_retry_then_backs_off_up_to_the_limit() {
    let mut r = Resumption::new(2);
    r.observe(&event(Some("e1"), Some(500)));
    let first = r.next_attempt(false, now()).unwrap();
    assert_eq!(first.from.as_deref(), Some("e1"));
    assert_eq!(first.wait, Duration::from_millis(500));
    assert_eq!(
      r.next_attempt(false, now()).unwrap().wait,
      Duration::from_millis(1000)
    );
    assert_eq!(r.next_attempt(false, now()), None);
  }

  #[test]
  fn p2_defaults_to_3000ms_and_an_event_resets_the_attempts() {
    let mut r = Resumption::new(1);
    r.observe(&event(Some("a"), None));
    assert_eq!(r.next_attempt(false, now()).unwrap().wait, DEFAULT_RETRY);
    assert_eq!(r.next_attempt(false, now()), None);
    r.observe(&event(Some("b"), None));
    assert_eq!(
      r.next_attempt(false, now()).unwrap().from.as_deref(),
      Some("b")
    );
  }

  #[test]
  fn p2_an_empty_id_clears_the_last_one_and_a_listener_may_start_fresh() {
    let mut r = Resumption::new(3);
    r.observe(&event(Some("a"), None));
    r.observe(&event(Some(""), None));
    assert_eq!(r.last_event_id(), None);
    assert_eq!(r.next_attempt(false, now()), None);
    assert_eq!(r.next_attempt(true, now()).unwrap().from, None);
  }

  #[test]
  fn a20_progress_is_an_event_since_the_last_attempt() {
    let mut r = Resumption::new(5);
    assert!(r.progressed());
    r.observe(&event(Some("a"), None));
    r.next_attempt(false, now()).unwrap();
    assert!(!r.progressed());
    r.observe(&event(None, None));
    assert!(r.progressed());
  }

  #[test]
  fn p2_zero_retries_never_resume() {
    let mut r = Resumption::new(0);
    r.observe(&event(Some("a"), None));
    assert_eq!(r.next_attempt(true, now()), None);
  }

  #[test]
  fn p2_backoff_is_capped() {
    let mut r = Resumption::new(40);
    r.observe(&event(Some("a"), Some(10_000)));
    let waits: Vec<_> = (0..5)
      .map(|_| r.next_attempt(false, now()).unwrap().wait)
      .collect();
    assert_eq!(waits[0], Duration::from_secs(10));
    assert_eq!(waits[1], Duration::from_secs(20));
    assert!(waits[2..].iter().all(|w| *w == Duration::from_secs(30)));
  }

  #[test]
  fn p2_retry_has_a_floor() {
    let mut r = Resumption::new(3);
    r.observe(&event(Some("a"), Some(0)));
    assert_eq!(r.next_attempt(false, now()).unwrap().wait, MIN_RETRY);
  }

  #[test]
  fn p2_a_stream_ending_after_every_event_is_reopened_at_a_bounded_rate() {
    let mut r = Resumption::new(2);
    let start = now();
    let mut at = start;
    let mut waits = Vec::new();
    for i in 0..25 {
      // Each reopened stream delivers one event and ends at once.
      r.observe(&event(Some(&i.to_string()), Some(0)));
      let attempt = r.next_attempt(false, at).unwrap();
      waits.push(attempt.wait);
      at += attempt.wait;
    }
    assert!(waits[..REOPEN_BURST].iter().all(|w| *w == MIN_RETRY));
    // Then one reopen per window slot: 25 reopens take two full windows.
    assert!(at - start >= REOPEN_WINDOW * 2, "{:?}", at - start);
    let in_any_window = |from: usize| {
      let mut t = start;
      let times: Vec<Instant> = waits
        .iter()
        .map(|w| {
          t += *w;
          t
        })
        .collect();
      times
        .iter()
        .filter(|x| **x >= times[from] && **x < times[from] + REOPEN_WINDOW)
        .count()
    };
    assert!((0..25).all(|i| in_any_window(i) <= REOPEN_BURST));
  }
}
