//! What the client flows and the manager need of their host, as traits: the addon implements
//! them over JS (`binding/`), the tests over plain Rust fakes.
//!
//! The host's values (configs, transports, connections, results, errors) pass through the
//! flows untouched, so the objects a caller sees keep their identity (W3); the flows only
//! ask the few questions `Values` answers. Errors are host values too: a JS rejection stays
//! the very object that was thrown.
use std::rc::Rc;
use std::time::Duration;

use futures::future::LocalBoxFuture;

/// A host operation in flight: the host's value, or the host's error value.
pub type Pending<V> = LocalBoxFuture<'static, Result<V, V>>;

/// The host's values and what the flows ask of them.
pub trait Values: Clone + 'static {
  type Value: Clone + 'static;

  fn undefined(&self) -> Self::Value;
  fn string(&self, text: &str) -> Self::Value;
  fn number(&self, value: f64) -> Self::Value;
  /// A value parsed from JSON text.
  fn json(&self, text: &str) -> Result<Self::Value, Self::Value>;
  /// A plain object with these fields, in this order.
  fn object(&self, fields: Vec<(&str, Self::Value)>) -> Result<Self::Value, Self::Value>;
  fn array(&self, items: Vec<Self::Value>) -> Result<Self::Value, Self::Value>;
  /// A `Map` of these entries, in order.
  fn map(&self, entries: Vec<(String, Self::Value)>) -> Result<Self::Value, Self::Value>;
  /// A new plain object with the own fields of `object` (`Object.assign({}, object)`).
  fn shallow_copy(&self, object: &Self::Value) -> Result<Self::Value, Self::Value>;
  /// `value[name]`; `undefined` when `value` is neither an object nor a function.
  fn field(&self, value: &Self::Value, name: &str) -> Result<Self::Value, Self::Value>;
  fn set_field(
    &self,
    object: &Self::Value,
    name: &str,
    value: Self::Value,
  ) -> Result<(), Self::Value>;
  fn is_undefined(&self, value: &Self::Value) -> bool;
  /// `null` or `undefined`.
  fn is_nullish(&self, value: &Self::Value) -> bool;
  /// An object (arrays included; not functions, not `null`).
  fn is_object(&self, value: &Self::Value) -> bool;
  fn truthy(&self, value: &Self::Value) -> bool;
  fn is_function(&self, value: &Self::Value) -> bool;
  /// An `Error` (or an object that looks like one: `name` and `message` strings).
  fn is_error(&self, value: &Self::Value) -> bool;
  fn as_string(&self, value: &Self::Value) -> Option<String>;
  fn as_number(&self, value: &Self::Value) -> Option<f64>;
  fn as_bool(&self, value: &Self::Value) -> Option<bool>;
  /// The bytes a `Uint8Array` holds; `None` for anything else.
  fn bytes(&self, _value: &Self::Value) -> Option<Vec<u8>> {
    None
  }
  /// `JSON.stringify(value)`: `None` when it has no JSON form; `Err` with what it threw.
  fn to_json(&self, value: &Self::Value) -> Result<Option<String>, Self::Value>;
  /// Own enumerable string keys of an object, in order.
  fn keys(&self, object: &Self::Value) -> Result<Vec<String>, Self::Value>;
  /// `delete object[name]`.
  fn delete_field(&self, object: &Self::Value, name: &str);
  /// The elements, when `value` is an array.
  fn items(&self, value: &Self::Value) -> Option<Vec<Self::Value>>;
  /// An `Error` with this message.
  fn error(&self, message: &str) -> Self::Value;
  /// A `TypeError` with this message (E2).
  fn type_error(&self, message: &str) -> Self::Value;
  /// An error's `message`, or the value as text.
  fn message(&self, error: &Self::Value) -> String;
}

/// A host value as JSON, read the way `JSON.stringify` writes it: `None` when it has no
/// JSON form (or its text does not parse back), `Err` with what stringifying threw.
pub fn json_of<H: Values>(
  host: &H,
  value: &H::Value,
) -> Result<Option<serde_json::Value>, H::Value> {
  Ok(
    host
      .to_json(value)?
      .and_then(|text| serde_json::from_str(&text).ok()),
  )
}

