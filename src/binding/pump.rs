//! Delivers core events to JS, in order and in batches, through one threadsafe function per
//! transport. Responses travel the same queue as notifications, so a notification the server
//! sent first is always handled first (T3), and a burst costs one hop to the JS thread.
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::ptr;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};

use napi::sys;

use bytes::Bytes;

use super::js::{Js, Thrown, Value, EXTERNAL_STRING_BYTES};
use super::js_error;
use crate::protocol::message::{RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};
use crate::protocol::tree::{Node, ResultTree, Text};
use crate::session::{Event, EventSink, Session};

struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: napi_call_threadsafe_function may be called from any thread; every other use is on
// the JS thread.
unsafe impl Send for Tsfn {}

#[derive(Default)]
struct Queue {
  events: Vec<Event>,
  scheduled: bool,
  /// `None` once the JS side is gone: events are then dropped.
  tsfn: Option<Tsfn>,
}

#[derive(Default)]
pub struct EventPump {
  queue: Mutex<Queue>,
}

impl EventPump {
  fn queue(&self) -> MutexGuard<'_, Queue> {
    self.queue.lock().unwrap_or_else(|p| p.into_inner())
  }

  fn take(&self) -> Vec<Event> {
    let mut queue = self.queue();
    queue.scheduled = false;
    std::mem::take(&mut queue.events)
  }
}

impl EventSink for EventPump {
  fn emit(&self, event: Event) {
    let mut queue = self.queue();
    let Some(tsfn) = &queue.tsfn else { return };
    let tsfn = tsfn.0;
    queue.events.push(event);
    if !queue.scheduled {
      queue.scheduled = true;
      // Called under the lock, so the function cannot be released in between.
      // SAFETY: tsfn is live while it is stored in the queue.
      let status = unsafe {
        sys::napi_call_threadsafe_function(
          tsfn,
          ptr::null_mut(),
          sys::ThreadsafeFunctionCallMode::nonblocking,
        )
      };
      if status != sys::Status::napi_ok {
        queue.events.clear();
        queue.tsfn = None;
      }
    }
  }
}

/// The abort bridge of one request (T8), released when the request settles.
struct AbortHook {
  signal: sys::napi_ref,
  listener: sys::napi_ref,
}

struct PendingJs {
  deferred: sys::napi_deferred,
  abort: Option<AbortHook>,
  /// Background work (the SSE listener) does not keep the host alive.
  background: bool,
}

/// JS-assignable callbacks (T1): the last assigned value is the one called.
#[derive(Default)]
pub struct Callbacks {
  pub on_close: Option<sys::napi_ref>,
  pub on_error: Option<sys::napi_ref>,
  pub on_notification: Option<sys::napi_ref>,
  pub on_request: Option<sys::napi_ref>,
  pub on_stderr: Option<sys::napi_ref>,
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
}

impl Callbacks {
  fn references(&self) -> impl Iterator<Item = sys::napi_ref> {
    [
      self.on_close,
      self.on_error,
      self.on_notification,
      self.on_request,
      self.on_stderr,
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
    }
  }
}

/// Everything of a transport that lives on the JS thread.
pub struct JsSide {
  env: sys::napi_env,
  pump: Arc<EventPump>,
  tsfn: sys::napi_threadsafe_function,
  keeps_alive: bool,
  pending: HashMap<u64, PendingJs>,
  /// Pending entries that keep the host alive.
  foreground: usize,
  close_waiters: Vec<sys::napi_deferred>,
  callbacks: Callbacks,
  close_fired: bool,
  /// Holds the JS object while connected, so callbacks keep working without a JS reference.
  this_ref: Option<sys::napi_ref>,
  pub session: Option<Arc<Session>>,
}

pub type Shared = Rc<RefCell<JsSide>>;

