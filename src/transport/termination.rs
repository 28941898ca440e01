//! A15 `terminateStdioProcess`: SIGTERM, up to the grace period for the exit, then SIGKILL
//! (always for a detached process: its group may outlive it) and up to `AFTER_KILL` more.
//! A detached process off Windows is signalled as its whole group, else through the
//! process object's own `kill`.
use std::time::Duration;

use futures::future::LocalBoxFuture;

use super::process_group::{AFTER_KILL, KILL_GRACE};
use super::spawn_request::{platform, present};
use crate::host::Values;
use crate::sys::process::{group_gone, signal_group, Signal};

/// What the host's process object offers.
pub trait Process {
  /// `proc.kill(signal)`; what it throws changes nothing (the waits that follow decide).
  fn kill(&self, signal: Signal);
  /// Whether `proc.exited` settles within `limit` (`None`: however long it takes).
  fn wait(&mut self, limit: Option<Duration>) -> LocalBoxFuture<'_, bool>;
}

/// How one process is stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
  /// The process group to signal, when the process leads one that we may signal.
  pub group: Option<i32>,
  pub detached: bool,
  /// `None` waits for the exit without a limit.
  pub grace: Option<Duration>,
}

/// `termGraceMs`: 1000 when omitted; NaN and negative values are no wait, as setTimeout
/// has them; a value too large for any timer waits for the exit however long it takes.
fn grace<H: Values>(h: &H, value: &H::Value) -> Result<Option<Duration>, H::Value> {
  if h.is_nullish(value) {
    return Ok(Some(KILL_GRACE));
  }
  let ms = h
    .as_number(value)
    .ok_or_else(|| h.type_error("The \"termGraceMs\" argument must be a number"))?;
  if ms.is_nan() || ms <= 0.0 {
    return Ok(Some(Duration::ZERO));
  }
  Ok(Duration::try_from_secs_f64(ms / 1000.0).ok())
}

/// A pid whose negation names its group alone: 0 and 1 would make `kill(-pid)` signal our
/// own group or every process we may signal.
fn group_id(pid: Option<f64>) -> Option<i32> {
  let pid = pid?;
  (pid.fract() == 0.0 && pid > 1.0 && pid <= f64::from(i32::MAX)).then_some(pid as i32)
}

/// Reads the arguments in the agent's order; a bad one rejects with a TypeError naming it.
pub fn read_plan<H: Values>(
  h: &H,
  proc: &H::Value,
  detached: &H::Value,
  platform_arg: &H::Value,
  grace_arg: &H::Value,
  host_platform: impl FnOnce() -> String,
) -> Result<Plan, H::Value> {
  if !h.is_object(proc) && !h.is_function(proc) {
    return Err(h.type_error("The \"proc\" argument must be an object"));
  }
  if !present(h, proc, "kill")?.is_some_and(|kill| h.is_function(&kill)) {
    return Err(h.type_error("The \"proc.kill\" field must be a function"));
  }
  let detached = h.truthy(detached);
  let platform_arg = (!h.is_nullish(platform_arg)).then_some(platform_arg);
  let platform = platform(h, platform_arg, "\"platform\" argument")?.unwrap_or_else(host_platform);
  let grace = grace(h, grace_arg)?;
  let pid = h.field(proc, "pid")?;
  // Anything else in `pid` is an error to `process.kill(-pid)`: `proc.kill` does instead.
  let group = (detached && platform != "win32")
    .then(|| group_id(h.as_number(&pid)))
    .flatten();
  Ok(Plan {
    group,
    detached,
    grace,
  })
}

/// What became of a signal.
enum Signalled {
  Delivered,
  /// The process group is gone (ESRCH): there is nothing left to stop.
  GroupGone,
}

fn send(process: &impl Process, plan: &Plan, signal: Signal) -> Signalled {
  if let Some(pgid) = plan.group {
    if signal_group(pgid, signal) {
      return Signalled::Delivered;
    }
    // errno is still that of the kill: nothing ran in between.
    if group_gone() {
      return Signalled::GroupGone;
    }
  }
  process.kill(signal);
  Signalled::Delivered
}

