//! A plain-Rust host for the core's unit tests: values that behave like the JS values the
//! flows see (shared objects with identity, errors, truthiness), transports scripted per
//! server on tokio's clock (paused in tests), and a record of everything the flows asked of
//! the host, for assertions.
//!
//! Scripts are keyed by the config's `command` (or `url`), so a config names its script.
//! What the host hands back as a promise in JS runs eagerly there; here only the custom
//! `connect` is eager (spawned), because that is the one whose late completion the
//! manager must notice after it stopped waiting (M7).
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::collections::HashMap;
use std::fmt;
use std::future::{poll_fn, Future};
use std::rc::{Rc, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value as Json};

use crate::client::{ClientOptions, ConnectRequest};
use crate::host::{Callbacks, Clock, HostFn, Pending, Signals, Transports, Values};
use crate::manager::host::{Level, Loader, ManagerHost, NotificationHook, Settings, Watch};
use crate::manager::tools::default_tools;
use crate::manager::{prepare_entries, Entry, Manager, Wait};

pub fn ms(n: u64) -> Duration {
  Duration::from_millis(n)
}

/// Runs a test body where `Clock::spawn` (`spawn_local`) works.
pub async fn local<F: Future>(body: F) -> F::Output {
  tokio::task::LocalSet::new().run_until(body).await
}

/// A JS value, just enough of one. Objects, arrays and the opaque kinds are shared:
/// clones are the same object (W3 identity is `V::same`).
#[derive(Clone)]
pub enum V {
  Undefined,
  Null,
  Bool(bool),
  Number(f64),
  Str(Rc<str>),
  Object(Rc<RefCell<Vec<(String, V)>>>),
  Array(Rc<RefCell<Vec<V>>>),
  Error(Rc<FakeError>),
  Transport(Rc<FakeTransport>),
  /// An AbortController and its signal in one.
  Signal(Rc<FakeSignal>),
  Promise(Rc<FakePromise>),
  /// A function nobody calls: all the flows ask of one is that it is one.
  Function,
  /// A function the flows call, or one they made (`Callbacks::function`).
  Callable(HostFn<V>),
}

pub struct FakeError {
  pub message: String,
  pub type_error: bool,
  /// Its `name`, when neither `Error` nor `TypeError`.
  pub name: Option<&'static str>,
}

pub fn v(json: Json) -> V {
  V::from_json(&json)
}

pub fn error(message: &str) -> V {
  V::Error(Rc::new(FakeError {
    message: message.to_string(),
    type_error: false,
    name: None,
  }))
}

impl V {
  pub fn from_json(json: &Json) -> V {
    match json {
      Json::Null => V::Null,
      Json::Bool(b) => V::Bool(*b),
      Json::Number(n) => V::Number(n.as_f64().unwrap_or(f64::NAN)),
      Json::String(s) => V::Str(s.as_str().into()),
      Json::Array(items) => V::Array(Rc::new(RefCell::new(
        items.iter().map(V::from_json).collect(),
      ))),
      Json::Object(map) => V::Object(Rc::new(RefCell::new(
        map
          .iter()
          .map(|(k, v)| (k.clone(), V::from_json(v)))
          .collect(),
      ))),
    }
  }

  /// As `JSON.stringify` would see it (undefined fields dropped); the opaque kinds become
  /// markers so records stay comparable.
  pub fn to_json(&self) -> Json {
    match self {
      V::Undefined | V::Null => Json::Null,
      V::Bool(b) => Json::Bool(*b),
      V::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => json!(*n as i64),
      V::Number(n) => json!(n),
      V::Str(s) => Json::String(s.to_string()),
      V::Array(items) => Json::Array(items.borrow().iter().map(V::to_json).collect()),
      V::Object(fields) => {
        let mut map = Map::new();
        for (name, value) in fields.borrow().iter() {
          if !matches!(value, V::Undefined) {
            map.insert(name.clone(), value.to_json());
          }
        }
        Json::Object(map)
      }
      V::Error(e) => json!({ "$error": e.message }),
      V::Transport(t) => json!({ "$transport": t.id }),
      V::Signal(_) => json!("$signal"),
      V::Promise(_) => json!("$promise"),
      V::Function | V::Callable(_) => json!("$function"),
    }
  }

  pub fn get(&self, name: &str) -> V {
    match self {
      V::Object(fields) => fields
        .borrow()
        .iter()
        .find(|(n, _)| n == name)
        .map_or(V::Undefined, |(_, v)| v.clone()),
      V::Array(items) if name == "length" => V::Number(items.borrow().len() as f64),
      V::Array(items) => name
        .parse::<usize>()
        .ok()
        .and_then(|i| items.borrow().get(i).cloned())
        .unwrap_or(V::Undefined),
      V::Error(e) => match name {
        "message" => V::Str(e.message.as_str().into()),
        "name" if e.name.is_some() => V::Str(e.name.unwrap_or_default().into()),
        "name" if e.type_error => V::Str("TypeError".into()),
        "name" => V::Str("Error".into()),
        _ => V::Undefined,
      },
      // What makes a value an AbortSignal to the argument checks (T8).
      V::Signal(_) if name == "addEventListener" => V::Function,
      _ => V::Undefined,
    }
  }

  /// An own field, even one set to `undefined`.
  pub fn has(&self, name: &str) -> bool {
    match self {
      V::Object(fields) => fields.borrow().iter().any(|(n, _)| n == name),
      _ => false,
    }
  }

  pub fn keys(&self) -> Vec<String> {
    match self {
      V::Object(fields) => fields.borrow().iter().map(|(n, _)| n.clone()).collect(),
      _ => Vec::new(),
    }
  }

  /// Sets an own field, in place when it exists (order kept), like JS assignment.
  pub fn set(&self, name: &str, value: V) {
    if let V::Object(fields) = self {
      let mut fields = fields.borrow_mut();
      match fields.iter_mut().find(|(n, _)| n == name) {
        Some(field) => field.1 = value,
        None => fields.push((name.to_string(), value)),
      }
    }
  }