impl JsSide {
  /// Creates the JS side and its threadsafe function (unreferenced: an idle transport never
  /// keeps the host alive).
  pub fn new(env: sys::napi_env) -> Result<Shared, Thrown> {
    let js = Js::new(env);
    let pump = Arc::new(EventPump::default());
    let side = Rc::new(RefCell::new(JsSide {
      env,
      pump: pump.clone(),
      tsfn: ptr::null_mut(),
      keeps_alive: false,
      pending: HashMap::new(),
      foreground: 0,
      close_waiters: Vec::new(),
      callbacks: Callbacks::default(),
      close_fired: false,
      this_ref: None,
      session: None,
    }));
    let context = Rc::into_raw(side.clone()) as *mut c_void;
    let mut tsfn = ptr::null_mut();
    // SAFETY: call_js and finalize match the napi signatures; context is a leaked Rc that
    // finalize reclaims.
    let status = unsafe {
      sys::napi_create_threadsafe_function(
        env,
        ptr::null_mut(),
        ptr::null_mut(),
        js.string("mcp-native"),
        0,
        1,
        ptr::null_mut(),
        Some(finalize),
        context,
        Some(call_js),
        &mut tsfn,
      )
    };
    if status != sys::Status::napi_ok {
      // SAFETY: the function was not created; take the Rc back.
      drop(unsafe { Rc::from_raw(context as *const RefCell<JsSide>) });
      return Err(Thrown(js.error(
        super::js::ErrorKind::Error,
        "Failed to create the event channel",
      )));
    }
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    side.borrow_mut().tsfn = tsfn;
    pump.queue().tsfn = Some(Tsfn(tsfn));
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
    let stored = self.callbacks.slot(slot);
    if let Some(old) = stored.take() {
      js.delete_ref(old);
    }
    if js.is_function(value) {
      *stored = Some(js.new_ref(value, strength));
    }
  }

  /// E4: once `onClose` has run, callbacks no longer keep anything alive.
  fn weaken_callbacks(&mut self) {
    if std::mem::replace(&mut self.callbacks.weak, true) {
      return;
    }
    for r in self.callbacks.references() {
      let mut count = 0;
      // SAFETY: r is a live reference created by set_callback with a count of 1.
      unsafe { sys::napi_reference_unref(self.env, r, &mut count) };
    }
  }

  pub fn callback(&mut self, slot: CallbackSlot) -> Option<Value> {
    let js = Js::new(self.env);
    self.callbacks.slot(slot).and_then(|r| js.ref_value(r))
  }

  pub fn has_callback(&mut self, slot: CallbackSlot) -> bool {
    self.callbacks.slot(slot).is_some()
  }

  /// Pending promises keep the host alive; nothing else does.
  fn update_keep_alive(&mut self) {
    let wanted = self.foreground > 0 || !self.close_waiters.is_empty();
    if wanted == self.keeps_alive || self.pump.queue().tsfn.is_none() {
      return;
    }
    self.keeps_alive = wanted;
    // SAFETY: the tsfn is live (checked above) and we are on the JS thread.
    unsafe {
      if wanted {
        sys::napi_ref_threadsafe_function(self.env, self.tsfn);
      } else {
        sys::napi_unref_threadsafe_function(self.env, self.tsfn);
      }
    }
  }

  pub fn add_pending(&mut self, ticket: u64, deferred: sys::napi_deferred) {
    self.insert_pending(ticket, deferred, false);
  }

  pub fn add_background(&mut self, ticket: u64, deferred: sys::napi_deferred) {
    self.insert_pending(ticket, deferred, true);
  }

  fn insert_pending(&mut self, ticket: u64, deferred: sys::napi_deferred, background: bool) {
    let pending = PendingJs {
      deferred,
      abort: None,
      background,
    };
    if !background {
      self.foreground += 1;
    }
    self.pending.insert(ticket, pending);
    self.update_keep_alive();
  }

