//! A36: each connected server's resources, templates and prompts, kept on its connection
//! object (A27), refreshed on connect, reconnect and `list_changed`; resource subscriptions
//! while notifications are on, each switch an epoch so a late answer of an older switch
//! neither subscribes nor forgets (A30's post action).
use std::rc::Rc;

use futures::future::join;

use super::events::Catalog;
use super::host::{Level, ManagerHost};
use super::state::Phase;
use super::subscription_epoch::{post_action, PostAction};
use super::Manager;
use crate::client::resources::{subscription, supports_subscriptions, Listing};
use crate::client::supports;

impl<H: ManagerHost> Manager<H> {
  /// The connection of a connected server: with v18 (A31) one whose connect resolved while
  /// its tools are still listing counts, as it does for `getConnection` (one notion of
  /// connected across the manager).
  fn connected(&self, name: &str) -> Option<H::Value> {
    let opened = self.opened_counts();
    self.with(|s| {
      let server = s.get(name)?;
      match &server.phase {
        Phase::Connected(connection) => Some(connection.clone()),
        _ => server.opened().filter(|_| opened).cloned(),
      }
    })
  }

  fn offers(&self, connection: &H::Value, capability: &str) -> bool {
    self
      .host
      .field(connection, "capabilities")
      .is_ok_and(|c| supports(&self.host, &c, capability))
  }

  fn settled(&self) -> Result<H::Value, H::Value> {
    let waiter = self.host.waiter()?;
    self.host.settle_waiter(&waiter, Ok(&self.host.undefined()));
    Ok(self.host.waiter_value(&waiter))
  }

  /// After a connect or reconnect: resources, then prompts, failures only logged.
  pub(super) fn load_catalog(self: &Rc<Self>, name: &str) {
    if self.settings().compat != super::host::Compat::V18 {
      return;
    }
    let manager = self.clone();
    let name = name.to_string();
    let generation = self.with(|s| s.get(&name).map(|server| server.generation));
    // Through `this`, as the agent's manager calls them (A38).
    self.host.spawn(Box::pin(async move {
      if let Err(error) = manager.host.refresh_server_resources(&name).await {
        manager.log_catalog_failure(&name, generation, "resources", &error);
      }
      if let Err(error) = manager.host.refresh_server_prompts(&name).await {
        manager.log_catalog_failure(&name, generation, "prompts", &error);
      }
    }));
  }

  /// A failure is logged unless the connection it used is gone: a disconnect of the
  /// manager's own (a shutdown, a reconnect) is not a failure.
  fn log_catalog_failure(&self, name: &str, generation: Option<u64>, what: &str, error: &H::Value) {
    let still_connected = self.with(|s| {
      generation.is_some_and(|g| s.is_current(name, g))
        && s.get(name).is_some_and(|server| server.is_connected())
    });
    if !still_connected {
      return;
    }
    let message = self.host.message(error);
    self.host.log(
      Level::Warn,
      &format!("Failed to load the {what} of MCP server \"{name}\": {message}"),
      name,
      Some(&message),
    );
  }