  pub fn delete(&self, name: &str) {
    if let V::Object(fields) = self {
      fields.borrow_mut().retain(|(n, _)| n != name);
    }
  }

  /// `===`: primitives by value, everything else by identity.
  pub fn same(&self, other: &V) -> bool {
    match (self, other) {
      (V::Undefined, V::Undefined) | (V::Null, V::Null) => true,
      (V::Bool(a), V::Bool(b)) => a == b,
      (V::Number(a), V::Number(b)) => a == b,
      (V::Str(a), V::Str(b)) => a == b,
      (V::Object(a), V::Object(b)) => Rc::ptr_eq(a, b),
      (V::Array(a), V::Array(b)) => Rc::ptr_eq(a, b),
      (V::Error(a), V::Error(b)) => Rc::ptr_eq(a, b),
      (V::Transport(a), V::Transport(b)) => Rc::ptr_eq(a, b),
      (V::Signal(a), V::Signal(b)) => Rc::ptr_eq(a, b),
      (V::Promise(a), V::Promise(b)) => Rc::ptr_eq(a, b),
      (V::Function, V::Function) => true,
      (V::Callable(a), V::Callable(b)) => Rc::ptr_eq(a, b),
      _ => false,
    }
  }

  pub fn text(&self) -> Option<String> {
    match self {
      V::Str(s) => Some(s.to_string()),
      _ => None,
    }
  }

  /// The elements of an array; nothing for anything else.
  pub fn items(&self) -> Vec<V> {
    match self {
      V::Array(items) => items.borrow().clone(),
      _ => Vec::new(),
    }
  }

  pub fn transport(&self) -> Option<Rc<FakeTransport>> {
    match self {
      V::Transport(t) => Some(t.clone()),
      _ => None,
    }
  }

  /// An error's message; panics on anything else, so a test notices a wrong kind of value.
  pub fn message(&self) -> String {
    match self {
      V::Error(e) => e.message.clone(),
      other => panic!("not an error: {other:?}"),
    }
  }

  pub fn is_type_error(&self) -> bool {
    matches!(self, V::Error(e) if e.type_error)
  }

  pub fn object(fields: Vec<(&str, V)>) -> V {
    let object = V::Object(Rc::new(RefCell::new(Vec::new())));
    for (name, value) in fields {
      object.set(name, value);
    }
    object
  }

  fn array(items: Vec<V>) -> V {
    V::Array(Rc::new(RefCell::new(items)))
  }
}

impl fmt::Debug for V {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      V::Undefined => write!(f, "undefined"),
      V::Error(e) if e.type_error => write!(f, "TypeError({:?})", e.message),
      V::Error(e) => write!(f, "Error({:?})", e.message),
      other => write!(f, "{}", other.to_json()),
    }
  }
}

/// A transport object; the manager's hooks are installed on it by `watch`.
pub struct FakeTransport {
  pub id: u64,
  /// The script it follows.
  pub key: String,
  closed: Cell<bool>,
  on_close: RefCell<Vec<Rc<dyn Fn()>>>,
  on_notification: RefCell<Vec<NotificationHook<V>>>,
}

impl FakeTransport {
  pub fn is_closed(&self) -> bool {
    self.closed.get()
  }

  /// Marks it closed and runs the `onClose` hooks, once, as a real transport does on any
  /// close (requested or not). Synchronously, as a JS test double may.
  fn shut(&self) {
    if self.closed.replace(true) {
      return;
    }
    let hooks = self.on_close.borrow().clone();
    for hook in hooks {
      hook();
    }
  }
}

#[derive(Default)]
pub struct FakeSignal {
  reason: RefCell<Option<V>>,
  listeners: RefCell<Vec<oneshot::Sender<V>>>,
}

impl FakeSignal {
  pub fn abort(&self, reason: V) {
    if self.reason.borrow().is_some() {
      return;
    }
    *self.reason.borrow_mut() = Some(reason.clone());
    for listener in self.listeners.take() {
      let _ = listener.send(reason.clone());
    }
  }
}

pub fn signal() -> (Rc<FakeSignal>, V) {
  let signal = Rc::new(FakeSignal::default());
  (signal.clone(), V::Signal(signal))
}

/// A promise as `waitForConnection` hands it out: settled once, awaitable many times.
#[derive(Default)]
pub struct FakePromise {
  outcome: RefCell<Option<Result<V, V>>>,
  wakers: RefCell<Vec<Waker>>,
}

impl FakePromise {
  pub fn outcome(&self) -> Option<Result<V, V>> {
    self.outcome.borrow().clone()
  }

  fn settle(&self, outcome: Result<V, V>) {
    if self.outcome.borrow().is_some() {
      return;
    }
    *self.outcome.borrow_mut() = Some(outcome);
    for waker in self.wakers.take() {
      waker.wake();
    }
  }

  pub fn wait(self: &Rc<Self>) -> LocalBoxFuture<'static, Result<V, V>> {
    let promise = self.clone();
    Box::pin(poll_fn(move |context| match promise.outcome() {
      Some(outcome) => Poll::Ready(outcome),
      None => {
        promise.wakers.borrow_mut().push(context.waker().clone());
        Poll::Pending
      }
    }))
  }
}

impl V {
  pub fn promise(&self) -> Rc<FakePromise> {
    match self {
      V::Promise(p) => p.clone(),
      other => panic!("not a promise: {other:?}"),
    }
  }
}

/// The manager's waiter; like the JS one it rejects when dropped unsettled.
pub struct FakeWaiter(Rc<FakePromise>);

impl Drop for FakeWaiter {
  fn drop(&mut self) {
    self.0.settle(Err(error("MCP server connection abandoned")));
  }
}

