//! The `MCPManager` class and `createMCPManager`. Methods are ordinary prototype methods,
//! so a JS subclass can override them and `vi.spyOn` works (W1); each call remembers the
//! object, so the core's flows call the overridable ones through it.
use std::rc::Rc;

use napi::bindgen_prelude::{JavaScriptClassExt, This};
use napi::{sys, Env};
use napi_derive::napi;

use super::JsManagerHost;
use crate::binding::executor::promise;
use crate::binding::host::{call_method, JsHost};
use crate::binding::js::{Held, Js, JsArg, JsRaw, Thrown, Value};
use crate::binding::js_error;
use crate::binding::js_error::{finish, thrown};
use crate::binding::js_slot::{self, JsSlot};
use crate::host::Values;
use crate::manager::host::Compat;

use crate::manager::{
  entries, inject_credential, names_a_credential, prepare_config, reconnect_options,
  startup_window, status_hook, Manager, PrepareOptions, Setting, Wait,
};

thread_local! {
  static INSTANCE: JsSlot = const { JsSlot::new() };
}

#[napi(js_name = "MCPManager")]
pub struct JsMcpManager {
  manager: Rc<Manager<JsManagerHost>>,
}

fn optional(js: Js, value: Option<JsArg>) -> Option<Value> {
  value.map(|v| v.0).filter(|v| !js.is_nullish(*v))
}

fn type_error(js: Js, message: &str) -> Thrown {
  Thrown(js_error::type_error(js, message))
}

/// A `Promise<void>` of `work`: resolves with `undefined`, or rejects with its error.
fn settles_to_undefined(
  js: Js,
  work: impl std::future::Future<Output = Result<(), Held>> + 'static,
) -> napi::Result<JsRaw> {
  let settled = async move { work.await.map(|()| Held::new(js, js.undefined())) };
  finish(js, promise(js, settled))
}

/// An `add…Listener`'s answer: its remover, or what adding it threw.
fn remover(js: Js, added: Result<Held, Held>) -> napi::Result<JsRaw> {
  added
    .map(|remove| JsRaw(remove.get(js)))
    .map_err(|error| thrown(js, Thrown(error.get(js))))
}

/// The options object of A55's constructor form: `{loadConfigs, reconnectPolicy?}`.
fn agent_form(js: Js, load: Value, policy: Option<Value>) -> Result<Value, Thrown> {
  let options = js.object()?;
  js.set(options, "loadConfigs", load);
  if let Some(policy) = policy {
    js.set(options, "reconnectPolicy", policy);
  }
  Ok(options)
}

/// `MCPStartupStatus`: `{connected, pending, failed: [{name, error}]}`.
fn startup_status(js: Js, status: &crate::manager::StartupStatus) -> Result<Held, Thrown> {
  let object = js.object()?;
  js.set(object, "connected", string_array(js, &status.connected)?);
  js.set(object, "pending", string_array(js, &status.pending)?);
  let failed = js.array(status.failed.len())?;
  for (i, (name, error)) in status.failed.iter().enumerate() {
    let entry = js.object()?;
    js.set(entry, "name", js.string(name));
    js.set(entry, "error", js.string(error));
    js.set_element(failed, i as u32, entry)?;
  }
  js.set(object, "failed", failed);
  Ok(Held::new(js, object))
}

/// A callback argument, kept (the core drops anything but a function).
fn held(env: Env, value: Option<JsArg>) -> Option<Held> {
  let js = Js::new(env.raw());
  optional(js, value).map(|h| Held::new(js, h))
}

/// A JS `Map` of these entries, each value made by `value`.
fn js_map<T>(
  js: Js,
  entries: &[(String, T)],
  value: impl Fn(&T) -> Result<Value, Thrown>,
) -> Result<Value, Thrown> {
  let map = js.construct(js.get(js.global(), "Map")?, &[])?;
  let set = js.get(map, "set")?;
  for (key, item) in entries {
    js.call(set, map, &[js.string(key), value(item)?])?;
  }
  Ok(map)
}

/// What a core query gave: the value, `undefined` for `None`, or the throw.
fn value_or_undefined(js: Js, found: Option<Result<Held, Held>>) -> napi::Result<JsRaw> {
  match found {
    None => Ok(JsRaw(js.undefined())),
    Some(Ok(value)) => Ok(JsRaw(value.get(js))),
    Some(Err(error)) => Err(thrown(js, Thrown(error.get(js)))),
  }
}

