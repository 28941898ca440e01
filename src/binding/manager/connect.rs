//! One server's connect: `this.prepareConfig` → `options.connect ?? connectToServer` →
//! `listTools`, then adoption of the connection (tools, cache, close and notification
//! hooks), or the failure. A completion whose attempt was superseded (the server was
//! disconnected meanwhile) closes what it opened instead of adopting it (M7).
use std::rc::{Rc, Weak};

use napi::{sys, Env};

use super::state::{with, Pending, Phase};
use super::{close_connection, native_result, tools, Manager};
use crate::binding::client::{call_method, connect_to_server, list_tools, Held};
use crate::binding::js::{ErrorKind, Js, JsArg, Thrown, Value};
use crate::binding::js_async::when_settled;

/// How one connect attempt ended, for the startup gate.
pub(super) enum Outcome {
  Connected,
  Failed(String),
  /// Superseded: the server was disconnected or reconnected meanwhile.
  Abandoned,
}

type Done = Box<dyn FnOnce(Js, Result<Value, Value>)>;

/// Resolves the config through `this.prepareConfig` (W1) and connects with it (M1, M3).
pub(super) fn open(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  generation: u64,
  config: Value,
  done: Done,
) {
  let prepared = manager
    .this_object(js)
    .and_then(|this| call_method(js, this, "prepareConfig", &[config]));
  let pending = match prepared {
    Ok(pending) => pending,
    Err(Thrown(error)) => return done(js, Err(error)),
  };
  let manager = manager.clone();
  let name = name.to_string();
  when_settled(js, pending, move |js, result| {
    let resolved = match result {
      Ok(resolved) => resolved,
      Err(error) => return done(js, Err(error)),
    };
    match connect_with(&manager, js, &name, generation, resolved) {
      Err(Thrown(error)) => done(js, Err(error)),
      Ok(connecting) => when_settled(js, connecting, done),
    }
  });
}

fn connect_with(
  manager: &Manager,
  js: Js,
  name: &str,
  generation: u64,
  config: Value,
) -> Result<Value, Thrown> {
  if let Some((connect, options)) = manager.option_function(js, "connect") {
    return js.call(connect, options, &[js.string(name), config]);
  }
  let options = js.object()?;
  let controller_class = js.get(js.global(), "AbortController")?;
  if js.is_function(controller_class) {
    let controller = js.construct(controller_class, &[])?;
    js.set(options, "signal", js.get(controller, "signal")?);
    with(&manager.servers, |s| {
      if let Some(server) = s.current(name, generation) {
        server.abort = Some(Held::new(js, controller));
      }
    });
  }
  if let Some(client) = manager.option(js, "client") {
    js.set(options, "client", client);
  }
  native_result(
    js,
    connect_to_server(
      Env::from_raw(js.env),
      JsArg(js.string(name)),
      JsArg(config),
      Some(JsArg(options)),
    ),
  )
}

/// `listTools(connection)` (C2), for any connection object.
pub(super) fn list(js: Js, connection: Value) -> Result<Value, Thrown> {
  native_result(
    js,
    list_tools(Env::from_raw(js.env), JsArg(connection), None),
  )
}

/// The first connect of `name` (generation `generation`); `settled` learns how it ended.
pub(super) fn connect_server(
  manager: &Rc<Manager>,
  js: Js,
  name: String,
  generation: u64,
  settled: Box<dyn FnOnce(Js, Outcome)>,
) {
  let config = with(&manager.servers, |s| {
    s.current(&name, generation)
      .map(|server| server.config.get(js))
  });
  let Some(config) = config else {
    return settled(js, Outcome::Abandoned);
  };
  let flow = manager.clone();
  open(
    manager,
    js,
    &name.clone(),
    generation,
    config,
    Box::new(move |js, result| match result {
      Err(error) => fail(&flow, js, &name, generation, error, settled),
      Ok(connection) => connected(flow, js, name, generation, connection, settled),
    }),
  );
}