/// How one scripted operation ends.
#[derive(Clone, Debug)]
pub enum Reply {
  /// After this many ms, with this result.
  Ok(u64, Json),
  /// After this many ms, with an `Error` of this message.
  Err(u64, String),
  Never,
}

impl Reply {
  pub fn ok(json: Json) -> Self {
    Reply::Ok(0, json)
  }

  pub fn err(message: &str) -> Self {
    Reply::Err(0, message.to_string())
  }

  fn run(self) -> Pending<V> {
    Box::pin(async move {
      let (delay, outcome) = match self {
        Reply::Never => return std::future::pending().await,
        Reply::Ok(delay, json) => (delay, Ok(V::from_json(&json))),
        Reply::Err(delay, message) => (delay, Err(error(&message))),
      };
      if delay > 0 {
        tokio::time::sleep(ms(delay)).await;
      }
      outcome
    })
  }
}

/// What a server does. Read at the time of each call, so a test can change it midway.
#[derive(Clone, Debug)]
pub struct Script {
  pub create: Reply,
  /// A25: how creating the legacy HTTP+SSE transport ends (recorded as `legacy:<key>`).
  pub legacy_create: Reply,
  pub initialize: Reply,
  pub initialized: Reply,
  /// `tools/list` pages by the cursor asked for (`None`: the first page).
  pub pages: Vec<(Option<String>, Reply)>,
  pub call: Reply,
  pub close: Reply,
}

pub fn initialize_result(server: &str) -> Json {
  json!({
    "protocolVersion": "2025-03-26",
    "capabilities": { "tools": {} },
    "serverInfo": { "name": server, "version": "1.0.0" },
  })
}

pub fn tool_definitions(names: &[&str]) -> Json {
  let tools: Vec<Json> = names
    .iter()
    .map(|name| json!({ "name": name, "inputSchema": { "type": "object" } }))
    .collect();
  Json::Array(tools)
}

impl Script {
  pub fn new(server: &str) -> Self {
    Script {
      create: Reply::ok(Json::Null),
      legacy_create: Reply::ok(Json::Null),
      initialize: Reply::ok(initialize_result(server)),
      initialized: Reply::ok(Json::Null),
      pages: vec![(None, Reply::ok(json!({ "tools": [] })))],
      call: Reply::ok(json!({ "content": [] })),
      close: Reply::ok(Json::Null),
    }
  }

  /// One page with these tools.
  pub fn tools(mut self, names: &[&str]) -> Self {
    self.pages = vec![(None, Reply::ok(json!({ "tools": tool_definitions(names) })))];
    self
  }

  /// `initialize` answers normally after `delay` ms.
  pub fn slow(mut self, delay: u64) -> Self {
    if let Reply::Ok(_, result) = self.initialize {
      self.initialize = Reply::Ok(delay, result);
    }
    self
  }

  /// `tools/list` answers its first page after `delay` ms.
  pub fn slow_tools(mut self, delay: u64) -> Self {
    if let Some((_, Reply::Ok(_, result))) = self.pages.first().cloned() {
      self.pages[0].1 = Reply::Ok(delay, result);
    }
    self
  }

  pub fn initialize(mut self, reply: Reply) -> Self {
    self.initialize = reply;
    self
  }

  pub fn create(mut self, reply: Reply) -> Self {
    self.create = reply;
    self
  }

  pub fn close(mut self, reply: Reply) -> Self {
    self.close = reply;
    self
  }
}

#[derive(Clone, Debug)]
pub struct Sent {
  pub key: String,
  pub transport: u64,
  pub method: String,
  pub params: Json,
  pub options: Option<Json>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Log {
  pub level: Level,
  pub message: String,
  pub server: String,
  pub error: Option<String>,
}

#[derive(Default)]
pub struct Records {
  /// `create_transport` calls, by script key.
  pub creates: Vec<String>,
  /// The transports created, in order.
  pub transports: Vec<Rc<FakeTransport>>,
  pub sent: Vec<Sent>,
  /// `notify` calls: transport id, method.
  pub notified: Vec<(u64, String)>,
  /// `close` calls, by transport id.
  pub closed: Vec<u64>,
  /// `start_listener` calls, by transport id.
  pub listeners: Vec<u64>,
  pub logs: Vec<Log>,
  pub cache_gets: Vec<(String, V)>,
  pub cache_sets: Vec<(String, V, Json)>,
  /// `prepare_config` calls, with the config as given.
  pub prepared: Vec<V>,
  /// `ManagerHost::connect` calls: name, resolved config.
  pub connects: Vec<(String, V)>,
  /// The options each of those calls was given.
  pub connect_options: Vec<Json>,
  pub aborts: usize,
  pub watched: Vec<String>,
  pub refreshes: Vec<String>,
  /// `deferred_tools` calls: name, source.
  pub deferred: Vec<(String, Option<V>)>,
  /// `on_connecting` of `connect_servers` through the host.
  pub connecting: Vec<Vec<String>>,
}

/// `options.connect`: the host, the name and the resolved config.
pub type CustomConnect = Rc<dyn Fn(&FakeHost, &str, &V) -> Pending<V>>;
/// `options.resolveConfigValue`.
pub type Resolver = Rc<dyn Fn(&str) -> Result<V, V>>;

#[derive(Default)]
struct Inner {
  scripts: RefCell<HashMap<String, Script>>,
  next_id: Cell<u64>,
  records: RefCell<Records>,
  settings: RefCell<Settings>,
  /// `None`: no tool cache.
  cache: RefCell<Option<HashMap<String, Json>>>,
  cache_set_error: RefCell<Option<String>>,
  custom_connect: RefCell<Option<CustomConnect>>,
  /// `None`: no auth storage.
  credentials: RefCell<Option<HashMap<String, Json>>>,
  resolver: RefCell<Option<Resolver>>,
  environment: RefCell<HashMap<String, String>>,
  /// What `loadConfigs` answers; `None`: no loader.
  loaded: RefCell<Option<Json>>,
  manager: RefCell<Weak<Manager<FakeHost>>>,
  /// Options beyond `Settings` (functions, objects), in the order set.
  extra_options: RefCell<Vec<(String, V)>>,
}

#[derive(Clone, Default)]
pub struct FakeHost(Rc<Inner>);

pub fn config_key(config: &V) -> String {
  config
    .get("command")
    .text()
    .or_else(|| config.get("url").text())
    .unwrap_or_default()
}

/// `config.timeout ?? 30000`; 0 means none (C1).
fn connect_timeout(config: &V) -> Option<Duration> {
  match config.get("timeout") {
    V::Number(0.0) => None,
    V::Number(n) => Some(Duration::from_secs_f64(n / 1000.0)),
    _ => Some(ms(30000)),
  }
}

/// The core's `connectToServer` over the fake, as a custom `connect` may call it.
pub fn core_connect(host: &FakeHost, name: &str, config: &V) -> Pending<V> {
  let request = ConnectRequest {
    name: name.to_string(),
    config: config.clone(),
    client: ClientOptions::default(),
    features: Default::default(),
    signal: None,
    timeout: connect_timeout(config),
    legacy_sse: false,
  };
  Box::pin(crate::client::connect(host.clone(), request))
}

impl FakeHost {
  /// The core tests were written for the v12 manager; v18's differences are set per test.
  pub fn new() -> Self {
    let host = FakeHost::default();
    host.settings_mut().compat = crate::manager::host::Compat::V12;
    host
  }

