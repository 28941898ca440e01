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

/// `cmd /C line`, verbatim: Rust's argument quoting would mangle cmd's own parsing.
#[cfg(windows)]
pub fn command(line: &str) -> Command {
  let mut command = Command::new("cmd");
  command.arg("/C").raw_arg(line);
  command
}

/// Kills the group `command` started (`pid` leads it), where there are groups; the caller
/// kills the shell itself too.
pub fn kill_group(pid: Option<u32>) {
  #[cfg(unix)]
  if let Some(pgid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
    super::process::signal_group(pgid, super::process::Signal::Kill);
  }
  #[cfg(not(unix))]
  let _ = pid;
}
