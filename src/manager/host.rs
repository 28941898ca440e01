//! What `MCPManager` needs of its host besides values, transports and a clock: the methods a
//! subclass may override (called through `this`, W1), the connect step, the tool factory,
//! the tool cache, transport events, the logger, its options and config loading.
use std::rc::Rc;
use std::time::Duration;

use futures::future::LocalBoxFuture;

use super::backoff::ReconnectPolicy;
use crate::host::{Clock, Pending, Transports};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
  Debug,
  Info,
  Warn,
  Error,
}

/// Which `loadConfigs` discovery calls (W4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
  /// The one in the options of this `discoverAndConnect` call.
  Given,
  /// The one in the constructor's options.
  Constructor,
}

/// A40: which agent's manager behaviour a manager has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compat {
  /// `compat: "v12"`: `connectServers`' third argument is `onConnecting`, uncached servers
  /// are waited for (M4), `mcp_` names, reconnects and refreshes only when asked (M10).
  V12,
  /// The default: the agent at v18 (A30–A37).
  #[default]
  V18,
}

/// An AbortController (what a disconnect aborts) and its signal (what the connect hears).
pub struct Controller<V> {
  pub controller: V,
  pub signal: V,
}

/// A56's default schedule for a lost remote server.
pub const RETRY_BASE: Duration = Duration::from_secs(15);
pub const RETRY_MAX: Duration = Duration::from_secs(300);

/// The options the manager reads when it needs them (the caller may change them later).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
  /// A40 `options.compat`.
  pub compat: Compat,
  /// M4: `options.startupTimeoutMs`, when a usable number.
  pub startup_timeout: Option<Duration>,
  /// M10: `options.reconnect`, when set.
  pub reconnect: Option<ReconnectPolicy>,
  /// A34: `options.reconnect` is set and falsy (`false`): v18 never reconnects on its own.
  pub reconnect_off: bool,
  /// M10: `options.onNotification` is a function.
  pub forwards_notifications: bool,
  /// M10: `options.autoRefreshTools`.
  pub auto_refresh_tools: bool,
  /// A55: `options.reconnectPolicy.ladderMs`: the waits after each failed attempt of a
  /// reconnect (the agent 18.3.4's constructor form gives it as its fourth argument).
  pub ladder: Option<Vec<Duration>>,
  /// A56: `reconnectPolicy.retryBaseMs` (15 s) and `retryMaxMs` (5 min): the first wait
  /// of a lost remote server's schedule and the longest.
  pub retry_base: Duration,
  pub retry_max: Duration,
}

impl Default for Settings {
  fn default() -> Self {
    Settings {
      compat: Compat::default(),
      startup_timeout: None,
      reconnect: None,
      reconnect_off: false,
      forwards_notifications: false,
      auto_refresh_tools: false,
      ladder: None,
      retry_base: RETRY_BASE,
      retry_max: RETRY_MAX,
    }
  }
}

impl Settings {
  /// From the manager's `options` object (M4, M10).
  pub fn read<H: crate::host::Values>(host: &H, options: Option<&H::Value>) -> Self {
    let Some(options) = options.filter(|o| host.is_object(o)) else {
      return Settings::default();
    };
    let option = |name: &str| {
      host
        .field(options, name)
        .ok()
        .filter(|v| !host.is_nullish(v))
    };
    let number = |object: &H::Value, name: &str| {
      host
        .field(object, name)
        .ok()
        .and_then(|v| host.as_number(&v))
        .filter(|n| n.is_finite() && *n >= 0.0)
    };
    let policy_ms = |name: &str| {
      let policy = option("reconnectPolicy")?;
      number(&policy, name).map(|ms| Duration::from_secs_f64(ms.min(8.64e15) / 1000.0))
    };
    let reconnect = option("reconnect").filter(|r| host.truthy(r)).map(|r| {
      ReconnectPolicy::from_options(
        number(&r, "maxAttempts"),
        number(&r, "initialDelayMs"),
        number(&r, "maxDelayMs"),
      )
    });
    let compat = match option("compat").and_then(|c| host.as_string(&c)).as_deref() {
      Some("v12") => Compat::V12,
      _ => Compat::V18,
    };
    Settings {
      compat,
      startup_timeout: number(options, "startupTimeoutMs")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
      reconnect,
      reconnect_off: option("reconnect").is_some_and(|r| !host.truthy(&r)),
      forwards_notifications: option("onNotification").is_some_and(|f| host.is_function(&f)),
      auto_refresh_tools: option("autoRefreshTools").is_some_and(|v| host.truthy(&v)),
      ladder: option("reconnectPolicy")
        .and_then(|policy| host.field(&policy, "ladderMs").ok())
        .and_then(|ladder| host.items(&ladder))
        .map(|waits| {
          waits
            .iter()
            .filter_map(|ms| host.as_number(ms).filter(|n| n.is_finite() && *n >= 0.0))
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .collect()
        }),
      retry_base: policy_ms("retryBaseMs").unwrap_or(RETRY_BASE),
      retry_max: policy_ms("retryMaxMs").unwrap_or(RETRY_MAX),
    }
  }
}

