//! S6/S8: every server runs in its own process group; the groups still alive are recorded
//! here so that the host's exit (normal, SIGINT, SIGTERM, SIGHUP) stops them too.
//!
//! The table is a fixed array of atomics because a signal handler reads it: no locks, no
//! allocation, only async-signal-safe calls (`kill`, `waitpid`, `nanosleep`).
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use crate::sys::process;

const SLOTS: usize = 4096;
/// S6/A14: how long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);
/// A14: how long the leader (and the reader of its output) may take once killed.
pub const AFTER_KILL: Duration = Duration::from_millis(500);

static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
static TERMINATING: AtomicBool = AtomicBool::new(false);

pub fn register(pgid: i32) {
  for slot in GROUPS.iter() {
    if slot
      .compare_exchange(0, pgid, Ordering::AcqRel, Ordering::Acquire)
      .is_ok()
    {
      return;
    }
  }
  // More than SLOTS live servers: this one is still stopped by close() and by PDEATHSIG.
}

pub fn unregister(pgid: i32) {
  process::leave_group(pgid);
  for slot in GROUPS.iter() {
    if slot
      .compare_exchange(pgid, 0, Ordering::AcqRel, Ordering::Acquire)
      .is_ok()
    {
      return;
    }
  }
}

pub use crate::sys::process::{signal_group, Signal};

pub fn group_alive(pgid: i32) -> bool {
  signal_group(pgid, Signal::Probe)
}

/// SIGTERM to every recorded group, SIGKILL to those still alive after the grace period.
/// Async-signal-safe; runs once per process.
pub fn terminate_all() {
  if TERMINATING.swap(true, Ordering::AcqRel) {
    return;
  }
  let mut any = false;
  for slot in GROUPS.iter() {
    let pgid = slot.load(Ordering::Acquire);
    if pgid > 0 {
      any |= signal_group(pgid, Signal::Terminate);
    }
  }
  if !any {
    return;
  }
  let step = Duration::from_millis(10);
  let steps = KILL_GRACE.as_millis() / 10;
  for _ in 0..steps {
    let mut alive = false;
    for slot in GROUPS.iter() {
      let pgid = slot.load(Ordering::Acquire);
      if pgid > 0 {
        // The group leader is our child: reap it so a zombie does not count as alive.
        process::reap_if_exited(pgid);
        alive |= group_alive(pgid);
      }
    }
    if !alive {
      return;
    }
    process::sleep_signal_safe(step);
  }
  for slot in GROUPS.iter() {
    let pgid = slot.load(Ordering::Acquire);
    if pgid > 0 {
      signal_group(pgid, Signal::Kill);
    }
  }
}

/// S8: stop every child when the host exits: at `exit()` and on SIGINT, SIGTERM and SIGHUP,
/// unless JS handles that signal itself. Called before each spawn (JS may have let go of a
/// signal meanwhile).
pub fn install_exit_hooks() {
  process::on_exit(terminate_all);
}
