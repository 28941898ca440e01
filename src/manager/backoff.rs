//! M10's reconnect schedule: exponential backoff with jitter.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
  pub max_attempts: u32,
  pub initial_delay: Duration,
  pub max_delay: Duration,
}

impl Default for ReconnectPolicy {
  fn default() -> Self {
    Self {
      max_attempts: 5,
      initial_delay: Duration::from_millis(500),
      max_delay: Duration::from_secs(30),
    }
  }
}

impl ReconnectPolicy {
  /// M10 `options.reconnect`: each field that is given replaces the default.
  pub fn from_options(
    max_attempts: Option<f64>,
    initial_delay_ms: Option<f64>,
    max_delay_ms: Option<f64>,
  ) -> Self {
    let defaults = Self::default();
    let ms = |n: f64| Duration::from_secs_f64(n / 1000.0);
    Self {
      max_attempts: max_attempts.map_or(defaults.max_attempts, |n| n as u32),
      initial_delay: initial_delay_ms.map_or(defaults.initial_delay, ms),
      max_delay: max_delay_ms.map_or(defaults.max_delay, ms),
    }
  }

  /// The delay before each of the `max_attempts` attempts: `initial_delay * 2^n`, capped at
  /// `max_delay`, then jittered down to a uniform pick in `[delay / 2, delay]`, so no delay
  /// ever exceeds `max_delay`.
  pub fn delays(&self) -> impl Iterator<Item = Duration> {
    let policy = *self;
    let random = RandomState::new();
    (0..self.max_attempts)
      .map(move |attempt| jitter(policy.base_delay(attempt), random.hash_one(attempt)))
  }

  /// A34's ladder: the first attempt at once, then `initial_delay * 2^n` (capped at
  /// `max_delay`) before each of the others, without jitter: the default is
  /// 0, 500, 1000, 2000, 4000 ms.
  pub fn ladder(&self) -> impl Iterator<Item = Duration> {
    let policy = *self;
    (0..self.max_attempts).map(move |attempt| match attempt {
      0 => Duration::ZERO,
      n => policy.base_delay(n - 1),
    })
  }

  fn base_delay(&self, attempt: u32) -> Duration {
    1u32
      .checked_shl(attempt)
      .and_then(|factor| self.initial_delay.checked_mul(factor))
      .map_or(self.max_delay, |delay| delay.min(self.max_delay))
  }
}

/// `delay / 2` plus a `random`-chosen share of the rest, in exact integer nanoseconds
/// (u128 holds `Duration::MAX` times `u32::MAX`), so the result stays within `delay`.
fn jitter(delay: Duration, random: u64) -> Duration {
  let half = delay / 2;
  let share = u128::from(random >> 32);
  half + Duration::from_nanos_u128((delay - half).as_nanos() * share / u128::from(u32::MAX))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn default_policy() {
    let policy = ReconnectPolicy::default();
    assert_eq!(
      policy,
      ReconnectPolicy {
        max_attempts: 5,
        initial_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(30)
      }
    );
    let bases: Vec<_> = (0..5).map(|n| policy.base_delay(n).as_millis()).collect();
    assert_eq!(bases, [500, 1000, 2000, 4000, 8000]);
  }

  #[test]
  fn a34_the_ladder_starts_at_once_then_doubles() {
    let ladder: Vec<_> = ReconnectPolicy::default()
      .ladder()
      .map(|d| d.as_millis())
      .collect();
    assert_eq!(ladder, [0, 500, 1000, 2000, 4000]);
    let capped = ReconnectPolicy {
      max_attempts: 4,
      initial_delay: Duration::from_millis(300),
      max_delay: Duration::from_millis(500),
    };
    let ladder: Vec<_> = capped.ladder().map(|d| d.as_millis()).collect();
    assert_eq!(ladder, [0, 300, 500, 500]);
  }

  #[test]
  fn yields_max_attempts_delays_within_bounds() {
    let policy = ReconnectPolicy {
      max_attempts: 12,
      initial_delay: Duration::from_millis(100),
      max_delay: Duration::from_secs(5),
    };
    for _ in 0..50 {
      let delays: Vec<_> = policy.delays().collect();
      assert_eq!(delays.len(), 12);
      for (n, delay) in (0u32..).zip(&delays) {
        let base = policy.base_delay(n);
        assert!(*delay <= policy.max_delay, "{delay:?}");
        assert!(
          *delay <= base && *delay >= base / 2,
          "attempt {n}: {delay:?} vs {base:?}"
        );
      }
    }
  }

  #[test]
  fn base_delays_grow_then_cap() {
    let policy = ReconnectPolicy {
      max_attempts: 100,
      initial_delay: Duration::from_millis(300),
      max_delay: Duration::from_secs(10),
    };
    let bases: Vec<_> = (0..100).map(|n| policy.base_delay(n)).collect();
    assert!(bases.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(bases[0], Duration::from_millis(300));
    assert_eq!(bases[1], Duration::from_millis(600));
    assert_eq!(
      bases[5],
      Duration::from_secs(9) + Duration::from_millis(600)
    );
    assert!(bases[6..].iter().all(|d| *d == policy.max_delay));
    assert_eq!(policy.delays().count(), 100);
  }

  #[test]
  fn no_attempts_means_no_delays() {
    let policy = ReconnectPolicy {
      max_attempts: 0,
      ..ReconnectPolicy::default()
    };
    assert_eq!(policy.delays().count(), 0);
  }

  #[test]
  fn extreme_settings_do_not_overflow() {
    let huge = ReconnectPolicy {
      max_attempts: 70,
      initial_delay: Duration::MAX,
      max_delay: Duration::MAX,
    };
    assert!(huge.delays().all(|d| d >= Duration::MAX / 2));
    let capped = ReconnectPolicy {
      max_attempts: 3,
      initial_delay: Duration::from_secs(60),
      max_delay: Duration::from_secs(1),
    };
    assert!(capped
      .delays()
      .all(|d| d <= Duration::from_secs(1) && d >= Duration::from_millis(500)));
    let zero = ReconnectPolicy {
      max_attempts: 3,
      initial_delay: Duration::ZERO,
      max_delay: Duration::from_secs(1),
    };
    assert!(zero.delays().all(|d| d.is_zero()));
  }

  #[test]
  fn jitter_spans_its_range_and_varies() {
    let delay = Duration::from_millis(1000);
    assert_eq!(jitter(delay, 0), Duration::from_millis(500));
    assert_eq!(jitter(delay, u64::MAX), delay);
    assert_eq!(jitter(delay, 1 << 63), Duration::from_millis(750));
    assert_eq!(
      jitter(Duration::from_nanos(3), u64::MAX),
      Duration::from_nanos(3)
    );
    assert_eq!(jitter(Duration::MAX, u64::MAX), Duration::MAX);
    let firsts: Vec<_> = (0..20)
      .map(|_| ReconnectPolicy::default().delays().next())
      .collect();
    assert!(
      firsts.iter().any(|d| *d != firsts[0]),
      "no jitter across 20 schedules"
    );
  }
}