/// The promise of a core call that answers `None` for a server not connected.
fn resolving_undefined(
  js: Js,
  work: impl std::future::Future<Output = Option<Result<Held, Held>>> + 'static,
) -> napi::Result<JsRaw> {
  let settled = async move {
    work
      .await
      .unwrap_or_else(|| Ok(Held::new(js, js.undefined())))
  };
  finish(js, promise(js, settled))
}

fn string_array(js: Js, names: &[String]) -> Result<Value, Thrown> {
  let array = js.array(names.len())?;
  for (i, name) in names.iter().enumerate() {
    js.set_element(array, i as u32, js.string(name))?;
  }
  Ok(array)
}

impl JsMcpManager {
  fn build(
    js: Js,
    cwd: Value,
    tool_cache: Option<Value>,
    options: Option<Value>,
  ) -> Result<Self, Thrown> {
    let Some(cwd) = js.rust_string(cwd) else {
      return Err(type_error(js, "The \"cwd\" argument must be a string"));
    };
    if options.is_some_and(|o| js.type_of(o) != sys::ValueType::napi_object) {
      return Err(type_error(js, "The \"options\" argument must be an object"));
    }
    let host = JsManagerHost::new(js, tool_cache, options);
    Ok(JsMcpManager {
      manager: Manager::new(host, cwd),
    })
  }

  fn bound(&self, this: &This<JsArg>) -> Rc<Manager<JsManagerHost>> {
    self.manager.host().remember_this(this.object.0);
    self.manager.clone()
  }

  /// The promise a core call hands out for a server (one shared by concurrent callers).
  fn shared_promise(
    &self,
    env: Env,
    this: &This<JsArg>,
    name: JsArg,
    call: impl FnOnce(&Rc<Manager<JsManagerHost>>, &str) -> Result<Held, Held>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(this);
    let result = match Self::name(js, name) {
      Err(error) => js.rejected(error),
      Ok(name) => match call(&manager, &name) {
        Ok(promise) => Ok(promise.get(js)),
        Err(error) => js.rejected(error.get(js)),
      },
    };
    finish(js, result)
  }

  /// A62: applies a change of `setting` (its new value: `enabled`, as JS truthiness).
  fn reconcile(
    &self,
    env: Env,
    this: &This<JsArg>,
    enabled: JsArg,
    setting: Setting,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(this);
    let enabled = js.truthy(enabled.0);
    settles_to_undefined(js, async move { manager.reconcile(setting, enabled).await })
  }

  /// `name` as a string, else the TypeError to reject with.
  fn name(js: Js, name: JsArg) -> Result<String, Value> {
    js.rust_string(name.0)
      .ok_or_else(|| js_error::type_error(js, "The \"name\" argument must be a string"))
  }
}

