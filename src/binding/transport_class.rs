//! The members every JS transport class shares (SPEC §2), generated for each class by
//! `transport_class!`. A class is a struct with `side: Shared` and a `transport` (an
//! `Option` or a `OnceCell` of a `T: Transport`, read by an inherent `current_transport`),
//! plus an inherent `set_slot(&self, …)` for callback changes and
//! `start_handshake_listener` for what `startSSEListener` opens in the handshake era; its
//! module imports `JsArg`.
use super::js::{Js, JsRaw, Thrown, Value};
use super::js_error::finish;
use super::js_side::{CallbackSlot, Shared};
use crate::transport::Transport;

/// The shared runtime, or the JS error to reject a connect with.
pub fn runtime_handle(js: Js) -> Result<tokio::runtime::Handle, Value> {
  crate::runtime::handle().ok_or_else(|| {
    js.error(
      super::js::ErrorKind::Error,
      "The async runtime could not start",
    )
  })
}

/// A transport just connected: its session serves the JS side, which holds the JS object
/// while connected.
pub fn attach(side: &Shared, session: &std::sync::Arc<crate::session::Session>, this: Value) {
  let mut side = side.borrow_mut();
  side.session = Some(session.clone());
  side.hold(this);
}

pub fn callback_value(side: &Shared, slot: CallbackSlot) -> JsRaw {
  let js = Js::new(side.borrow().env());
  JsRaw(
    side
      .borrow_mut()
      .callback(slot)
      .unwrap_or_else(|| js.undefined()),
  )
}

/// S6/H9: resolves once `onClose` has fired; at once if never connected or already closed.
pub fn close(js: Js, side: &Shared, transport: Option<&dyn Transport>) -> Result<Value, Thrown> {
  let Some(transport) = transport else {
    return js.resolved(js.undefined());
  };
  if side.borrow().close_fired() {
    return js.resolved(js.undefined());
  }
  let (deferred, promise) = js.create_promise()?;
  side.borrow_mut().add_close_waiter(deferred);
  transport.close();
  Ok(promise)
}

/// N7: in the stateless era, `startSSEListener(filter?)` opens a `subscriptions/listen`
/// subscription (`filter`, or every list change); its promise resolves when the
/// subscription ends and never rejects. `None` outside that era.
pub fn open_subscription(
  js: Js,
  side: &Shared,
  filter: Option<Value>,
) -> Option<Result<Value, Thrown>> {
  let session = side.borrow().session.clone()?;
  if !session.is_stateless() {
    return None;
  }
  let filter = filter.and_then(|f| super::manager::tool_cache::json_of(js, f));
  let params = crate::protocol::subscriptions::listen_params(filter.as_ref());
  Some(js.create_promise().map(|(deferred, promise)| {
    // A subscription alone does not keep the host alive (§0).
    let hooks = crate::session::Hooks::background(super::request_hooks::of_deferred(deferred));
    if session.listen_tracked(&params, hooks).is_err() {
      js.resolve(deferred, js.undefined());
    }
    promise
  }))
}

/// What `create*Transport` needs of a transport class: build from a config (TypeError
/// message on a bad one) and connect.
pub trait StartableClass: napi::bindgen_prelude::JavaScriptClassExt + Sized {
  fn build(js: Js, config: Value) -> Result<Self, Thrown>;
  fn start(&self, js: Js, this: Value) -> Result<(), Value>;
}

/// `new T(config)` + `connect()` as one promise. Never throws: a bad config rejects (E2).
pub fn create_connected<T: StartableClass>(env: napi::Env, config: Value) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match T::build(js, config) {
      Ok(t) => t,
      Err(Thrown(error)) => return js.rejected(error),
    };
    let instance = transport
      .into_instance(&env)
      .map_err(|e| Thrown(js.error(super::js::ErrorKind::Error, &e.reason)))?;
    let this = instance.value;
    match instance.start(js, this) {
      Ok(()) => js.resolved(this),
      Err(error) => js.rejected(error),
    }
  })();
  finish(js, result)
}

