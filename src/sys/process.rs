//! Processes and signals: the system calls behind the stdio transport's process groups
//! (S6, S8) and `!command` values (M3).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

pub use super::signal::Signal;

const fn number(signal: Signal) -> i32 {
  match signal {
    Signal::Probe => 0,
    Signal::Terminate => libc::SIGTERM,
    Signal::Kill => libc::SIGKILL,
  }
}

/// Sends `signal` to every process in the group; false if it could not (see `group_gone`).
/// Async-signal-safe.
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
  // SAFETY: kill has no memory-safety preconditions.
  unsafe { libc::kill(-pgid, number(signal)) == 0 }
}

/// Whether the signal that just failed found no process left (ESRCH); call it right after.
pub fn group_gone() -> bool {
  std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Sends `signal` to one process; false if it is gone.
pub fn signal_process(pid: i32, signal: Signal) -> bool {
  // SAFETY: kill has no memory-safety preconditions.
  unsafe { libc::kill(pid, number(signal)) == 0 }
}

/// Reaps the child `pid` if it has exited, without waiting. Async-signal-safe.
pub fn reap_if_exited(pid: i32) {
  // SAFETY: waitpid with WNOHANG and a null status pointer is always safe to call.
  unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
}

/// Sleeps without touching anything a signal handler must not. Async-signal-safe.
pub fn sleep_signal_safe(duration: Duration) {
  let step = libc::timespec {
    tv_sec: duration.as_secs() as libc::time_t,
    tv_nsec: duration.subsec_nanos() as libc::c_long,
  };
  // SAFETY: step is a valid timespec; the remainder pointer may be null.
  unsafe { libc::nanosleep(&step, std::ptr::null_mut()) };
}

/// S8 backstop: the child gets SIGTERM when the thread that spawned it dies, so a host that
/// dies without running its exit hooks still stops it.
#[cfg(target_os = "linux")]
pub fn die_with_parent(command: &mut tokio::process::Command) {
  // SAFETY: prctl is async-signal-safe, as pre_exec requires.
  unsafe {
    command.pre_exec(|| {
      libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
      Ok(())
    });
  }
}

#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_command: &mut tokio::process::Command) {}

/// A13: the child leads a session of its own (Node's `detached: true`): its own process
/// group, which S8 signals as a whole, and no controlling terminal of the host's. Only
/// Windows has windows to hide.
pub fn own_session(command: &mut tokio::process::Command, _hide_window: bool) {
  // SAFETY: setsid is async-signal-safe, as pre_exec requires; the fresh child is never a
  // group leader, so it cannot fail with EPERM.
  unsafe {
    command.pre_exec(|| {
      if libc::setsid() == -1 {
        return Err(std::io::Error::last_os_error());
      }
      Ok(())
    });
  }
}

/// The spawned child's group is the one it leads (`own_session`): nothing to do here.
pub fn enter_group(_child: &tokio::process::Child) -> std::io::Result<()> {
  Ok(())
}

/// The group is no longer watched; a process group needs no handle to be let go of.
pub fn leave_group(_pgid: i32) {}

/// Whether the host has a console its children could share: a terminal on a std stream.
pub fn host_has_console() -> bool {
  use std::io::IsTerminal;
  std::io::stdin().is_terminal()
    || std::io::stdout().is_terminal()
    || std::io::stderr().is_terminal()
}

/// An argument passed as it is: Unix has no command line to quote.
pub fn verbatim_arg(command: &mut tokio::process::Command, arg: &str) {
  command.arg(arg);
}

/// What the exit hooks run: a plain `fn`, stored as an address so a handler can read it.
static ON_EXIT: AtomicUsize = AtomicUsize::new(0);

fn run_on_exit() {
  let hook = ON_EXIT.load(Ordering::Acquire);
  if hook != 0 {
    // SAFETY: only `on_exit` stores here, and it stores a `fn()`.
    let hook: fn() = unsafe { std::mem::transmute::<usize, fn()>(hook) };
    hook();
  }
}

extern "C" fn run_at_exit() {
  run_on_exit();
}

const EXIT_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

struct PreviousActions([std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>; 3]);
// SAFETY: each slot is written before the handler that reads it is installed, and only then.
unsafe impl Sync for PreviousActions {}

static PREVIOUS: PreviousActions =
  PreviousActions([const { std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()) }; 3]);

extern "C" fn on_exit_signal(signal: i32, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
  run_on_exit();
  let Some(index) = EXIT_SIGNALS.iter().position(|&s| s == signal) else {
    return;
  };
  // SAFETY: the slot was filled before this handler was installed (see on_exit).
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

/// Runs `hook` (async-signal-safe, it may run in a signal handler) when the process exits:
/// at `exit()` and on SIGINT, SIGTERM and SIGHUP, before the signal's previous handler. A
/// signal whose handler JS has taken over (a `process.on("SIGINT")` listener, installed by
/// libuv with SA_RESTART) is left alone, because the host then decides whether to exit.
pub fn on_exit(hook: fn()) {
  ON_EXIT.store(hook as usize, Ordering::Release);
  static AT_EXIT: Once = Once::new();
  AT_EXIT.call_once(|| {
    // SAFETY: registering a plain extern "C" fn with atexit.
    unsafe { libc::atexit(run_at_exit) };
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

#[cfg(test)]
mod tests {
  use super::*;

  /// Spawns `sleep 5` as a stdio server is spawned, from a thread that then ends.
  fn spawn_from_ending_thread() -> i32 {
    let spawned = std::thread::spawn(|| {
      let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
      runtime.block_on(async {
        let mut command = tokio::process::Command::new("sleep");
        command.arg("5");
        own_session(&mut command, false);
        die_with_parent(&mut command);
        let child = command.spawn().expect("sleep spawns");
        child.id().expect("a pid") as i32
      })
    });
    spawned.join().expect("the spawning thread")
  }

  fn alive_after(pid: i32, wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    while std::time::Instant::now() < deadline {
      reap_if_exited(pid);
      if !signal_process(pid, Signal::Probe) {
        return false;
      }
      std::thread::sleep(Duration::from_millis(20));
    }
    true
  }

  /// A13/S6: on every Unix, macOS included, a server leads a process group of its own (the
  /// agent's macOS spawn is not detached and signals only the child; we signal the group,
  /// so what an `npx` wrapper started stops too).
  #[test]
  fn a13_a_server_leads_its_own_group() {
    let pid = spawn_from_ending_thread();
    assert!(
      signal_group(pid, Signal::Probe),
      "the group named by the pid exists"
    );
    signal_group(pid, Signal::Kill);
    assert!(!alive_after(pid, Duration::from_secs(2)));
  }

  /// S8: on Linux the parent-death signal ends a server whose spawning thread is gone.
  #[cfg(target_os = "linux")]
  #[test]
  fn s8_linux_a_server_ends_with_the_thread_that_spawned_it() {
    let pid = spawn_from_ending_thread();
    assert!(!alive_after(pid, Duration::from_secs(2)));
  }

  /// S8 on macOS: there is no parent-death signal, so a server outlives the thread that
  /// spawned it; the exit hooks (`on_exit`) are what stop it when the host ends.
  #[cfg(target_os = "macos")]
  #[test]
  fn s8_macos_a_server_outlives_the_thread_that_spawned_it() {
    let pid = spawn_from_ending_thread();
    assert!(alive_after(pid, Duration::from_millis(300)));
    signal_group(pid, Signal::Kill);
    assert!(!alive_after(pid, Duration::from_secs(2)));
  }
}