  pub fn abort_signal(&self, ticket: u64) -> Option<Value> {
    let hook = self.pending.get(&ticket)?.abort.as_ref()?;
    Js::new(self.env).ref_value(hook.signal)
  }

  pub fn set_abort_hook(&mut self, ticket: u64, signal: Value, listener: Value) {
    let js = Js::new(self.env);
    if let Some(pending) = self.pending.get_mut(&ticket) {
      pending.abort = Some(AbortHook {
        signal: js.new_ref(signal, 1),
        listener: js.new_ref(listener, 1),
      });
    }
  }

  /// Removes a pending request; its abort listener is detached (T8: no listener leak).
  fn take_pending(&mut self, ticket: u64) -> Option<sys::napi_deferred> {
    let pending = self.pending.remove(&ticket)?;
    if !pending.background {
      self.foreground -= 1;
    }
    self.update_keep_alive();
    if let Some(hook) = pending.abort {
      let js = Js::new(self.env);
      if let (Some(signal), Some(listener)) =
        (js.ref_value(hook.signal), js.ref_value(hook.listener))
      {
        if let Ok(remove) = js.get(signal, "removeEventListener") {
          let _ = js.call(remove, signal, &[js.string("abort"), listener]);
        }
      }
      js.delete_ref(hook.signal);
      js.delete_ref(hook.listener);
    }
    Some(pending.deferred)
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
    let js = Js::new(self.env);
    for r in std::mem::take(&mut self.callbacks).references() {
      js.delete_ref(r);
    }
    let released = self.pump.queue().tsfn.take();
    if let Some(tsfn) = released {
      // SAFETY: removed from the queue under its lock, so no producer can use it afterwards.
      unsafe {
        sys::napi_release_threadsafe_function(tsfn.0, sys::ThreadsafeFunctionReleaseMode::release)
      };
    }
  }
}

/// Rejects a pending request from the JS thread (T8 abort) with `reason`.
pub fn reject_pending(side: &Shared, ticket: u64, reason: Value) -> bool {
  let env = side.borrow().env;
  let deferred = side.borrow_mut().take_pending(ticket);
  match deferred {
    Some(deferred) => {
      Js::new(env).reject(deferred, reason);
      true
    }
    None => false,
  }
}

unsafe extern "C" fn finalize(_env: sys::napi_env, _data: *mut c_void, context: *mut c_void) {
  // SAFETY: context is the Rc leaked in JsSide::new; finalize runs once.
  let side = unsafe { Rc::from_raw(context as *const RefCell<JsSide>) };
  let pump = side.try_borrow().map(|s| s.pump.clone());
  if let Ok(pump) = pump {
    pump.queue().tsfn = None;
  }
}

unsafe extern "C" fn call_js(
  env: sys::napi_env,
  _callback: sys::napi_value,
  context: *mut c_void,
  _data: *mut c_void,
) {
  if env.is_null() || context.is_null() {
    return;
  }
  // SAFETY: context is the Rc leaked in JsSide::new and stays alive until finalize.
  let side = ManuallyDrop::new(unsafe { Rc::from_raw(context as *const RefCell<JsSide>) });
  let side: Shared = Rc::clone(&side);
  let events = side.borrow().pump.take();
  let js = Js::new(env);
  let mut events = events.into_iter().peekable();
  while let Some(event) = events.next() {
    // A run of plain results or notifications shares one JSON.parse (one napi call and one
    // string instead of one each); order is unchanged (T3).
    let batchable = |e: &Event| {
      matches!(
        e,
        Event::Settled {
          outcome: Ok(Some(_)),
          ..
        } | Event::Notification { .. }
      )
    };
    if batchable(&event) && events.peek().is_some_and(batchable) {
      let mut run = vec![event];
      while let Some(next) = events.next_if(batchable) {
        run.push(next);
      }
      dispatch_run(js, &side, run);
    } else {
      dispatch(js, &side, event);
    }
  }
}

