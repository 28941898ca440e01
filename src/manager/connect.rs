//! One server's connect: `this.prepareConfig` → `options.connect ?? connectToServer` →
//! `listTools`, then adoption of the connection (tools, cache, transport hooks) or the
//! failure. A completion whose attempt was superseded (the server was disconnected or
//! reconnected meanwhile) closes what it opened instead of adopting it (M7).
use std::rc::Rc;

use super::changes::TOOLS_CHANGED_FAILED;
use super::host::{Compat, ManagerHost, Settings, Watch};
use super::state::Phase;
use super::Manager;
use crate::client::era;
use crate::host::Pending;

/// How one connect attempt ended, for the startup gate.
pub(super) enum Outcome {
  Connected,
  Failed(String),
  /// Superseded: the server was disconnected or reconnected meanwhile.
  Abandoned,
}

impl<H: ManagerHost> Manager<H> {
  /// Resolves the config through `this.prepareConfig` (W1) and connects with it (M1, M3):
  /// through `options.connect` when given, else our own connect, which a disconnect aborts.
  /// The connection, and whether its notifications already reach the manager (A64).
  pub(super) async fn open(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
    config: &H::Value,
  ) -> Result<(H::Value, bool), H::Value> {
    let resolved = self.host.prepare_config(config).await?;
    let resolved = self.with_oauth(name, resolved).await?;
    let era = self.stored_era(name, config, &resolved).await;
    let mut wired = false;
    let connected = if let Some(connecting) = self.host.custom_connect(name, &resolved) {
      connecting.await
    } else {
      let controller = self.host.abort_controller()?;
      let signal = controller.as_ref().map(|c| c.signal.clone());
      // A64: a v18 manager hears notifications from before `initialize` answers on.
      let early = match self.notification_hook(name) {
        Some(hook) if self.settings().compat == Compat::V18 => {
          Some(self.host.notification_listener(name, hook)?)
        }
        _ => None,
      };
      wired = early.is_some();
      let options = self.connect_options(signal, early)?;
      let connecting = self.host.connect(name, &resolved, options);
      if let Some(super::host::Controller { controller, .. }) = controller {
        self.with(|s| {
          if let Some(server) = s.current(name, generation) {
            server.abort = Some(controller);
          }
        });
      }
      connecting.await
    };
    if let (Ok(_), Some((key, stored))) = (&connected, era) {
      self.keep_era(name, config, &key, stored);
    }
    connected.map(|connection| (connection, wired))
  }

  /// C1/P5/A36: what our connect is given: the signal a disconnect aborts, the manager's
  /// `client` and P5 handlers, a v18 manager's own cwd as `roots` unless it was given some
  /// (not the process's), and `compat: "v12"` for a v12 manager.
  fn connect_options(
    &self,
    signal: Option<H::Value>,
    on_notification: Option<H::Value>,
  ) -> Result<H::Value, H::Value> {
    let host = &self.host;
    let options = host.options().filter(|o| !host.is_nullish(o));
    let option = |name: &str| {
      let value = host.field(options.as_ref()?, name).ok()?;
      (!host.is_nullish(&value)).then_some(value)
    };
    let mut fields: Vec<(&str, H::Value)> = signal.map(|s| ("signal", s)).into_iter().collect();
    fields.extend(on_notification.map(|f| ("onNotification", f)));
    for name in ["client", "roots", "sampling", "elicitation", "onRequest"] {
      if let Some(value) = option(name) {
        fields.push((name, value));
      }
    }
    let v18 = Settings::read(host, options.as_ref()).compat == Compat::V18;
    if v18 && option("roots").is_none() {
      let roots = crate::client::features::roots_of(std::path::Path::new(self.cwd()));
      fields.push((
        "roots",
        host.json(&serde_json::Value::Array(roots).to_string())?,
      ));
    }
    if !v18 {
      fields.push(("compat", host.string("v12")));
    }
    host.object(fields)
  }

