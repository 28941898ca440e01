//! Everything of a transport that lives on the JS thread: its callbacks (T1), the JS
//! object held while connected, the `close()` waiters and whether it keeps the host alive.
//! The requests' own hooks are in the session's table (`crate::session::requests`).
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use napi::sys;

use super::js::{Js, Thrown, Tsfn, Value};
use super::loop_spin;
use super::request_hooks;
use crate::runtime::spin::SpinPolicy;
use crate::session::queue::{EventQueue, Wake};
use crate::session::{Event, Session};
use crate::transport_error::TransportKind;

/// The transport's events on their way to the JS thread, woken by its threadsafe function.
pub type EventPump = EventQueue<Tsfn>;

impl Wake for Tsfn {
  fn wake(&self) -> bool {
    self.call()
  }
}

/// How the transport drives its host-loop reader.
pub struct HostReaderHooks {
  /// Stops reading for good (the transport closed or is collected).
  pub stop: Box<dyn FnOnce()>,
  /// Told whether the transport keeps the host alive (requests pending) each time that
  /// changes: a reader that itself keeps the host alive reads only while it should.
  pub busy: Option<Box<dyn Fn(bool)>>,
}

/// JS-assignable callbacks (T1): the last assigned value is the one called.
#[derive(Default)]
pub struct Callbacks {
  pub on_close: Option<sys::napi_ref>,
  pub on_error: Option<sys::napi_ref>,
  pub on_notification: Option<sys::napi_ref>,
  pub on_request: Option<sys::napi_ref>,
  pub on_stderr: Option<sys::napi_ref>,
  /// O6/A10: HTTP only.
  pub on_auth_error: Option<sys::napi_ref>,
  /// Set once the transport has closed: the references no longer keep their functions.
  pub weak: bool,
}

#[derive(Clone, Copy, PartialEq)]
pub enum CallbackSlot {
  Close,
  Error,
  Notification,
  Request,
  Stderr,
  AuthError,
}

impl Callbacks {
  pub(super) fn references(&self) -> impl Iterator<Item = sys::napi_ref> {
    [
      self.on_close,
      self.on_error,
      self.on_notification,
      self.on_request,
      self.on_stderr,
      self.on_auth_error,
    ]
    .into_iter()
    .flatten()
  }

  fn slot(&mut self, slot: CallbackSlot) -> &mut Option<sys::napi_ref> {
    match slot {
      CallbackSlot::Close => &mut self.on_close,
      CallbackSlot::Error => &mut self.on_error,
      CallbackSlot::Notification => &mut self.on_notification,
      CallbackSlot::Request => &mut self.on_request,
      CallbackSlot::Stderr => &mut self.on_stderr,
      CallbackSlot::AuthError => &mut self.on_auth_error,
    }
  }
}

/// Everything of a transport that lives on the JS thread.
pub struct JsSide {
  env: sys::napi_env,
  pub(super) pump: Arc<EventPump>,
  tsfn: Option<Tsfn>,
  pub(super) keeps_alive: bool,
  pub(super) close_waiters: Vec<sys::napi_deferred>,
  callbacks: Callbacks,
  /// Changes whenever a callback is assigned or dropped, so a cached one is looked up again.
  pub(super) callbacks_epoch: u64,
  pub(super) close_fired: bool,
  /// Holds the JS object while connected, so callbacks keep working without a JS reference.
  pub(super) this_ref: Option<sys::napi_ref>,
  /// P6: the AbortController of each server request `onRequest` is working on, by raw id.
  pub(super) serving: HashMap<String, sys::napi_ref>,
  /// P6: the connection object whose cached lists go stale on list_changed (a weak ref).
  connection: Option<sys::napi_ref>,
  /// Events taken from the pump, not yet delivered (a flood spans several loop turns).
  pub(super) backlog: std::collections::VecDeque<Event>,
  /// A setImmediate for the next delivery turn is pending.
  pub(super) turn_scheduled: bool,
  /// The host-loop reader of stdout (`host_reader`), if one reads for this transport.
  host_reader: Option<HostReaderHooks>,
  /// When the loop polls for this transport's answers instead of sleeping.
  pub(super) spin: SpinPolicy,
  /// O1: `config.oauth`, whose `redirect` and `store` the OAuth flow calls.
  pub(super) auth: Option<sys::napi_ref>,
  /// A9: the config's `timeout`, as the timeout resolver is given it.
  pub timeout_input: Option<f64>,
  pub session: Option<Arc<Session>>,
  /// A45: the transport its errors name.
  pub transport: TransportKind,
}

pub type Shared = Rc<RefCell<JsSide>>;

