//! A59: who else hears how servers are doing — `addConnectionStatusListener` (every status
//! event a `connectServers` caller hears, and `reconnecting` / `connected` / `failed` from
//! reconnects and the breaker) and `addCatalogChangeListener` (a server's resources or
//! prompts were listed afresh). Each returns its remover; a listener that throws is on
//! its own.
use std::rc::Rc;

use super::gate::{Status, StatusHook};
use super::host::ManagerHost;
use super::state::Servers;
use super::Manager;

/// Which of a server's catalogs changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog {
  Resources,
  Prompts,
}

impl Catalog {
  fn kind(self) -> &'static str {
    match self {
      Catalog::Resources => "resources",
      Catalog::Prompts => "prompts",
    }
  }
}

/// The listener lists of `Servers`.
#[derive(Clone, Copy)]
enum Listeners {
  Status,
  Catalog,
}

impl Listeners {
  fn of<H: ManagerHost>(self, s: &mut Servers<H>) -> &mut Vec<(u64, H::Value)> {
    match self {
      Listeners::Status => &mut s.status_listeners,
      Listeners::Catalog => &mut s.catalog_listeners,
    }
  }

  fn remover(self) -> &'static str {
    match self {
      Listeners::Status => "removeConnectionStatusListener",
      Listeners::Catalog => "removeCatalogChangeListener",
    }
  }
}

impl<H: ManagerHost> Manager<H> {
  /// A59 `addConnectionStatusListener(listener)`: the function that removes it.
  pub fn add_connection_status_listener(
    self: &Rc<Self>,
    listener: H::Value,
  ) -> Result<H::Value, H::Value> {
    self.add_listener(Listeners::Status, listener)
  }

  /// A59 `addCatalogChangeListener(listener)`: the function that removes it.
  pub fn add_catalog_change_listener(
    self: &Rc<Self>,
    listener: H::Value,
  ) -> Result<H::Value, H::Value> {
    self.add_listener(Listeners::Catalog, listener)
  }

  fn add_listener(
    self: &Rc<Self>,
    which: Listeners,
    listener: H::Value,
  ) -> Result<H::Value, H::Value> {
    self.listener_argument(&listener)?;
    let id = self.with(|s| {
      let id = s.next_generation();
      which.of(s).push((id, listener));
      id
    });
    self.remover(which.remover(), move |s| {
      which.of(s).retain(|(n, _)| *n != id)
    })
  }

  /// A listener argument must be a function (a TypeError otherwise).
  pub(super) fn listener_argument(&self, listener: &H::Value) -> Result<(), H::Value> {
    if self.host.is_function(listener) {
      return Ok(());
    }
    Err(
      self
        .host
        .type_error("The \"listener\" argument must be a function"),
    )
  }

  /// The `() => void` that runs `remove` on the state (once the manager is gone, nothing).
  pub(super) fn remover(
    self: &Rc<Self>,
    name: &str,
    remove: impl Fn(&mut Servers<H>) + 'static,
  ) -> Result<H::Value, H::Value> {
    let manager = Rc::downgrade(self);
    self.host.procedure(
      name,
      Rc::new(move || {
        if let Some(manager) = manager.upgrade() {
          manager.with(&remove);
        }
      }),
    )
  }

  fn tell(&self, which: Listeners, event: Result<H::Value, H::Value>) {
    let listeners = self.with(|s| which.of(s).clone());
    let Ok(event) = event else { return };
    for (_, listener) in listeners {
      // Isolated: one that throws neither stops the others nor fails the manager.
      drop(self.host.call(&listener, vec![event.clone()]));
    }
  }

  /// A59: a status event for the status listeners.
  pub(super) fn emit_status(&self, status: Status<'_>) {
    if self.with(|s| s.status_listeners.is_empty()) {
      return;
    }
    if let Some(event) = status.argument(&self.host, true) {
      self.tell(Listeners::Status, event);
    }
  }

  /// `status`, then the status listeners.
  pub(super) fn heard_by_listeners(self: &Rc<Self>, status: StatusHook) -> StatusHook {
    let manager = Rc::downgrade(self);
    Rc::new(move |event: Status<'_>| {
      let copy = event.clone();
      status(event);
      if let Some(manager) = manager.upgrade() {
        manager.emit_status(copy);
      }
    })
  }

  /// A59: `{serverName, kind}` for the catalog listeners, after a successful listing.
  pub(super) fn emit_catalog_change(&self, name: &str, catalog: Catalog) {
    if self.with(|s| s.catalog_listeners.is_empty()) {
      return;
    }
    let event = self.host.object(vec![
      ("serverName", self.host.string(name)),
      ("kind", self.host.string(catalog.kind())),
    ]);
    self.tell(Listeners::Catalog, event);
  }
}
