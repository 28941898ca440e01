//! `MCPManager` (SPEC §8, §8.1) without JS: the per-server state machine and its flows over
//! the host's traits (`host`), next to the pure parts they use (naming, validation,
//! `.mcp.json`, value resolution, the file cache, backoff).
//!
//! - `gate`: `connectServers`, the startup gate and its late completions (M1, M4).
//! - `connect`: one server's connect, adoption and failure (M1, M3, M7).
//! - `reconnect`: what an unexpected close does (M10, M11); `reconnect_server` with its
//!   `breaker`: v18's `reconnectServer` (A34).
//! - `changes`: the change callbacks (A36).
//! - `lifecycle`: refresh, disconnect and the queries (M6–M8).
//! - `prepare`, `discover`: `prepareConfig` (M3, W6) and `discoverAndConnect` (M9, W4).

pub mod backoff;
pub mod breaker;
pub mod browser_servers;
mod catalog;
mod changes;
mod client_api;
pub mod config_file;
mod connect;
mod discover;
mod events;
mod gate;
pub mod host;
mod idle_retry;
mod lifecycle;
pub mod naming;
mod notifications;
pub mod ordering;
mod prepare;
mod reconcile;
mod reconnect;
mod reconnect_server;
mod startup;
mod state;
pub mod subscription_epoch;
#[cfg(test)]
pub(crate) mod test_dir;
#[cfg(test)]
mod tests;
pub mod tool_cache;
pub mod tools;
pub mod validation;
pub mod value_resolution;

use std::cell::RefCell;
use std::rc::Rc;

pub use discover::discover_and_connect;
pub use gate::{entries, status_hook, Entry, Report, Status, StatusHook};
pub use host::startup_window;
use host::{Level, ManagerHost};
pub use lifecycle::Wait;
pub use prepare::{
  inject_credential, names_a_credential, prepare_config, prepare_entries, PrepareOptions, Prepared,
};
pub use reconcile::Setting;
pub use reconnect_server::reconnect_options;
pub use startup::StartupStatus;
use state::Servers;

/// One manager's state and its host. Flows that outlive a call hold it by `Rc`.
pub struct Manager<H: ManagerHost> {
  host: H,
  cwd: String,
  servers: RefCell<Servers<H>>,
  /// A62: the last discovery, for reconciles.
  discovery: reconcile::Discovery<H::Value>,
}

impl<H: ManagerHost> Manager<H> {
  pub fn new(host: H, cwd: String) -> Rc<Self> {
    Rc::new(Manager {
      host,
      cwd,
      servers: RefCell::new(Servers::default()),
      discovery: reconcile::Discovery::default(),
    })
  }

  pub fn host(&self) -> &H {
    &self.host
  }

  pub fn cwd(&self) -> &str {
    &self.cwd
  }

  /// Runs `f` on the state. Never call the host inside: it may call back into us.
  fn with<T>(&self, f: impl FnOnce(&mut Servers<H>) -> T) -> T {
    f(&mut self.servers.borrow_mut())
  }

  fn settings(&self) -> host::Settings {
    host::Settings::read(&self.host, self.host.options().as_ref())
  }

  /// A40: the agent version this manager behaves as.
  pub fn settings_compat(&self) -> host::Compat {
    self.settings().compat
  }

  fn not_connected(&self, name: &str) -> H::Value {
    self
      .host
      .error(&format!("MCP server not connected: {name}"))
  }

  /// M4/M8: a fresh listing is written to the tool cache under the caller's config (W5).
  fn write_cache(&self, name: &str, config: &H::Value, definitions: &H::Value) {
    if let Some(written) = self.host.cache_set(name, config, definitions) {
      self.warn_on_failure(written, name, "Failed to cache tools of MCP server");
    }
  }

  /// Background work nobody awaits: a failure becomes `logger.warn`
  /// `<what> "<server>": <message>`.
  fn warn_on_failure(
    &self,
    work: crate::host::Pending<H::Value>,
    server: &str,
    what: &'static str,
  ) {
    let host = self.host.clone();
    let server = server.to_string();
    self.host.spawn(Box::pin(async move {
      if let Err(error) = work.await {
        let message = host.message(&error);
        let text = format!("{what} \"{server}\": {message}");
        host.log(Level::Warn, &text, &server, Some(&message));
      }
    }));
  }

  /// Closes a connection's transport; nobody waits for it.
  fn close_detached(&self, connection: &H::Value) {
    if let Some(closing) = self.disconnect_of(connection) {
      return self.host.spawn(Box::pin(async move {
        let _ = closing.await;
      }));
    }
    let Ok(transport) = crate::client::connection_transport(&self.host, connection) else {
      return;
    };
    let closing = crate::host::Transports::close(&self.host, &transport);
    self.host.spawn(Box::pin(async move {
      let _ = closing.await;
    }));
  }
}
