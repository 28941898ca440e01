//! A34 (v18): `reconnectServer(name, options)`, which an unexpected close calls through
//! `this`. Unlike M10's reconnect in place, each attempt is a first connect of its own: a
//! new connection object, new tools, the old transport closed in the background while the
//! old tools stay listed. Concurrent calls share one attempt, and the breaker stops a
//! server that keeps dying right after it connects.
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::gate::Status;
use super::host::{Level, ManagerHost};
use super::state::Phase;
use super::Manager;

/// A34 `reconnectServer(name, options)`'s options: `manual` (truthy) and `authChallenge`
/// (when not nullish).
pub fn reconnect_options<H: crate::host::Values>(
  h: &H,
  options: Option<&H::Value>,
) -> (bool, Option<H::Value>) {
  let field = |name: &str| {
    let value = h.field(options.filter(|o| h.is_object(o))?, name).ok()?;
    (!h.is_nullish(&value)).then_some(value)
  };
  let manual = field("manual").is_some_and(|v| h.truthy(&v));
  (manual, field("authChallenge"))
}

/// A59: the `failed` event of a server the breaker stopped (the agent's words).
const SUSPENDED: &str = "MCP server crashed too many times; automatic reconnects suspended";

impl<H: ManagerHost> Manager<H> {
  /// The promise of the reconnect of `name`: the new connection, or `null` when it could
  /// not be made (no config, the breaker, the auth handler, attempts exhausted) or the
  /// server was disconnected meanwhile.
  pub fn reconnect_server(
    self: &Rc<Self>,
    name: &str,
    manual: bool,
    auth_challenge: Option<H::Value>,
  ) -> Result<H::Value, H::Value> {
    if manual {
      self.with(|s| s.breaker.reset(name));
    }
    let shared = self.with(|s| s.reconnect_call(name).map(|w| self.host.waiter_value(w)));
    if let Some(shared) = shared {
      return Ok(shared);
    }
    let waiter = self.host.waiter()?;
    let promise = self.host.waiter_value(&waiter);
    if self.with(|s| s.breaker.trip(name, Instant::now())) {
      self.suspend(name);
      self.host.settle_waiter(&waiter, Ok(&self.null()));
      return Ok(promise);
    }
    let ticket = self.with(|s| s.begin_reconnect_call(name, waiter));
    // Without a challenge the old connection is let go at once, as the agent's is.
    let taken_over = auth_challenge.is_none().then(|| self.take_over(name, None));
    self.run_reconnect(name, ticket, taken_over, auth_challenge, false);
    Ok(promise)
  }

  /// A56: the quiet attempt a lost remote server's schedule makes; a `reconnectServer`
  /// asked for while it runs shares it.
  pub(super) fn scheduled_reconnect(self: &Rc<Self>, name: &str) {
    let Ok(waiter) = self.host.waiter() else {
      return;
    };
    let ticket = self.with(|s| s.begin_reconnect_call(name, waiter));
    let taken_over = Some(self.take_over(name, None));
    self.run_reconnect(name, ticket, taken_over, None, true);
  }

  /// The attempts of one reconnect, in the background; every caller sharing it gets its
  /// outcome, and A56's schedule hears of it.
  fn run_reconnect(
    self: &Rc<Self>,
    name: &str,
    ticket: u64,
    taken_over: Option<Option<u64>>,
    auth_challenge: Option<H::Value>,
    scheduled: bool,
  ) {
    let manager = self.clone();
    let name = name.to_string();
    self.host.spawn(Box::pin(async move {
      let generation = match (taken_over, auth_challenge) {
        (Some(generation), _) => generation,
        (None, Some(challenge)) => manager.after_challenge(&name, ticket, challenge).await,
        (None, None) => None,
      };
      let connection = match generation {
        Some(generation) => {
          manager
            .climb_ladder(&name, ticket, generation, scheduled)
            .await
        }
        None => None,
      };
      let ended = manager.with(|s| s.end_reconnect_call(&name, Some(ticket)));
      let connected = connection.is_some();
      let value = connection.unwrap_or_else(|| manager.null());
      for waiter in ended {
        manager.host.settle_waiter(&waiter, Ok(&value));
      }
      manager.after_reconnect(&name, connected);
    }));
  }

  /// A33: the `reconnect(options?)` a v18 tool factory gets: `this.reconnectServer(name,
  /// options)`.
  pub(super) fn reconnect_function(&self, name: &str) -> Option<H::Value> {
    if self.settings().compat != super::host::Compat::V18 {
      return None;
    }
    let host = self.host.clone();
    let name = name.to_string();
    let body: crate::host::HostFn<H::Value> =
      Rc::new(move |args| host.reconnect_server(&name, args.first()));
    self.host.function("reconnect", body).ok()
  }

  /// A34 `setAuthHandler(handler)`; anything but a function removes it.
  pub fn set_auth_handler(&self, handler: Option<H::Value>) {
    let handler = handler.filter(|h| self.host.is_function(h));
    self.with(|s| s.auth_handler = handler);
  }

  /// Reconnect calls that were forgotten (a disconnect) resolve with `null`.
  pub(super) fn abandon_reconnects(&self, waiters: Vec<H::Waiter>) {
    let null = self.null();
    for waiter in waiters {
      self.host.settle_waiter(&waiter, Ok(&null));
    }
  }

  fn null(&self) -> H::Value {
    self
      .host
      .json("null")
      .unwrap_or_else(|_| self.host.undefined())
  }