impl JsSide {
  /// Creates the JS side and its threadsafe function (unreferenced: an idle transport never
  /// keeps the host alive).
  /// `deliver` is the pump's: what the function runs on the JS thread.
  pub fn new(
    env: sys::napi_env,
    deliver: fn(Js, &Shared),
    transport: TransportKind,
  ) -> Result<Shared, Thrown> {
    let js = Js::new(env);
    let pump = Arc::new(EventPump::default());
    let side = Rc::new(RefCell::new(JsSide {
      env,
      pump: pump.clone(),
      tsfn: None,
      keeps_alive: false,
      close_waiters: Vec::new(),
      callbacks: Callbacks::default(),
      callbacks_epoch: 0,
      close_fired: false,
      this_ref: None,
      serving: HashMap::new(),
      connection: None,
      backlog: std::collections::VecDeque::new(),
      turn_scheduled: false,
      host_reader: None,
      spin: SpinPolicy::default(),
      auth: None,
      timeout_input: None,
      session: None,
      transport,
    }));
    // The function holds the side until it is released (with the JS object).
    let delivery = Delivery {
      side: side.clone(),
      deliver,
    };
    let tsfn = js.threadsafe_function("mcp-native", move |js| {
      (delivery.deliver)(js, &delivery.side)
    })?;
    side.borrow_mut().tsfn = Some(tsfn.clone());
    pump.set_waker(Some(tsfn));
    Ok(side)
  }

  pub fn env(&self) -> sys::napi_env {
    self.env
  }

  pub fn sink(&self) -> Arc<EventPump> {
    self.pump.clone()
  }

  /// The JS object stays reachable while connected (released when `Closed` arrives).
  pub fn hold(&mut self, this: Value) {
    if self.this_ref.is_none() {
      self.this_ref = Some(Js::new(self.env).new_ref(this, 1));
    }
  }

  pub fn set_callback(&mut self, slot: CallbackSlot, value: Value) {
    let js = Js::new(self.env);
    // After the close a callback is never called again: hold it weakly, so a callback
    // that refers to its transport does not keep both alive forever (E4).
    let strength = if self.callbacks.weak { 0 } else { 1 };
    self.callbacks_epoch += 1;
    let stored = self.callbacks.slot(slot);
    if let Some(old) = stored.take() {
      js.delete_ref(old);
    }
    if js.is_function(value) {
      *stored = Some(js.new_ref(value, strength));
    }
  }

  /// E4: once `onClose` has run, callbacks no longer keep anything alive.
  pub(super) fn weaken_callbacks(&mut self) {
    if std::mem::replace(&mut self.callbacks.weak, true) {
      return;
    }
    let js = Js::new(self.env);
    for r in self.callbacks.references() {
      js.unref(r);
    }
  }

  pub fn callback(&mut self, slot: CallbackSlot) -> Option<Value> {
    let js = Js::new(self.env);
    self.callbacks.slot(slot).and_then(|r| js.ref_value(r))
  }

  pub fn has_callback(&mut self, slot: CallbackSlot) -> bool {
    self.callbacks.slot(slot).is_some()
  }

  /// Pending promises keep the host alive (the session's table counts those of requests);
  /// nothing else does. Called after every change to either.
  pub fn update_keep_alive(&mut self) {
    let requests = self.session.as_ref().is_some_and(|s| s.keeps_alive());
    let wanted = requests || !self.close_waiters.is_empty();
    if wanted == self.keeps_alive || !self.pump.has_waker() {
      return;
    }
    self.keeps_alive = wanted;
    let js = Js::new(self.env);
    if let Some(tsfn) = &self.tsfn {
      tsfn.keep_alive(js, wanted);
    }
    if !wanted {
      self.spin.idle();
    } else if let Some(deadline) = self.spin.busy(Instant::now()) {
      loop_spin::until(js, deadline);
    }
    if let Some(busy) = self
      .host_reader
      .as_ref()
      .and_then(|hooks| hooks.busy.as_ref())
    {
      busy(wanted);
    }
  }

  /// The hooks of `ticket` while its caller waits.
  fn hooks(&self, ticket: u64) -> Option<crate::session::Hooks<crate::session::HostRef>> {
    self.session.as_ref()?.hooks(ticket)
  }

  /// T8: the signal `ticket`'s caller gave, while it waits.
  pub fn abort_signal(&self, ticket: u64) -> Option<Value> {
    let (signal, _) = self.hooks(ticket)?.abort?;
    request_hooks::value(Js::new(self.env), signal)
  }

  pub fn set_host_reader(&mut self, hooks: HostReaderHooks) {
    self.host_reader = Some(hooks);
  }

