//! What the transports ask of a process or its group, without naming the OS's numbers.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
  /// Only asks whether it is still there.
  Probe,
  /// Asks it to end (SIGTERM; Windows has no such request and ends it at once).
  Terminate,
  /// Ends it at once (SIGKILL; `TerminateProcess` on Windows).
  Kill,
}

impl Signal {
  /// Node's name for it, as `ChildProcess.kill(name)` takes it.
  pub const fn name(self) -> &'static str {
    match self {
      Signal::Probe => "0",
      Signal::Terminate => "SIGTERM",
      Signal::Kill => "SIGKILL",
    }
  }
}
