//! S6/S8: every server runs in its own process group; the groups still alive are recorded
//! here so that the host's exit (normal, SIGINT, SIGTERM, SIGHUP) stops them too.
//!
//! The table is a fixed array of atomics because a signal handler reads it: no locks, no
//! allocation, only async-signal-safe calls (`kill`, `waitpid`, `nanosleep`).
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

const SLOTS: usize = 4096;
/// S6: how long a group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

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
  for slot in GROUPS.iter() {
    if slot
      .compare_exchange(pgid, 0, Ordering::AcqRel, Ordering::Acquire)
      .is_ok()
    {
      return;
    }
  }
}

/// Sends `signal` to every process in the group; false if the group is gone.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
  // SAFETY: kill has no memory-safety preconditions.
  unsafe { libc::kill(-pgid, signal) == 0 }
}

pub fn group_alive(pgid: i32) -> bool {
  signal_group(pgid, 0)
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
      any |= signal_group(pgid, libc::SIGTERM);
    }
  }
  if !any {
    return;
  }
  let step = libc::timespec {
    tv_sec: 0,
    tv_nsec: 10_000_000,
  };
  let steps = KILL_GRACE.as_millis() / 10;
  for _ in 0..steps {
    let mut alive = false;
    for slot in GROUPS.iter() {
      let pgid = slot.load(Ordering::Acquire);
      if pgid > 0 {
        // The group leader is our child: reap it so a zombie does not count as alive.
        // SAFETY: waitpid with WNOHANG and a null status pointer is always safe to call.
        unsafe { libc::waitpid(pgid, std::ptr::null_mut(), libc::WNOHANG) };
        alive |= group_alive(pgid);
      }
    }
    if !alive {
      return;
    }
    // SAFETY: step is a valid timespec; the remainder pointer may be null.
    unsafe { libc::nanosleep(&step, std::ptr::null_mut()) };
  }
  for slot in GROUPS.iter() {
    let pgid = slot.load(Ordering::Acquire);
    if pgid > 0 {
      signal_group(pgid, libc::SIGKILL);
    }
  }
}

extern "C" fn terminate_all_at_exit() {
  terminate_all();
}

const EXIT_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

struct PreviousActions([std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>; 3]);
// SAFETY: each slot is written before the handler that reads it is installed, and only then.
unsafe impl Sync for PreviousActions {}

static PREVIOUS: PreviousActions =
  PreviousActions([const { std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()) }; 3]);

extern "C" fn on_exit_signal(signal: i32, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
  terminate_all();
  let Some(index) = EXIT_SIGNALS.iter().position(|&s| s == signal) else {
    return;
  };
  // SAFETY: the slot was filled before this handler was installed (see install_exit_hooks).
  let previous = unsafe { (*PREVIOUS.0[index].get()).assume_init_ref() };
  let handler = previous.sa_sigaction;
  if handler == libc::SIG_IGN {
    return;
  }
  if handler == libc::SIG_DFL {
    // SAFETY: restoring the default disposition and re-raising is the standard chain.
    unsafe {
      libc::signal(signal, libc::SIG_DFL);
      libc::raise(signal);
    }
    return;
  }
  // SAFETY: a non-default handler is a function taking (signal[, info, context]); the extra
  // arguments are harmless to a one-argument handler under the C ABI.
  let previous: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
    unsafe { std::mem::transmute(handler) };
  previous(signal, info, context);
}

/// S8: stop every child when the host exits. Called before each spawn: a signal whose
/// handler JS has taken over (a `process.on("SIGINT")` listener, installed by libuv with
/// SA_RESTART) is left alone, because the host then decides whether to exit at all.
pub fn install_exit_hooks() {
  static AT_EXIT: Once = Once::new();
  AT_EXIT.call_once(|| {
    // SAFETY: registering a plain extern "C" fn with atexit.
    unsafe { libc::atexit(terminate_all_at_exit) };
  });
  static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
  let _serialised = INSTALL.lock();
  for (index, &signal) in EXIT_SIGNALS.iter().enumerate() {
    // SAFETY: sigaction is plain old data; all zeroes is a valid (empty) value.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: sigaction with a null new action only reads the current one.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
      continue;
    }
    let ours = on_exit_signal as *const () as libc::sighandler_t;
    let taken_by_js = current.sa_flags & libc::SA_RESTART != 0;
    if current.sa_sigaction == ours || current.sa_sigaction == libc::SIG_IGN || taken_by_js {
      continue;
    }
    // SAFETY: the slot is not read until our handler is installed below; installs are
    // serialised by the lock, and a handler already running reads a slot of its own signal.
    unsafe { (*PREVIOUS.0[index].get()).write(current) };
    // SAFETY: as above, an all-zero sigaction is valid; every field we need is set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = ours;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESETHAND;
    // SAFETY: a fully initialised sigaction; the mask is filled like Node's own handlers.
    unsafe {
      libc::sigfillset(&mut action.sa_mask);
      libc::sigaction(signal, &action, std::ptr::null_mut());
    }
  }
}
