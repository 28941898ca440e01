//! M6–M8: the queries, `refreshServerTools`/`refreshAllTools`, `disconnectServer` and
//! `disconnectAll`.
use std::rc::Rc;

use futures::stream::FuturesUnordered;
use futures::StreamExt;

use super::host::{Level, ManagerHost};
use super::state::{Phase, Server};
use super::Manager;
use crate::host::Pending;

/// M6 `waitForConnection(name)`.
pub enum Wait<V> {
  Connected(V),
  /// The promise of the connect in flight.
  Pending(V),
  /// `Error("MCP server not connected: <name>")`.
  Missing(V),
}

impl<H: ManagerHost> Manager<H> {
  /// W7: the tools of every known server, in configuration order.
  /// Every server's tools; with v18 sorted by name in JS string order (A33), so the list
  /// does not depend on which server answered first.
  pub fn tools(&self) -> Result<H::Value, H::Value> {
    let arrays: Vec<H::Value> = self.with(|s| s.iter().filter_map(|s| s.tools.clone()).collect());
    let mut tools: Vec<H::Value> = arrays
      .iter()
      .filter_map(|array| self.host.items(array))
      .flatten()
      .collect();
    if self.settings().compat == super::host::Compat::V18 {
      let name = |tool: &H::Value| {
        self
          .host
          .field(tool, "name")
          .ok()
          .and_then(|n| self.host.as_string(&n))
          .unwrap_or_default()
      };
      let mut named: Vec<(String, H::Value)> = tools.drain(..).map(|t| (name(&t), t)).collect();
      named.sort_by(|a, b| super::ordering::js_string_order(&a.0, &b.0));
      tools = named.into_iter().map(|(_, t)| t).collect();
    }
    self.host.array(tools)
  }

  /// A32: the config of a known server: its connection's, else the one it was given.
  pub fn server_config(&self, name: &str) -> Option<H::Value> {
    self.with(|s| {
      let from_connection = s
        .get(name)
        .and_then(|server| server.connection())
        .and_then(|c| self.host.field(c, "config").ok())
        .filter(|c| !self.host.is_nullish(c));
      from_connection.or_else(|| s.given_config(name).cloned())
    })
  }

  /// A31 (v18): a server whose connect resolved counts as connected while its tools load.
  pub(super) fn opened_counts(&self) -> bool {
    self.settings().compat == super::host::Compat::V18
  }

  pub fn connection(&self, name: &str) -> Option<H::Value> {
    let opened = self.opened_counts();
    self.with(|s| {
      let server = s.get(name)?;
      server
        .connection()
        .or_else(|| server.opened().filter(|_| opened))
        .cloned()
    })
  }

