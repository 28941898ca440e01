//! When a host's own stream reader of a stdio server's stdout (Bun's) lets go of the pipe.
//! The stream keeps the host alive and has no `unref`, so a transport idle (no request
//! pending) for `IDLE` cancels it; while none runs, a request (busy) or the pipe becoming
//! readable (a notification) starts one again. Decisions only: the binding carries them out.
use std::time::{Duration, Instant};

/// How long a transport stays idle before its stream is cancelled.
pub const IDLE: Duration = Duration::from_millis(50);

/// Where one transport's stream stands.
#[derive(Debug)]
pub struct StreamPolicy {
  busy: bool,
  idle_since: Instant,
  timer_armed: bool,
  /// The stream was cancelled by us: its end is no end of input.
  cancelling: bool,
  closed: bool,
}

/// What the idle timer found.
#[derive(Debug, PartialEq, Eq)]
pub enum Fired {
  Nothing,
  /// Idle again since the timer was armed: arm one for what is left.
  Rearm(Duration),
  /// Idle long enough: cancel the stream.
  Cancel,
}

/// What to do with the reader once a stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterEnd {
  /// Our cancel, and a request came meanwhile: read again at once.
  Resume,
  /// Our cancel: wait for the pipe to become readable.
  Watch,
  /// Our cancel, and the transport closed meanwhile: drop the reader.
  Drop,
  /// The server's end of input (or a read error).
  Input,
}

impl StreamPolicy {
  /// A stream just started for a transport that is not busy yet.
  pub fn new(now: Instant) -> Self {
    StreamPolicy {
      busy: false,
      idle_since: now,
      timer_armed: false,
      cancelling: false,
      closed: false,
    }
  }

  pub fn is_closed(&self) -> bool {
    self.closed
  }

  pub fn is_busy(&self) -> bool {
    self.busy
  }

  /// A request is pending, or none is any more. Busy: start reading if nothing is; idle:
  /// the timer to arm, if one is needed.
  pub fn set_busy(&mut self, busy: bool, now: Instant) -> Option<Duration> {
    self.busy = busy;
    if busy {
      return None;
    }
    self.idle_since = now;
    self.arm(now)
  }

  /// One timer at a time: the delay of a new one (until `IDLE` after the transport went
  /// idle, and a millisecond more), or `None` when one is armed or the transport closed.
  pub fn arm(&mut self, now: Instant) -> Option<Duration> {
    if self.closed || self.timer_armed {
      return None;
    }
    self.timer_armed = true;
    let idle_for = now.saturating_duration_since(self.idle_since);
    Some(IDLE.saturating_sub(idle_for) + Duration::from_millis(1))
  }

  /// The timer could not be set: none is armed.
  pub fn disarm(&mut self) {
    self.timer_armed = false;
  }

  pub fn timer_fired(&mut self, now: Instant) -> Fired {
    self.timer_armed = false;
    if self.closed || self.busy {
      return Fired::Nothing;
    }
    if now.saturating_duration_since(self.idle_since) < IDLE {
      return self.arm(now).map_or(Fired::Nothing, Fired::Rearm);
    }
    Fired::Cancel
  }

  /// The running stream is being cancelled by us.
  pub fn cancelling(&mut self) {
    self.cancelling = true;
  }

  pub fn stream_ended(&mut self) -> AfterEnd {
    if !std::mem::replace(&mut self.cancelling, false) {
      return AfterEnd::Input;
    }
    match (self.closed, self.busy) {
      (true, _) => AfterEnd::Drop,
      (false, true) => AfterEnd::Resume,
      (false, false) => AfterEnd::Watch,
    }
  }

  /// For good: true the first time.
  pub fn close(&mut self) -> bool {
    !std::mem::replace(&mut self.closed, true)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const MS: Duration = Duration::from_millis(1);

  #[test]
  fn an_idle_transport_lets_its_stream_go_after_idle_and_only_then() {
    let start = Instant::now();
    let mut policy = StreamPolicy::new(start);
    assert_eq!(policy.arm(start), Some(IDLE + MS));
    assert_eq!(policy.arm(start), None, "one timer at a time");
    // Busy for a while, then idle again 10 ms before the timer fires: it is re-armed.
    assert_eq!(policy.set_busy(true, start + 5 * MS), None);
    assert_eq!(policy.timer_fired(start + 51 * MS), Fired::Nothing);
    assert_eq!(policy.set_busy(false, start + 60 * MS), Some(IDLE + MS));
    assert_eq!(policy.timer_fired(start + 100 * MS), Fired::Rearm(11 * MS));
    assert_eq!(policy.timer_fired(start + 111 * MS), Fired::Cancel);
    policy.cancelling();
    assert_eq!(policy.stream_ended(), AfterEnd::Watch);
    // A read error or EOF that we did not cause is the end of input.
    assert_eq!(policy.stream_ended(), AfterEnd::Input);
  }

  #[test]
  fn a_cancelled_stream_resumes_when_busy_and_is_dropped_when_closed() {
    let start = Instant::now();
    let mut policy = StreamPolicy::new(start);
    policy.cancelling();
    policy.set_busy(true, start);
    assert_eq!(policy.stream_ended(), AfterEnd::Resume);
    policy.cancelling();
    assert!(policy.close());
    assert!(!policy.close(), "closing twice does nothing");
    assert_eq!(policy.stream_ended(), AfterEnd::Drop);
    assert_eq!(policy.arm(start), None, "a closed transport arms nothing");
    assert_eq!(policy.timer_fired(start + IDLE * 2), Fired::Nothing);
  }
}