  /// The manager over this host; the host calls back into it as JS calls `this` (W1).
  pub fn manager(&self) -> Rc<Manager<FakeHost>> {
    self.manager_in("/project")
  }

  pub fn manager_in(&self, cwd: &str) -> Rc<Manager<FakeHost>> {
    let manager = Manager::new(self.clone(), cwd.to_string());
    *self.0.manager.borrow_mut() = Rc::downgrade(&manager);
    manager
  }

  fn this(&self) -> Result<Rc<Manager<FakeHost>>, V> {
    self
      .0
      .manager
      .borrow()
      .upgrade()
      .ok_or_else(|| error("The MCPManager object is gone"))
  }

  pub fn script(&self, key: &str, script: Script) {
    self.0.scripts.borrow_mut().insert(key.to_string(), script);
  }

  pub fn edit(&self, key: &str, edit: impl FnOnce(&mut Script)) {
    let mut scripts = self.0.scripts.borrow_mut();
    let script = scripts
      .entry(key.to_string())
      .or_insert_with(|| Script::new(key));
    edit(script);
  }

  fn script_of(&self, key: &str) -> Script {
    self
      .0
      .scripts
      .borrow()
      .get(key)
      .cloned()
      .unwrap_or_else(|| Script::new(key))
  }

  /// `options[name] = value`, for what `Settings` cannot hold.
  pub fn set_option(&self, name: &str, value: V) {
    self
      .0
      .extra_options
      .borrow_mut()
      .push((name.to_string(), value));
  }

  pub fn settings_mut(&self) -> RefMut<'_, Settings> {
    self.0.settings.borrow_mut()
  }

  pub fn records(&self) -> Ref<'_, Records> {
    self.0.records.borrow()
  }

  fn record(&self) -> RefMut<'_, Records> {
    self.0.records.borrow_mut()
  }

  /// A tool cache holding these listings.
  pub fn cache(&self, entries: &[(&str, Json)]) {
    let map = entries
      .iter()
      .map(|(name, tools)| (name.to_string(), tools.clone()))
      .collect();
    *self.0.cache.borrow_mut() = Some(map);
  }

  pub fn fail_cache_writes(&self, message: &str) {
    *self.0.cache_set_error.borrow_mut() = Some(message.to_string());
  }

  pub fn custom_connect(&self, connect: CustomConnect) {
    *self.0.custom_connect.borrow_mut() = Some(connect);
  }

  pub fn credentials(&self, entries: &[(&str, Json)]) {
    let map = entries
      .iter()
      .map(|(id, credential)| (id.to_string(), credential.clone()))
      .collect();
    *self.0.credentials.borrow_mut() = Some(map);
  }

  pub fn resolver(&self, resolver: Resolver) {
    *self.0.resolver.borrow_mut() = Some(resolver);
  }

  pub fn environment(&self, entries: &[(&str, &str)]) {
    *self.0.environment.borrow_mut() = entries
      .iter()
      .map(|(k, v)| (k.to_string(), v.to_string()))
      .collect();
  }

  pub fn load_configs_with(&self, loaded: Json) {
    *self.0.loaded.borrow_mut() = Some(loaded);
  }

  pub fn transports_of(&self, key: &str) -> Vec<Rc<FakeTransport>> {
    let records = self.records();
    let of_key = records.transports.iter().filter(|t| t.key == key);
    of_key.cloned().collect()
  }

  pub fn latest_transport(&self, key: &str) -> Rc<FakeTransport> {
    let transports = self.transports_of(key);
    let latest = transports.last().cloned();
    latest.unwrap_or_else(|| panic!("no transport for {key}"))
  }

  /// The server's latest transport dies on its own (its process exited).
  pub fn kill(&self, key: &str) {
    self.latest_transport(key).shut();
  }

  /// The server's latest transport delivers a notification.
  pub fn notify_from(&self, key: &str, method: &str) {
    self.notify_with(key, method, V::Undefined);
  }

  /// The same, with params.
  pub fn notify_with(&self, key: &str, method: &str, params: V) {
    let hooks = self.latest_transport(key).on_notification.borrow().clone();
    for hook in hooks {
      hook(method, params.clone());
    }
  }

  /// The methods requested of `key`'s transports, in order.
  pub fn methods(&self, key: &str) -> Vec<String> {
    let records = self.records();
    let sent = records.sent.iter().filter(|s| s.key == key);
    sent.map(|s| s.method.clone()).collect()
  }

  pub fn logs(&self) -> Vec<Log> {
    self.records().logs.clone()
  }

  pub fn connect_count(&self) -> usize {
    self.records().connects.len()
  }

  fn next_id(&self) -> u64 {
    let id = self.0.next_id.get() + 1;
    self.0.next_id.set(id);
    id
  }

  /// The default tools (M5) as plain objects, without `execute` (tests call
  /// `manager::tools::execute` themselves).
  fn build_tools(&self, server: &str, definitions: &V, deferred: bool) -> Result<V, V> {
    let compat = crate::manager::host::Settings::read(self, self.options().as_ref()).compat;
    let tools = default_tools(self, server, definitions, compat)?
      .into_iter()
      .map(|spec| {
        V::object(vec![
          ("name", V::Str(spec.name.as_str().into())),
          ("label", V::Str(spec.label.as_str().into())),
          ("description", V::Str(spec.description.as_str().into())),
          ("parameters", spec.parameters),
          ("mcpServerName", V::Str(spec.server.as_str().into())),
          ("mcpToolName", V::Str(spec.tool.as_str().into())),
          ("deferred", V::Bool(deferred)),
        ])
      })
      .collect();
    Ok(V::array(tools))
  }
}