fn is_current(manager: &Manager, name: &str, generation: u64) -> bool {
  with(&manager.servers, |s| s.current(name, generation).is_some())
}

/// W3: the connection gets the caller's config back and its source, then its tools.
fn connected(
  manager: Rc<Manager>,
  js: Js,
  name: String,
  generation: u64,
  connection: Value,
  settled: Box<dyn FnOnce(Js, Outcome)>,
) {
  if !is_current(&manager, &name, generation) {
    close_connection(js, connection);
    return settled(js, Outcome::Abandoned);
  }
  if js.type_of(connection) != sys::ValueType::napi_object {
    let error = js.error(
      ErrorKind::Error,
      &format!("Connecting to MCP server \"{name}\" returned no connection"),
    );
    return fail(&manager, js, &name, generation, error, settled);
  }
  let (config, source) = with(&manager.servers, |s| {
    let config = s.get(&name).map(|server| server.config.get(js));
    (config, s.sources.get(&name).map(|source| source.get(js)))
  });
  if let Some(config) = config {
    js.set(connection, "config", config);
  }
  if let Some(source) = source {
    js.set(connection, "_source", source);
  }
  let held = Held::new(js, connection);
  match list(js, connection) {
    Err(Thrown(error)) => {
      close_connection(js, connection);
      fail(&manager, js, &name, generation, error, settled)
    }
    Ok(listing) => when_settled(js, listing, move |js, result| {
      let connection = held.get(js);
      if !is_current(&manager, &name, generation) {
        close_connection(js, connection);
        return settled(js, Outcome::Abandoned);
      }
      let adopted = result.and_then(|definitions| {
        adopt(&manager, js, &name, generation, held, definitions).map_err(|Thrown(e)| e)
      });
      match adopted {
        Ok(()) => settled(js, Outcome::Connected),
        Err(error) => {
          close_connection(js, connection);
          fail(&manager, js, &name, generation, error, settled)
        }
      }
    }),
  }
}

/// The connection becomes the server's: live tools replace whatever it had (M4), the
/// listing is cached, and waiters get the connection.
pub(super) fn adopt(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  generation: u64,
  connection: Held,
  definitions: Value,
) -> Result<(), Thrown> {
  let value = connection.get(js);
  let built = tools::live(manager, js, name, value, definitions)?;
  install_hooks(manager, js, name, generation, value)?;
  let tools = Held::new(js, built);
  let replaced = with(&manager.servers, |s| {
    let server = s.current(name, generation)?;
    server.tools = Some(tools);
    server.tools_deferred = false;
    let config = server.config.get(js);
    Some((
      std::mem::replace(&mut server.phase, Phase::Connected(connection)),
      config,
    ))
  });
  let Some((previous, config)) = replaced else {
    return Ok(());
  };
  settle_phase(js, previous, Ok(value));
  manager.write_cache(js, name, config, definitions);
  Ok(())
}

/// Settles the waiters of a phase that was just left.
pub(super) fn settle_phase(js: Js, phase: Phase, outcome: Result<Value, Value>) {
  let pending: Option<Pending> = match phase {
    Phase::Connecting(pending) => Some(pending),
    Phase::Reconnecting { pending, timer, .. } => {
      if let Some(timer) = timer {
        timer.cancel();
      }
      Some(pending)
    }
    _ => None,
  };
  if let Some(pending) = pending {
    match outcome {
      Ok(connection) => pending.resolve(js, connection),
      Err(error) => pending.reject(js, error),
    }
  }
}

/// The attempt failed: a server that handed out deferred tools keeps them (W7), any other
/// is forgotten; waiters get the error.
fn fail(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  generation: u64,
  error: Value,
  settled: Box<dyn FnOnce(Js, Outcome)>,
) {
  let message = js.error_message(error);
  let previous = with(&manager.servers, |s| {
    let server = s.current(name, generation)?;
    let keep = server.tools.is_some() && server.tools_deferred;
    let phase = std::mem::replace(&mut server.phase, Phase::Failed);
    if !keep {
      s.remove(name);
    }
    Some(phase)
  });
  match previous {
    None => settled(js, Outcome::Abandoned),
    Some(phase) => {
      settle_phase(js, phase, Err(error));
      settled(js, Outcome::Failed(message))
    }
  }
}