#[napi]
impl JsMcpManager {
  #[napi(constructor, skip_typescript)]
  pub fn new(
    env: Env,
    cwd: JsArg,
    tool_cache: Option<JsArg>,
    options: Option<JsArg>,
    reconnect_policy: Option<JsArg>,
  ) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    let options = match optional(js, options) {
      // A55: the agent 18.3.4's form, `(cwd, toolCache?, loadConfigs?, reconnectPolicy?)`.
      Some(load) if js.is_function(load) => {
        Some(agent_form(js, load, optional(js, reconnect_policy)).map_err(|t| thrown(js, t))?)
      }
      options => options,
    };
    Self::build(js, cwd.0, optional(js, tool_cache), options).map_err(|t| thrown(js, t))
  }

  #[napi(getter, skip_typescript)]
  pub fn cwd(&self) -> String {
    self.manager.cwd().to_string()
  }

  #[napi(js_name = "setAuthStorage", skip_typescript)]
  pub fn set_auth_storage(&self, env: Env, storage: Option<JsArg>) {
    let js = Js::new(env.raw());
    *self.manager.host().0.auth_storage.borrow_mut() =
      optional(js, storage).map(|s| Held::new(js, s));
  }

  /// M3/W6: a copy of the config with the OAuth credential injected and its env (stdio) or
  /// header (http/sse) values resolved; the caller's config is never touched.
  #[napi(js_name = "prepareConfig", skip_typescript)]
  pub fn prepare_config(
    &self,
    env: Env,
    this: This<JsArg>,
    config: JsArg,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(&this);
    let host = manager.host().clone();
    let config = Held::new(js, config.0);
    let options = optional(js, options).map(|o| Held::new(js, o));
    let options = PrepareOptions::read(&host, options.as_ref());
    let preparing = async move { prepare_config(&host, &config, options).await };
    finish(js, promise(js, preparing))
  }

  /// A37's default: M3's OAuth credential from the auth storage injected into a copy.
  /// `forceRefresh` is for overrides that can refresh; this one only looks it up.
  #[napi(js_name = "resolveCredentials", skip_typescript)]
  pub fn resolve_credentials(
    &self,
    env: Env,
    config: JsArg,
    _options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let host = self.manager.host().clone();
    let config = Held::new(js, config.0);
    finish(
      js,
      promise(js, async move { inject_credential(&host, &config).await }),
    )
  }

  /// A37's default: the config names an OAuth credential and an auth storage is set.
  #[napi(js_name = "hasRefreshableCredential", skip_typescript)]
  pub fn has_refreshable_credential(&self, env: Env, config: JsArg) -> bool {
    let js = Js::new(env.raw());
    js.is_record(config.0) && names_a_credential(self.manager.host(), &Held::new(js, config.0))
  }

  #[napi(js_name = "connectServers", skip_typescript)]
  pub fn connect_servers(
    &self,
    env: Env,
    this: This<JsArg>,
    configs: JsArg,
    sources: Option<JsArg>,
    on_connecting: Option<JsArg>,
    startup_timeout: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(&this);
    let h = JsHost::new(js);
    let sources = sources.map_or_else(|| h.undefined(), |s| h.hold(s.0));
    let entries = match entries(&h, &h.hold(configs.0), &sources) {
      Ok(entries) => entries,
      Err(error) => return finish(js, js.rejected(error.get(js))),
    };
    let v18 = manager.settings_compat() == Compat::V18;
    let status = status_hook(&h, on_connecting.map(|c| h.hold(c.0)), v18);
    let window = startup_timeout.and_then(|t| startup_window(&h, &h.hold(t.0)));
    let host = manager.host().clone();
    let connecting = async move {
      let report = manager
        .connect_servers_within(entries, window, status)
        .await?;
      report.value(host.base())
    };
    finish(js, promise(js, connecting))
  }

  #[napi(js_name = "discoverAndConnect", skip_typescript)]
  pub fn discover_and_connect(
    &self,
    env: Env,
    this: This<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(&this);
    let options = options
      .map(|o| o.0)
      .filter(|o| js.type_of(*o) == sys::ValueType::napi_object);
    let options = match options.map_or_else(|| js.object(), Ok) {
      Ok(options) => Held::new(js, options),
      Err(Thrown(error)) => return finish(js, js.rejected(error)),
    };
    finish(js, promise(js, manager.discover(options)))
  }

  #[napi(js_name = "getTools", skip_typescript)]
  pub fn get_tools(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let tools = self
      .manager
      .tools()
      .map(|tools| tools.get(js))
      .map_err(|error| Thrown(error.get(js)));
    finish(js, tools)
  }

  #[napi(js_name = "getConnection", skip_typescript)]
  pub fn get_connection(&self, env: Env, name: JsArg) -> JsRaw {
    let js = Js::new(env.raw());
    let connection = js
      .rust_string(name.0)
      .and_then(|name| self.manager.connection(&name));
    JsRaw(connection.map_or_else(|| js.undefined(), |c| c.get(js)))
  }

  /// A32: the caller's config of a known server (its connection's, else the one given).
  #[napi(js_name = "getServerConfig", skip_typescript)]
  pub fn get_server_config(&self, env: Env, name: JsArg) -> JsRaw {
    let js = Js::new(env.raw());
    let config = js
      .rust_string(name.0)
      .and_then(|name| self.manager.server_config(&name));
    JsRaw(config.map_or_else(|| js.undefined(), |c| c.get(js)))
  }

  /// A30: the process-wide manager (one slot, whichever subclass fills it).
  #[napi(js_name = "instance", skip_typescript)]
  pub fn instance(env: Env) -> JsRaw {
    let js = Js::new(env.raw());
    JsRaw(
      INSTANCE
        .with(|slot| slot.get(js))
        .unwrap_or_else(|| js.undefined()),
    )
  }

  #[napi(js_name = "setInstance", skip_typescript)]
  pub fn set_instance(env: Env, manager: Option<JsArg>) {
    let js = Js::new(env.raw());
    js_slot::set(&INSTANCE, js, optional(js, manager));
  }

  #[napi(js_name = "resetForTests", skip_typescript)]
  pub fn reset_for_tests() {
    js_slot::clear(&INSTANCE);
  }

  #[napi(js_name = "getConnectionStatus", skip_typescript)]
  pub fn get_connection_status(&self, env: Env, name: JsArg) -> &'static str {
    let js = Js::new(env.raw());
    js.rust_string(name.0)
      .map_or("disconnected", |name| self.manager.status(&name))
  }

  #[napi(js_name = "getSource", skip_typescript)]
  pub fn get_source(&self, env: Env, name: JsArg) -> JsRaw {
    let js = Js::new(env.raw());
    let source = js
      .rust_string(name.0)
      .and_then(|name| self.manager.source(&name));
    JsRaw(source.map_or_else(|| js.undefined(), |s| s.get(js)))
  }

  #[napi(js_name = "waitForConnection", skip_typescript)]
  pub fn wait_for_connection(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = match Self::name(js, name) {
      Err(error) => js.rejected(error),
      Ok(name) => match self.manager.wait_for_connection(&name) {
        Wait::Connected(connection) => js.resolved(connection.get(js)),
        Wait::Pending(promise) => Ok(promise.get(js)),
        Wait::Missing(error) => js.rejected(error.get(js)),
      },
    };
    finish(js, result)
  }

  #[napi(js_name = "getConnectedServers", skip_typescript)]
  pub fn get_connected_servers(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, string_array(js, &self.manager.connected_servers()))
  }

  #[napi(js_name = "getAllServerNames", skip_typescript)]
  pub fn get_all_server_names(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, string_array(js, &self.manager.all_server_names()))
  }

  /// M7: forgets the server (pending state, source, tools) and closes its transport.
  #[napi(js_name = "disconnectServer", skip_typescript)]
  pub fn disconnect_server(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let name = match Self::name(js, name) {
      Ok(name) => name,
      Err(error) => return finish(js, js.rejected(error)),
    };
    let manager = self.manager.clone();
    settles_to_undefined(js, async move { manager.disconnect_server(&name).await })
  }

  /// A62: connects the browser servers (`false`) or disconnects them (`true`).
  #[napi(js_name = "reconcileBrowserFilter", skip_typescript)]
  pub fn reconcile_browser_filter(
    &self,
    env: Env,
    this: This<JsArg>,
    enabled: JsArg,
  ) -> napi::Result<JsRaw> {
    self.reconcile(env, &this, enabled, Setting::BrowserFilter)
  }

  /// A62: connects the project-level servers (`true`) or disconnects them (`false`).
  #[napi(js_name = "reconcileProjectConfig", skip_typescript)]
  pub fn reconcile_project_config(
    &self,
    env: Env,
    this: This<JsArg>,
    enabled: JsArg,
  ) -> napi::Result<JsRaw> {
    self.reconcile(env, &this, enabled, Setting::ProjectConfig)
  }

  /// M7: closes everything, never rejects.
  #[napi(js_name = "disconnectAll", skip_typescript)]
  pub fn disconnect_all(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.manager.clone();
    settles_to_undefined(js, async move {
      manager.disconnect_all().await;
      Ok(())
    })
  }

  /// A58: waits up to `timeoutMs` (none when not above 0) for the connects in flight, then
  /// says which startup servers connected, are pending or failed.
  #[napi(js_name = "waitForStartup", skip_typescript)]
  pub fn wait_for_startup(&self, env: Env, timeout_ms: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let limit = optional(js, timeout_ms)
      .and_then(|t| js.number_value(t))
      .filter(|ms| *ms > 0.0)
      .map(|ms| std::time::Duration::from_secs_f64(ms.min(8.64e15) / 1000.0));
    let manager = self.manager.clone();
    let status = async move {
      let status = manager.wait_for_startup(limit).await;
      startup_status(js, &status).map_err(|Thrown(error)| Held::new(js, error))
    };
    finish(js, promise(js, status))
  }

  /// A58: resolves once no connect or reconnect is in flight.
  #[napi(js_name = "waitForPendingConnections", skip_typescript)]
  pub fn wait_for_pending_connections(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.manager.clone();
    settles_to_undefined(js, async move {
      manager.wait_for_pending_connections().await;
      Ok(())
    })
  }

  /// A34: a new connection for the server, or `null`; concurrent calls share one.
  #[napi(js_name = "reconnectServer", skip_typescript)]
  pub fn reconnect_server(
    &self,
    env: Env,
    this: This<JsArg>,
    name: JsArg,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let host = JsHost::new(js);
    let options = optional(js, options).map(|o| host.hold(o));
    let (manual, challenge) = reconnect_options(&host, options.as_ref());
    self.shared_promise(env, &this, name, |manager, name| {
      manager.reconnect_server(name, manual, challenge)
    })
  }

  /// A34: completes OAuth after a tool-level auth challenge: `(server, challenge) =>
  /// Promise<config | undefined>`.
  #[napi(js_name = "setAuthHandler", skip_typescript)]
  pub fn set_auth_handler(&self, env: Env, handler: Option<JsArg>) {
    self.manager.set_auth_handler(held(env, handler));
  }

  /// A36: called with every tool after each change; `refreshServerTools` awaits it.
  #[napi(js_name = "setOnToolsChanged", skip_typescript)]
  pub fn set_on_tools_changed(&self, env: Env, handler: Option<JsArg>) {
    self.manager.set_on_tools_changed(held(env, handler));
  }

  /// A35: hears every notification of every server (after the manager's own refresh); the
  /// first listener gets the last 100 that arrived before it. Returns the remover.
  #[napi(js_name = "addNotificationListener", skip_typescript)]
  pub fn add_notification_listener(&self, env: Env, listener: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    remover(
      js,
      self
        .manager
        .add_notification_listener(Held::new(js, listener.0)),
    )
  }

  /// A59: hears every status event (connectServers', reconnects', the breaker's). Returns
  /// the remover.
  #[napi(js_name = "addConnectionStatusListener", skip_typescript)]
  pub fn add_connection_status_listener(&self, env: Env, listener: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    remover(
      js,
      self
        .manager
        .add_connection_status_listener(Held::new(js, listener.0)),
    )
  }

  /// A59: hears `{serverName, kind}` after a server's resources or prompts were listed
  /// afresh. Returns the remover.
  #[napi(js_name = "addCatalogChangeListener", skip_typescript)]
  pub fn add_catalog_change_listener(&self, env: Env, listener: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    remover(
      js,
      self
        .manager
        .add_catalog_change_listener(Held::new(js, listener.0)),
    )
  }

  /// A36: `(server, uri)` for `resources/updated` on a subscribed URI.
  #[napi(js_name = "setOnResourcesChanged", skip_typescript)]
  pub fn set_on_resources_changed(&self, env: Env, handler: Option<JsArg>) {
    self.manager.set_on_resources_changed(held(env, handler));
  }

  /// A36: `(server)` after its prompts were listed; replayed for those that have some.
  #[napi(js_name = "setOnPromptsChanged", skip_typescript)]
  pub fn set_on_prompts_changed(&self, env: Env, handler: Option<JsArg>) {
    self.manager.set_on_prompts_changed(held(env, handler));
  }

  #[napi(js_name = "setNotificationsEnabled", skip_typescript)]
  pub fn set_notifications_enabled(&self, env: Env, this: This<JsArg>, on: JsArg) {
    let js = Js::new(env.raw());
    self.bound(&this).set_notifications_enabled(js.truthy(on.0));
  }

  #[napi(js_name = "getNotificationState", skip_typescript)]
  pub fn get_notification_state(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let (enabled, subscribed) = self.manager.notification_state();
    let built = (|| {
      let set_class = js.get(js.global(), "Set")?;
      let subscriptions = js_map(js, &subscribed, |uris| {
        js.construct(set_class, &[string_array(js, uris)?])
      })?;
      let state = js.object()?;
      js.set(state, "enabled", js.boolean(enabled));
      js.set(state, "subscriptions", subscriptions);
      Ok(state)
    })();
    built.map(JsRaw).map_err(|t| thrown(js, t))
  }

  #[napi(js_name = "refreshServerResources", skip_typescript)]
  pub fn refresh_server_resources(
    &self,
    env: Env,
    this: This<JsArg>,
    name: JsArg,
  ) -> napi::Result<JsRaw> {
    self.shared_promise(env, &this, name, |manager, name| {
      manager.refresh_server_resources(name)
    })
  }

  #[napi(js_name = "ensureServerResources", skip_typescript)]
  pub fn ensure_server_resources(
    &self,
    env: Env,
    this: This<JsArg>,
    name: JsArg,
  ) -> napi::Result<JsRaw> {
    self.shared_promise(env, &this, name, |manager, name| {
      manager.ensure_server_resources(name)
    })
  }

  #[napi(js_name = "refreshServerPrompts", skip_typescript)]
  pub fn refresh_server_prompts(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let name = match Self::name(js, name) {
      Ok(name) => name,
      Err(error) => return finish(js, js.rejected(error)),
    };
    let manager = self.manager.clone();
    settles_to_undefined(
      js,
      async move { manager.refresh_server_prompts(&name).await },
    )
  }

  #[napi(js_name = "getServerResources", skip_typescript)]
  pub fn get_server_resources(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let found = js
      .rust_string(name.0)
      .and_then(|n| self.manager.server_resources(&n));
    value_or_undefined(js, found)
  }

  #[napi(js_name = "getServerPrompts", skip_typescript)]
  pub fn get_server_prompts(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let found = js
      .rust_string(name.0)
      .and_then(|n| self.manager.server_prompts(&n));
    value_or_undefined(js, found)
  }

  #[napi(js_name = "readServerResource", skip_typescript)]
  pub fn read_server_resource(
    &self,
    env: Env,
    name: JsArg,
    uri: JsArg,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let name = js.rust_string(name.0).unwrap_or_default();
    let uri = Held::new(js, uri.0);
    let options = optional(js, options).map(|o| Held::new(js, o));
    let manager = self.manager.clone();
    resolving_undefined(js, async move {
      manager.read_server_resource(&name, uri, options).await
    })
  }

  #[napi(js_name = "executePrompt", skip_typescript)]
  pub fn execute_prompt(
    &self,
    env: Env,
    name: JsArg,
    prompt: JsArg,
    args: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let name = js.rust_string(name.0).unwrap_or_default();
    let prompt = Held::new(js, prompt.0);
    let args = optional(js, args).map(|a| Held::new(js, a));
    let options = optional(js, options).map(|o| Held::new(js, o));
    let manager = self.manager.clone();
    resolving_undefined(js, async move {
      manager.execute_prompt(&name, prompt, args, options).await
    })
  }

  #[napi(js_name = "getServerInstructions", skip_typescript)]
  pub fn get_server_instructions(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let instructions = self.manager.server_instructions();
    js_map(js, &instructions, |text| Ok(js.string(text)))
      .map(JsRaw)
      .map_err(|t| thrown(js, t))
  }

  /// M8: lists the server's tools again, caches them and replaces its tools.
  #[napi(js_name = "refreshServerTools", skip_typescript)]
  pub fn refresh_server_tools(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let name = match Self::name(js, name) {
      Ok(name) => name,
      Err(error) => return finish(js, js.rejected(error)),
    };
    let manager = self.manager.clone();
    settles_to_undefined(js, async move { manager.refresh_server_tools(&name).await })
  }

  /// M8: `this.refreshServerTools` for every connected server; settles, never rejects.
  #[napi(js_name = "refreshAllTools", skip_typescript)]
  pub fn refresh_all_tools(&self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(&this);
    settles_to_undefined(js, async move {
      manager.refresh_all_tools().await;
      Ok(())
    })
  }
}

