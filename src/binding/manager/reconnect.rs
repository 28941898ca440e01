//! M10/M11: what happens when a connected server's transport closes on its own. Without
//! `options.reconnect` the connection stays, dead, so calls fail fast with "Transport not
//! connected"; with it the same connection object is re-established in place (tools keep
//! their names and the objects the agent holds work again) with backoff and jitter.
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use super::connect::{list, open, settle_phase};
use super::state::{with, Pending, Phase};
use super::{close_connection, Manager};
use crate::binding::client::Held;
use crate::binding::js::{Js, Thrown, Value};
use crate::binding::js_async::{after, when_settled};
use crate::manager::backoff::ReconnectPolicy;

/// The connection fields a reconnect copies from the new connection into the old object.
const CONNECTION_FIELDS: [&str; 5] = [
  "transport",
  "serverInfo",
  "capabilities",
  "protocolVersion",
  "instructions",
];

fn policy(manager: &Manager, js: Js) -> Option<ReconnectPolicy> {
  let options = manager.option(js, "reconnect")?;
  if !js.truthy(options) {
    return None;
  }
  let mut policy = ReconnectPolicy::default();
  if js.type_of(options) == napi::sys::ValueType::napi_object {
    let number = |field: &str| {
      js.get(options, field)
        .ok()
        .and_then(|v| js.number_value(v))
        .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(n) = number("maxAttempts") {
      policy.max_attempts = n as u32;
    }
    if let Some(n) = number("initialDelayMs") {
      policy.initial_delay = Duration::from_secs_f64(n / 1000.0);
    }
    if let Some(n) = number("maxDelayMs") {
      policy.max_delay = Duration::from_secs_f64(n / 1000.0);
    }
  }
  Some(policy)
}

/// A transport's `onClose` fired. Only a close nobody asked for counts: `disconnectServer`
/// and `disconnectAll` forget the server before closing, so they never get here.
pub(super) fn transport_closed(manager: &Rc<Manager>, js: Js, name: &str, generation: u64) {
  let policy = policy(manager, js);
  let pending = policy.and_then(|_| Pending::new(js).ok());
  let reconnecting = with(&manager.servers, |s| {
    let next = s.next_generation();
    let server = s.current(name, generation)?;
    if !matches!(server.phase, Phase::Connected(_)) {
      return None;
    }
    let Phase::Connected(connection) = std::mem::replace(&mut server.phase, Phase::Failed) else {
      return None;
    };
    server.phase = match pending {
      Some(pending) => {
        server.generation = next;
        Phase::Reconnecting {
          connection,
          pending,
          timer: None,
        }
      }
      None => Phase::Dead(connection),
    };
    Some(matches!(server.phase, Phase::Reconnecting { .. }).then_some(next))
  });
  match (reconnecting, policy) {
    (Some(Some(generation)), Some(policy)) => {
      manager.log(
        js,
        "warn",
        &format!("MCP server \"{name}\" disconnected unexpectedly; reconnecting"),
        name,
        None,
      );
      let delays: VecDeque<Duration> = policy.delays().collect();
      attempt(manager, js, name.to_string(), generation, delays, None);
    }
    (Some(_), _) => manager.log(
      js,
      "warn",
      &format!("MCP server \"{name}\" disconnected unexpectedly"),
      name,
      None,
    ),
    (None, _) => {}
  }
}

fn attempt(
  manager: &Rc<Manager>,
  js: Js,
  name: String,
  generation: u64,
  mut delays: VecDeque<Duration>,
  last_error: Option<Held>,
) {
  let Some(delay) = delays.pop_front() else {
    return exhausted(manager, js, &name, generation, last_error);
  };
  let flow = manager.clone();
  let key = name.clone();
  let timer = after(js, delay, move |js| {
    let config = with(&flow.servers, |s| {
      s.current(&name, generation)
        .map(|server| server.config.get(js))
    });
    let Some(config) = config else { return };
    let next = flow.clone();
    open(
      &flow,
      js,
      &name.clone(),
      generation,
      config,
      Box::new(move |js, result| match result {
        Ok(connection) => reconnected(next, js, name, generation, connection, delays),
        Err(error) => {
          let error = Held::new(js, error);
          attempt(&next, js, name, generation, delays, Some(error))
        }
      }),
    );
  });
  with(&manager.servers, |s| {
    if let Some(server) = s.current(&key, generation) {
      if let Phase::Reconnecting { timer: slot, .. } = &mut server.phase {
        *slot = timer;
      }
    }
  });
}

/// A new connection: its fields move into the connection object everyone holds, then the
/// tools are listed again and the server is connected.
fn reconnected(
  manager: Rc<Manager>,
  js: Js,
  name: String,
  generation: u64,
  fresh: Value,
  delays: VecDeque<Duration>,
) {
  let connection = with(&manager.servers, |s| {
    s.current(&name, generation)
      .and_then(|server| server.connection(js))
  });
  let Some(connection) = connection else {
    return close_connection(js, fresh);
  };
  if js.type_of(fresh) != napi::sys::ValueType::napi_object {
    return attempt(&manager, js, name, generation, delays, None);
  }
  for field in CONNECTION_FIELDS {
    let value = js.get(fresh, field).unwrap_or_else(|_| js.undefined());
    js.set(connection, field, value);
  }
  js.set(connection, "tools", js.undefined());
  let held = Held::new(js, connection);
  let listing = match list(js, connection) {
    Ok(listing) => listing,
    Err(Thrown(error)) => {
      close_connection(js, connection);
      let error = Held::new(js, error);
      return attempt(&manager, js, name, generation, delays, Some(error));
    }
  };
  when_settled(js, listing, move |js, result| {
    let connection = held.get(js);
    let still = with(&manager.servers, |s| s.current(&name, generation).is_some());
    if !still {
      return close_connection(js, connection);
    }
    let adopted = result.and_then(|definitions| {
      super::connect::adopt(&manager, js, &name, generation, held, definitions)
        .map_err(|Thrown(e)| e)
    });
    match adopted {
      Ok(()) => manager.log(
        js,
        "info",
        &format!("MCP server \"{name}\" reconnected"),
        &name,
        None,
      ),
      Err(error) => {
        close_connection(js, connection);
        let error = Held::new(js, error);
        attempt(&manager, js, name, generation, delays, Some(error));
      }
    }
  });
}

/// Attempts ran out: the server is forgotten with its tools, and the last error logged.
fn exhausted(manager: &Rc<Manager>, js: Js, name: &str, generation: u64, error: Option<Held>) {
  let removed = with(&manager.servers, |s| {
    s.current(name, generation)?;
    s.remove(name)
  });
  let Some(server) = removed else { return };
  let error: Value = match &error {
    Some(error) => error.get(js),
    None => super::not_connected(js, name),
  };
  let message = js.error_message(error);
  settle_phase(js, server.phase, Err(error));
  manager.log(
    js,
    "error",
    &format!("MCP server \"{name}\" could not be reconnected: {message}"),
    name,
    Some(&message),
  );
}
