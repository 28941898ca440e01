//! How much of a flood one event-loop turn on the JS thread delivers before it yields, so
//! the host's timers and I/O run in between: a few hundred messages or about 1 ms.
use std::time::{Duration, Instant};

/// Events handed over at once; a chunk's results and notifications share one JSON.parse.
pub const CHUNK_EVENTS: usize = 64;
const TURN_EVENTS: usize = 256;
const TURN_TIME: Duration = Duration::from_millis(1);

/// The budget of one turn, started when the turn starts.
pub struct TurnBudget {
  started: Instant,
  delivered: usize,
  events: usize,
  time: Duration,
}

impl TurnBudget {
  pub fn start() -> Self {
    Self::with(TURN_EVENTS, TURN_TIME)
  }

  fn with(events: usize, time: Duration) -> Self {
    TurnBudget {
      started: Instant::now(),
      delivered: 0,
      events,
      time,
    }
  }

  /// Counts `delivered` more events; whether the turn may go on.
  pub fn spend(&mut self, delivered: usize) -> bool {
    self.delivered += delivered;
    self.delivered < self.events && self.started.elapsed() < self.time
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_turn_ends_after_its_events() {
    let mut budget = TurnBudget::with(256, Duration::from_secs(3600));
    for _ in 0..3 {
      assert!(budget.spend(CHUNK_EVENTS));
    }
    assert!(!budget.spend(CHUNK_EVENTS));
  }

  #[test]
  fn a_turn_ends_when_its_time_is_up() {
    let mut budget = TurnBudget::with(usize::MAX, Duration::ZERO);
    assert!(!budget.spend(1));
  }

  #[test]
  fn the_default_is_256_events_or_1_ms() {
    let budget = TurnBudget::start();
    assert_eq!(
      (budget.events, budget.time),
      (256, Duration::from_millis(1))
    );
  }
}
