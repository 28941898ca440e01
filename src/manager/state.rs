//! What the manager knows about each server: the caller's config, the phase of its
//! connection, the tools handed out for it. Plain data; the flows decide the transitions.
use futures::channel::oneshot;

use super::breaker::Breaker;
use super::host::ManagerHost;

pub enum Phase<H: ManagerHost> {
  /// The first connect (and tool listing) is in flight.
  Connecting(H::Waiter),
  Connected(H::Value),
  /// M10: the connection closed unexpectedly and is being re-established in place.
  Reconnecting {
    connection: H::Value,
    waiter: H::Waiter,
    /// Dropped when the server is forgotten: the attempts stop at their next delay (an
    /// attempt in flight finishes first and closes what it opened).
    stop: oneshot::Sender<()>,
  },
  /// Closed unexpectedly without `reconnect`: calls fail fast (M11).
  Dead(H::Value),
  /// The connect failed; kept only for the deferred tools it already handed out (W7).
  Failed,
}

pub struct Server<H: ManagerHost> {
  pub name: String,
  /// The caller's config object itself (W3, W5).
  pub config: H::Value,
  /// Bumped by every new attempt, so a late completion can tell it was superseded.
  pub generation: u64,
  pub phase: Phase<H>,
  /// This server's tools (a host array), if any were built.
  pub tools: Option<H::Value>,
  pub tools_deferred: bool,
  /// The AbortController of our connect in flight, so a disconnect stops it (M7).
  pub abort: Option<H::Value>,
  /// A31 (v18): the connection of attempt `.0`, once its connect resolved and while its
  /// tools are still being listed; the agent counts such a server as connected.
  pub opened: Option<(u64, H::Value)>,
}

impl<H: ManagerHost> Server<H> {
  /// A server met for the first time, its connect starting.
  fn connecting(name: &str, config: H::Value, generation: u64, waiter: H::Waiter) -> Self {
    Server {
      name: name.to_string(),
      config,
      generation,
      phase: Phase::Connecting(waiter),
      tools: None,
      tools_deferred: false,
      abort: None,
      opened: None,
    }
  }

  /// The connection of the connect in flight, once it resolved (see `opened`).
  pub fn opened(&self) -> Option<&H::Value> {
    match (&self.phase, &self.opened) {
      (Phase::Connecting(_), Some((generation, connection))) if *generation == self.generation => {
        Some(connection)
      }
      _ => None,
    }
  }

  /// The one connection object of this server (W3), once there is one.
  pub fn connection(&self) -> Option<&H::Value> {
    match &self.phase {
      Phase::Connected(c) | Phase::Dead(c) | Phase::Reconnecting { connection: c, .. } => Some(c),
      Phase::Connecting(_) | Phase::Failed => None,
    }
  }

  pub fn status(&self) -> &'static str {
    match self.phase {
      Phase::Connected(_) => "connected",
      Phase::Connecting(_) | Phase::Reconnecting { .. } => "connecting",
      Phase::Dead(_) | Phase::Failed => "disconnected",
    }
  }

  pub fn waiter(&self) -> Option<&H::Waiter> {
    match &self.phase {
      Phase::Connecting(w) | Phase::Reconnecting { waiter: w, .. } => Some(w),
      _ => None,
    }
  }

  pub fn is_connected(&self) -> bool {
    matches!(self.phase, Phase::Connected(_))
  }

  /// Connected, or on the way there: `connectServers` leaves it alone (M1).
  pub fn is_busy(&self) -> bool {
    matches!(
      self.phase,
      Phase::Connected(_) | Phase::Connecting(_) | Phase::Reconnecting { .. }
    )
  }
}