  /// N2: for a server connected with `"auto"`, the era verdict kept beside its tools seeds
  /// the process's own (which wins when it has one), so a new process need not probe.
  /// The verdict key, and what the cache had.
  async fn stored_era(
    &self,
    name: &str,
    config: &H::Value,
    resolved: &H::Value,
  ) -> Option<(String, Option<era::Verdict>)> {
    let host = &self.host;
    let version = |holder: Option<H::Value>| {
      let holder = holder.filter(|h| host.is_object(h))?;
      host.as_string(&host.field(&holder, "protocolVersion").ok()?)
    };
    let client = host
      .options()
      .and_then(|options| host.field(&options, "client").ok());
    let chosen = version(Some(resolved.clone())).or_else(|| version(client));
    if chosen.as_deref() != Some(era::AUTO) {
      return None;
    }
    let key = era::verdict_key(&crate::host::json_of(host, resolved).ok()??)?;
    let stored = match host.era_get(name, config) {
      Some(reading) => reading
        .await
        .ok()
        .and_then(|value| host.as_string(&value))
        .and_then(|text| era::Verdict::from_stored(&text)),
      None => None,
    };
    if let (None, Some(verdict)) = (era::cached(&key), stored) {
      era::remember(&key, verdict);
    }
    Some((key, stored))
  }

  /// N2: the verdict the connect came to, kept for the next process when it changed.
  fn keep_era(&self, name: &str, config: &H::Value, key: &str, stored: Option<era::Verdict>) {
    let Some(verdict) = era::cached(key).filter(|now| Some(*now) != stored) else {
      return;
    };
    if let Some(written) = self.host.era_set(name, config, verdict.stored()) {
      self.warn_on_failure(written, name, "Failed to cache the era of MCP server");
    }
  }

  /// O1: `options.oauth(serverName, config)` for an HTTP server whose config has no `oauth`
  /// of its own; what it returns (an object) becomes the config's `oauth`, on a copy.
  async fn with_oauth(&self, name: &str, config: H::Value) -> Result<H::Value, H::Value> {
    let host = &self.host;
    let Some(options) = host.options() else {
      return Ok(config);
    };
    let hook = host.field(&options, "oauth")?;
    let kind = host.field(&config, "type")?;
    let http = matches!(host.as_string(&kind).as_deref(), Some("http" | "sse"));
    if !host.is_function(&hook) || !http || !host.is_nullish(&host.field(&config, "oauth")?) {
      return Ok(config);
    }
    let oauth = host
      .call(&hook, vec![host.string(name), config.clone()])
      .await?;
    if !host.is_object(&oauth) {
      return Ok(config);
    }
    let copy = host.shallow_copy(&config)?;
    host.set_field(&copy, "oauth", oauth)?;
    Ok(copy)
  }

  /// The first connect of `name` at `generation`.
  /// The first connect of `name` at `generation`, and (A57) whether it failed on a v18
  /// manager's connect timeout, which is tried again.
  pub(super) async fn connect_server(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
  ) -> (Outcome, bool) {
    match self.establish(name, generation).await {
      Ok(_) => (Outcome::Connected, false),
      Err(None) => (Outcome::Abandoned, false),
      Err(Some(error)) => {
        // A57: a v18 manager tries a connect that timed out again rather than giving up.
        let retry = self.settings().compat == Compat::V18 && self.is_connect_timeout(&error);
        let outcome = self.fail(name, generation, error);
        let retry = retry && matches!(outcome, Outcome::Failed(_));
        (outcome, retry)
      }
    }
  }