fn ready(outcome: Result<V, V>) -> Pending<V> {
  Box::pin(std::future::ready(outcome))
}

impl Values for FakeHost {
  type Value = V;

  fn undefined(&self) -> V {
    V::Undefined
  }

  fn string(&self, text: &str) -> V {
    V::Str(text.into())
  }

  fn number(&self, value: f64) -> V {
    V::Number(value)
  }

  fn json(&self, text: &str) -> Result<V, V> {
    serde_json::from_str::<Json>(text)
      .map(|json| V::from_json(&json))
      .map_err(|e| error(&e.to_string()))
  }

  fn object(&self, fields: Vec<(&str, V)>) -> Result<V, V> {
    Ok(V::object(fields))
  }

  fn array(&self, items: Vec<V>) -> Result<V, V> {
    Ok(V::array(items))
  }

  /// A `Map` is a plain object here: what the flows ask of one is its entries.
  fn map(&self, entries: Vec<(String, V)>) -> Result<V, V> {
    Ok(V::Object(Rc::new(RefCell::new(entries))))
  }

  fn shallow_copy(&self, object: &V) -> Result<V, V> {
    let fields = match object {
      V::Object(fields) => fields.borrow().clone(),
      _ => Vec::new(),
    };
    Ok(V::Object(Rc::new(RefCell::new(fields))))
  }

  fn field(&self, value: &V, name: &str) -> Result<V, V> {
    Ok(value.get(name))
  }

  fn set_field(&self, object: &V, name: &str, value: V) -> Result<(), V> {
    match object {
      V::Object(_) => {
        object.set(name, value);
        Ok(())
      }
      V::Undefined | V::Null => Err(self.type_error(&format!(
        "Cannot set properties of {object:?} (setting '{name}')"
      ))),
      // A fake transport's `onNotification` joins the hooks its notifications reach.
      V::Transport(transport) if name == "onNotification" => {
        if let V::Callable(listener) = value {
          transport
            .on_notification
            .borrow_mut()
            .push(Rc::new(move |method: &str, params: V| {
              drop(listener(vec![V::Str(method.into()), params]));
            }));
        }
        Ok(())
      }
      _ => Ok(()),
    }
  }

  fn is_undefined(&self, value: &V) -> bool {
    matches!(value, V::Undefined)
  }

  fn is_nullish(&self, value: &V) -> bool {
    matches!(value, V::Undefined | V::Null)
  }

  fn is_object(&self, value: &V) -> bool {
    matches!(
      value,
      V::Object(_) | V::Array(_) | V::Error(_) | V::Transport(_) | V::Signal(_) | V::Promise(_)
    )
  }

  fn truthy(&self, value: &V) -> bool {
    match value {
      V::Undefined | V::Null => false,
      V::Bool(b) => *b,
      V::Number(n) => *n != 0.0 && !n.is_nan(),
      V::Str(s) => !s.is_empty(),
      _ => true,
    }
  }

  fn is_function(&self, value: &V) -> bool {
    matches!(value, V::Function | V::Callable(_))
  }

  fn is_error(&self, value: &V) -> bool {
    matches!(value, V::Error(_))
  }

  fn as_string(&self, value: &V) -> Option<String> {
    value.text()
  }

  fn as_number(&self, value: &V) -> Option<f64> {
    match value {
      V::Number(n) => Some(*n),
      _ => None,
    }
  }

  fn as_bool(&self, value: &V) -> Option<bool> {
    match value {
      V::Bool(b) => Some(*b),
      _ => None,
    }
  }

  fn to_json(&self, value: &V) -> Result<Option<String>, V> {
    Ok(
      (!matches!(value, V::Undefined | V::Function | V::Callable(_)))
        .then(|| value.to_json().to_string()),
    )
  }

  fn keys(&self, object: &V) -> Result<Vec<String>, V> {
    Ok(object.keys())
  }

  fn delete_field(&self, object: &V, name: &str) {
    if let V::Object(fields) = object {
      fields.borrow_mut().retain(|(n, _)| n != name);
    }
  }

  fn items(&self, value: &V) -> Option<Vec<V>> {
    matches!(value, V::Array(_)).then(|| value.items())
  }

  fn error(&self, message: &str) -> V {
    error(message)
  }

  fn type_error(&self, message: &str) -> V {
    V::Error(Rc::new(FakeError {
      message: message.to_string(),
      type_error: true,
      name: None,
    }))
  }

  fn message(&self, error: &V) -> String {
    match error {
      V::Error(e) => e.message.clone(),
      V::Str(s) => s.to_string(),
      other => other.to_json().to_string(),
    }
  }
}