/// Every server the manager knows, in the order they were first configured, and the
/// sources recorded for them.
pub struct Servers<H: ManagerHost> {
  list: Vec<Server<H>>,
  /// M1: recorded before validation, so a server whose config failed still has one (M6).
  sources: Vec<(String, H::Value)>,
  /// A32: the config each server was last given, kept through a failed connect until the
  /// server is disconnected.
  configs: Vec<(String, H::Value)>,
  next_generation: u64,
  /// A34: the `reconnectServer` in flight per server (its ticket and the promise every
  /// concurrent caller shares).
  reconnects: Vec<(String, u64, H::Waiter)>,
  pub breaker: Breaker,
  /// A34 `setAuthHandler(handler)`.
  pub auth_handler: Option<H::Value>,
  /// A36 `setOnToolsChanged(handler)`.
  pub on_tools_changed: Option<H::Value>,
  /// A36 `setOnResourcesChanged(handler)`, `setOnPromptsChanged(handler)`.
  pub on_resources_changed: Option<H::Value>,
  pub on_prompts_changed: Option<H::Value>,
  /// A35 `addNotificationListener`: each listener with its id, in the order added.
  pub listeners: Vec<(u64, H::Value)>,
  /// A35: what arrived while nobody listened (server, method, params), oldest first.
  pub unheard: std::collections::VecDeque<(String, String, H::Value)>,
  /// A36 `setNotificationsEnabled`: on or off, and which switch it is (the epoch).
  pub notifications_enabled: bool,
  pub notifications_epoch: u64,
  /// A36: the resource URIs subscribed per server.
  pub subscribed: Vec<(String, Vec<String>)>,
  /// A36: the `refreshServerResources` in flight per server (its ticket, its promise).
  pub resource_refreshes: Vec<(String, u64, H::Waiter)>,
  /// A59 `addConnectionStatusListener`, `addCatalogChangeListener`: each with its id.
  pub status_listeners: Vec<(u64, H::Value)>,
  pub catalog_listeners: Vec<(u64, H::Value)>,
  /// A58: the servers `connectServers` was given, in order, until disconnected.
  pub startup: Vec<String>,
  /// A58: why each of them last failed (cleared when it connects).
  pub startup_failures: Vec<(String, String)>,
  /// A58: told whenever a connect or reconnect settles.
  pub settle_watchers: Vec<futures::channel::oneshot::Sender<()>>,
  /// A56: remote servers lost after being connected, retried on their own schedule.
  pub lost: Vec<(String, super::idle_retry::Lost)>,
}

impl<H: ManagerHost> Default for Servers<H> {
  fn default() -> Self {
    Servers {
      list: Vec::new(),
      sources: Vec::new(),
      configs: Vec::new(),
      next_generation: 0,
      reconnects: Vec::new(),
      breaker: Breaker::default(),
      auth_handler: None,
      on_tools_changed: None,
      on_resources_changed: None,
      on_prompts_changed: None,
      listeners: Vec::new(),
      unheard: std::collections::VecDeque::new(),
      notifications_enabled: false,
      notifications_epoch: 0,
      subscribed: Vec::new(),
      resource_refreshes: Vec::new(),
      status_listeners: Vec::new(),
      catalog_listeners: Vec::new(),
      startup: Vec::new(),
      startup_failures: Vec::new(),
      settle_watchers: Vec::new(),
      lost: Vec::new(),
    }
  }
}

impl<H: ManagerHost> Servers<H> {
  pub fn get(&self, name: &str) -> Option<&Server<H>> {
    self.list.iter().find(|s| s.name == name)
  }

  pub fn get_mut(&mut self, name: &str) -> Option<&mut Server<H>> {
    self.list.iter_mut().find(|s| s.name == name)
  }

  /// The server if `generation` is still its current attempt.
  pub fn current(&mut self, name: &str, generation: u64) -> Option<&mut Server<H>> {
    self.get_mut(name).filter(|s| s.generation == generation)
  }

  pub fn is_current(&self, name: &str, generation: u64) -> bool {
    self.get(name).is_some_and(|s| s.generation == generation)
  }

  pub fn next_generation(&mut self) -> u64 {
    self.next_generation += 1;
    self.next_generation
  }

  /// Starts (or restarts) a server's first connect; returns its generation.
  pub fn begin_connect(&mut self, name: &str, config: H::Value, waiter: H::Waiter) -> u64 {
    // A56: connected afresh (reconfigured, say): no longer lost.
    self.lost.retain(|(n, _)| n != name);
    let generation = self.next_generation();
    self.remember_config(name, &config);
    match self.get_mut(name) {
      Some(server) => {
        server.config = config;
        server.generation = generation;
        server.phase = Phase::Connecting(waiter);
        server.abort = None;
      }
      None => self
        .list
        .push(Server::connecting(name, config, generation, waiter)),
    }
    generation
  }

  /// A32: the config `name` was last given.
  fn remember_config(&mut self, name: &str, config: &H::Value) {
    match self.configs.iter_mut().find(|(n, _)| n == name) {
      Some(entry) => entry.1 = config.clone(),
      None => self.configs.push((name.to_string(), config.clone())),
    }
  }