/// Parses the payloads of a run of results and notifications as one JSON array.
fn dispatch_run(js: Js, side: &Shared, run: Vec<Event>) {
  let mut text = String::from("[");
  for (i, event) in run.iter().enumerate() {
    if i > 0 {
      text.push(',');
    }
    let payload = match event {
      Event::Settled {
        outcome: Ok(Some(result)),
        ..
      } => Some(result.get()),
      Event::Notification { params, .. } => params.as_deref().map(|p| p.get()),
      _ => None,
    };
    text.push_str(payload.unwrap_or("null"));
  }
  text.push(']');
  let Ok(values) = js.json_parse(&text) else {
    for event in run {
      dispatch(js, side, event);
    }
    return;
  };
  for (i, event) in run.into_iter().enumerate() {
    let value = js
      .element(values, i as u32)
      .unwrap_or_else(|_| js.undefined());
    match event {
      Event::Settled { ticket, .. } => {
        let deferred = side.borrow_mut().take_pending(ticket);
        if let Some(deferred) = deferred {
          js.resolve(deferred, value);
        }
      }
      Event::Notification { method, params } => {
        if side.borrow_mut().has_callback(CallbackSlot::Notification) {
          let params = if params.is_some() {
            value
          } else {
            js.undefined()
          };
          call_user(
            js,
            side,
            CallbackSlot::Notification,
            &[js.string(&method), params],
          );
        }
      }
      other => dispatch(js, side, other),
    }
  }
}

/// Calls a user callback; what it throws goes to `onError` and never reaches the host.
fn call_user(js: Js, side: &Shared, slot: CallbackSlot, args: &[Value]) -> Option<Value> {
  let callback = side.borrow_mut().callback(slot)?;
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

fn parse_or_undefined(js: Js, raw: Option<&serde_json::value::RawValue>) -> Value {
  raw
    .and_then(|raw| js.json_parse(raw.get()).ok())
    .unwrap_or_else(|| js.undefined())
}

fn dispatch(js: Js, side: &Shared, event: Event) {
  match event {
    Event::Notification { method, params } => {
      if !side.borrow_mut().has_callback(CallbackSlot::Notification) {
        return;
      }
      let args = [
        js.string(&method),
        parse_or_undefined(js, params.as_deref()),
      ];
      call_user(js, side, CallbackSlot::Notification, &args);
    }
    Event::Settled { ticket, outcome } => {
      let deferred = side.borrow_mut().take_pending(ticket);
      let Some(deferred) = deferred else { return };
      match outcome {
        Ok(Some(result)) => match js.json_parse(result.get()) {
          Ok(value) => js.resolve(deferred, value),
          Err(Thrown(e)) => js.reject(deferred, e),
        },
        Ok(None) => js.resolve(deferred, js.undefined()),
        Err(error) => js.reject(deferred, js_error::to_js(js, &error)),
      }
    }
    Event::SettledTree { ticket, result } => {
      let deferred = side.borrow_mut().take_pending(ticket);
      if let Some(deferred) = deferred {
        let mut result = result;
        match build_tree(js, &mut result) {
          Ok(value) => js.resolve(deferred, value),
          Err(Thrown(e)) => js.reject(deferred, e),
        }
      }
    }
    Event::ServerRequest { id, method, params } => {
      answer_server_request(js, side, id.get().to_string(), &method, params.as_deref())
    }
    Event::Stderr(text) => {
      call_user(js, side, CallbackSlot::Stderr, &[js.string(&text)]);
    }
    Event::Error(error) => {
      call_user(
        js,
        side,
        CallbackSlot::Error,
        &[js_error::to_js(js, &error)],
      );
    }
    Event::Closed => {
      // S4: onClose comes after the rejections above; their handlers are already queued
      // as microtasks, so a microtask of our own runs after them.
      let queued = js
        .get(js.global(), "queueMicrotask")
        .ok()
        .filter(|f| js.is_function(*f))
        .and_then(|queue| {
          let fire = js
            .function("onClosed", fire_closed_microtask, side.clone())
            .ok()?;
          js.call(queue, js.undefined(), &[fire]).ok()
        });
      if queued.is_none() {
        fire_closed(js, side);
      }
    }
  }
}

unsafe extern "C" fn fire_closed_microtask(
  env: sys::napi_env,
  info: sys::napi_callback_info,
) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the Shared given to js.function.
  let (_, data) = unsafe { js.args::<0>(info) };
  let side = unsafe { &*(data as *const Shared) };
  fire_closed(js, side);
  js.undefined()
}

