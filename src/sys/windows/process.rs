//! Processes on Windows: a stdio server's "group" is a Job Object that kills everything in
//! it when its last handle closes. `close()` ends the job (the server and every process it
//! started: a grandchild must not survive), and a host that dies, however it dies, closes
//! the handle with it: the exit hooks and parent-death signal of Unix are the kernel's
//! job here.
use std::ffi::c_void;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
  JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
  TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
  JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
  GetExitCodeProcess, OpenProcess, TerminateProcess, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW,
  PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE,
};

pub use crate::sys::signal::Signal;

/// The exit code a terminated server reports, as Node's `kill()` leaves it.
const KILLED: u32 = 1;

/// The jobs of the servers still watched, by the pid that names their group.
static JOBS: Mutex<Vec<(i32, OwnedHandle)>> = Mutex::new(Vec::new());

fn job_of<T>(pgid: i32, with: impl FnOnce(RawHandle) -> T) -> Option<T> {
  let jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
  let (_, job) = jobs.iter().find(|(id, _)| *id == pgid)?;
  Some(with(job.as_raw_handle()))
}

/// How many processes are still in the job.
fn active_processes(job: RawHandle) -> u32 {
  // SAFETY: plain old data; all zeroes is a valid value.
  let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
  // SAFETY: `info` is writable for its size; the job handle is open while JOBS holds it.
  let ok = unsafe {
    QueryInformationJobObject(
      job,
      JobObjectBasicAccountingInformation,
      (&raw mut info).cast::<c_void>(),
      size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
      std::ptr::null_mut(),
    )
  };
  if ok == 0 {
    0
  } else {
    info.ActiveProcesses
  }
}

/// Puts a spawned child in a job of its own that ends with its last handle; the job is
/// then its group, named by the child's pid.
pub fn enter_group(child: &tokio::process::Child) -> std::io::Result<()> {
  let (Some(process), Some(pid)) = (child.raw_handle(), child.id()) else {
    return Ok(());
  };
  // SAFETY: null attributes and name make an unnamed job whose handle is not inherited.
  let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
  if raw.is_null() {
    return Err(std::io::Error::last_os_error());
  }
  // SAFETY: `raw` was just created and nothing else owns it.
  let job = unsafe { OwnedHandle::from_raw_handle(raw) };
  // SAFETY: plain old data; all zeroes is a valid value.
  let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  // SAFETY: `limits` is readable for its size; `job` is open.
  let set = unsafe {
    SetInformationJobObject(
      job.as_raw_handle(),
      JobObjectExtendedLimitInformation,
      (&raw const limits).cast::<c_void>(),
      size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
    )
  };
  // SAFETY: both handles are open: the job here, the process while `child` lives.
  if set == 0 || unsafe { AssignProcessToJobObject(job.as_raw_handle(), process) } == 0 {
    return Err(std::io::Error::last_os_error());
  }
  let pgid = pid as i32;
  let mut jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
  jobs.retain(|(id, _)| *id != pgid);
  jobs.push((pgid, job));
  Ok(())
}

/// Closes the group's job, which ends whatever is still in it.
pub fn leave_group(pgid: i32) {
  let mut jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
  jobs.retain(|(id, _)| *id != pgid);
}

/// Ends the whole job (there is no gentler request); a probe asks whether anything in it
/// still runs. False when the group is unknown or empty.
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
  job_of(pgid, |job| {
    if active_processes(job) == 0 {
      return false;
    }
    match signal {
      Signal::Probe => true,
      // SAFETY: the job handle is open while JOBS holds it.
      Signal::Terminate | Signal::Kill => unsafe { TerminateJobObject(job, KILLED) != 0 },
    }
  })
  .unwrap_or(false)
}

/// A failed `signal_group` always means nothing is left to stop.
pub fn group_gone() -> bool {
  true
}

/// Ends one process (or asks whether it still runs); false if it is gone.
pub fn signal_process(pid: i32, signal: Signal) -> bool {
  let Ok(pid) = u32::try_from(pid) else {
    return false;
  };
  // SAFETY: OpenProcess only looks the pid up; a null handle is checked below.
  let raw = unsafe {
    OpenProcess(
      PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_TERMINATE,
      0,
      pid,
    )
  };
  if raw.is_null() {
    return false;
  }
  let mut code = 0u32;
  // SAFETY: `raw` is open; `code` is a valid out slot.
  let running = unsafe { GetExitCodeProcess(raw, &mut code) } != 0 && code == STILL_ACTIVE as u32;
  let done = match signal {
    Signal::Probe => running,
    // SAFETY: `raw` was opened with PROCESS_TERMINATE.
    Signal::Terminate | Signal::Kill => running && unsafe { TerminateProcess(raw, KILLED) } != 0,
  };
  // SAFETY: opened above, closed once.
  unsafe { CloseHandle(raw) };
  done
}

/// Windows keeps no zombies: nothing to reap.
pub fn reap_if_exited(_pid: i32) {}

pub fn sleep_signal_safe(duration: Duration) {
  std::thread::sleep(duration);
}

/// The job's kill-on-close already ends the server with its host.
pub fn die_with_parent(_command: &mut tokio::process::Command) {}

/// A13: a process group of its own, so the console's Ctrl+C reaches the host and not the
/// servers (as a Unix session of its own does), and with `hide_window` (A12's `windowsHide`)
/// no console window of its own.
pub fn own_session(command: &mut tokio::process::Command, hide_window: bool) {
  let hidden = if hide_window { CREATE_NO_WINDOW } else { 0 };
  command.creation_flags(CREATE_NEW_PROCESS_GROUP | hidden);
}

/// A13: whether the host has a console its children could share: a console window, or a
/// terminal on a std stream.
pub fn host_has_console() -> bool {
  use std::io::IsTerminal;
  // SAFETY: GetConsoleWindow takes nothing and only reads the process's console.
  let window = unsafe { windows_sys::Win32::System::Console::GetConsoleWindow() };
  !window.is_null()
    || std::io::stdin().is_terminal()
    || std::io::stdout().is_terminal()
    || std::io::stderr().is_terminal()
}

/// An argument passed to the command line exactly as it is (A12's cmd.exe line, quoted
/// already, which Rust's own quoting would mangle).
pub fn verbatim_arg(command: &mut tokio::process::Command, arg: &str) {
  command.raw_arg(arg);
}

/// Jobs end with the host (kill-on-close): there is nothing to hook.
pub fn on_exit(_hook: fn()) {}