/// Time and background work. In the addon both run on the JS thread's executor, timed by
/// tokio in real time; in tests, tokio's paused clock.
pub trait Clock {
  fn sleep(&self, delay: Duration) -> LocalBoxFuture<'static, ()>;
  /// A delay that does not keep the host alive (an unref'd timer).
  fn idle_sleep(&self, delay: Duration) -> LocalBoxFuture<'static, ()> {
    self.sleep(delay)
  }
  /// Runs `work` on its own, like a task nobody awaits.
  fn spawn(&self, work: LocalBoxFuture<'static, ()>);
}

/// An `MCPTransport` (§2) as the client flows drive it: any object with these methods (C5).
pub trait Transports: Values {
  /// §5: the transport a config asks for, connected.
  fn create_transport(&self, config: &Self::Value) -> Pending<Self::Value>;
  /// The same; with `legacy_sse`, `type: "sse"` as v18's `connectToServer` routes it (A25:
  /// the legacy transport, falling back to Streamable HTTP) rather than §5/H11.
  fn create_transport_as(&self, config: &Self::Value, _legacy_sse: bool) -> Pending<Self::Value> {
    self.create_transport(config)
  }
  fn request(
    &self,
    transport: &Self::Value,
    method: &str,
    params: Self::Value,
    options: Option<Self::Value>,
  ) -> Pending<Self::Value>;
  fn notify(&self, transport: &Self::Value, method: &str) -> Pending<Self::Value>;
  fn close(&self, transport: &Self::Value) -> Pending<Self::Value>;
  /// A47: the connect timeout's error (`message` says it), an `MCPConnectionTimeoutError`
  /// where the host has the class.
  fn connect_timeout_error(&self, _name: &str, _timeout_ms: f64, message: &str) -> Self::Value {
    self.error(message)
  }
  /// H8: starts the transport's GET listener, if it has one, without waiting for it. N7:
  /// in the stateless era, its subscription for `filter`.
  fn start_listener(&self, transport: &Self::Value, filter: Option<&Self::Value>);
  /// A26: `await transport.startSSEListener?.()`, which settles once the GET is answered.
  fn listen(&self, transport: &Self::Value) -> Pending<Self::Value>;
  /// A26: `transport.setProtocolVersion?.(version)` with the negotiated version.
  fn set_protocol_version(&self, _transport: &Self::Value, _version: &str) {}
  /// P6: tells a transport of ours which connection's cached lists its list_changed
  /// notifications make stale; other transports are left alone.
  fn attach_connection(&self, transport: &Self::Value, connection: &Self::Value);
  /// N3: switches a transport of ours to the stateless era of `version`, every request
  /// carrying `meta` (JSON text) in its `_meta`; `None` switches back. `false` for a
  /// transport that cannot (not one of ours).
  fn set_stateless(&self, _transport: &Self::Value, _era: Option<(&str, &str)>) -> bool {
    false
  }
  /// N9: one more entry (JSON text) of the stateless envelope; `false` for a transport
  /// that cannot (not one of ours, or not stateless).
  fn set_meta_entry(&self, _transport: &Self::Value, _key: &str, _value: &str) -> bool {
    false
  }
  /// O1: how long the transport's OAuth flow has waited for the user agent, which the
  /// connect timeout does not count. Zero for transports without one.
  fn user_wait(&self, _transport: &Self::Value) -> Duration {
    Duration::ZERO
  }
}

/// A function the host can call: what it resolves with, or what it threw or rejected with.
pub type HostFn<V> = Rc<dyn Fn(Vec<V>) -> Pending<V>>;