/// A58: a `startupTimeoutMs` given to one call: a finite number of ms ≥ 0, else nothing.
pub fn startup_window<H: crate::host::Values>(host: &H, value: &H::Value) -> Option<Duration> {
  host
    .as_number(value)
    .filter(|ms| ms.is_finite() && *ms >= 0.0)
    .map(|ms| Duration::from_secs_f64(ms / 1000.0))
}

/// What the manager does when a watched transport delivers a notification (its method and
/// params).
pub type NotificationHook<V> = Rc<dyn Fn(&str, V)>;

/// A transport's events, as the manager watches them (M10, M11).
pub struct Watch<V> {
  /// The server the transport belongs to.
  pub server: String,
  pub on_close: Rc<dyn Fn()>,
  /// Set when notifications matter to the manager: it is told each method.
  pub on_notification: Option<NotificationHook<V>>,
}

pub trait ManagerHost: Transports + Clock + crate::host::Callbacks {
  /// What `waitForConnection` hands out while a connect is pending (a promise in JS).
  /// Dropped unsettled, it must still settle: whoever drops it forgot the server.
  type Waiter;

  /// W1 `this.prepareConfig(config)`.
  fn prepare_config(&self, config: &Self::Value) -> Pending<Self::Value>;
  /// W1 `this.refreshServerTools(name)`.
  fn refresh_server_tools(&self, name: &str) -> Pending<Self::Value>;
  /// W1/A37 `this.resolveCredentials(config, {forceRefresh})`.
  fn resolve_credentials(&self, config: &Self::Value, force_refresh: bool) -> Pending<Self::Value>;
  /// W1/A37 `this.hasRefreshableCredential(config)`.
  fn has_refreshable_credential(&self, config: &Self::Value) -> bool;
  /// A37: when the connection's transport has an `onAuthError` (`"onAuthError" in
  /// transport`), it becomes `refresh`.
  fn set_auth_refresh(&self, connection: &Self::Value, refresh: crate::host::HostFn<Self::Value>);
  /// A38 `options.clientApi[name]`, when it is a function (read at each call).
  fn client_function(&self, _name: &str) -> Option<Self::Value> {
    None
  }
  /// M3: an auth storage was given (`setAuthStorage`).
  fn has_credential_store(&self) -> bool;
  /// W1/A35 `this.refreshServerResources(name)`.
  fn refresh_server_resources(&self, name: &str) -> Pending<Self::Value>;
  /// W1/A35 `this.refreshServerPrompts(name)`.
  fn refresh_server_prompts(&self, name: &str) -> Pending<Self::Value>;
  /// W1/A34 `this.reconnectServer(name, options)`.
  fn reconnect_server(&self, name: &str, options: Option<&Self::Value>) -> Pending<Self::Value>;
  /// W1 `this.waitForConnection(name)`.
  fn wait_for_connection(&self, name: &str) -> Pending<Self::Value>;
  /// W1 `this.connectServers(configs, sources, onConnecting, startupTimeoutMs)`.
  fn connect_servers(
    &self,
    configs: Self::Value,
    sources: Self::Value,
    on_connecting: Self::Value,
    startup_timeout: Self::Value,
  ) -> Pending<Self::Value>;

