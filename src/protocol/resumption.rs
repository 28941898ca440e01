//! P2 (SEP-1699): whether a Streamable HTTP stream that ended or broke may be picked up
//! again, from which event, and after how long.
use std::time::Duration;

use super::sse::SseEvent;

/// The wait before a resumption when the server never sent `retry` (the agent's value).
pub const DEFAULT_RETRY: Duration = Duration::from_millis(3000);
/// Backoff never waits longer than this between two attempts.
const MAX_DELAY: Duration = Duration::from_secs(30);

/// What one stream has told us so far, and the attempts spent picking it up again.
#[derive(Debug, Clone)]
pub struct Resumption {
  last_event_id: Option<String>,
  retry: Duration,
  /// Attempts since the stream last delivered an event.
  failures: u32,
  max_attempts: u32,
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
    }
  }

  /// Every event counts, priming ones included: they carry the id and the `retry` to use.
  pub fn observe(&mut self, event: &SseEvent) {
    if let Some(id) = &event.id {
      // An empty `id` resets the last event id (WHATWG).
      self.last_event_id = (!id.is_empty()).then(|| id.clone());
    }
    if let Some(ms) = event.retry {
      self.retry = Duration::from_millis(ms);
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

  /// The attempt after an end or a break, or `None` when resumption is impossible: no
  /// event id seen (unless `fresh_allowed`, for the GET listener after a break), or the
  /// attempts ran out. Each failed attempt doubles the wait.
  pub fn next_attempt(&mut self, fresh_allowed: bool) -> Option<Attempt> {
    if self.failures >= self.max_attempts {
      return None;
    }
    let from = self.last_event_id.clone();
    if from.is_none() && !fresh_allowed {
      return None;
    }
    let wait = self
      .retry
      .saturating_mul(1u32 << self.failures.min(16))
      .min(MAX_DELAY.max(self.retry));
    self.failures += 1;
    Some(Attempt { from, wait })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

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
    assert_eq!(r.next_attempt(false), None);
  }

  #[test]
  fn p2_waits_the_servers_retry_then_backs_off_up_to_the_limit() {
    let mut r = Resumption::new(2);
    r.observe(&event(Some("e1"), Some(500)));
    let first = r.next_attempt(false).unwrap();
    assert_eq!(first.from.as_deref(), Some("e1"));
    assert_eq!(first.wait, Duration::from_millis(500));
    assert_eq!(
      r.next_attempt(false).unwrap().wait,
      Duration::from_millis(1000)
    );
    assert_eq!(r.next_attempt(false), None);
  }

  #[test]
  fn p2_defaults_to_3000ms_and_an_event_resets_the_attempts() {
    let mut r = Resumption::new(1);
    r.observe(&event(Some("a"), None));
    assert_eq!(r.next_attempt(false).unwrap().wait, DEFAULT_RETRY);
    assert_eq!(r.next_attempt(false), None);
    r.observe(&event(Some("b"), None));
    assert_eq!(r.next_attempt(false).unwrap().from.as_deref(), Some("b"));
  }

  #[test]
  fn p2_an_empty_id_clears_the_last_one_and_a_listener_may_start_fresh() {
    let mut r = Resumption::new(3);
    r.observe(&event(Some("a"), None));
    r.observe(&event(Some(""), None));
    assert_eq!(r.last_event_id(), None);
    assert_eq!(r.next_attempt(false), None);
    assert_eq!(r.next_attempt(true).unwrap().from, None);
  }

  #[test]
  fn a20_progress_is_an_event_since_the_last_attempt() {
    let mut r = Resumption::new(5);
    assert!(r.progressed());
    r.observe(&event(Some("a"), None));
    r.next_attempt(false).unwrap();
    assert!(!r.progressed());
    r.observe(&event(None, None));
    assert!(r.progressed());
  }

  #[test]
  fn p2_zero_retries_never_resume() {
    let mut r = Resumption::new(0);
    r.observe(&event(Some("a"), None));
    assert_eq!(r.next_attempt(true), None);
  }

  #[test]
  fn p2_backoff_is_capped() {
    let mut r = Resumption::new(40);
    r.observe(&event(Some("a"), Some(10_000)));
    let waits: Vec<_> = (0..5)
      .map(|_| r.next_attempt(false).unwrap().wait)
      .collect();
    assert_eq!(waits[0], Duration::from_secs(10));
    assert_eq!(waits[1], Duration::from_secs(20));
    assert!(waits[2..].iter().all(|w| *w == Duration::from_secs(30)));
  }
}
