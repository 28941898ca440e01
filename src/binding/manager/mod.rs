//! `MCPManager` (SPEC §8, §8.1) as seen from JS. The state machine and its flows are the
//! core's (`crate::manager`); `JsManagerHost` gives them the JS objects the agent plugs in:
//! the manager object itself (its possibly overridden methods, W1), its options, the tool
//! cache, the auth storage.
mod class;
pub(crate) mod tool_cache;
mod tools;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use napi::sys;

use super::client::connect_request;
use super::executor;
use super::host::{call_method, ready, JsHost, OnJs};
use super::js::{ErrorKind, Held, Js, Thrown, Value};
use crate::host::{Pending, Values};
use crate::manager::host::{Controller, Level, Loader, ManagerHost, NotificationHook, Watch};

#[derive(Clone)]
pub(crate) struct JsManagerHost(Rc<Inner>);

struct Inner {
  base: JsHost,
  tool_cache: Option<Held>,
  options: Option<Held>,
  auth_storage: RefCell<Option<Held>>,
  /// The JS object (weak), so flows call its possibly overridden methods (W1).
  this: RefCell<Option<Held>>,
}

impl JsManagerHost {
  fn new(js: Js, tool_cache: Option<Value>, options: Option<Value>) -> Self {
    JsManagerHost(Rc::new(Inner {
      base: JsHost::new(js),
      tool_cache: tool_cache.map(|c| Held::new(js, c)),
      options: options.map(|o| Held::new(js, o)),
      auth_storage: RefCell::new(None),
      this: RefCell::new(None),
    }))
  }

  fn js(&self) -> Js {
    self.0.base.js
  }

  fn base(&self) -> &JsHost {
    &self.0.base
  }

  fn remember_this(&self, this: Value) {
    let js = self.js();
    let mut slot = self.0.this.borrow_mut();
    let same = slot
      .as_ref()
      .is_some_and(|held| js.strict_equals(held.get(js), this));
    if !same {
      *slot = Some(Held::weak(js, this));
    }
  }

  /// `options[name]` unless nullish.
  fn option(&self, name: &str) -> Option<Value> {
    let js = self.js();
    let options = self.0.options.as_ref()?.get(js);
    if js.is_nullish(options) {
      return None;
    }
    js.get(options, name).ok().filter(|v| !js.is_nullish(*v))
  }

  /// `options[name]` when it is a function, with `options` as its `this`.
  fn option_function(&self, name: &str) -> Option<(Value, Value)> {
    let js = self.js();
    let function = self.option(name)?;
    let options = self.0.options.as_ref()?.get(js);
    js.is_function(function).then_some((function, options))
  }

  /// The manager's JS object, while it is alive.
  fn this(&self) -> Option<Value> {
    let js = self.js();
    let this = self.0.this.borrow().as_ref().map(|held| held.get(js));
    this.filter(|t| !js.is_nullish(*t))
  }

  /// `this[method](...args)`, awaited.
  fn call_this(&self, method: &str, args: &[Value]) -> Pending<Held> {
    let js = self.js();
    match self.this().map(|this| call_method(js, this, method, args)) {
      Some(Ok(called)) => executor::settled(js, called),
      Some(Err(Thrown(error))) => ready(Err(self.0.base.hold(error))),
      None => ready(Err(self.0.base.error("The MCPManager object is gone"))),
    }
  }

  fn cache(&self) -> Option<Held> {
    let js = self.js();
    self
      .0
      .tool_cache
      .clone()
      .filter(|c| !js.is_nullish(c.get(js)))
  }
}

/// An optional method of the caller's object (the agent's own tool cache has no `getEra`).
fn has_method(js: Js, object: &Held, name: &str) -> bool {
  js.get(object.get(js), name)
    .is_ok_and(|method| js.is_function(method))
}

/// A `waitForConnection` promise whose rejection counts as handled, so nobody waiting is not
/// an unhandled rejection.
pub(crate) struct JsWaiter {
  promise: Held,
  deferred: Cell<Option<sys::napi_deferred>>,
}

impl Drop for JsWaiter {
  fn drop(&mut self) {
    // Dropped unsettled: whoever dropped it forgot the server.
    if let Some(deferred) = self.deferred.take() {
      let js = self.promise.js();
      let error = js.error(ErrorKind::Error, "MCP server connection abandoned");
      js.reject(deferred, error);
    }
  }
}