/// M9: `new MCPManager(cwd, options.toolCache, options)` and its `discoverAndConnect(options)`;
/// when that fails, everything it connected is closed.
#[napi(js_name = "createMCPManager", skip_typescript)]
pub fn create_mcp_manager(env: Env, cwd: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let options = optional(js, options);
    let tool_cache = match options {
      Some(options) if js.type_of(options) == sys::ValueType::napi_object => {
        let cache = js.get(options, "toolCache")?;
        (!js.is_nullish(cache)).then_some(cache)
      }
      _ => None,
    };
    let manager = match JsMcpManager::build(js, cwd.0, tool_cache, options) {
      Ok(manager) => manager,
      Err(Thrown(error)) => return js.rejected(error),
    };
    let host = manager.manager.host().clone();
    let object = manager
      .into_instance(&env)
      .map_err(|e| Thrown(js.error(crate::binding::js::ErrorKind::Error, &e.reason)))?
      .value;
    let object = host.base().hold(object);
    let discover_options = options.unwrap_or_else(|| js.undefined());
    let discovering = host
      .base()
      .call_method(&object, "discoverAndConnect", &[discover_options]);
    promise(js, async move {
      match discovering.await {
        Err(error) => {
          if let Ok(closing) = call_method(js, object.get(js), "disconnectAll", &[]) {
            let _ = crate::binding::executor::settled(js, closing).await;
          }
          Err(error)
        }
        Ok(result) => host.object(vec![("manager", object), ("result", result)]),
      }
    })
  })();
  finish(js, result)
}