  pub fn status(&self, name: &str) -> &'static str {
    let opened = self.opened_counts();
    self.with(|s| match s.get(name) {
      Some(server) if opened && server.opened().is_some() => "connected",
      Some(server) => server.status(),
      None => "disconnected",
    })
  }

  pub fn source(&self, name: &str) -> Option<H::Value> {
    self.with(|s| s.source(name).cloned())
  }

  pub fn wait_for_connection(&self, name: &str) -> Wait<H::Value> {
    let opened = self.opened_counts();
    let found = self.with(|s| {
      let server = s.get(name)?;
      if let Some(connection) = server.opened().filter(|_| opened) {
        return Some(Wait::Connected(connection.clone()));
      }
      match (&server.phase, server.waiter()) {
        (Phase::Connected(connection), _) => Some(Wait::Connected(connection.clone())),
        (_, Some(waiter)) => Some(Wait::Pending(self.host.waiter_value(waiter))),
        _ => None,
      }
    });
    found.unwrap_or_else(|| Wait::Missing(self.not_connected(name)))
  }

  pub fn connected_servers(&self) -> Vec<String> {
    let opened = self.opened_counts();
    self.with(|s| {
      s.iter()
        .filter(|server| server.is_connected() || (opened && server.opened().is_some()))
        .map(|server| server.name.clone())
        .collect()
    })
  }

  pub fn all_server_names(&self) -> Vec<String> {
    self.with(|s| s.names())
  }

  /// M8: lists the server's tools again, caches them and replaces its tools.
  pub async fn refresh_server_tools(self: &Rc<Self>, name: &str) -> Result<(), H::Value> {
    let current = self.with(|s| {
      let server = s.get(name)?;
      match &server.phase {
        Phase::Connected(connection) => Some((connection.clone(), server.generation)),
        _ => None,
      }
    });
    let Some((connection, generation)) = current else {
      return Ok(());
    };
    let _ = self
      .host
      .set_field(&connection, "tools", self.host.undefined());
    let definitions = self.list_tools_of(&connection).await?;
    let still = self.with(|s| {
      s.current(name, generation)
        .is_some_and(|server| server.is_connected())
    });
    if !still {
      return Ok(());
    }
    let reconnect = self.reconnect_function(name);
    let tools = super::tools::live(
      &self.host,
      name,
      &connection,
      &definitions,
      reconnect.as_ref(),
    )?;
    let config = self.with(|s| {
      s.current(name, generation).map(|server| {
        server.tools = Some(tools);
        server.tools_deferred = false;
        server.config.clone()
      })
    });
    let Some(config) = config else {
      return Ok(());
    };
    self.write_cache(name, &config, &definitions);
    // A36: the one caller that waits for the handler.
    match self.call_on_tools_changed() {
      Some(called) => called.await.map(|_| ()),
      None => Ok(()),
    }
  }

  /// M8: `this.refreshServerTools` for every connected server; failures are logged.
  pub async fn refresh_all_tools(&self) {
    let mut refreshing: FuturesUnordered<Pending<H::Value>> = self
      .connected_servers()
      .iter()
      .map(|name| self.host.refresh_server_tools(name))
      .collect();
    while let Some(outcome) = refreshing.next().await {
      if let Err(error) = outcome {
        let message = self.host.message(&error);
        self.host.log(
          Level::Warn,
          &format!("Failed to refresh MCP tools: {message}"),
          "",
          Some(&message),
        );
      }
    }
  }

  /// M7: forgets the server (pending state, source, tools) and closes its transport.
  pub async fn disconnect_server(&self, name: &str) -> Result<(), H::Value> {
    let (server, reconnects, subscribed) = self.with(|s| {
      let subscribed = s
        .subscribed
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, uris)| uris.clone());
      s.forget_records(name);
      (s.remove(name), s.end_reconnect_call(name, None), subscribed)
    });
    let connection = server
      .as_ref()
      .filter(|s| s.is_connected())
      .and_then(|s| s.connection().cloned());
    // A36: what it subscribed is unsubscribed (not awaited), and prompt users told.
    if let (Some(connection), Some(uris)) = (&connection, subscribed) {
      self.unsubscribe_detached(name, connection, uris);
    }
    let had_prompts = connection
      .as_ref()
      .and_then(|c| self.host.field(c, "prompts").ok())
      .and_then(|p| self.host.items(&p))
      .is_some_and(|p| !p.is_empty());
    self.abandon_reconnects(reconnects);
    let had_tools = server
      .as_ref()
      .and_then(|server| server.tools.as_ref())
      .and_then(|tools| self.host.items(tools))
      .is_some_and(|tools| !tools.is_empty());
    let closing = server.and_then(|server| self.forget(server));
    if had_tools {
      self.tools_changed(name);
    }
    if had_prompts {
      self.prompts_changed(name);
    }
    match closing {
      Some(closing) => closing.await.map(|_| ()),
      None => Ok(()),
    }
  }

  /// M7: closes everything; never fails.
  pub async fn disconnect_all(&self) {
    let (servers, reconnects) = self.with(|s| s.take_all());
    self.abandon_reconnects(reconnects);
    let closing: Vec<_> = servers
      .into_iter()
      .filter_map(|server| self.forget(server))
      .collect();
    futures::future::join_all(closing).await;
  }

  /// Waiters are told the server is not connected, a connect in flight is aborted, and the
  /// transport starts closing (W5).
  fn forget(&self, server: Server<H>) -> Option<Pending<H::Value>> {
    // A connection still listing its tools closes now, not when the listing ends.
    let connection = server.connection().or(server.opened()).cloned();
    if let Some(controller) = &server.abort {
      self.host.abort(controller);
    }
    self.settle_phase(server.phase, Err(&self.not_connected(&server.name)));
    let connection = connection?;
    if let Some(closing) = self.disconnect_of(&connection) {
      return Some(closing);
    }
    let transport = self.host.field(&connection, "transport").ok()?;
    self
      .host
      .is_object(&transport)
      .then(|| self.host.close(&transport))
  }
}