/// `connect()`'s promise, for a transport that starts (or fails to) at once.
pub fn started(js: Js, started: Result<(), Value>) -> napi::Result<JsRaw> {
  let settled = match started {
    Ok(()) => js.resolved(js.undefined()),
    Err(error) => js.rejected(error),
  };
  settled
    .map(JsRaw)
    .map_err(|t| super::js_error::thrown(js, t))
}

macro_rules! transport_class {
  ($class:ty, $js_name:literal, entered: $entered:literal) => {
    impl $crate::binding::request_entry::RequestEntry for $class {
      const CLASS: &'static str = $js_name;
      const ENTERED: bool = $entered;
      fn side(&self) -> &$crate::binding::js_side::Shared {
        &self.side
      }
    }

    #[napi_derive::napi]
    impl $class {
      /// True between a successful `connect()` and the close.
      #[napi(getter)]
      pub fn connected(&self) -> bool {
        self
          .current_transport()
          .is_some_and(|t| $crate::transport::Transport::session(t).is_connected())
      }

      /// Sends a JSON-RPC request and resolves with its `result` (T2–T9).
      // Where `request_entry` put its own `request` (`entered: true`), JS calls that one;
      // this checked one admits each receiver once.
      #[napi(
        ts_generic_types = "T = unknown",
        ts_args_type = "method: string, params?: Record<string, unknown>, options?: MCPRequestOptions",
        ts_return_type = "Promise<T>"
      )]
      pub fn request(
        &self,
        env: napi::Env,
        // napi-derive reads `This`'s parameter by its first path segment only.
        this: napi::bindgen_prelude::This<JsArg>,
        method: $crate::binding::js::JsArg,
        params: Option<$crate::binding::js::JsArg>,
        options: Option<$crate::binding::js::JsArg>,
      ) -> napi::Result<$crate::binding::js::JsRaw> {
        let js = $crate::binding::js::Js::new(env.raw());
        if <$class as $crate::binding::request_entry::RequestEntry>::ENTERED {
          $crate::binding::request_entry::admit::<$class>(js, this.object.0);
        }
        $crate::binding::calls::request(js, &self.side, method.0, params.map(|p| p.0), options.map(|o| o.0))
          .map($crate::binding::js::JsRaw)
          .map_err(|t| $crate::binding::js_error::thrown(js, t))
      }

      /// Sends a JSON-RPC notification (T2).
      #[napi(
        ts_args_type = "method: string, params?: Record<string, unknown>",
        ts_return_type = "Promise<void>"
      )]
      pub fn notify(
        &self,
        env: napi::Env,
        method: $crate::binding::js::JsArg,
        params: Option<$crate::binding::js::JsArg>,
      ) -> napi::Result<$crate::binding::js::JsRaw> {
        let js = $crate::binding::js::Js::new(env.raw());
        $crate::binding::calls::notify(js, &self.side, method.0, params.map(|p| p.0))
          .map($crate::binding::js::JsRaw)
          .map_err(|t| $crate::binding::js_error::thrown(js, t))
      }

      /// Closes the transport: pending requests reject (stdio: `Transport closed`; HTTP and
      /// legacy SSE: an `AbortError`, A48); resolves after `onClose` has fired (exactly
      /// once). Idempotent.
      #[napi(ts_return_type = "Promise<void>")]
      pub fn close(&self, env: napi::Env) -> napi::Result<$crate::binding::js::JsRaw> {
        let js = $crate::binding::js::Js::new(env.raw());
        let transport = self
          .current_transport()
          .map(|t| t as &dyn $crate::transport::Transport);
        $crate::binding::transport_class::close(js, &self.side, transport)
          .map($crate::binding::js::JsRaw)
          .map_err(|t| $crate::binding::js_error::thrown(js, t))
      }

      /// Called once when the transport closes, on `close()` or when the server goes away.
      #[napi(getter, js_name = "onClose", ts_return_type = "(() => void) | undefined")]
      pub fn get_on_close(&self) -> $crate::binding::js::JsRaw {
        $crate::binding::transport_class::callback_value(&self.side, $crate::binding::js_side::CallbackSlot::Close)
      }

      /// Called once when the transport closes, on `close()` or when the server goes away.
      #[napi(setter, js_name = "onClose", ts_args_type = "callback: (() => void) | undefined")]
      pub fn set_on_close(&self, callback: $crate::binding::js::JsArg) {
        self.set_slot($crate::binding::js_side::CallbackSlot::Close, callback)
      }

      /// Hears failures no request is waiting for (a bad message, a broken listener stream, a callback that threw).
      #[napi(getter, js_name = "onError", ts_return_type = "((error: Error) => void) | undefined")]
      pub fn get_on_error(&self) -> $crate::binding::js::JsRaw {
        $crate::binding::transport_class::callback_value(&self.side, $crate::binding::js_side::CallbackSlot::Error)
      }

      /// Hears failures no request is waiting for (a bad message, a broken listener stream, a callback that threw).
      #[napi(setter, js_name = "onError", ts_args_type = "callback: ((error: Error) => void) | undefined")]
      pub fn set_on_error(&self, callback: $crate::binding::js::JsArg) {
        self.set_slot($crate::binding::js_side::CallbackSlot::Error, callback)
      }

      /// Hears every notification the server sends: its method and params.
      #[napi(
        getter,
        js_name = "onNotification",
        ts_return_type = "((method: string, params: unknown) => void) | undefined"
      )]
      pub fn get_on_notification(&self) -> $crate::binding::js::JsRaw {
        $crate::binding::transport_class::callback_value(&self.side, $crate::binding::js_side::CallbackSlot::Notification)
      }

      /// Hears every notification the server sends: its method and params.
      #[napi(
        setter,
        js_name = "onNotification",
        ts_args_type = "callback: ((method: string, params: unknown) => void) | undefined"
      )]
      pub fn set_on_notification(&self, callback: $crate::binding::js::JsArg) {
        self.set_slot($crate::binding::js_side::CallbackSlot::Notification, callback)
      }

      /// Answers the server's requests (other than `ping`): its value is the result, a throw the error; none set, `-32601 Method not found`.
      #[napi(
        getter,
        js_name = "onRequest",
        ts_return_type = "((method: string, params: unknown, extra: { signal: AbortSignal }) => unknown | Promise<unknown>) | undefined"
      )]
      pub fn get_on_request(&self) -> $crate::binding::js::JsRaw {
        $crate::binding::transport_class::callback_value(&self.side, $crate::binding::js_side::CallbackSlot::Request)
      }

      /// Answers the server's requests (other than `ping`): its value is the result, a throw the error; none set, `-32601 Method not found`.
      #[napi(
        setter,
        js_name = "onRequest",
        ts_args_type = "callback: ((method: string, params: unknown, extra: { signal: AbortSignal }) => unknown | Promise<unknown>) | undefined"
      )]
      pub fn set_on_request(&self, callback: $crate::binding::js::JsArg) {
        self.set_slot($crate::binding::js_side::CallbackSlot::Request, callback)
      }

      /// H8: over HTTP in the handshake era, opens the server's GET event stream and
      /// delivers what arrives on it until the stream ends or `close()` (stdio: nothing to
      /// open). N7: in the stateless era, opens a `subscriptions/listen` subscription for
      /// `filter` (default: every list change) instead. Resolves when it stops (at once
      /// when there is nothing to open); never rejects. Start it without awaiting.
      #[napi(
        js_name = "startSSEListener",
        ts_args_type = "filter?: MCPSubscriptionFilter",
        ts_return_type = "Promise<void>"
      )]
      pub fn start_sse_listener(
        &self,
        env: napi::Env,
        filter: Option<$crate::binding::js::JsArg>,
      ) -> napi::Result<$crate::binding::js::JsRaw> {
        let js = $crate::binding::js::Js::new(env.raw());
        let opened = $crate::binding::transport_class::open_subscription(js, &self.side, filter.map(|f| f.0))
          .unwrap_or_else(|| self.start_handshake_listener(js));
        $crate::binding::js_error::finish(js, opened)
      }

      /// P6: the connection whose cached lists this transport's list_changed notifications
      /// make stale (held weakly). Set by `connectToServer`; not part of the typed API.
      #[napi(js_name = "_attachConnection", skip_typescript)]
      pub fn attach_connection(&self, connection: $crate::binding::js::JsArg) {
        self.side.borrow_mut().attach_connection(connection.0)
      }

      /// N3: the stateless era of `version`, with the `_meta` (JSON text) every request
      /// carries; no arguments go back to the handshake era. Set by the connect flow.
      /// N9: one more `_meta` entry (JSON text) of the stateless era; whether it was set.
      #[napi(js_name = "_setMetaEntry", skip_typescript)]
      pub fn set_meta_entry(&self, key: String, value: String) -> bool {
        let Ok(value) = serde_json::from_str(&value) else {
          return false;
        };
        self
          .side
          .borrow()
          .session
          .as_ref()
          .is_some_and(|session| session.set_meta_entry(key, value))
      }

      #[napi(js_name = "_setStateless", skip_typescript)]
      pub fn set_stateless(&self, version: Option<String>, meta: Option<String>) {
        let era = version.zip(meta.and_then(|m| serde_json::from_str(&m).ok()));
        if let Some(session) = &self.side.borrow().session {
          session.set_stateless(era);
        }
      }
    }

    impl Drop for $class {
      fn drop(&mut self) {
        // Collected: closed (or never connected), so stop delivering and free the channel.
        drop(self.transport.take());
        // A finalizer never runs inside our own dispatch, but never panic in one if it did.
        if let Ok(mut side) = self.side.try_borrow_mut() {
          side.release();
        }
      }
    }
  };
}