  pub(super) fn stop_host_reader(&mut self) {
    if let Some(hooks) = self.host_reader.take() {
      (hooks.stop)();
    }
  }

  /// O1: holds `config.oauth` for the flow's host calls.
  pub fn set_auth(&mut self, oauth: Value) {
    let js = Js::new(self.env);
    if let Some(old) = self.auth.take() {
      js.delete_ref(old);
    }
    if js.type_of(oauth) == sys::ValueType::napi_object {
      self.auth = Some(js.new_ref(oauth, 1));
    }
  }

  pub fn attach_connection(&mut self, connection: Value) {
    let js = Js::new(self.env);
    if let Some(old) = self.connection.take() {
      js.delete_ref(old);
    }
    if js.type_of(connection) == sys::ValueType::napi_object {
      self.connection = Some(js.new_ref(connection, 0));
    }
  }

  /// P6: a list_changed notification drops the list cached on the connection.
  pub(super) fn forget_stale_list(&self, method: &str) {
    let fields = crate::client::stale_list(method);
    if fields.is_empty() {
      return;
    }
    let js = Js::new(self.env);
    if let Some(connection) = self.connection.and_then(|c| js.ref_value(c)) {
      for field in fields {
        js.delete(connection, field);
      }
    }
  }

  pub(super) fn progress_hook(&self, ticket: u64) -> Option<Value> {
    let progress = self.hooks(ticket)?.progress?;
    request_hooks::value(Js::new(self.env), progress)
  }

  /// The caller of `ticket` is told now: its hooks are released and its deferred returned.
  pub(super) fn finish(&mut self, ticket: u64) -> Option<sys::napi_deferred> {
    let hooks = self.session.as_ref()?.finish(ticket)?;
    self.update_keep_alive();
    Some(request_hooks::release(Js::new(self.env), hooks))
  }

  pub fn add_close_waiter(&mut self, deferred: sys::napi_deferred) {
    self.close_waiters.push(deferred);
    self.update_keep_alive();
  }

  pub fn close_fired(&self) -> bool {
    self.close_fired
  }

  /// The JS object is being collected: stop delivering and release the function.
  pub fn release(&mut self) {
    self.stop_host_reader();
    let js = Js::new(self.env);
    self.callbacks_epoch += 1;
    for r in std::mem::take(&mut self.callbacks).references() {
      js.delete_ref(r);
    }
    for (_, controller) in self.serving.drain() {
      js.delete_ref(controller);
    }
    if let Some(connection) = self.connection.take() {
      js.delete_ref(connection);
    }
    if let Some(auth) = self.auth.take() {
      js.delete_ref(auth);
    }
    // Out of the queue first: once taken, no producer uses it.
    let released = self.pump.set_waker(None);
    self.tsfn = None;
    if let Some(tsfn) = released {
      tsfn.release();
    }
  }
}

/// T8: the caller of `ticket` gave up: the session drops it (telling the server), and its
/// promise rejects with `reason`. False once it had been told how it ended.
pub fn abort_pending(side: &Shared, ticket: u64, reason: Value, text: &str) -> bool {
  let session = side.borrow().session.clone();
  let Some(hooks) = session.and_then(|s| s.abort(ticket, text)) else {
    return false;
  };
  let js = Js::new(side.borrow().env);
  side.borrow_mut().update_keep_alive();
  js.reject(request_hooks::release(js, hooks), reason);
  true
}

/// The threadsafe function's call: everything queued since the last one, handed to `deliver`.
struct Delivery {
  side: Shared,
  deliver: fn(Js, &Shared),
}

impl Drop for Delivery {
  /// The function is gone (released, or its env torn down): producers stop.
  fn drop(&mut self) {
    let pump = self.side.try_borrow().map(|s| s.pump.clone());
    if let Ok(pump) = pump {
      pump.set_waker(None);
    }
  }
}

/// Calls a user callback; what it throws goes to `onError` and never reaches the host.
pub(super) fn call_user(
  js: Js,
  side: &Shared,
  slot: CallbackSlot,
  args: &[Value],
) -> Option<Value> {
  let callback = side.borrow_mut().callback(slot)?;
  invoke_user(js, side, slot, callback, args)
}

/// `call_user` with the callback already looked up.
pub(super) fn invoke_user(
  js: Js,
  side: &Shared,
  slot: CallbackSlot,
  callback: Value,
  args: &[Value],
) -> Option<Value> {
  match js.call(callback, js.undefined(), args) {
    Ok(value) => Some(value),
    Err(Thrown(exception)) => {
      if slot != CallbackSlot::Error {
        call_user(js, side, CallbackSlot::Error, &[exception]);
      }
      None
    }
  }
}