  /// A34: a reconnect of a known server takes over its entry (tools kept, so they stay
  /// listed while it reconnects); a server forgotten after a failed connect gets a new one.
  /// Waiters of a first connect it supersedes wait for this one instead. The connection it
  /// replaces and the controller of a connect it supersedes are the caller's to close.
  pub fn begin_reconnect(
    &mut self,
    name: &str,
    config: H::Value,
    waiter: H::Waiter,
  ) -> (u64, Option<H::Value>, Option<H::Value>) {
    let generation = self.next_generation();
    self.remember_config(name, &config);
    let Some(server) = self.get_mut(name) else {
      self
        .list
        .push(Server::connecting(name, config, generation, waiter));
      return (generation, None, None);
    };
    server.config = config;
    server.generation = generation;
    let (phase, replaced) = match std::mem::replace(&mut server.phase, Phase::Failed) {
      Phase::Connecting(earlier) => (Phase::Connecting(earlier), None),
      Phase::Reconnecting {
        connection, waiter, ..
      } => (Phase::Connecting(waiter), Some(connection)),
      Phase::Connected(connection) | Phase::Dead(connection) => {
        (Phase::Connecting(waiter), Some(connection))
      }
      Phase::Failed => (Phase::Connecting(waiter), None),
    };
    server.phase = phase;
    (generation, replaced, server.abort.take())
  }

  /// A34: registers the reconnect of `name` with its shared promise; its ticket.
  pub fn begin_reconnect_call(&mut self, name: &str, waiter: H::Waiter) -> u64 {
    let ticket = self.next_generation();
    self.reconnects.push((name.to_string(), ticket, waiter));
    ticket
  }

  pub fn reconnect_call(&self, name: &str) -> Option<&H::Waiter> {
    self
      .reconnects
      .iter()
      .find(|(n, _, _)| n == name)
      .map(|(_, _, waiter)| waiter)
  }

  /// The reconnect `ticket` of `name`, if it is still the one in flight.
  pub fn is_reconnect_current(&self, name: &str, ticket: u64) -> bool {
    self
      .reconnects
      .iter()
      .any(|(n, t, _)| n == name && *t == ticket)
  }

  /// Ends reconnect calls: one (`Some(ticket)`) or all of `name` (`None`).
  pub fn end_reconnect_call(&mut self, name: &str, ticket: Option<u64>) -> Vec<H::Waiter> {
    let (ended, kept) = std::mem::take(&mut self.reconnects)
      .into_iter()
      .partition(|(n, t, _)| n == name && ticket.is_none_or(|ticket| *t == ticket));
    self.reconnects = kept;
    ended.into_iter().map(|(_, _, waiter)| waiter).collect()
  }

  pub fn remove(&mut self, name: &str) -> Option<Server<H>> {
    let index = self.list.iter().position(|s| s.name == name)?;
    Some(self.list.remove(index))
  }

  /// Everything, with the reconnect calls in flight (`disconnectAll`).
  pub fn take_all(&mut self) -> (Vec<Server<H>>, Vec<H::Waiter>) {
    self.lost.clear();
    self.subscribed.clear();
    self.startup.clear();
    self.startup_failures.clear();
    self.sources.clear();
    self.configs.clear();
    self.breaker.clear();
    let reconnects = std::mem::take(&mut self.reconnects)
      .into_iter()
      .map(|(_, _, waiter)| waiter)
      .collect();
    (std::mem::take(&mut self.list), reconnects)
  }

  /// Each connected server with its connection, in order.
  pub fn connections(&self) -> Vec<(String, H::Value)> {
    self
      .list
      .iter()
      .filter_map(|server| match &server.phase {
        Phase::Connected(c) => Some((server.name.clone(), c.clone())),
        _ => None,
      })
      .collect()
  }

  pub fn iter(&self) -> impl Iterator<Item = &Server<H>> {
    self.list.iter()
  }

  pub fn source(&self, name: &str) -> Option<&H::Value> {
    self.sources.iter().find(|(n, _)| n == name).map(|(_, s)| s)
  }

  pub fn record_source(&mut self, name: &str, source: H::Value) {
    match self.sources.iter_mut().find(|(n, _)| n == name) {
      Some(entry) => entry.1 = source,
      None => self.sources.push((name.to_string(), source)),
    }
  }

  pub fn forget_records(&mut self, name: &str) {
    self.lost.retain(|(n, _)| n != name);
    self.breaker.reset(name);
    self.startup.retain(|n| n != name);
    self.startup_failures.retain(|(n, _)| n != name);
    self.subscribed.retain(|(n, _)| n != name);
    self.sources.retain(|(n, _)| n != name);
    self.configs.retain(|(n, _)| n != name);
  }

  /// The config `name` was last given (A32).
  pub fn given_config(&self, name: &str) -> Option<&H::Value> {
    self.configs.iter().find(|(n, _)| n == name).map(|(_, c)| c)
  }

  /// M6: every server with a recorded source, a connection or a connect in flight.
  pub fn names(&self) -> Vec<String> {
    let mut names: Vec<String> = self.list.iter().map(|s| s.name.clone()).collect();
    for (name, _) in &self.sources {
      if !names.contains(name) {
        names.push(name.clone());
      }
    }
    names
  }
}
