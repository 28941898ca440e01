//! A35 (v18): every notification of every server goes through the manager. A `list_changed`
//! of a connected server first refreshes what it names (through `this`, so listeners see the
//! new state), `resources/updated` on a subscribed URI reaches `onResourcesChanged`, then
//! the listeners hear it; before the first listener, the last 100 wait for it.
use std::rc::Rc;

use super::host::ManagerHost;
use super::Manager;
use crate::host::Pending;

/// Notifications kept for the first listener; older ones are dropped.
pub const UNHEARD_LIMIT: usize = 100;

impl<H: ManagerHost> Manager<H> {
  pub(super) fn notified_v18(self: &Rc<Self>, name: &str, method: &str, params: H::Value) {
    let connected = self.with(|s| s.get(name).is_some_and(|server| server.is_connected()));
    let refresh: Option<Pending<H::Value>> = match method {
      "notifications/tools/list_changed" if connected => Some(self.host.refresh_server_tools(name)),
      "notifications/resources/list_changed" if connected => {
        Some(self.host.refresh_server_resources(name))
      }
      "notifications/prompts/list_changed" if connected => {
        Some(self.host.refresh_server_prompts(name))
      }
      "notifications/resources/updated" => {
        self.resource_updated(name, &params);
        None
      }
      _ => None,
    };
    let Some(refresh) = refresh else {
      return self.fan_out(name, method, params);
    };
    let manager = self.clone();
    let (name, method) = (name.to_string(), method.to_string());
    self.host.spawn(Box::pin(async move {
      if let Err(error) = refresh.await {
        let message = manager.host.message(&error);
        manager.host.log(
          super::host::Level::Warn,
          &format!("Failed to refresh MCP server \"{name}\" after {method}: {message}"),
          &name,
          Some(&message),
        );
      }
      manager.fan_out(&name, &method, params);
    }));
  }

  /// Each listener on its own: one that throws is logged and the others still hear it.
  fn fan_out(&self, name: &str, method: &str, params: H::Value) {
    let listeners = self.with(|s| {
      if s.listeners.is_empty() {
        if s.unheard.len() == UNHEARD_LIMIT {
          s.unheard.pop_front();
        }
        s.unheard
          .push_back((name.to_string(), method.to_string(), params.clone()));
      }
      s.listeners.clone()
    });
    for (_, listener) in listeners {
      self.hear(&listener, name, method, params.clone());
    }
  }

  fn hear(&self, listener: &H::Value, name: &str, method: &str, params: H::Value) {
    let args = vec![self.host.string(name), self.host.string(method), params];
    let heard = self.host.call(listener, args);
    self.warn_on_failure(heard, name, "A notification listener failed for MCP server");
  }

  /// A35 `addNotificationListener(listener)`: the function that removes it. The first
  /// listener hears what arrived before it, in order.
  pub fn add_notification_listener(
    self: &Rc<Self>,
    listener: H::Value,
  ) -> Result<H::Value, H::Value> {
    self.listener_argument(&listener)?;
    let (id, unheard) = self.with(|s| {
      let id = s.next_generation();
      let first = s.listeners.is_empty();
      s.listeners.push((id, listener.clone()));
      let unheard: Vec<_> = if first {
        s.unheard.drain(..).collect()
      } else {
        Vec::new()
      };
      (id, unheard)
    });
    for (name, method, params) in unheard {
      self.hear(&listener, &name, &method, params);
    }
    self.remover("removeNotificationListener", move |s| {
      s.listeners.retain(|(n, _)| *n != id)
    })
  }
}