  /// One connect of `name` at `generation`, through to adoption: the connection, or the
  /// error (`None` when the attempt was superseded; what it opened is closed).
  pub(super) async fn establish(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
  ) -> Result<H::Value, Option<H::Value>> {
    let config = self.with(|s| s.current(name, generation).map(|s| s.config.clone()));
    let config = config.ok_or(None)?;
    let (connection, wired) = self.open(name, generation, &config).await.map_err(Some)?;
    if !self.with(|s| s.is_current(name, generation)) {
      self.close_detached(&connection);
      return Err(None);
    }
    if !self.host.is_object(&connection) {
      return Err(Some(self.host.error(&format!(
        "Connecting to MCP server \"{name}\" returned no connection"
      ))));
    }
    // W3: the caller's config back (M3: never the resolved one) and the source.
    let (config, source) = self.with(|s| {
      (
        s.get(name).map(|server| server.config.clone()),
        s.source(name).cloned(),
      )
    });
    if let Some(config) = config {
      let _ = self.host.set_field(&connection, "config", config);
    }
    if let Some(source) = source {
      let _ = self.host.set_field(&connection, "_source", source);
    }
    self.with(|s| {
      if let Some(server) = s.current(name, generation) {
        server.opened = Some((generation, connection.clone()));
      }
    });
    let listed = self.list_tools_of(&connection).await;
    if !self.with(|s| s.is_current(name, generation)) {
      self.close_detached(&connection);
      return Err(None);
    }
    let adopted =
      listed.and_then(|definitions| self.adopt(name, generation, &connection, &definitions, wired));
    match adopted {
      Ok(changed) => {
        // A60 (v18): the tools-changed handler has run before the server counts as connected.
        if let Some(changed) = changed {
          if self.settings().compat == Compat::V18 {
            if let Err(error) = changed.await {
              self.warn_tools_changed(name, &error);
            }
          } else {
            self.warn_on_failure(changed, name, TOOLS_CHANGED_FAILED);
          }
        }
        Ok(connection)
      }
      Err(error) => {
        self.close_detached(&connection);
        Err(Some(error))
      }
    }
  }

  /// The connection becomes the server's: live tools replace whatever it had (M4), the
  /// transport is watched, waiters get the connection, and the listing is cached. What
  /// comes back is the `onToolsChanged` call, for the caller to await or leave running.
  pub(super) fn adopt(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
    connection: &H::Value,
    definitions: &H::Value,
    notifications_wired: bool,
  ) -> Result<Option<Pending<H::Value>>, H::Value> {
    let reconnect = self.reconnect_function(name);
    let tools = super::tools::live(
      &self.host,
      name,
      connection,
      definitions,
      reconnect.as_ref(),
    )?;
    self.watch(name, generation, connection, notifications_wired)?;
    let replaced = self.with(|s| {
      let server = s.current(name, generation)?;
      server.tools = Some(tools);
      server.tools_deferred = false;
      server.opened = None;
      let previous = std::mem::replace(&mut server.phase, Phase::Connected(connection.clone()));
      Some((previous, server.config.clone()))
    });
    let Some((previous, config)) = replaced else {
      return Ok(None);
    };
    self.settle_phase(previous, Ok(connection));
    self.write_cache(name, &config, definitions);
    let changed = self.call_on_tools_changed();
    self.load_catalog(name);
    self.wire_auth_refresh(&config, connection);
    Ok(changed)
  }

  /// A37 (v18): a server whose config has a refreshable credential gets, on a transport with
  /// `onAuthError`, one that answers with the headers of `prepareConfig(config,
  /// {forceRefresh: true})` (`null` for stdio).
  fn wire_auth_refresh(&self, config: &H::Value, connection: &H::Value) {
    if self.settings().compat != super::host::Compat::V18
      || !self.host.has_refreshable_credential(config)
    {
      return;
    }
    let host = self.host.clone();
    let config = config.clone();
    let refresh: crate::host::HostFn<H::Value> = Rc::new(move |_| {
      let (host, config) = (host.clone(), config.clone());
      Box::pin(async move {
        let options = super::prepare::PrepareOptions {
          oauth: true,
          force_refresh: true,
        };
        let refreshed = super::prepare::prepare_config(&host, &config, options).await?;
        let kind = host.field(&refreshed, "type")?;
        let headers = host.field(&refreshed, "headers")?;
        let http = matches!(host.as_string(&kind).as_deref(), Some("http" | "sse"));
        if http && host.is_object(&headers) {
          Ok(headers)
        } else {
          host.json("null")
        }
      })
    });
    self.host.set_auth_refresh(connection, refresh);
  }

