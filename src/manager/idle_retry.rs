//! A56 (v18): a remote (`http`/`sse`) server that was connected and then lost, and whose
//! reconnect ladder failed, is tried again on its own: one quiet attempt after
//! `retryBaseMs`, the wait doubling up to `retryMaxMs`, until it answers or is
//! disconnected or connected afresh. A `reconnectServer` asked for meanwhile shares the
//! attempt. Stdio servers stop at the ladder: respawning a process on a timer is the crash
//! loop the breaker is there to stop. The timer does not keep the host alive.
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};

use super::host::{Compat, Level, ManagerHost};
use super::Manager;

/// A lost server's schedule: the wait before its next attempt, and the timer armed for it
/// (dropping `stop` disarms it).
pub struct Lost {
  delay: Duration,
  stop: Option<oneshot::Sender<()>>,
}

impl<H: ManagerHost> Manager<H> {
  /// The live connection of `name` (config `config`) is being replaced: a remote server is
  /// lost from now until a reconnect succeeds.
  pub(super) fn mark_lost(&self, name: &str, config: &H::Value) {
    let settings = self.settings();
    if settings.compat != Compat::V18 {
      return;
    }
    let kind = self
      .host
      .field(config, "type")
      .ok()
      .and_then(|t| self.host.as_string(&t));
    if !matches!(kind.as_deref(), Some("http" | "sse")) {
      return;
    }
    self.with(|s| {
      if !s.lost.iter().any(|(n, _)| n == name) {
        let lost = Lost {
          delay: settings.retry_base,
          stop: None,
        };
        s.lost.push((name.to_string(), lost));
      }
    });
  }

  /// A reconnect of `name` settled: connected ends the schedule; otherwise a lost server's
  /// next attempt is armed.
  pub(super) fn after_reconnect(self: &Rc<Self>, name: &str, connected: bool) {
    if connected {
      self.with(|s| s.lost.retain(|(n, _)| n != name));
      return;
    }
    let max = self.settings().retry_max;
    let armed = self.with(|s| {
      let (_, lost) = s.lost.iter_mut().find(|(n, _)| n == name)?;
      let delay = lost.delay;
      lost.delay = (delay * 2).min(max.max(delay));
      let (stop, stopped) = oneshot::channel();
      // Replacing the sender disarms any earlier timer.
      lost.stop = Some(stop);
      Some((delay, stopped))
    });
    let Some((delay, stopped)) = armed else {
      return;
    };
    self.host.log(
      Level::Debug,
      &format!(
        "MCP server \"{name}\": reconnect scheduled in {} ms",
        delay.as_millis()
      ),
      name,
      None,
    );
    let manager = self.clone();
    let name = name.to_string();
    let sleep = self.host.idle_sleep(delay);
    self.host.spawn(Box::pin(async move {
      if let Either::Right(_) = select(sleep, stopped).await {
        return;
      }
      let due = manager
        .with(|s| s.lost.iter().any(|(n, _)| n == &name) && s.reconnect_call(&name).is_none());
      if due {
        manager.scheduled_reconnect(&name);
      }
    }));
  }
}