/// `onClose` exactly once, then every `close()` promise resolves.
fn fire_closed(js: Js, side: &Shared) {
  let (first, waiters, this_ref) = {
    let mut s = side.borrow_mut();
    let first = !s.close_fired;
    s.close_fired = true;
    (
      first,
      std::mem::take(&mut s.close_waiters),
      s.this_ref.take(),
    )
  };
  if first {
    call_user(js, side, CallbackSlot::Close, &[]);
    side.borrow_mut().weaken_callbacks();
  }
  for waiter in waiters {
    js.resolve(waiter, js.undefined());
  }
  side.borrow_mut().update_keep_alive();
  if let Some(this_ref) = this_ref {
    js.delete_ref(this_ref);
  }
}

/// Builds a parsed result as JS values: what `JSON.parse` would give, key order included.
/// Big ASCII strings become external strings over the frame (or the unescaped text) where
/// the runtime offers them, so the megabytes are not copied again on the JS thread.
fn build_tree(js: Js, tree: &mut ResultTree) -> Result<Value, Thrown> {
  let ResultTree { frame, root, ascii } = tree;
  build_node(js, frame, *ascii, root)
}

/// `ascii`: the whole frame is known to be ASCII, so its slices need no check before
/// becoming Latin-1 strings.
fn build_node(js: Js, frame: &Bytes, ascii: bool, node: &mut Node) -> Result<Value, Thrown> {
  Ok(match node {
    Node::Null => js.null(),
    Node::Bool(b) => js.boolean(*b),
    Node::Number(n) => js.number(*n),
    Node::Text(text) => build_text(js, frame, ascii, text),
    Node::Array(items) => {
      let array = js.array(items.len())?;
      for (i, item) in items.iter_mut().enumerate() {
        js.set_element(array, i as u32, build_node(js, frame, ascii, item)?)?;
      }
      array
    }
    Node::Object(fields) => {
      let object = js.object()?;
      for (key, item) in fields.iter_mut() {
        let key = build_text(js, frame, ascii, key);
        js.set_property(object, key, build_node(js, frame, ascii, item)?)?;
      }
      object
    }
  })
}

fn build_text(js: Js, frame: &Bytes, ascii: bool, text: &mut Text) -> Value {
  match text {
    Text::Slice { start, len } => {
      let bytes = frame.slice(*start..*start + *len);
      if bytes.len() >= EXTERNAL_STRING_BYTES && (ascii || bytes.is_ascii()) {
        return js.external_latin1(bytes);
      }
      js.string(std::str::from_utf8(&bytes).unwrap_or(""))
    }
    Text::Owned(owned) => {
      if owned.len() >= EXTERNAL_STRING_BYTES && owned.is_ascii() {
        return js.external_latin1(Bytes::from(std::mem::take(owned)));
      }
      js.string(owned)
    }
  }
}

/// T11: hand a server request to `onRequest` and send back what it returns or throws.
fn answer_server_request(
  js: Js,
  side: &Shared,
  id: String,
  method: &str,
  params: Option<&serde_json::value::RawValue>,
) {
  let Some(session) = side.borrow().session.clone() else {
    return;
  };
  let handler = side.borrow_mut().callback(CallbackSlot::Request);
  let Some(handler) = handler else {
    session.answer(
      &id,
      Err(&RpcError {
        code: METHOD_NOT_FOUND,
        message: "Method not found".to_string(),
        data: None,
      }),
    );
    return;
  };
  let args = [js.string(method), parse_or_undefined(js, params)];
  match js.call(handler, js.undefined(), &args) {
    Ok(value) => settle_answer(js, session, id, value),
    Err(Thrown(exception)) => session.answer(&id, Err(&rpc_error_from(js, exception))),
  }
}