  /// M10/M11: the manager hears of an unexpected close, and of notifications when it
  /// forwards them or refreshes tools on `tools/list_changed`.
  fn watch(
    self: &Rc<Self>,
    name: &str,
    generation: u64,
    connection: &H::Value,
    notifications_wired: bool,
  ) -> Result<(), H::Value> {
    let on_close = {
      let manager = Rc::downgrade(self);
      let name = name.to_string();
      Rc::new(move || {
        if let Some(manager) = manager.upgrade() {
          manager.transport_closed(&name, generation);
        }
      })
    };
    let on_notification = if notifications_wired {
      None
    } else {
      self.notification_hook(name)
    };
    self.host.watch(
      connection,
      Watch {
        server: name.to_string(),
        on_close,
        on_notification,
      },
    )
  }

  /// What tells the manager of `name`'s notifications, when they matter to it (A35: with
  /// v18 it handles every one).
  fn notification_hook(
    self: &Rc<Self>,
    name: &str,
  ) -> Option<super::host::NotificationHook<H::Value>> {
    let settings = self.settings();
    let v18 = settings.compat == Compat::V18;
    (v18 || settings.forwards_notifications || settings.auto_refresh_tools).then(|| {
      let manager = Rc::downgrade(self);
      let name = name.to_string();
      Rc::new(move |method: &str, params: H::Value| {
        if let Some(manager) = manager.upgrade() {
          manager.notified(&name, method, params);
        }
      }) as super::host::NotificationHook<H::Value>
    })
  }

  /// M10 `autoRefreshTools`: `this.refreshServerTools(name)`, failures logged; A35 with v18.
  fn notified(self: &Rc<Self>, name: &str, method: &str, params: H::Value) {
    if self.settings().compat == super::host::Compat::V18 {
      return self.notified_v18(name, method, params);
    }
    if method == "notifications/tools/list_changed" && self.settings().auto_refresh_tools {
      let refreshed = self.host.refresh_server_tools(name);
      self.warn_on_failure(refreshed, name, "Failed to refresh tools of MCP server");
    }
  }

  /// Settles the waiters of a phase that was just left; reconnect attempts stop.
  pub(super) fn settle_phase(&self, phase: Phase<H>, outcome: Result<&H::Value, &H::Value>) {
    if matches!(phase, Phase::Connecting(_) | Phase::Reconnecting { .. }) {
      self.wake_settle_watchers();
    }
    let waiter = match phase {
      Phase::Connecting(waiter) => waiter,
      Phase::Reconnecting { waiter, stop, .. } => {
        drop(stop);
        waiter
      }
      Phase::Connected(_) | Phase::Dead(_) | Phase::Failed => return,
    };
    self.host.settle_waiter(&waiter, outcome);
  }

  /// The attempt failed: a server that handed out deferred tools keeps them (W7), any other
  /// is forgotten; waiters get the error.
  pub(super) fn is_connect_timeout(&self, error: &H::Value) -> bool {
    let name = self.host.field(error, "name").ok();
    name.and_then(|n| self.host.as_string(&n)).as_deref()
      == Some(crate::client::CONNECT_TIMEOUT_ERROR)
  }

  pub(super) fn fail(&self, name: &str, generation: u64, error: H::Value) -> Outcome {
    let message = self.host.message(&error);
    let previous = self.with(|s| {
      let server = s.current(name, generation)?;
      let keep = server.tools.is_some() && server.tools_deferred;
      server.opened = None;
      let phase = std::mem::replace(&mut server.phase, Phase::Failed);
      if !keep {
        s.remove(name);
      }
      Some(phase)
    });
    match previous {
      None => Outcome::Abandoned,
      Some(phase) => {
        self.settle_phase(phase, Err(&error));
        Outcome::Failed(message)
      }
    }
  }
}