impl Clock for FakeHost {
  fn sleep(&self, delay: Duration) -> LocalBoxFuture<'static, ()> {
    Box::pin(tokio::time::sleep(delay))
  }

  fn spawn(&self, work: LocalBoxFuture<'static, ()>) {
    tokio::task::spawn_local(work);
  }
}

impl Transports for FakeHost {
  fn connect_timeout_error(&self, _name: &str, _timeout_ms: f64, message: &str) -> V {
    V::Error(Rc::new(FakeError {
      message: message.to_string(),
      type_error: false,
      name: Some(crate::client::CONNECT_TIMEOUT_ERROR),
    }))
  }

  fn create_transport(&self, config: &V) -> Pending<V> {
    self.create_transport_as(config, false)
  }

  fn create_transport_as(&self, config: &V, legacy_sse: bool) -> Pending<V> {
    let key = config_key(config);
    let script = self.script_of(&key);
    let (recorded, creating) = if legacy_sse {
      (format!("legacy:{key}"), script.legacy_create.run())
    } else {
      (key.clone(), script.create.run())
    };
    self.record().creates.push(recorded);
    let host = self.clone();
    Box::pin(async move {
      creating.await?;
      let transport = Rc::new(FakeTransport {
        id: host.next_id(),
        key,
        closed: Cell::new(false),
        on_close: RefCell::new(Vec::new()),
        on_notification: RefCell::new(Vec::new()),
      });
      host.record().transports.push(transport.clone());
      Ok(V::Transport(transport))
    })
  }

  fn request(&self, transport: &V, method: &str, params: V, options: Option<V>) -> Pending<V> {
    let Some(transport) = transport.transport() else {
      return ready(Err(
        self.type_error("The transport has no \"request\" method"),
      ));
    };
    self.record().sent.push(Sent {
      key: transport.key.clone(),
      transport: transport.id,
      method: method.to_string(),
      params: params.to_json(),
      options: options.as_ref().map(V::to_json),
    });
    if transport.is_closed() {
      return ready(Err(error("Transport not connected")));
    }
    let script = self.script_of(&transport.key);
    let reply = match method {
      "initialize" => script.initialize,
      "tools/list" => {
        let cursor = params.get("cursor").text();
        let page = script.pages.into_iter().find(|(c, _)| *c == cursor);
        page.map_or_else(
          || Reply::Err(0, format!("no page for cursor {cursor:?}")),
          |(_, reply)| reply,
        )
      }
      "tools/call" => script.call,
      other => Reply::Err(0, format!("MCP error -32601: Method not found: {other}")),
    };
    reply.run()
  }

  fn notify(&self, transport: &V, method: &str) -> Pending<V> {
    let Some(transport) = transport.transport() else {
      return ready(Err(
        self.type_error("The transport has no \"notify\" method"),
      ));
    };
    self
      .record()
      .notified
      .push((transport.id, method.to_string()));
    if transport.is_closed() {
      return ready(Err(error("Transport not connected")));
    }
    self.script_of(&transport.key).initialized.run()
  }

  fn close(&self, transport: &V) -> Pending<V> {
    let Some(transport) = transport.transport() else {
      return ready(Err(
        self.type_error("The transport has no \"close\" method"),
      ));
    };
    self.record().closed.push(transport.id);
    let closing = self.script_of(&transport.key).close.run();
    transport.shut();
    closing
  }

  fn attach_connection(&self, _transport: &V, _connection: &V) {}

  fn start_listener(&self, transport: &V, _filter: Option<&V>) {
    if let V::Transport(t) = transport {
      self.record().listeners.push(t.id);
    }
  }

  fn listen(&self, transport: &V) -> Pending<V> {
    self.start_listener(transport, None);
    ready(Ok(V::Undefined))
  }
}

impl Callbacks for FakeHost {
  fn call(&self, function: &V, args: Vec<V>) -> Pending<V> {
    match function {
      V::Callable(body) => body(args),
      _ => {
        let error = self.type_error("not a function");
        Box::pin(std::future::ready(Err(error)))
      }
    }
  }

  fn call_method(&self, object: &V, name: &str, args: Vec<V>) -> Pending<V> {
    self.call(&object.get(name), args)
  }

  /// A fake function answers at once or not at all: one still pending is an error here.
  fn call_now(&self, object: &V, name: &str, args: Vec<V>) -> Result<V, V> {
    use futures::FutureExt;
    self
      .call_method(object, name, args)
      .now_or_never()
      .unwrap_or_else(|| Err(error("a fake function did not answer at once")))
  }

  fn function(&self, _name: &str, body: HostFn<V>) -> Result<V, V> {
    Ok(V::Callable(body))
  }

  fn procedure(&self, _name: &str, body: Rc<dyn Fn()>) -> Result<V, V> {
    Ok(V::Callable(Rc::new(move |_| {
      body();
      Box::pin(std::future::ready(Ok(V::Undefined)))
    })))
  }
}

impl Signals for FakeHost {
  fn abort_reason(&self, signal: &V) -> Option<V> {
    match signal {
      V::Signal(s) => s.reason.borrow().clone(),
      _ => None,
    }
  }

  fn when_aborted(&self, signal: &V) -> LocalBoxFuture<'static, V> {
    let V::Signal(signal) = signal else {
      return Box::pin(std::future::pending());
    };
    if let Some(reason) = signal.reason.borrow().clone() {
      return Box::pin(std::future::ready(reason));
    }
    let (sender, receiver) = oneshot::channel();
    signal.listeners.borrow_mut().push(sender);
    Box::pin(async move {
      match receiver.await {
        Ok(reason) => reason,
        Err(_) => std::future::pending().await,
      }
    })
  }
}

impl ManagerHost for FakeHost {
  type Waiter = FakeWaiter;