/// A handler's return value may be a promise (or any thenable): answer when it settles.
fn settle_answer(js: Js, session: Arc<Session>, id: String, value: Value) {
  let then = if js.type_of(value) == sys::ValueType::napi_object {
    js.get(value, "then").ok().filter(|t| js.is_function(*t))
  } else {
    None
  };
  let Some(then) = then else {
    answer_with_value(js, &session, &id, value);
    return;
  };
  let target = Rc::new(AnswerTarget {
    session,
    id,
    answered: std::cell::Cell::new(false),
  });
  let functions = (
    js.function("onFulfilled", on_fulfilled, target.clone()),
    js.function("onRejected", on_rejected, target.clone()),
  );
  let (Ok(fulfilled), Ok(rejected)) = functions else {
    target.answer_error(js, js.undefined());
    return;
  };
  if let Err(Thrown(exception)) = js.call(then, value, &[fulfilled, rejected]) {
    target.answer_error(js, exception);
  }
}

struct AnswerTarget {
  session: Arc<Session>,
  id: String,
  answered: std::cell::Cell<bool>,
}

impl AnswerTarget {
  fn first(&self) -> bool {
    !self.answered.replace(true)
  }

  fn answer_error(&self, js: Js, exception: Value) {
    if self.first() {
      self
        .session
        .answer(&self.id, Err(&rpc_error_from(js, exception)));
    }
  }
}

unsafe extern "C" fn on_fulfilled(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the Rc<AnswerTarget> given to js.function.
  let ([value], data) = unsafe { js.args::<1>(info) };
  let target = unsafe { &*(data as *const Rc<AnswerTarget>) };
  if target.first() {
    answer_with_value(js, &target.session, &target.id, value);
  }
  js.undefined()
}

unsafe extern "C" fn on_rejected(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: as in on_fulfilled.
  let ([reason], data) = unsafe { js.args::<1>(info) };
  let target = unsafe { &*(data as *const Rc<AnswerTarget>) };
  target.answer_error(js, reason);
  js.undefined()
}

fn answer_with_value(js: Js, session: &Session, id: &str, value: Value) {
  match js.json_stringify(value) {
    // A handler that returns nothing answers with an empty result object.
    Ok(Some(text)) => session.answer(id, Ok(&text)),
    Ok(None) => session.answer(id, Ok("{}")),
    Err(Thrown(exception)) => session.answer(id, Err(&rpc_error_from(js, exception))),
  }
}

/// A thrown value as a JSON-RPC error: its numeric `code` if it has one, else -32603.
fn rpc_error_from(js: Js, thrown: Value) -> RpcError {
  let is_object = js.type_of(thrown) == sys::ValueType::napi_object;
  let code = is_object
    .then(|| js.get(thrown, "code").ok())
    .flatten()
    .and_then(|c| js.number_value(c))
    .filter(|c| c.fract() == 0.0)
    .map(|c| c as i64)
    .unwrap_or(INTERNAL_ERROR);
  let message = if is_object {
    js.get(thrown, "message")
      .ok()
      .and_then(|m| js.rust_string(m))
  } else {
    js.rust_string(thrown)
  };
  let data = is_object
    .then(|| js.get(thrown, "data").ok())
    .flatten()
    .filter(|d| !js.is_nullish(*d))
    .and_then(|d| js.json_stringify(d).ok().flatten());
  RpcError {
    code,
    message: message.unwrap_or_else(|| "Internal error".to_string()),
    data,
  }
}
