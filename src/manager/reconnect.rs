//! M10/M11: what happens when a connected server's transport closes on its own. Without
//! `options.reconnect` the connection stays, dead, so calls fail fast with "Transport not
//! connected"; with it the same connection object is re-established in place (tools keep
//! their names and the objects the agent holds work again) with backoff and jitter.
use std::rc::Rc;

use futures::channel::oneshot;
use futures::future::{select, Either};

use super::backoff::ReconnectPolicy;
use super::host::{Level, ManagerHost};
use super::state::Phase;
use super::Manager;

/// The connection fields a reconnect copies from the new connection into the old object.
const CONNECTION_FIELDS: [&str; 5] = [
  "transport",
  "serverInfo",
  "capabilities",
  "protocolVersion",
  "instructions",
];

impl<H: ManagerHost> Manager<H> {
  /// A transport's `onClose` fired. Only a close nobody asked for counts: `disconnectServer`
  /// and `disconnectAll` forget the server before closing, so they never get here.
  pub(super) fn transport_closed(self: &Rc<Self>, name: &str, generation: u64) {
    let settings = self.settings();
    if settings.compat == super::host::Compat::V18 && !settings.reconnect_off {
      return self.lost(name, generation);
    }
    let policy = settings.reconnect;
    let waiter = policy.and_then(|_| self.host.waiter().ok());
    let reconnecting = self.with(|s| {
      let next = s.next_generation();
      let server = s.current(name, generation)?;
      let Phase::Connected(connection) = std::mem::replace(&mut server.phase, Phase::Failed) else {
        return None;
      };
      match (waiter, policy) {
        (Some(waiter), Some(policy)) => {
          let (stop, stopped) = oneshot::channel();
          server.generation = next;
          server.phase = Phase::Reconnecting {
            connection,
            waiter,
            stop,
          };
          Some(Some((next, policy, stopped)))
        }
        _ => {
          server.phase = Phase::Dead(connection);
          Some(None)
        }
      }
    });
    match reconnecting {
      Some(Some((generation, policy, stopped))) => {
        self.host.log(
          Level::Warn,
          &format!("MCP server \"{name}\" disconnected unexpectedly; reconnecting"),
          name,
          None,
        );
        let manager = self.clone();
        let name = name.to_string();
        self.host.spawn(Box::pin(async move {
          manager.reconnect(&name, generation, policy, stopped).await
        }));
      }
      Some(None) => self.host.log(
        Level::Warn,
        &format!("MCP server \"{name}\" disconnected unexpectedly"),
        name,
        None,
      ),
      None => {}
    }
  }

  /// A34: the connection stays until `this.reconnectServer(name)` replaces it, so an
  /// override that does nothing leaves what v18's manager leaves.
  fn lost(&self, name: &str, generation: u64) {
    let connected = self.with(|s| {
      s.current(name, generation)
        .is_some_and(|server| server.is_connected())
    });
    if !connected {
      return;
    }
    self.host.log(
      Level::Warn,
      &format!("MCP server \"{name}\" disconnected unexpectedly; reconnecting"),
      name,
      None,
    );
    self.emit_status(super::gate::Status::Reconnecting(name));
    let reconnecting = self.host.reconnect_server(name, None);
    self.warn_on_failure(reconnecting, name, "Failed to reconnect MCP server");
  }

  /// The attempts, each after its delay. Forgetting the server ends them at the next
  /// delay: an attempt in flight runs on, sees it was superseded and closes what it opened
  /// (M7), rather than being dropped with its transport open.
  async fn reconnect(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
    policy: ReconnectPolicy,
    mut stopped: oneshot::Receiver<()>,
  ) {
    let mut last_error = None;
    for delay in policy.delays() {
      if let Either::Right(_) = select(self.host.sleep(delay), &mut stopped).await {
        return;
      }
      let config = self.with(|s| s.current(name, generation).map(|s| s.config.clone()));
      let Some(config) = config else { return };
      let (fresh, wired) = match self.open(name, generation, &config).await {
        Ok(fresh) => fresh,
        Err(error) => {
          last_error = Some(error);
          continue;
        }
      };
      let connection = self.with(|s| {
        s.current(name, generation)
          .and_then(|server| server.connection().cloned())
      });
      let Some(connection) = connection else {
        return self.close_detached(&fresh);
      };
      if !self.host.is_object(&fresh) {
        last_error = None;
        continue;
      }
      // The new connection's fields move into the object everyone holds (W3).
      for field in CONNECTION_FIELDS {
        let value = self
          .host
          .field(&fresh, field)
          .unwrap_or_else(|_| self.host.undefined());
        let _ = self.host.set_field(&connection, field, value);
      }
      let _ = self
        .host
        .set_field(&connection, "tools", self.host.undefined());
      let listed = self.list_tools_of(&connection).await;
      if !self.with(|s| s.is_current(name, generation)) {
        return self.close_detached(&connection);
      }
      let adopted = listed
        .and_then(|definitions| self.adopt(name, generation, &connection, &definitions, wired));
      match adopted {
        Ok(changed) => {
          if let Some(changed) = changed {
            self.warn_on_failure(changed, name, super::changes::TOOLS_CHANGED_FAILED);
          }
          return self.host.log(
            Level::Info,
            &format!("MCP server \"{name}\" reconnected"),
            name,
            None,
          );
        }
        Err(error) => {
          self.close_detached(&connection);
          last_error = Some(error);
        }
      }
    }
    self.exhausted(name, generation, last_error);
  }

  /// Attempts ran out: the server is forgotten with its tools, and the last error logged.
  fn exhausted(&self, name: &str, generation: u64, error: Option<H::Value>) {
    let removed = self.with(|s| {
      s.current(name, generation)?;
      s.remove(name)
    });
    let Some(server) = removed else { return };
    let error = error.unwrap_or_else(|| self.not_connected(name));
    let message = self.host.message(&error);
    self.settle_phase(server.phase, Err(&error));
    self.host.log(
      Level::Error,
      &format!("MCP server \"{name}\" could not be reconnected: {message}"),
      name,
      Some(&message),
    );
  }
}