impl OnJs for JsManagerHost {
  fn on(&self) -> JsHost {
    self.0.base
  }
}

impl ManagerHost for JsManagerHost {
  type Waiter = JsWaiter;

  fn prepare_config(&self, config: &Held) -> Pending<Held> {
    self.call_this("prepareConfig", &[config.get(self.js())])
  }

  fn refresh_server_tools(&self, name: &str) -> Pending<Held> {
    self.call_this("refreshServerTools", &[self.js().string(name)])
  }

  fn resolve_credentials(&self, config: &Held, force_refresh: bool) -> Pending<Held> {
    let js = self.js();
    let options = match js.object() {
      Ok(options) => options,
      Err(Thrown(error)) => return ready(Err(self.0.base.hold(error))),
    };
    js.set(options, "forceRefresh", js.boolean(force_refresh));
    self.call_this("resolveCredentials", &[config.get(js), options])
  }

  fn has_refreshable_credential(&self, config: &Held) -> bool {
    let js = self.js();
    match self.this() {
      Some(this) => call_method(js, this, "hasRefreshableCredential", &[config.get(js)])
        .is_ok_and(|answer| js.truthy(answer)),
      None => false,
    }
  }

  fn set_auth_refresh(&self, connection: &Held, refresh: crate::host::HostFn<Held>) {
    let js = self.js();
    let Ok(transport) = js.get(connection.get(js), "transport") else {
      return;
    };
    if js.type_of(transport) != sys::ValueType::napi_object || !js.has(transport, "onAuthError") {
      return;
    }
    if let Ok(function) = crate::host::Callbacks::function(self, "onAuthError", refresh) {
      js.set(transport, "onAuthError", function.get(js));
    }
  }

  fn client_function(&self, name: &str) -> Option<Held> {
    let js = self.js();
    let api = self.option("clientApi")?;
    let function = js.get(api, name).ok()?;
    js.is_function(function).then(|| Held::new(js, function))
  }

  fn has_credential_store(&self) -> bool {
    self.0.auth_storage.borrow().is_some()
  }

  fn refresh_server_resources(&self, name: &str) -> Pending<Held> {
    self.call_this("refreshServerResources", &[self.js().string(name)])
  }

  fn refresh_server_prompts(&self, name: &str) -> Pending<Held> {
    self.call_this("refreshServerPrompts", &[self.js().string(name)])
  }

  fn reconnect_server(&self, name: &str, options: Option<&Held>) -> Pending<Held> {
    let js = self.js();
    let mut args = vec![js.string(name)];
    args.extend(options.map(|o| o.get(js)));
    self.call_this("reconnectServer", &args)
  }

  fn wait_for_connection(&self, name: &str) -> Pending<Held> {
    self.call_this("waitForConnection", &[self.js().string(name)])
  }

  fn connect_servers(
    &self,
    configs: Held,
    sources: Held,
    on_connecting: Held,
    startup_timeout: Held,
  ) -> Pending<Held> {
    let js = self.js();
    let args = [
      configs.get(js),
      sources.get(js),
      on_connecting.get(js),
      startup_timeout.get(js),
    ];
    self.call_this("connectServers", &args)
  }

  fn custom_connect(&self, name: &str, config: &Held) -> Option<Pending<Held>> {
    let js = self.js();
    let (connect, options) = self.option_function("connect")?;
    Some(
      self
        .base()
        .call(connect, options, &[js.string(name), config.get(js)]),
    )
  }

  fn abort_controller(&self) -> Result<Option<Controller<Held>>, Held> {
    let js = self.js();
    let made = (|| {
      let class = js.get(js.global(), "AbortController")?;
      if !js.is_function(class) {
        return Ok(None);
      }
      let controller = js.construct(class, &[])?;
      let signal = js.get(controller, "signal")?;
      Ok(Some(Controller {
        controller: Held::new(js, controller),
        signal: Held::new(js, signal),
      }))
    })();
    made.map_err(|Thrown(error)| self.0.base.hold(error))
  }

