//! M3: a `!command` value's line, run by the platform's shell.
use tokio::process::Command;

/// `sh -c line`, in a process group of its own so that a timeout can kill whatever the
/// shell started, not just the shell.
#[cfg(not(windows))]
pub fn command(line: &str) -> Command {
  let mut command = Command::new("sh");
  command.arg("-c").arg(line);
  #[cfg(unix)]
  command.process_group(0);
  command
}

/// `cmd /C line`, verbatim: Rust's argument quoting would mangle cmd's own parsing. No
/// console window of its own flashes up.
#[cfg(windows)]
pub fn command(line: &str) -> Command {
  let mut command = Command::new("cmd");
  command
    .arg("/C")
    .raw_arg(line)
    .creation_flags(windows_sys::Win32::System::Threading::CREATE_NO_WINDOW);
  command
}

/// Kills the group `command` started (`pid` leads it, or names its job on Windows); the
/// caller kills the shell itself too.
pub fn kill_group(pid: Option<u32>) {
  if let Some(pgid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
    super::process::signal_group(pgid, super::process::Signal::Kill);
    super::process::leave_group(pgid);
  }
}

/// The command finished: its group is no longer watched (on Windows its job closes, ending
/// what the line left running; a Unix group is left as it is).
pub fn release_group(pid: Option<u32>) {
  if let Some(pgid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
    super::process::leave_group(pgid);
  }
}
