//! What the manager knows about each server, held on the JS thread: the caller's config,
//! the connection phase, and the tool objects handed out for it.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use napi::sys;

use crate::binding::client::Held;
use crate::binding::js::{ErrorKind, Js, Thrown, Value};

/// A connection attempt in flight; `waitForConnection` hands out `promise`.
pub(super) struct Pending {
  pub promise: Held,
  deferred: Cell<Option<sys::napi_deferred>>,
}

impl Pending {
  /// A promise whose rejection is handled, so nobody waiting is not an unhandled rejection.
  pub fn new(js: Js) -> Result<Self, Thrown> {
    let (deferred, promise) = js.create_promise()?;
    let noop = js.function("ignore", ignore, ())?;
    let then = js.get(promise, "then")?;
    js.call(then, promise, &[js.undefined(), noop])?;
    Ok(Pending {
      promise: Held::new(js, promise),
      deferred: Cell::new(Some(deferred)),
    })
  }

  pub fn resolve(&self, js: Js, connection: Value) {
    if let Some(deferred) = self.deferred.take() {
      js.resolve(deferred, connection);
    }
  }

  pub fn reject(&self, js: Js, error: Value) {
    if let Some(deferred) = self.deferred.take() {
      js.reject(deferred, error);
    }
  }
}

impl Drop for Pending {
  fn drop(&mut self) {
    // A pending promise must never be left hanging: whoever drops it without settling it
    // has forgotten the server.
    if let Some(deferred) = self.deferred.take() {
      let js = Js::new(self.promise.env());
      let error = js.error(ErrorKind::Error, "MCP server connection abandoned");
      js.reject(deferred, error);
    }
  }
}

unsafe extern "C" fn ignore(env: sys::napi_env, _info: sys::napi_callback_info) -> Value {
  Js::new(env).undefined()
}

pub(super) enum Phase {
  /// The first connect (and tool listing) is in flight.
  Connecting(Pending),
  Connected(Held),
  /// M10: the connection closed unexpectedly and is being re-established.
  Reconnecting {
    connection: Held,
    pending: Pending,
    timer: Option<crate::binding::js_async::Timer>,
  },
  /// Closed unexpectedly without `reconnect`: calls fail fast (M11).
  Dead(Held),
  /// The connect failed; kept only for the deferred tools it already handed out (W7).
  Failed,
}

pub(super) struct Server {
  pub name: String,
  /// The caller's config object itself (W3, W5).
  pub config: Held,
  /// Bumped by every new connect attempt, so a late completion can tell it was superseded.
  pub generation: u64,
  pub phase: Phase,
  /// The JS array of this server's tools, if any were built.
  pub tools: Option<Held>,
  pub tools_deferred: bool,
  /// The AbortController of the connect in flight, so a disconnect stops it (M7).
  pub abort: Option<Held>,
}

impl Server {
  pub fn connection(&self, js: Js) -> Option<Value> {
    match &self.phase {
      Phase::Connected(c) | Phase::Dead(c) | Phase::Reconnecting { connection: c, .. } => {
        Some(c.get(js))
      }
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

  pub fn pending(&self) -> Option<&Pending> {
    match &self.phase {
      Phase::Connecting(p) | Phase::Reconnecting { pending: p, .. } => Some(p),
      _ => None,
    }
  }
}

/// Every server the manager knows, in the order they were first configured.
#[derive(Default)]
pub(super) struct Servers {
  list: Vec<Server>,
  pub sources: HashMap<String, Held>,
  next_generation: u64,
}

impl Servers {
  pub fn get(&self, name: &str) -> Option<&Server> {
    self.list.iter().find(|s| s.name == name)
  }

  pub fn get_mut(&mut self, name: &str) -> Option<&mut Server> {
    self.list.iter_mut().find(|s| s.name == name)
  }

  /// The server if `generation` is still its current attempt.
  pub fn current(&mut self, name: &str, generation: u64) -> Option<&mut Server> {
    self.get_mut(name).filter(|s| s.generation == generation)
  }

  pub fn next_generation(&mut self) -> u64 {
    self.next_generation += 1;
    self.next_generation
  }

  /// Starts (or restarts) a server's first connect; returns its generation.
  pub fn begin_connect(&mut self, name: &str, config: Held, pending: Pending) -> u64 {
    let generation = self.next_generation();
    match self.get_mut(name) {
      Some(server) => {
        server.config = config;
        server.generation = generation;
        server.phase = Phase::Connecting(pending);
        server.abort = None;
      }
      None => self.list.push(Server {
        name: name.to_string(),
        config,
        generation,
        phase: Phase::Connecting(pending),
        tools: None,
        tools_deferred: false,
        abort: None,
      }),
    }
    generation
  }

  pub fn remove(&mut self, name: &str) -> Option<Server> {
    let index = self.list.iter().position(|s| s.name == name)?;
    Some(self.list.remove(index))
  }

  pub fn take_all(&mut self) -> Vec<Server> {
    self.sources.clear();
    std::mem::take(&mut self.list)
  }

  pub fn iter(&self) -> impl Iterator<Item = &Server> {
    self.list.iter()
  }
}

/// Runs `f` with the state borrowed; never call JS inside `f`.
pub(super) fn with<T>(servers: &RefCell<Servers>, f: impl FnOnce(&mut Servers) -> T) -> T {
  f(&mut servers.borrow_mut())
}