/// The caller's callbacks (P5 handlers), and functions of ours the caller can call.
pub trait Callbacks: Values {
  /// Calls `function(...args)`; a returned thenable is awaited.
  fn call(&self, function: &Self::Value, args: Vec<Self::Value>) -> Pending<Self::Value>;
  /// Calls `object[name](...args)` with `object` as `this`; a missing method is a TypeError.
  fn call_method(
    &self,
    object: &Self::Value,
    name: &str,
    args: Vec<Self::Value>,
  ) -> Pending<Self::Value>;
  /// `object[name](...args)` now: what it returned, as it is (a promise stays one), or what
  /// it threw; a missing method is a TypeError.
  fn call_now(
    &self,
    object: &Self::Value,
    name: &str,
    args: Vec<Self::Value>,
  ) -> Result<Self::Value, Self::Value>;
  /// A host function that runs `body` and returns a promise of its outcome.
  fn function(&self, name: &str, body: HostFn<Self::Value>) -> Result<Self::Value, Self::Value>;
  /// A host function that runs `body` and returns `undefined` (a `() => void` of the API).
  fn procedure(&self, name: &str, body: Rc<dyn Fn()>) -> Result<Self::Value, Self::Value>;
}

/// An `AbortSignal` (T8).
pub trait Signals: Values {
  /// The value to reject with when `signal` is already aborted.
  fn abort_reason(&self, signal: &Self::Value) -> Option<Self::Value>;
  /// Resolves with the rejection value once `signal` aborts; dropping it stops listening.
  fn when_aborted(&self, signal: &Self::Value) -> LocalBoxFuture<'static, Self::Value>;
}

/// `work`, unless `signal` is aborted already or aborts first (its reason is the error);
/// without a signal, `work` as it is.
pub async fn unless_aborted<H: Signals, T>(
  host: &H,
  signal: Option<&H::Value>,
  work: impl std::future::Future<Output = Result<T, H::Value>>,
) -> Result<T, H::Value> {
  use futures::future::{select, Either};
  let Some(signal) = signal else {
    return work.await;
  };
  if let Some(reason) = host.abort_reason(signal) {
    return Err(reason);
  }
  match select(std::pin::pin!(work), host.when_aborted(signal)).await {
    Either::Left((outcome, _)) => outcome,
    Either::Right((reason, _)) => Err(reason),
  }
}

/// What the OAuth flow (and the agent's `onAuthError` seam) asks of the host.
#[derive(Clone, PartialEq)]
pub enum HostCall {
  /// `oauth.redirect(authorizationUrl)`: resolves with the callback URL.
  Redirect(String),
  /// `oauth.store.get(key)`.
  StoreGet(String),
  /// `oauth.store.set(key, credential)`, the credential as JSON text.
  StoreSet(String, String),
  /// `oauth.store.delete(key)`.
  StoreDelete(String),
  /// O6: the transport's `onAuthError()`: new headers for a retry, or `null`.
  AuthError,
  /// O1: `authProvider[method](...args)` (args as JSON text), or the property's value when
  /// it is not a function; a missing optional method answers `undefined`.
  Provider {
    method: &'static str,
    args: Vec<String>,
  },
  /// SEP-1933/SEP-990: `process.env[name]` of the calling runtime, as a JSON string, or
  /// `undefined` when unset.
  Env(String),
  /// SEP-1933/SEP-990: calls the function at this path below `config.oauth` (e.g.
  /// `["idp", "assertion"]`) and resolves with what it settles with.
  ConfigFunction(&'static [&'static str]),
}

impl std::fmt::Debug for HostCall {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      HostCall::Redirect(url) => write!(f, "Redirect({url:?})"),
      HostCall::StoreGet(key) => write!(f, "StoreGet({key:?})"),
      // The credential holds the tokens.
      HostCall::StoreSet(key, _) => write!(f, "StoreSet({key:?}, [redacted])"),
      HostCall::StoreDelete(key) => write!(f, "StoreDelete({key:?})"),
      HostCall::AuthError => write!(f, "AuthError"),
      HostCall::Provider { method, .. } => write!(f, "Provider({method})"),
      HostCall::Env(name) => write!(f, "Env({name:?})"),
      HostCall::ConfigFunction(path) => write!(f, "ConfigFunction(oauth.{})", path.join(".")),
    }
  }
}

/// The host's answer: JSON text of what the call resolved with (`None` for `undefined`),
/// or the message of what it threw.
pub type HostAnswer = Result<Option<String>, String>;