  /// `refreshServerResources(name)`: concurrent calls for a server share one listing.
  pub fn refresh_server_resources(self: &Rc<Self>, name: &str) -> Result<H::Value, H::Value> {
    let Some(connection) = self.connected(name).filter(|c| self.offers(c, "resources")) else {
      return self.settled();
    };
    let shared = self.with(|s| {
      s.resource_refreshes
        .iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, _, waiter)| self.host.waiter_value(waiter))
    });
    if let Some(shared) = shared {
      return Ok(shared);
    }
    let waiter = self.host.waiter()?;
    let promise = self.host.waiter_value(&waiter);
    let ticket = self.with(|s| {
      let ticket = s.next_generation();
      s.resource_refreshes
        .push((name.to_string(), ticket, waiter));
      ticket
    });
    let manager = self.clone();
    let name = name.to_string();
    self.host.spawn(Box::pin(async move {
      let outcome = manager.list_resources(&name, connection).await;
      if outcome.is_ok() {
        manager.emit_catalog_change(&name, Catalog::Resources);
      }
      let ended = manager.with(|s| {
        let (ended, kept) = std::mem::take(&mut s.resource_refreshes)
          .into_iter()
          .partition(|(_, t, _)| *t == ticket);
        s.resource_refreshes = kept;
        ended
      });
      let undefined = manager.host.undefined();
      for (_, _, waiter) in ended {
        manager
          .host
          .settle_waiter(&waiter, outcome.as_ref().map(|()| &undefined));
      }
    }));
    Ok(promise)
  }

  /// Both listings afresh; a templates failure leaves them unset, a resources failure is
  /// the refresh's.
  async fn list_resources(
    self: &Rc<Self>,
    name: &str,
    connection: H::Value,
  ) -> Result<(), H::Value> {
    let host = &self.host;
    host.set_field(&connection, "resources", host.undefined())?;
    host.set_field(&connection, "resourceTemplates", host.undefined())?;
    let (resources, templates) = join(
      self.list_of(&connection, Listing::Resources),
      self.list_of(&connection, Listing::ResourceTemplates),
    )
    .await;
    if let Err(error) = templates {
      let generation = self.with(|s| s.get(name).map(|server| server.generation));
      self.log_catalog_failure(name, generation, "resource templates", &error);
    }
    let resources = resources?;
    let subscribing = self.with(|s| s.notifications_enabled)
      && host
        .field(&connection, "capabilities")
        .is_ok_and(|c| supports_subscriptions(host, &c));
    if subscribing {
      let uris = self.uris(&resources);
      self.resubscribe(name, connection, uris).await;
    }
    Ok(())
  }

  fn uris(&self, resources: &H::Value) -> Vec<String> {
    let host = &self.host;
    host
      .items(resources)
      .unwrap_or_default()
      .iter()
      .filter_map(|r| host.field(r, "uri").ok().and_then(|u| host.as_string(&u)))
      .collect()
  }

  /// URIs no longer listed are unsubscribed, the listed ones subscribed, and the set kept
  /// unless notifications were switched meanwhile.
  async fn resubscribe(&self, name: &str, connection: H::Value, uris: Vec<String>) {
    let (epoch, old) = self.with(|s| {
      let old = s
        .subscribed
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, u)| u.clone());
      (s.notifications_epoch, old.unwrap_or_default())
    });
    let removed: Vec<String> = old.into_iter().filter(|u| !uris.contains(u)).collect();
    self.subscribe(name, &connection, &removed, false).await;
    self
      .subscribe_and_track(name, connection, uris, epoch)
      .await;
  }

  pub(super) async fn subscribe(
    &self,
    name: &str,
    connection: &H::Value,
    uris: &[String],
    on: bool,
  ) {
    if uris.is_empty() {
      return;
    }
    match self.subscription_of(connection, uris, on) {
      Some(called) => {
        if let Err(error) = called.await {
          let generation = self.with(|s| s.get(name).map(|server| server.generation));
          self.log_catalog_failure(name, generation, "resource subscriptions", &error);
        }
      }
      None => subscribe_with(&self.host, name, connection, uris, on).await,
    }
  }

  async fn subscribe_and_track(
    &self,
    name: &str,
    connection: H::Value,
    uris: Vec<String>,
    epoch: u64,
  ) {
    self.subscribe(name, &connection, &uris, true).await;
    let (enabled, now) = self.with(|s| (s.notifications_enabled, s.notifications_epoch));
    match post_action(enabled, now as f64, epoch as f64) {
      PostAction::Rollback => self.subscribe(name, &connection, &uris, false).await,
      PostAction::Ignore => {}
      PostAction::Apply => self.with(|s| {
        s.subscribed.retain(|(n, _)| n != name);
        s.subscribed.push((name.to_string(), uris));
      }),
    }
  }

  /// `setNotificationsEnabled(on)`: a switch is a new epoch; on subscribes every connected
  /// server's listed resources, off unsubscribes what was subscribed.
  pub fn set_notifications_enabled(self: &Rc<Self>, on: bool) {
    let switched = self.with(|s| {
      if s.notifications_enabled == on {
        return None;
      }
      s.notifications_enabled = on;
      s.notifications_epoch += 1;
      let connected = s.connections();
      let subscribed = if on {
        Vec::new()
      } else {
        std::mem::take(&mut s.subscribed)
      };
      Some((s.notifications_epoch, connected, subscribed))
    });
    let Some((epoch, connected, subscribed)) = switched else {
      return;
    };
    for (name, connection) in connected {
      let uris = if on {
        let able = self
          .host
          .field(&connection, "capabilities")
          .is_ok_and(|c| supports_subscriptions(&self.host, &c));
        let listed = self.host.field(&connection, "resources").ok();
        match listed.filter(|l| able && self.host.items(l).is_some()) {
          Some(listed) => self.uris(&listed),
          None => continue,
        }
      } else {
        match subscribed.iter().find(|(n, _)| *n == name) {
          Some((_, uris)) if !uris.is_empty() => uris.clone(),
          _ => continue,
        }
      };
      let manager = self.clone();
      self.host.spawn(Box::pin(async move {
        if on {
          manager
            .subscribe_and_track(&name, connection, uris, epoch)
            .await;
        } else {
          manager.subscribe(&name, &connection, &uris, false).await;
        }
      }));
    }
  }

  pub(super) fn unsubscribe_detached(&self, name: &str, connection: &H::Value, uris: Vec<String>) {
    if let Some(called) = self.subscription_of(connection, &uris, false) {
      let what = "Failed to unsubscribe from the resources of MCP server";
      return self.warn_on_failure(called, name, what);
    }
    let host = self.host.clone();
    let (name, connection) = (name.to_string(), connection.clone());
    self.host.spawn(Box::pin(async move {
      subscribe_with(&host, &name, &connection, &uris, false).await;
    }));
  }

  /// `getNotificationState()`: whether notifications are on, and the URIs per server.
  pub fn notification_state(&self) -> (bool, Vec<(String, Vec<String>)>) {
    self.with(|s| (s.notifications_enabled, s.subscribed.clone()))
  }

  /// A35: `resources/updated` on a subscribed URI reaches `onResourcesChanged(server, uri)`.
  pub(super) fn resource_updated(&self, name: &str, params: &H::Value) {
    let host = &self.host;
    let Some(uri) = host
      .is_object(params)
      .then(|| host.field(params, "uri").ok())
      .flatten()
      .and_then(|u| host.as_string(&u))
    else {
      return;
    };
    let handler = self.with(|s| {
      let subscribed = s
        .subscribed
        .iter()
        .any(|(n, uris)| n == name && uris.contains(&uri));
      subscribed.then(|| s.on_resources_changed.clone()).flatten()
    });
    if let Some(handler) = handler {
      let called = host.call(&handler, vec![host.string(name), host.string(&uri)]);
      self.warn_on_failure(called, name, "onResourcesChanged failed for MCP server");
    }
  }

  /// `ensureServerResources(name)`: lists them unless both listings are kept already.
  pub fn ensure_server_resources(self: &Rc<Self>, name: &str) -> Result<H::Value, H::Value> {
    let kept = self.connected(name).is_some_and(|c| {
      ["resources", "resourceTemplates"].iter().all(|key| {
        self
          .host
          .field(&c, key)
          .is_ok_and(|v| !self.host.is_undefined(&v))
      })
    });
    if kept {
      return self.settled();
    }
    self.refresh_server_resources(name)
  }

  /// `refreshServerPrompts(name)`: lists them again, then `onPromptsChanged(name)`.
  pub async fn refresh_server_prompts(&self, name: &str) -> Result<(), H::Value> {
    let Some(connection) = self.connected(name).filter(|c| self.offers(c, "prompts")) else {
      return Ok(());
    };
    self
      .host
      .set_field(&connection, "prompts", self.host.undefined())?;
    self.list_of(&connection, Listing::Prompts).await?;
    self.prompts_changed(name);
    self.emit_catalog_change(name, Catalog::Prompts);
    Ok(())
  }

  pub(super) fn prompts_changed(&self, name: &str) {
    if let Some(handler) = self.with(|s| s.on_prompts_changed.clone()) {
      let called = self.host.call(&handler, vec![self.host.string(name)]);
      self.warn_on_failure(called, name, "onPromptsChanged failed for MCP server");
    }
  }

  /// `setOnResourcesChanged(handler)`.
  pub fn set_on_resources_changed(&self, handler: Option<H::Value>) {
    let handler = handler.filter(|h| self.host.is_function(h));
    self.with(|s| s.on_resources_changed = handler);
  }

  /// `setOnPromptsChanged(handler)`: called at once for each connected server with prompts.
  pub fn set_on_prompts_changed(&self, handler: Option<H::Value>) {
    let handler = handler.filter(|h| self.host.is_function(h));
    let set = handler.is_some();
    self.with(|s| s.on_prompts_changed = handler);
    if !set {
      return;
    }
    for (name, connection) in self.with(|s| s.connections()) {
      let has_prompts = self
        .host
        .field(&connection, "prompts")
        .ok()
        .and_then(|p| self.host.items(&p))
        .is_some_and(|p| !p.is_empty());
      if has_prompts {
        self.prompts_changed(&name);
      }
    }
  }

  /// `getServerResources(name)`: `{resources, templates}` as kept, `[]` for either unset.
  pub fn server_resources(&self, name: &str) -> Option<Result<H::Value, H::Value>> {
    let connection = self.connected(name)?;
    let kept = |key: &str| {
      self
        .host
        .field(&connection, key)
        .ok()
        .filter(|v| self.host.items(v).is_some())
        .map_or_else(|| self.host.array(Vec::new()), Ok)
    };
    Some((|| {
      let resources = kept("resources")?;
      let templates = kept("resourceTemplates")?;
      self
        .host
        .object(vec![("resources", resources), ("templates", templates)])
    })())
  }

  /// `getServerPrompts(name)`: the kept prompts, `[]` when unset.
  pub fn server_prompts(&self, name: &str) -> Option<Result<H::Value, H::Value>> {
    let connection = self.connected(name)?;
    let kept = self
      .host
      .field(&connection, "prompts")
      .ok()
      .filter(|v| self.host.items(v).is_some());
    Some(kept.map_or_else(|| self.host.array(Vec::new()), Ok))
  }

  /// `readServerResource(name, uri, options)`; `None` when not connected.
  pub async fn read_server_resource(
    &self,
    name: &str,
    uri: H::Value,
    options: Option<H::Value>,
  ) -> Option<Result<H::Value, H::Value>> {
    let connection = self.connected(name)?;
    Some(self.read_resource_of(&connection, uri, options).await)
  }

  /// `executePrompt(name, prompt, args, options)`; `None` when not connected.
  pub async fn execute_prompt(
    &self,
    name: &str,
    prompt: H::Value,
    arguments: Option<H::Value>,
    options: Option<H::Value>,
  ) -> Option<Result<H::Value, H::Value>> {
    let connection = self.connected(name)?;
    Some(
      self
        .get_prompt_of(&connection, prompt, arguments, options)
        .await,
    )
  }

  /// `getServerInstructions()`: each connected server's non-empty instructions.
  pub fn server_instructions(&self) -> Vec<(String, String)> {
    self
      .with(|s| s.connections())
      .into_iter()
      .filter_map(|(name, c)| {
        // A61: `instructions: false` in its config leaves the server's guidance out.
        let config = self.host.field(&c, "config").ok();
        let off = config
          .and_then(|config| self.host.field(&config, "instructions").ok())
          .and_then(|v| self.host.as_bool(&v))
          == Some(false);
        if off {
          return None;
        }
        let text = self.host.field(&c, "instructions").ok()?;
        let text = self.host.as_string(&text).filter(|t| !t.is_empty())?;
        Some((name, text))
      })
      .collect()
  }
}

/// `resources/(un)subscribe` for each URI; failures are logged.
async fn subscribe_with<H: ManagerHost>(
  host: &H,
  name: &str,
  connection: &H::Value,
  uris: &[String],
  on: bool,
) {
  let values = uris.iter().map(|u| host.string(u)).collect();
  let what = if on {
    "subscribe to"
  } else {
    "unsubscribe from"
  };
  subscription(
    host.clone(),
    connection.clone(),
    values,
    on,
    None,
    |uri, error| {
      let uri = host.as_string(uri).unwrap_or_default();
      let message = host.message(error);
      host.log(
        Level::Warn,
        &format!("Failed to {what} {uri} of MCP server \"{name}\": {message}"),
        name,
        Some(&message),
      );
    },
  )
  .await;
}