/// Runs the sequence to its end; never fails.
pub async fn terminate(process: &mut impl Process, plan: &Plan) {
  if let Signalled::GroupGone = send(process, plan, Signal::Terminate) {
    return;
  }
  let exited = process.wait(plan.grace).await;
  // A detached leader's exit says nothing of the rest of its group.
  if exited && !plan.detached {
    return;
  }
  if let Signalled::GroupGone = send(process, plan, Signal::Kill) {
    return;
  }
  if !exited {
    process.wait(Some(AFTER_KILL)).await;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::fake_host::{v, FakeHost, V};
  use serde_json::json;
  use std::cell::RefCell;

  /// Exits `exits_after` after it is first asked, whatever the signal.
  struct FakeProcess {
    exits_after: Option<Duration>,
    log: RefCell<Vec<String>>,
  }

  impl Process for FakeProcess {
    fn kill(&self, signal: Signal) {
      self.log.borrow_mut().push(signal.name().to_string());
    }

    fn wait(&mut self, limit: Option<Duration>) -> LocalBoxFuture<'_, bool> {
      let exits = self.exits_after;
      self.log.borrow_mut().push(format!("wait {limit:?}"));
      Box::pin(async move { exits.is_some_and(|after| limit.is_none_or(|limit| after <= limit)) })
    }
  }

  fn run(exits_after: Option<Duration>, detached: bool) -> Vec<String> {
    let mut process = FakeProcess {
      exits_after,
      log: RefCell::default(),
    };
    let plan = Plan {
      group: None,
      detached,
      grace: Some(KILL_GRACE),
    };
    futures::executor::block_on(terminate(&mut process, &plan));
    process.log.into_inner()
  }

  #[test]
  fn a15_an_exit_within_the_grace_ends_it() {
    assert_eq!(
      run(Some(Duration::from_millis(10)), false),
      ["SIGTERM", "wait Some(1s)"]
    );
  }

  #[test]
  fn a15_a_detached_leader_is_killed_even_after_its_exit() {
    assert_eq!(
      run(Some(Duration::from_millis(10)), true),
      ["SIGTERM", "wait Some(1s)", "SIGKILL"]
    );
  }

  #[test]
  fn a15_no_exit_means_kill_then_a_last_wait() {
    assert_eq!(
      run(None, false),
      ["SIGTERM", "wait Some(1s)", "SIGKILL", "wait Some(500ms)"]
    );
  }

  fn plan(proc: V, detached: bool, platform: V, grace: V) -> Result<Plan, V> {
    read_plan(
      &FakeHost::new(),
      &proc,
      &V::Bool(detached),
      &platform,
      &grace,
      || "linux".into(),
    )
  }

  fn proc(pid: serde_json::Value) -> V {
    let proc = v(json!({ "pid": pid }));
    proc.set("kill", V::Function);
    proc
  }

  #[test]
  fn a15_grace_and_group_follow_the_agent() {
    let read = plan(proc(json!(4242)), true, V::Undefined, V::Undefined).ok();
    assert_eq!(
      read,
      Some(Plan {
        group: Some(4242),
        detached: true,
        grace: Some(KILL_GRACE)
      })
    );
    let on_windows = plan(proc(json!(4242)), true, v(json!("win32")), V::Number(-5.0));
    assert_eq!(
      on_windows.ok(),
      Some(Plan {
        group: None,
        detached: true,
        grace: Some(Duration::ZERO)
      })
    );
    // 0 and 1 never name a group; a grace too large for a timer waits forever.
    let odd = plan(proc(json!(1)), true, V::Undefined, V::Number(1e300)).ok();
    assert_eq!(
      odd,
      Some(Plan {
        group: None,
        detached: true,
        grace: None
      })
    );
  }

  #[test]
  fn e2_bad_arguments_name_themselves() {
    let message = |result: Result<Plan, V>| result.err().map(|e| e.message());
    assert_eq!(
      message(plan(V::Number(1.0), false, V::Undefined, V::Undefined)).as_deref(),
      Some("The \"proc\" argument must be an object")
    );
    assert_eq!(
      message(plan(v(json!({})), false, V::Undefined, V::Undefined)).as_deref(),
      Some("The \"proc.kill\" field must be a function")
    );
    assert_eq!(
      message(plan(proc(json!(5)), false, V::Number(3.0), V::Undefined)).as_deref(),
      Some("The \"platform\" argument must be a string")
    );
    assert_eq!(
      message(plan(proc(json!(5)), false, V::Undefined, v(json!("1s")))).as_deref(),
      Some("The \"termGraceMs\" argument must be a number")
    );
  }
}