  fn connect(&self, name: &str, config: &Held, options: Held) -> Pending<Held> {
    let js = self.js();
    let base = self.0.base;
    // A38: the agent's own connectToServer, with the options ours would get.
    if let Some(connect) = ManagerHost::client_function(self, "connectToServer") {
      let api = self.option("clientApi").unwrap_or_else(|| js.undefined());
      let args = [js.string(name), config.get(js), options.get(js)];
      return base.call(connect.get(js), api, &args);
    }
    match connect_request(js, js.string(name), config.get(js), Some(options.get(js))) {
      Ok(mut request) => {
        request.legacy_sse = !request.features.v12;
        Box::pin(crate::client::connect(base, request))
      }
      Err(error) => ready(Err(base.hold(error))),
    }
  }

  fn abort(&self, controller: &Held) {
    let _ = call_method(self.js(), controller.get(self.js()), "abort", &[]);
  }

  fn live_tools(
    &self,
    name: &str,
    connection: &Held,
    definitions: &Held,
    _reconnect: Option<&Held>,
  ) -> Result<Held, Held> {
    tools::build(self, name, definitions, Some(connection))
  }

  fn deferred_tools(
    &self,
    name: &str,
    definitions: &Held,
    _source: Option<&Held>,
    _reconnect: Option<&Held>,
  ) -> Result<Held, Held> {
    tools::build(self, name, definitions, None)
  }

  fn cache_get(&self, name: &str, config: &Held) -> Option<Pending<Held>> {
    let js = self.js();
    let cache = self.cache()?;
    Some(
      self
        .0
        .base
        .call_method(&cache, "get", &[js.string(name), config.get(js)]),
    )
  }

  fn cache_set(&self, name: &str, config: &Held, definitions: &Held) -> Option<Pending<Held>> {
    let js = self.js();
    let cache = self.cache()?;
    let args = [js.string(name), config.get(js), definitions.get(js)];
    Some(self.0.base.call_method(&cache, "set", &args))
  }

  fn era_get(&self, name: &str, config: &Held) -> Option<Pending<Held>> {
    let js = self.js();
    let cache = self.cache().filter(|c| has_method(js, c, "getEra"))?;
    let args = [js.string(name), config.get(js)];
    Some(self.0.base.call_method(&cache, "getEra", &args))
  }

  fn era_set(&self, name: &str, config: &Held, era: &str) -> Option<Pending<Held>> {
    let js = self.js();
    let cache = self.cache().filter(|c| has_method(js, c, "setEra"))?;
    let args = [js.string(name), config.get(js), js.string(era)];
    Some(self.0.base.call_method(&cache, "setEra", &args))
  }

  fn watch(&self, connection: &Held, watch: Watch<Held>) -> Result<(), Held> {
    let js = self.js();
    let installed = (|| {
      let transport = js.get(connection.get(js), "transport")?;
      if js.type_of(transport) != sys::ValueType::napi_object {
        return Ok(());
      }
      let previous = previous_callback(js, transport, "onClose");
      let on_close = watch.on_close;
      let hook = js.closure("onClose", move |js, _| {
        let thrown = previous
          .as_ref()
          .and_then(|previous| js.call(previous.get(js), js.undefined(), &[]).err());
        on_close();
        thrown.map_or_else(|| Ok(js.undefined()), Err)
      })?;
      js.set(transport, "onClose", hook);
      if let Some(on_notification) = watch.on_notification {
        let previous = previous_callback(js, transport, "onNotification");
        let hook = self.notification_function(watch.server, previous, on_notification)?;
        js.set(transport, "onNotification", hook);
      }
      Ok(())
    })();
    installed.map_err(|Thrown(error)| self.0.base.hold(error))
  }

  fn notification_listener(
    &self,
    server: &str,
    hook: NotificationHook<Held>,
  ) -> Result<Held, Held> {
    let js = self.js();
    self
      .notification_function(server.to_string(), None, hook)
      .map(|f| Held::new(js, f))
      .map_err(|Thrown(error)| self.0.base.hold(error))
  }

  fn log(&self, level: Level, message: &str, server: &str, error: Option<&str>) {
    let js = self.js();
    let Some(logger) = self.option("logger") else {
      return;
    };
    let level = match level {
      Level::Debug => "debug",
      Level::Info => "info",
      Level::Warn => "warn",
      Level::Error => "error",
    };
    let Ok(function) = js.get(logger, level) else {
      return;
    };
    if !js.is_function(function) {
      return;
    }
    let Ok(context) = js.object() else { return };
    js.set(context, "server", js.string(server));
    if let Some(error) = error {
      js.set(context, "error", js.string(error));
    }
    let _ = js.call(function, logger, &[js.string(message), context]);
  }