  /// M1 `options.connect(name, config)`, when the caller gave one.
  fn custom_connect(&self, name: &str, config: &Self::Value) -> Option<Pending<Self::Value>>;
  /// M7: a new AbortController and its signal, where the host has them.
  fn abort_controller(&self) -> Result<Option<Controller<Self::Value>>, Self::Value>;
  /// M1 our own `connectToServer(name, config, options)` (A38: the caller's `clientApi`
  /// one, when it gave one).
  fn connect(&self, name: &str, config: &Self::Value, options: Self::Value)
    -> Pending<Self::Value>;
  fn abort(&self, controller: &Self::Value);

  /// M5: the default tools of a connected server (`manager::tools::live` asks the caller's
  /// `toolFactory` first).
  fn live_tools(
    &self,
    name: &str,
    connection: &Self::Value,
    definitions: &Self::Value,
    reconnect: Option<&Self::Value>,
  ) -> Result<Self::Value, Self::Value>;
  /// M4/M5: the default tools of a cached listing, which wait for the connection first
  /// (`manager::tools::deferred` asks the caller's `toolFactory` first).
  fn deferred_tools(
    &self,
    name: &str,
    definitions: &Self::Value,
    source: Option<&Self::Value>,
    reconnect: Option<&Self::Value>,
  ) -> Result<Self::Value, Self::Value>;

  /// `toolCache.get(name, config)`; `None` without a cache.
  fn cache_get(&self, name: &str, config: &Self::Value) -> Option<Pending<Self::Value>>;
  /// `toolCache.set(name, config, definitions)`; `None` without a cache.
  fn cache_set(
    &self,
    name: &str,
    config: &Self::Value,
    definitions: &Self::Value,
  ) -> Option<Pending<Self::Value>>;

  /// N2: `toolCache.getEra(name, config)`; `None` without a cache that keeps era verdicts.
  fn era_get(&self, _name: &str, _config: &Self::Value) -> Option<Pending<Self::Value>> {
    None
  }
  /// N2: `toolCache.setEra(name, config, era)`; `None` without a cache that keeps them.
  fn era_set(
    &self,
    _name: &str,
    _config: &Self::Value,
    _era: &str,
  ) -> Option<Pending<Self::Value>> {
    None
  }

  /// A64: the `onNotification` our connect sets before `initialize`: the caller's
  /// `options.onNotification(server, …)`, then `hook`.
  fn notification_listener(
    &self,
    server: &str,
    hook: NotificationHook<Self::Value>,
  ) -> Result<Self::Value, Self::Value>;
  /// Chains the manager's hooks in front of the transport's own `onClose` and
  /// `onNotification`.
  fn watch(&self, connection: &Self::Value, watch: Watch<Self::Value>) -> Result<(), Self::Value>;

  /// `options.logger[level](message, {server, error?})`, when given.
  fn log(&self, level: Level, message: &str, server: &str, error: Option<&str>);
  /// The manager's `options` object, if it was given one.
  fn options(&self) -> Option<Self::Value>;

  fn waiter(&self) -> Result<Self::Waiter, Self::Value>;
  fn waiter_value(&self, waiter: &Self::Waiter) -> Self::Value;
  fn settle_waiter(&self, waiter: &Self::Waiter, outcome: Result<&Self::Value, &Self::Value>);

  /// W4 `loader(cwd, options)`; `None` when the constructor's options have no loader.
  fn load_configs(
    &self,
    loader: Loader,
    cwd: &str,
    options: &Self::Value,
  ) -> Option<Pending<Self::Value>>;

  /// M3: `authStorage.get(id)`; `None` without a storage.
  fn credential(&self, id: &str) -> Option<Pending<Self::Value>>;
  /// W6 `options.resolveConfigValue(value)` for each value; `None` when not given.
  fn resolve_values(&self, values: &[String]) -> Option<Vec<Pending<Self::Value>>>;
  /// M3's built-in rules, with the host's view of the environment.
  fn resolve_builtin(&self, values: Vec<String>) -> LocalBoxFuture<'static, Vec<Option<String>>>;
}