struct CloseHook {
  manager: Weak<Manager>,
  name: String,
  generation: u64,
  previous: Option<Held>,
}

struct NotificationHook {
  manager: Weak<Manager>,
  name: String,
  previous: Option<Held>,
}

fn previous_callback(js: Js, transport: Value, property: &str) -> Option<Held> {
  let previous = js.get(transport, property).ok()?;
  js.is_function(previous).then(|| Held::new(js, previous))
}

/// Chains the manager's own `onClose` (M10, M11) and, when asked for, `onNotification`
/// (M10) in front of whatever the transport had.
fn install_hooks(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  generation: u64,
  connection: Value,
) -> Result<(), Thrown> {
  let transport = js.get(connection, "transport")?;
  if js.type_of(transport) != sys::ValueType::napi_object {
    return Ok(());
  }
  let hook = CloseHook {
    manager: Rc::downgrade(manager),
    name: name.to_string(),
    generation,
    previous: previous_callback(js, transport, "onClose"),
  };
  let on_close = js.function("onClose", on_close, hook)?;
  js.set(transport, "onClose", on_close);
  let wants_notifications = manager.option_function(js, "onNotification").is_some()
    || manager
      .option(js, "autoRefreshTools")
      .is_some_and(|v| js.truthy(v));
  if wants_notifications {
    let hook = NotificationHook {
      manager: Rc::downgrade(manager),
      name: name.to_string(),
      previous: previous_callback(js, transport, "onNotification"),
    };
    let on_notification = js.function("onNotification", on_notification, hook)?;
    js.set(transport, "onNotification", on_notification);
  }
  Ok(())
}

unsafe extern "C" fn on_close(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the CloseHook given to js.function.
  let (_, data) = unsafe { js.args::<0>(info) };
  let hook = unsafe { &*(data as *const CloseHook) };
  let thrown = hook
    .previous
    .as_ref()
    .and_then(|previous| js.call(previous.get(js), js.undefined(), &[]).err());
  if let Some(manager) = hook.manager.upgrade() {
    super::reconnect::transport_closed(&manager, js, &hook.name, hook.generation);
  }
  if let Some(Thrown(error)) = thrown {
    js.throw(error);
  }
  js.undefined()
}

unsafe extern "C" fn on_notification(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the NotificationHook given to js.function.
  let ([method, params], data) = unsafe { js.args::<2>(info) };
  let hook = unsafe { &*(data as *const NotificationHook) };
  let mut thrown = hook.previous.as_ref().and_then(|previous| {
    js.call(previous.get(js), js.undefined(), &[method, params])
      .err()
  });
  if let Some(manager) = hook.manager.upgrade() {
    if let Some((callback, options)) = manager.option_function(js, "onNotification") {
      let name = js.string(&hook.name);
      if let Err(error) = js.call(callback, options, &[name, method, params]) {
        thrown.get_or_insert(error);
      }
    }
    let auto_refresh = manager
      .option(js, "autoRefreshTools")
      .is_some_and(|v| js.truthy(v));
    if auto_refresh && js.rust_string(method).as_deref() == Some("notifications/tools/list_changed")
    {
      refresh_in_background(&manager, js, &hook.name);
    }
  }
  if let Some(Thrown(error)) = thrown {
    js.throw(error);
  }
  js.undefined()
}

/// M10 `autoRefreshTools`: `this.refreshServerTools(name)`, failures logged.
fn refresh_in_background(manager: &Rc<Manager>, js: Js, name: &str) {
  let refreshed = manager
    .this_object(js)
    .and_then(|this| call_method(js, this, "refreshServerTools", &[js.string(name)]));
  manager.warn_on_failure(js, refreshed, name, "Failed to refresh tools of MCP server");
}