  /// As the binding's `prepareConfig`: a copy with the resolved entries (M3, W6).
  fn prepare_config(&self, config: &V) -> Pending<V> {
    self.record().prepared.push(config.clone());
    let host = self.clone();
    let config = config.clone();
    Box::pin(async move {
      let copy = host.shallow_copy(&config)?;
      let prepared = prepare_entries(&host, &config.to_json()).await;
      let original = copy.get(prepared.field);
      let entries = host.shallow_copy(&original)?;
      for (key, value) in prepared.updates {
        match value {
          Some(value) => entries.set(&key, V::Str(value.as_str().into())),
          None => entries.delete(&key),
        }
      }
      if !host.is_nullish(&original) || !entries.keys().is_empty() {
        copy.set(prepared.field, entries);
      }
      Ok(copy)
    })
  }

  fn refresh_server_tools(&self, name: &str) -> Pending<V> {
    self.record().refreshes.push(name.to_string());
    let host = self.clone();
    let name = name.to_string();
    Box::pin(async move {
      host.this()?.refresh_server_tools(&name).await?;
      Ok(V::Undefined)
    })
  }

  fn resolve_credentials(&self, config: &V, _force_refresh: bool) -> Pending<V> {
    let host = self.clone();
    let config = config.clone();
    Box::pin(async move { crate::manager::inject_credential(&host, &config).await })
  }

  fn has_refreshable_credential(&self, config: &V) -> bool {
    crate::manager::names_a_credential(self, config)
  }

  fn set_auth_refresh(&self, _connection: &V, _refresh: crate::host::HostFn<V>) {}

  fn has_credential_store(&self) -> bool {
    self.0.credentials.borrow().is_some()
  }

  fn refresh_server_resources(&self, name: &str) -> Pending<V> {
    self.record().refreshes.push(format!("resources {name}"));
    ready(Ok(V::Undefined))
  }

  fn refresh_server_prompts(&self, name: &str) -> Pending<V> {
    self.record().refreshes.push(format!("prompts {name}"));
    ready(Ok(V::Undefined))
  }

  fn reconnect_server(&self, name: &str, options: Option<&V>) -> Pending<V> {
    let manager = match self.this() {
      Ok(manager) => manager,
      Err(error) => return ready(Err(error)),
    };
    let manual = options.is_some_and(|o| self.truthy(&o.get("manual")));
    let challenge = options
      .map(|o| o.get("authChallenge"))
      .filter(|c| !self.is_nullish(c));
    match manager.reconnect_server(name, manual, challenge) {
      Ok(promise) => promise.promise().wait(),
      Err(error) => ready(Err(error)),
    }
  }

  fn wait_for_connection(&self, name: &str) -> Pending<V> {
    let manager = match self.this() {
      Ok(manager) => manager,
      Err(error) => return ready(Err(error)),
    };
    match manager.wait_for_connection(name) {
      Wait::Connected(connection) => ready(Ok(connection)),
      Wait::Pending(promise) => promise.promise().wait(),
      Wait::Missing(error) => ready(Err(error)),
    }
  }

  fn connect_servers(&self, configs: V, sources: V, _on_connecting: V, window: V) -> Pending<V> {
    let host = self.clone();
    Box::pin(async move {
      let entries = configs
        .keys()
        .into_iter()
        .map(|name| {
          let config = configs.get(&name);
          let source = sources.get(&name);
          Entry {
            config,
            source: (!host.is_nullish(&source)).then_some(source),
            name,
          }
        })
        .collect();
      let manager = host.this()?;
      let window = crate::manager::startup_window(&host, &window);
      let report = manager
        .connect_servers_within(entries, window, {
          let host = host.clone();
          Rc::new(move |status| {
            if let crate::manager::Status::Connecting(names) = status {
              host.record().connecting.push(names.to_vec());
            }
          })
        })
        .await?;
      let errors = V::object(Vec::new());
      for (name, message) in &report.errors {
        errors.set(name, V::Str(message.as_str().into()));
      }
      let connected = report
        .connected
        .iter()
        .map(|name| V::Str(name.as_str().into()))
        .collect();
      Ok(V::object(vec![
        ("tools", report.tools),
        ("errors", errors),
        ("connectedServers", V::array(connected)),
        ("exaApiKeys", V::array(Vec::new())),
      ]))
    })
  }

  fn custom_connect(&self, name: &str, config: &V) -> Option<Pending<V>> {
    let custom = self.0.custom_connect.borrow().clone()?;
    self
      .record()
      .connects
      .push((name.to_string(), config.clone()));
    // A JS promise runs whether or not anyone still awaits it.
    let (sender, receiver) = oneshot::channel();
    let work = custom(self, name, config);
    tokio::task::spawn_local(async move {
      let _ = sender.send(work.await);
    });
    let answer = async move {
      receiver
        .await
        .unwrap_or_else(|_| Err(error("connect dropped")))
    };
    Some(Box::pin(answer))
  }

  fn abort_controller(&self) -> Result<Option<crate::manager::host::Controller<V>>, V> {
    let (_, controller) = signal();
    Ok(Some(crate::manager::host::Controller {
      signal: controller.clone(),
      controller,
    }))
  }

  fn connect(&self, name: &str, config: &V, options: V) -> Pending<V> {
    let mut records = self.record();
    records.connects.push((name.to_string(), config.clone()));
    records.connect_options.push(options.to_json());
    drop(records);
    let signal = options.get("signal");
    // A64: the manager's early listener, set on the transport before `initialize`.
    let on_notification = options.get("onNotification");
    let request = ConnectRequest {
      name: name.to_string(),
      config: config.clone(),
      client: ClientOptions::default(),
      features: crate::client::features::ClientFeatures {
        on_notification: matches!(on_notification, V::Callable(_)).then_some(on_notification),
        ..Default::default()
      },
      signal: (!matches!(signal, V::Undefined)).then_some(signal),
      timeout: connect_timeout(config),
      legacy_sse: false,
    };
    Box::pin(crate::client::connect(self.clone(), request))
  }

  fn abort(&self, controller: &V) {
    self.record().aborts += 1;
    if let V::Signal(signal) = controller {
      signal.abort(error("This operation was aborted"));
    }
  }