  fn options(&self) -> Option<Held> {
    self.0.options.clone()
  }

  fn waiter(&self) -> Result<JsWaiter, Held> {
    let js = self.js();
    let created = (|| {
      let (deferred, promise) = js.create_promise()?;
      let ignore = js.closure("ignore", |js, _| Ok(js.undefined()))?;
      let then = js.get(promise, "then")?;
      js.call(then, promise, &[js.undefined(), ignore])?;
      Ok::<_, Thrown>(JsWaiter {
        promise: Held::new(js, promise),
        deferred: Cell::new(Some(deferred)),
      })
    })();
    created.map_err(|Thrown(error)| self.0.base.hold(error))
  }

  fn waiter_value(&self, waiter: &JsWaiter) -> Held {
    waiter.promise.clone()
  }

  fn settle_waiter(&self, waiter: &JsWaiter, outcome: Result<&Held, &Held>) {
    let js = self.js();
    if let Some(deferred) = waiter.deferred.take() {
      match outcome {
        Ok(connection) => js.resolve(deferred, connection.get(js)),
        Err(error) => js.reject(deferred, error.get(js)),
      }
    }
  }

  fn load_configs(&self, loader: Loader, cwd: &str, options: &Held) -> Option<Pending<Held>> {
    let js = self.js();
    let options = options.get(js);
    let (load, this) = match loader {
      Loader::Given => (js.get(options, "loadConfigs").ok()?, options),
      Loader::Constructor => self.option_function("loadConfigs")?,
    };
    Some(self.base().call(load, this, &[js.string(cwd), options]))
  }

  fn credential(&self, id: &str) -> Option<Pending<Held>> {
    let js = self.js();
    let storage = self.0.auth_storage.borrow().clone()?;
    if js.is_nullish(storage.get(js)) {
      return None;
    }
    Some(self.0.base.call_method(&storage, "get", &[js.string(id)]))
  }

  fn resolve_values(&self, values: &[String]) -> Option<Vec<Pending<Held>>> {
    let js = self.js();
    let (resolver, options) = self.option_function("resolveConfigValue")?;
    Some(
      values
        .iter()
        .map(|value| self.0.base.call(resolver, options, &[js.string(value)]))
        .collect(),
    )
  }

  fn resolve_builtin(&self, values: Vec<String>) -> LocalBoxFuture<'static, Vec<Option<String>>> {
    let count = values.len();
    // The runtime's own environment: under Bun `process.env` changes never reach the C one.
    let environment: HashMap<String, String> = super::args::host_environment(self.js())
      .into_iter()
      .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
      .collect();
    let resolving = executor::on_runtime(
      self.js(),
      crate::manager::value_resolution::resolve_config_values(values, environment),
    );
    Box::pin(async move { resolving.await.unwrap_or_else(|| vec![None; count]) })
  }
}

impl JsManagerHost {
  /// An `onNotification` for `server`'s transport: the one it had (`previous`), the caller's
  /// `options.onNotification(server, …)` (M10: it hears every server), then the manager.
  fn notification_function(
    &self,
    server: String,
    previous: Option<Held>,
    on_notification: NotificationHook<Held>,
  ) -> Result<Value, Thrown> {
    let js = self.js();
    let host = self.clone();
    js.closure("onNotification", move |js, args| {
      let (method, params) = (args.get(0), args.get(1));
      let mut thrown = previous.as_ref().and_then(|previous| {
        js.call(previous.get(js), js.undefined(), &[method, params])
          .err()
      });
      if let Some((callback, options)) = host.option_function("onNotification") {
        let name = js.string(&server);
        if let Err(error) = js.call(callback, options, &[name, method, params]) {
          thrown.get_or_insert(error);
        }
      }
      on_notification(
        &js.rust_string(method).unwrap_or_default(),
        Held::new(js, params),
      );
      thrown.map_or_else(|| Ok(js.undefined()), Err)
    })
  }
}

fn previous_callback(js: Js, transport: Value, property: &str) -> Option<Held> {
  let previous = js.get(transport, property).ok()?;
  js.is_function(previous).then(|| Held::new(js, previous))
}
