//! A58: how the servers `connectServers` was given are doing — `waitForStartup(ms)` waits
//! up to `ms` for their connects and reconnects to settle and says which connected, which
//! are still pending and which failed (and why); `waitForPendingConnections()` waits until
//! no connect or reconnect is in flight.
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use tokio::time::Instant;

use super::connect::Outcome;
use super::host::ManagerHost;
use super::state::{Phase, Servers};
use super::Manager;

/// Passes of `waitForPendingConnections`: each waits for what was in flight as it began;
/// the bound keeps a reconnect loop from holding the caller forever (as the agent's).
const PENDING_PASSES: usize = 8;

/// What the agent's manager says of a server that failed without a recorded reason.
const NO_TOOLS: &str = "Connection closed before tools became available";

/// `MCPStartupStatus`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StartupStatus {
  pub connected: Vec<String>,
  pub pending: Vec<String>,
  /// Each failed server with its error.
  pub failed: Vec<(String, String)>,
}

/// A connect or reconnect of the server is in flight.
fn is_in_flight<H: ManagerHost>(server: &super::state::Server<H>) -> bool {
  matches!(
    server.phase,
    Phase::Connecting(_) | Phase::Reconnecting { .. }
  )
}

impl<H: ManagerHost> Servers<H> {
  /// `name` was given to `connectServers`.
  pub fn note_startup(&mut self, name: &str) {
    if !self.startup.iter().any(|n| n == name) {
      self.startup.push(name.to_string());
    }
  }

  /// Each server with a connect or reconnect in flight, with its attempt.
  fn in_flight(&self) -> Vec<(String, u64)> {
    self
      .iter()
      .filter(|server| is_in_flight(server))
      .map(|server| (server.name.clone(), server.generation))
      .collect()
  }

  fn any_in_flight(&self) -> bool {
    self.iter().any(is_in_flight)
  }

  fn still_in_flight(&self, name: &str, generation: u64) -> bool {
    self.get(name).is_some_and(|server| {
      server.generation == generation
        && matches!(
          server.phase,
          Phase::Connecting(_) | Phase::Reconnecting { .. }
        )
    })
  }

  /// Told once the next connect or reconnect settles.
  fn next_settle(&mut self) -> oneshot::Receiver<()> {
    let (sender, receiver) = oneshot::channel();
    self.settle_watchers.push(sender);
    receiver
  }
}

impl<H: ManagerHost> Manager<H> {
  /// A connect or reconnect settled: whoever waits looks again.
  pub(super) fn wake_settle_watchers(&self) {
    let watchers = self.with(|s| std::mem::take(&mut s.settle_watchers));
    for watcher in watchers {
      let _ = watcher.send(());
    }
  }

  /// A connect of `connectServers` ended: a failure is kept as its startup error, a success
  /// forgets an earlier one.
  pub(super) fn record_startup(&self, name: &str, outcome: &Outcome) {
    self.with(|s| {
      s.startup_failures.retain(|(n, _)| n != name);
      if let Outcome::Failed(message) = outcome {
        s.startup_failures.push((name.to_string(), message.clone()));
      }
    });
  }

  /// A58 `waitForPendingConnections()`.
  pub async fn wait_for_pending_connections(&self) {
    for _ in 0..PENDING_PASSES {
      let in_flight = self.with(|s| s.in_flight());
      if in_flight.is_empty() {
        return;
      }
      loop {
        let next = self.with(|s| {
          let waiting = in_flight.iter().any(|(n, g)| s.still_in_flight(n, *g));
          waiting.then(|| s.next_settle())
        });
        let Some(next) = next else { break };
        let _ = next.await;
      }
    }
  }

  /// A58 `waitForStartup(ms)`: waits up to `limit` (`None`: as long as it takes) for every
  /// connect and reconnect in flight, then says where each startup server stands.
  pub async fn wait_for_startup(&self, limit: Option<Duration>) -> StartupStatus {
    let deadline = limit.map(|limit| Instant::now() + limit);
    loop {
      let next = self.with(|s| s.any_in_flight().then(|| s.next_settle()));
      let Some(next) = next else { break };
      match deadline {
        None => {
          let _ = next.await;
        }
        Some(deadline) => {
          let now = Instant::now();
          if now >= deadline {
            break;
          }
          if let Either::Right(_) = select(next, self.host.sleep(deadline - now)).await {
            break;
          }
        }
      }
    }
    self.with(|s| {
      let mut status = StartupStatus::default();
      for name in &s.startup {
        let server = s.get(name);
        match server.map(|server| &server.phase) {
          Some(Phase::Connecting(_) | Phase::Reconnecting { .. }) => {
            status.pending.push(name.clone())
          }
          Some(Phase::Connected(_)) if server.is_some_and(|s| s.tools.is_some()) => {
            status.connected.push(name.clone())
          }
          _ => {
            let error = s
              .startup_failures
              .iter()
              .find(|(n, _)| n == name)
              .map_or_else(|| NO_TOOLS.to_string(), |(_, e)| e.clone());
            status.failed.push((name.clone(), error));
          }
        }
      }
      status
    })
  }
}