/// O6/A10 `onAuthError` of the HTTP transports: the callback, and whether the core should
/// ask it (its flag in the transport's config).
macro_rules! auth_error_accessors {
  ($class:ty) => {
    #[napi_derive::napi]
    impl $class {
      /// O6/A10: asked on a 401/403 (HTTP: to a request, notification or resume GET when
      /// there is no `config.oauth`; legacy SSE: to a POST): headers that replace
      /// `config.headers` for one retry (and all later traffic), or `null` to give up with
      /// the original error.
      #[napi(
        getter,
        js_name = "onAuthError",
        ts_return_type = "(() => Promise<Record<string, string> | null>) | undefined"
      )]
      pub fn get_on_auth_error(&self) -> $crate::binding::js::JsRaw {
        $crate::binding::transport_class::callback_value(
          &self.side,
          $crate::binding::js_side::CallbackSlot::AuthError,
        )
      }

      /// O6/A10: the headers to retry a 401/403 with, or `null` to give up.
      #[napi(
        setter,
        js_name = "onAuthError",
        ts_args_type = "callback: (() => Promise<Record<string, string> | null>) | undefined"
      )]
      pub fn set_on_auth_error(&self, env: napi::Env, callback: $crate::binding::js::JsArg) {
        let js = $crate::binding::js::Js::new(env.raw());
        let present = js.is_function(callback.0);
        self.set_slot($crate::binding::js_side::CallbackSlot::AuthError, callback);
        self
          .config
          .auth_error_hook
          .store(present, std::sync::atomic::Ordering::Release);
      }
    }
  };
}

pub(crate) use auth_error_accessors;
pub(crate) use transport_class;