  fn live_tools(
    &self,
    name: &str,
    _connection: &V,
    definitions: &V,
    _reconnect: Option<&V>,
  ) -> Result<V, V> {
    self.build_tools(name, definitions, false)
  }

  fn deferred_tools(
    &self,
    name: &str,
    definitions: &V,
    source: Option<&V>,
    _reconnect: Option<&V>,
  ) -> Result<V, V> {
    self
      .record()
      .deferred
      .push((name.to_string(), source.cloned()));
    self.build_tools(name, definitions, true)
  }

  fn cache_get(&self, name: &str, config: &V) -> Option<Pending<V>> {
    let cached = {
      let cache = self.0.cache.borrow();
      cache.as_ref()?.get(name).cloned()
    };
    self
      .record()
      .cache_gets
      .push((name.to_string(), config.clone()));
    Some(ready(Ok(
      cached.map_or(V::Null, |json| V::from_json(&json)),
    )))
  }

  fn cache_set(&self, name: &str, config: &V, definitions: &V) -> Option<Pending<V>> {
    let json = definitions.to_json();
    self.0.cache.borrow_mut().as_mut()?;
    self
      .record()
      .cache_sets
      .push((name.to_string(), config.clone(), json.clone()));
    if let Some(message) = self.0.cache_set_error.borrow().clone() {
      return Some(ready(Err(error(&message))));
    }
    if let Some(cache) = self.0.cache.borrow_mut().as_mut() {
      cache.insert(name.to_string(), json);
    }
    Some(ready(Ok(V::Undefined)))
  }

  fn notification_listener(&self, _server: &str, hook: NotificationHook<V>) -> Result<V, V> {
    Ok(V::Callable(Rc::new(move |args: Vec<V>| {
      let method = match args.first() {
        Some(V::Str(method)) => method.to_string(),
        _ => String::new(),
      };
      hook(&method, args.get(1).cloned().unwrap_or(V::Undefined));
      Box::pin(std::future::ready(Ok(V::Undefined)))
    })))
  }

  fn watch(&self, connection: &V, watch: Watch<V>) -> Result<(), V> {
    self.record().watched.push(watch.server.clone());
    if let Some(transport) = connection.get("transport").transport() {
      transport.on_close.borrow_mut().push(watch.on_close);
      if let Some(hook) = watch.on_notification {
        transport.on_notification.borrow_mut().push(hook);
      }
    }
    Ok(())
  }

  fn log(&self, level: Level, message: &str, server: &str, error: Option<&str>) {
    self.record().logs.push(Log {
      level,
      message: message.to_string(),
      server: server.to_string(),
      error: error.map(str::to_string),
    });
  }

  /// The typed settings a test set, as the options object a caller would pass.
  fn options(&self) -> Option<V> {
    let settings = self.0.settings.borrow().clone();
    let ms = |d: Duration| V::Number(d.as_secs_f64() * 1000.0);
    let mut fields = Vec::new();
    if let Some(timeout) = settings.startup_timeout {
      fields.push(("startupTimeoutMs", ms(timeout)));
    }
    if let Some(policy) = settings.reconnect {
      let reconnect = V::object(vec![
        ("maxAttempts", V::Number(f64::from(policy.max_attempts))),
        ("initialDelayMs", ms(policy.initial_delay)),
        ("maxDelayMs", ms(policy.max_delay)),
      ]);
      fields.push(("reconnect", reconnect));
    }
    if settings.forwards_notifications {
      fields.push(("onNotification", V::Function));
    }
    let mut policy = vec![
      ("retryBaseMs", ms(settings.retry_base)),
      ("retryMaxMs", ms(settings.retry_max)),
    ];
    if let Some(ladder) = settings.ladder {
      let waits = V::Array(Rc::new(RefCell::new(ladder.into_iter().map(ms).collect())));
      policy.push(("ladderMs", waits));
    }
    fields.push(("reconnectPolicy", V::object(policy)));
    fields.push(("autoRefreshTools", V::Bool(settings.auto_refresh_tools)));
    if settings.compat == crate::manager::host::Compat::V12 {
      fields.push(("compat", V::Str("v12".into())));
    }
    let extra = self.0.extra_options.borrow().clone();
    fields.extend(
      extra
        .iter()
        .map(|(name, value)| (name.as_str(), value.clone())),
    );
    Some(V::object(fields))
  }

  fn waiter(&self) -> Result<FakeWaiter, V> {
    Ok(FakeWaiter(Rc::new(FakePromise::default())))
  }

  fn waiter_value(&self, waiter: &FakeWaiter) -> V {
    V::Promise(waiter.0.clone())
  }

  fn settle_waiter(&self, waiter: &FakeWaiter, outcome: Result<&V, &V>) {
    waiter.0.settle(outcome.cloned().map_err(V::clone));
  }

  fn load_configs(&self, _loader: Loader, _cwd: &str, _options: &V) -> Option<Pending<V>> {
    let loaded = self.0.loaded.borrow().clone()?;
    Some(ready(Ok(V::from_json(&loaded))))
  }

  fn credential(&self, id: &str) -> Option<Pending<V>> {
    let credentials = self.0.credentials.borrow();
    let found = credentials.as_ref()?.get(id);
    Some(ready(Ok(found.map_or(V::Undefined, V::from_json))))
  }

  fn resolve_values(&self, values: &[String]) -> Option<Vec<Pending<V>>> {
    let resolver = self.0.resolver.borrow().clone()?;
    Some(values.iter().map(|value| ready(resolver(value))).collect())
  }

  fn resolve_builtin(&self, values: Vec<String>) -> LocalBoxFuture<'static, Vec<Option<String>>> {
    let environment = self.0.environment.borrow().clone();
    Box::pin(crate::manager::value_resolution::resolve_config_values(
      values,
      environment,
    ))
  }
}
