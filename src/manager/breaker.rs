//! A34's circuit breaker against crash loops: a server whose transport keeps closing right
//! after it connects would otherwise be respawned forever. The sixth reconnect started for
//! a server within a sliding 30 s trips it.
use std::time::{Duration, Instant};

pub const WINDOW: Duration = Duration::from_secs(30);
/// Attempt-starting calls allowed per window; the next one trips the breaker.
pub const LIMIT: usize = 5;

#[derive(Default)]
pub struct Breaker {
  history: Vec<(String, Vec<Instant>)>,
}

impl Breaker {
  /// Records a reconnect of `name` starting at `now`; true when that makes it one too many.
  pub fn trip(&mut self, name: &str, now: Instant) -> bool {
    let index = match self.history.iter().position(|(n, _)| n == name) {
      Some(index) => index,
      None => {
        self.history.push((name.to_string(), Vec::new()));
        self.history.len() - 1
      }
    };
    let starts = &mut self.history[index].1;
    starts.retain(|start| now.saturating_duration_since(*start) < WINDOW);
    starts.push(now);
    starts.len() > LIMIT
  }

  /// A manual reconnect or a disconnect starts the count afresh.
  pub fn reset(&mut self, name: &str) {
    self.history.retain(|(n, _)| n != name);
  }

  pub fn clear(&mut self) {
    self.history.clear();
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a34_the_sixth_start_within_the_window_trips() {
    let mut breaker = Breaker::default();
    let start = Instant::now();
    for n in 0..5 {
      assert!(!breaker.trip("a", start + Duration::from_secs(n)));
    }
    assert!(breaker.trip("a", start + Duration::from_secs(5)));
    assert!(
      !breaker.trip("b", start + Duration::from_secs(5)),
      "per server"
    );
  }

  #[test]
  fn a34_old_starts_age_out_of_the_sliding_window() {
    let mut breaker = Breaker::default();
    let start = Instant::now();
    for n in 0..5 {
      assert!(!breaker.trip("a", start + Duration::from_secs(n * 7)));
    }
    // The first start (t=0) is 30 s old at t=30, so only four remain before this one.
    assert!(!breaker.trip("a", start + Duration::from_secs(30)));
    assert!(breaker.trip("a", start + Duration::from_secs(31)));
  }

  #[test]
  fn a34_reset_and_clear_start_afresh() {
    let mut breaker = Breaker::default();
    let now = Instant::now();
    for _ in 0..5 {
      breaker.trip("a", now);
      breaker.trip("b", now);
    }
    breaker.reset("a");
    assert!(!breaker.trip("a", now));
    assert!(breaker.trip("b", now));
    breaker.clear();
    assert!(!breaker.trip("b", now));
  }
}