  /// The reconnect takes the server over with `config` (else the one it has): the old
  /// connection closes in the background, its tools stay listed. The attempt's generation;
  /// `None` without a config.
  fn take_over(&self, name: &str, config: Option<H::Value>) -> Option<u64> {
    let config = config.or_else(|| self.server_config(name))?;
    let waiter = match self.host.waiter() {
      Ok(waiter) => waiter,
      Err(error) => {
        self.log_reconnect_failure(name, &self.host.message(&error));
        return None;
      }
    };
    let (generation, replaced, superseded) =
      self.with(|s| s.begin_reconnect(name, config.clone(), waiter));
    if replaced.is_some() {
      self.mark_lost(name, &config);
    }
    if let Some(controller) = superseded {
      self.host.abort(&controller);
    }
    // Not awaited: an HTTP close may wait for its DELETE, and the server is gone anyway.
    if let Some(old) = replaced {
      self.close_detached(&old);
    }
    Some(generation)
  }

  async fn after_challenge(&self, name: &str, ticket: u64, challenge: H::Value) -> Option<u64> {
    self.server_config(name)?;
    let config = self.answer_challenge(name, challenge).await?;
    if !self.with(|s| s.is_reconnect_current(name, ticket)) {
      return None;
    }
    self.take_over(name, Some(config))
  }

  /// The attempts of A34's ladder, each a connect of its own (`this.prepareConfig` again,
  /// the new connection watched like a first one); A56's scheduled attempt is one, quiet.
  async fn climb_ladder(
    self: &Rc<Self>,
    name: &str,
    ticket: u64,
    generation: u64,
    scheduled: bool,
  ) -> Option<H::Value> {
    let settings = self.settings();
    // A55: the first attempt at once, then one after each wait of the given ladder.
    let ladder: Vec<Duration> = match settings.ladder {
      _ if scheduled => vec![Duration::ZERO],
      Some(waits) => std::iter::once(Duration::ZERO).chain(waits).collect(),
      None => settings.reconnect.unwrap_or_default().ladder().collect(),
    };
    let mut last_error = None;
    for delay in ladder {
      if !delay.is_zero() {
        self.host.sleep(delay).await;
      }
      let current =
        self.with(|s| s.is_reconnect_current(name, ticket) && s.is_current(name, generation));
      if !current {
        return None;
      }
      match self.establish(name, generation).await {
        Ok(connection) => {
          self.host.log(
            Level::Info,
            &format!("MCP server \"{name}\" reconnected"),
            name,
            None,
          );
          self.emit_status(Status::Connected(name));
          return Some(connection);
        }
        Err(None) => return None,
        Err(Some(error)) => last_error = Some(error),
      }
    }
    self.give_up(name, generation, last_error, scheduled);
    None
  }

  /// A34 `authChallenge`: the config `setAuthHandler`'s handler returns replaces the
  /// server's; without a handler, or without a config from it, there is no reconnect.
  async fn answer_challenge(&self, name: &str, challenge: H::Value) -> Option<H::Value> {
    let Some(handler) = self.with(|s| s.auth_handler.clone()) else {
      self.host.log(
        Level::Error,
        &format!("MCP server \"{name}\" sent an auth challenge and no auth handler is set"),
        name,
        None,
      );
      return None;
    };
    match self
      .host
      .call(&handler, vec![self.host.string(name), challenge])
      .await
    {
      Ok(config) => self.host.is_object(&config).then_some(config),
      Err(error) => {
        let message = self.host.message(&error);
        self.host.log(
          Level::Error,
          &format!("The auth handler failed for MCP server \"{name}\": {message}"),
          name,
          Some(&message),
        );
        None
      }
    }
  }

  /// The breaker tripped: the server is disconnected, its tools stay listed, and only a
  /// manual reconnect or a disconnect resets it.
  fn suspend(&self, name: &str) {
    self.host.log(
      Level::Error,
      &format!(
        "MCP server \"{name}\" reconnected more than {} times within {} s; automatic reconnects are suspended",
        super::breaker::LIMIT,
        super::breaker::WINDOW.as_secs()
      ),
      name,
      None,
    );
    let taken = self.with(|s| {
      let next = s.next_generation();
      let server = s.get_mut(name)?;
      server.generation = next;
      let connection = server.connection().cloned();
      let phase = std::mem::replace(&mut server.phase, Phase::Failed);
      Some((phase, connection, server.abort.take()))
    });
    let Some((phase, connection, controller)) = taken else {
      return;
    };
    self.emit_status(Status::Failed {
      server: name,
      error: SUSPENDED,
      source_path: None,
    });
    if let Some(controller) = controller {
      self.host.abort(&controller);
    }
    if let Some(connection) = connection {
      self.close_detached(&connection);
    }
    self.settle_phase(phase, Err(&self.not_connected(name)));
  }

  /// Every attempt failed: the tools stay listed, the server reads `disconnected`. A
  /// scheduled attempt's failure is only a debug line (A56).
  fn give_up(&self, name: &str, generation: u64, error: Option<H::Value>, quiet: bool) {
    let phase = self.with(|s| {
      let server = s.current(name, generation)?;
      Some(std::mem::replace(&mut server.phase, Phase::Failed))
    });
    let Some(phase) = phase else { return };
    self.settle_phase(phase, Err(&self.not_connected(name)));
    let message = error.map_or_else(
      || format!("MCP server not connected: {name}"),
      |error| self.host.message(&error),
    );
    if quiet {
      let line = format!("MCP server \"{name}\": scheduled reconnect failed: {message}");
      self.host.log(Level::Debug, &line, name, Some(&message));
      return;
    }
    self.log_reconnect_failure(name, &message);
    self.emit_status(Status::Failed {
      server: name,
      error: &message,
      source_path: None,
    });
  }

  fn log_reconnect_failure(&self, name: &str, message: &str) {
    self.host.log(
      Level::Error,
      &format!("MCP server \"{name}\" could not be reconnected: {message}"),
      name,
      Some(message),
    );
  }
}
