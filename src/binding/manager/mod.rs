//! `MCPManager` (SPEC §8, §8.1) as seen from JS: parallel connects behind the startup gate,
//! tool objects per server, config resolution, discovery and reconnects.
//!
//! The pure parts (naming, validation, `.mcp.json`, value resolution, the file cache,
//! backoff) live in `crate::manager`; this layer keeps the JS objects the agent sees (its
//! configs, connections and tools) and sequences the JS callbacks it plugs in.
mod class;
mod connect;
mod discover;
mod gate;
mod prepare;
mod reconnect;
mod state;
mod tool_cache;
mod tools;

use std::cell::RefCell;
use std::rc::Rc;

use napi::sys;

use super::client::{call_method, Held};
use super::js::{Js, JsRaw, Thrown, Value};
use super::js_async::when_settled;
use state::Servers;

/// The manager's state, owned by its JS object; JS functions it hands out hold it weakly.
pub(crate) struct Manager {
  cwd: String,
  tool_cache: Option<Held>,
  options: Option<Held>,
  auth_storage: RefCell<Option<Held>>,
  /// The JS object (weak), so flows can call its possibly overridden methods (W1).
  this: RefCell<Option<Held>>,
  servers: RefCell<Servers>,
}

impl Manager {
  /// `options[name]` unless nullish.
  fn option(&self, js: Js, name: &str) -> Option<Value> {
    let options = self.options.as_ref()?.get(js);
    if js.is_nullish(options) {
      return None;
    }
    js.get(options, name).ok().filter(|v| !js.is_nullish(*v))
  }

  /// `options[name]` when it is a function, with `options` as its `this`.
  fn option_function(&self, js: Js, name: &str) -> Option<(Value, Value)> {
    let options = self.options.as_ref()?.get(js);
    let function = self.option(js, name)?;
    js.is_function(function).then_some((function, options))
  }

  fn remember_this(&self, js: Js, this: Value) {
    let mut slot = self.this.borrow_mut();
    let same = slot
      .as_ref()
      .map(|held| held.get(js))
      .is_some_and(|v| strict_equals(js, v, this));
    if !same {
      *slot = Some(Held::weak(js, this));
    }
  }

  fn this_object(&self, js: Js) -> Result<Value, Thrown> {
    let this = self.this.borrow().as_ref().map(|held| held.get(js));
    match this {
      Some(this) if !js.is_nullish(this) => Ok(this),
      _ => Err(Thrown(js.error(
        super::js::ErrorKind::Error,
        "The MCPManager object is gone",
      ))),
    }
  }

  /// Reports through `options.logger[level]` when the caller gave one.
  fn log(&self, js: Js, level: &str, message: &str, server: &str, error: Option<&str>) {
    let Some(logger) = self.option(js, "logger") else {
      return;
    };
    let Ok(function) = js.get(logger, level) else {
      return;
    };
    if !js.is_function(function) {
      return;
    }
    let context = match js.object() {
      Ok(context) => context,
      Err(_) => return,
    };
    js.set(context, "server", js.string(server));
    if let Some(error) = error {
      js.set(context, "error", js.string(error));
    }
    let _ = js.call(function, logger, &[js.string(message), context]);
  }

  /// M4/M8: a fresh listing is written to the tool cache under the caller's config (W5).
  fn write_cache(self: &Rc<Self>, js: Js, name: &str, config: Value, definitions: Value) {
    let Some(cache) = self.tool_cache.as_ref().map(|c| c.get(js)) else {
      return;
    };
    if js.is_nullish(cache) {
      return;
    }
    let written = call_method(js, cache, "set", &[js.string(name), config, definitions]);
    self.warn_on_failure(js, written, name, "Failed to cache tools of MCP server");
  }

  /// Background work nobody awaits: a throw or a rejection becomes a `logger.warn`
  /// `<what> "<server>": <message>`.
  fn warn_on_failure(
    self: &Rc<Self>,
    js: Js,
    work: Result<Value, Thrown>,
    server: &str,
    what: &'static str,
  ) {
    let manager = Rc::downgrade(self);
    let server = server.to_string();
    let report = move |js: Js, error: Value| {
      if let Some(manager) = manager.upgrade() {
        let message = js.error_message(error);
        let text = format!("{what} \"{server}\": {message}");
        manager.log(js, "warn", &text, &server, Some(&message));
      }
    };
    match work {
      Err(Thrown(error)) => report(js, error),
      Ok(pending) => when_settled(js, pending, move |js, result| {
        if let Err(error) = result {
          report(js, error);
        }
      }),
    }
  }
}

fn strict_equals(js: Js, a: Value, b: Value) -> bool {
  let mut equal = false;
  unsafe { sys::napi_strict_equals(js.env, a, b, &mut equal) };
  equal
}

/// A `#[napi]` export called from Rust: its thrown exception, if any, as `Thrown`.
fn native_result(js: Js, result: napi::Result<JsRaw>) -> Result<Value, Thrown> {
  result.map(|raw| raw.0).map_err(|error| {
    let mut exception = std::ptr::null_mut();
    unsafe { sys::napi_get_and_clear_last_exception(js.env, &mut exception) };
    if exception.is_null() || Js::new(js.env).is_nullish(exception) {
      Thrown(js.error(super::js::ErrorKind::Error, &error.reason))
    } else {
      Thrown(exception)
    }
  })
}

fn not_connected(js: Js, name: &str) -> Value {
  js.error(
    super::js::ErrorKind::Error,
    &format!("MCP server not connected: {name}"),
  )
}

/// Closes a connection's transport, ignoring the outcome.
fn close_connection(js: Js, connection: Value) {
  if js.type_of(connection) != sys::ValueType::napi_object {
    return;
  }
  let Ok(transport) = js.get(connection, "transport") else {
    return;
  };
  if js.type_of(transport) != sys::ValueType::napi_object {
    return;
  }
  if let Ok(closing) = call_method(js, transport, "close", &[]) {
    when_settled(js, closing, |_, _| {});
  }
}
