//! Delivers core events to JS, in order and in batches, through one threadsafe function per
//! transport. Responses travel the same queue as notifications, so a notification the server
//! sent first is always handled first (T3), and a burst costs one hop to the JS thread.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use napi::sys;

use bytes::Bytes;

use super::executor;
use super::host::{ready, JsHost};
use super::js::timer_function;
use super::js::{Js, Thrown, Tsfn, Value, EXTERNAL_STRING_BYTES};
use super::js_error;
use super::loop_spin;
use super::request_hooks;
use crate::client::server_requests;
use crate::protocol::tree::{Node, ResultTree, Text};
use crate::runtime::spin::SpinPolicy;
use crate::runtime::turn::{TurnBudget, CHUNK_EVENTS};
use crate::session::{Event, EventSink, Session};

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

  /// Gives an emptied `take` buffer back, so a steady stream does not regrow one per read.
  fn recycle(&self, buffer: Vec<Event>) {
    const KEPT_EVENTS: usize = 4096;
    let mut queue = self.queue();
    if buffer.is_empty() && queue.events.capacity() == 0 && buffer.capacity() <= KEPT_EVENTS {
      queue.events = buffer;
    }
  }
}

thread_local! {
  /// The pump whose events this thread's host reader delivers itself once its read is done.
  static COLLECTING: std::cell::Cell<*const EventPump> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Runs `read` (a host reader's read, on the JS thread) and delivers the events it emits
/// right after, without the trip through the threadsafe function.
pub fn read_here<T>(js: Js, side: &Shared, read: impl FnOnce() -> T) -> T {
  let pump = side.borrow().sink();
  let previous = COLLECTING.with(|c| c.replace(Arc::as_ptr(&pump)));
  let result = executor::in_runtime(read);
  COLLECTING.with(|c| c.set(previous));
  deliver(js, side);
  result
}

impl EventSink for EventPump {
  fn emit(&self, event: Event) {
    let mut queue = self.queue();
    if queue.tsfn.is_none() {
      return;
    }
    queue.events.push(event);
    // Called under the lock, so the function cannot be released in between.
    if !queue.scheduled {
      queue.scheduled = true;
      let collected_here = COLLECTING.with(|c| std::ptr::eq(c.get(), self));
      if !collected_here && !queue.tsfn.as_ref().is_some_and(Tsfn::call) {
        queue.events.clear();
        queue.tsfn = None;
      }
    }
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
  fn references(&self) -> impl Iterator<Item = sys::napi_ref> {
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
  pump: Arc<EventPump>,
  tsfn: Option<Tsfn>,
  keeps_alive: bool,
  close_waiters: Vec<sys::napi_deferred>,
  callbacks: Callbacks,
  /// Changes whenever a callback is assigned or dropped, so a cached one is looked up again.
  callbacks_epoch: u64,
  close_fired: bool,
  /// Holds the JS object while connected, so callbacks keep working without a JS reference.
  this_ref: Option<sys::napi_ref>,
  /// P6: the AbortController of each server request `onRequest` is working on, by raw id.
  serving: HashMap<String, sys::napi_ref>,
  /// P6: the connection object whose cached lists go stale on list_changed (a weak ref).
  connection: Option<sys::napi_ref>,
  /// Events taken from the pump, not yet delivered (a flood spans several loop turns).
  backlog: std::collections::VecDeque<Event>,
  /// A setImmediate for the next delivery turn is pending.
  turn_scheduled: bool,
  /// The host-loop reader of stdout (`host_reader`), if one reads for this transport.
  host_reader: Option<HostReaderHooks>,
  /// When the loop polls for this transport's answers instead of sleeping.
  spin: SpinPolicy,
  /// O1: `config.oauth`, whose `redirect` and `store` the OAuth flow calls.
  auth: Option<sys::napi_ref>,
  /// A9: the config's `timeout`, as the timeout resolver is given it.
  pub timeout_input: Option<f64>,
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
    }));
    // The function holds the side until it is released (with the JS object).
    let delivery = Delivery(side.clone());
    let tsfn = js.threadsafe_function("mcp-native", move |js| delivery.deliver(js))?;
    side.borrow_mut().tsfn = Some(tsfn.clone());
    pump.queue().tsfn = Some(tsfn);
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
  fn weaken_callbacks(&mut self) {
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
    if wanted == self.keeps_alive || self.pump.queue().tsfn.is_none() {
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

  fn stop_host_reader(&mut self) {
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
  fn forget_stale_list(&self, method: &str) {
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

  fn progress_hook(&self, ticket: u64) -> Option<Value> {
    let progress = self.hooks(ticket)?.progress?;
    request_hooks::value(Js::new(self.env), progress)
  }

  /// The caller of `ticket` is told now: its hooks are released and its deferred returned.
  fn finish(&mut self, ticket: u64) -> Option<sys::napi_deferred> {
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
    // Out of the queue under its lock first, so no producer can use it afterwards.
    let released = self.pump.queue().tsfn.take();
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

/// The threadsafe function's call: everything queued since the last one.
struct Delivery(Shared);

impl Drop for Delivery {
  /// The function is gone (released, or its env torn down): producers stop.
  fn drop(&mut self) {
    let pump = self.0.try_borrow().map(|s| s.pump.clone());
    if let Ok(pump) = pump {
      pump.queue().tsfn = None;
    }
  }
}

impl Delivery {
  fn deliver(&self, js: Js) {
    deliver(js, &self.0)
  }
}

fn deliver(js: Js, side: &Shared) {
  let mut fresh = side.borrow().pump.take();
  let mut me = side.borrow_mut();
  let in_window = !fresh.is_empty() && me.spin.arrived(Instant::now());
  me.backlog.extend(fresh.drain(..));
  me.pump.recycle(fresh);
  if me.turn_scheduled {
    // The next turn is already coming; it delivers these after what is ahead of them.
    return;
  }
  drop(me);
  // S7: the requests this turn's continuations make are written together. A turn of one
  // message is a sequential caller's, with nothing to put together: holding its request
  // until the microtask measured slower (seq p50 and p99).
  if deliver_turn(js, side) > 1 {
    if let Some(session) = side.borrow().session.clone() {
      super::write_hold::hold(js, &session);
    }
  }
  if in_window {
    let mut me = side.borrow_mut();
    if me.keeps_alive {
      if let Some(deadline) = me.spin.still_busy(Instant::now()) {
        drop(me);
        loop_spin::until(js, deadline);
      }
    }
  }
}

/// One turn: chunks of the backlog, in order (T3), until the turn's budget is spent; what
/// is left goes to the next turn. Returns how many messages it delivered.
fn deliver_turn(js: Js, side: &Shared) -> usize {
  let mut budget = TurnBudget::start();
  let mut total = 0;
  loop {
    let chunk: Vec<Event> = {
      let mut me = side.borrow_mut();
      let take = me.backlog.len().min(CHUNK_EVENTS);
      me.backlog.drain(..take).collect()
    };
    if chunk.is_empty() {
      return total;
    }
    let delivered = chunk.len();
    total += delivered;
    deliver_chunk(js, side, chunk);
    if !budget.spend(delivered) {
      break;
    }
  }
  if side.borrow().backlog.is_empty() || !schedule_turn(js, side) {
    // Nothing left, or no way to wait for a turn: whatever remains goes now.
    while !side.borrow().backlog.is_empty() {
      let chunk: Vec<Event> = side.borrow_mut().backlog.drain(..).collect();
      total += chunk.len();
      deliver_chunk(js, side, chunk);
    }
  }
  total
}

/// Asks for `deliver_turn` on the next event-loop turn, through Node's own `setImmediate`
/// (the `timers` module's, which fake timers in test runners leave alone), else the
/// global one.
fn schedule_turn(js: Js, side: &Shared) -> bool {
  let Some(set_immediate) = timer_function(js, "setImmediate") else {
    return false;
  };
  let next = side.clone();
  let Ok(turn) = js.closure("deliverTurn", move |js, _| {
    next.borrow_mut().turn_scheduled = false;
    deliver(js, &next);
    Ok(js.undefined())
  }) else {
    return false;
  };
  if js.call(set_immediate, js.undefined(), &[turn]).is_err() {
    return false;
  }
  side.borrow_mut().turn_scheduled = true;
  true
}

fn deliver_chunk(js: Js, side: &Shared, events: Vec<Event>) {
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
      dispatch_run(js, side, run);
    } else {
      dispatch(js, side, event);
    }
  }
}

/// Parses the payloads of a run of results and notifications as one JSON array.
fn dispatch_run(js: Js, side: &Shared, run: Vec<Event>) {
  fn payload(event: &Event) -> Option<&str> {
    match event {
      Event::Settled {
        outcome: Ok(Some(result)),
        ..
      } => Some(result.get()),
      Event::Notification { params, .. } => params.as_deref(),
      _ => None,
    }
  }
  let bytes: usize = run.iter().map(|e| payload(e).map_or(4, str::len) + 1).sum();
  let mut text = String::with_capacity(bytes + 2);
  text.push('[');
  for (i, event) in run.iter().enumerate() {
    if i > 0 {
      text.push(',');
    }
    text.push_str(payload(event).unwrap_or("null"));
  }
  text.push(']');
  // Params Rust did not check might still parse some other way: the count shows whether
  // each stood for exactly one element.
  let parsed = js
    .json_parse(&text)
    .ok()
    .filter(|values| js.array_length(*values) as usize == run.len());
  let Some(values) = parsed else {
    for event in run {
      dispatch(js, side, event);
    }
    return;
  };
  // A flood repeats one method to one callback: their JS values are made once per run
  // (the callback again whenever JS assigns a new one, T1).
  let undefined = js.undefined();
  let mut method_value: Option<(String, Value)> = None;
  let mut listener: Option<(u64, Value)> = None;
  for (i, event) in run.into_iter().enumerate() {
    let value = js.element(values, i as u32).unwrap_or(undefined);
    match event {
      Event::Settled { ticket, .. } => {
        // One at a time: a callback earlier in the run may still abort it (T8).
        let deferred = side.borrow_mut().finish(ticket);
        if let Some(deferred) = deferred {
          js.resolve(deferred, value);
        }
      }
      Event::Notification { method, params } => {
        side.borrow().forget_stale_list(&method);
        let epoch = side.borrow().callbacks_epoch;
        if listener.is_none_or(|(seen, _)| seen != epoch) {
          let callback = side.borrow_mut().callback(CallbackSlot::Notification);
          listener = callback.map(|callback| (epoch, callback));
        }
        let Some((_, callback)) = listener else {
          continue;
        };
        let params = if params.is_some() { value } else { undefined };
        let name = match &method_value {
          Some((last, name)) if *last == method => *name,
          _ => {
            let name = js.string(&method);
            method_value = Some((method, name));
            name
          }
        };
        invoke_user(
          js,
          side,
          CallbackSlot::Notification,
          callback,
          &[name, params],
        );
      }
      other => dispatch(js, side, other),
    }
  }
}

/// Calls a user callback; what it throws goes to `onError` and never reaches the host.
fn call_user(js: Js, side: &Shared, slot: CallbackSlot, args: &[Value]) -> Option<Value> {
  let callback = side.borrow_mut().callback(slot)?;
  invoke_user(js, side, slot, callback, args)
}

/// `call_user` with the callback already looked up.
fn invoke_user(
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

fn parse_or_undefined(js: Js, raw: Option<&serde_json::value::RawValue>) -> Value {
  raw
    .and_then(|raw| js.json_parse(raw.get()).ok())
    .unwrap_or_else(|| js.undefined())
}

fn dispatch(js: Js, side: &Shared, event: Event) {
  match event {
    Event::Progress { ticket, params } => {
      let hook = side.borrow().progress_hook(ticket);
      if let Some(hook) = hook {
        let params = parse_or_undefined(js, Some(&params));
        // Like the other callbacks: what it throws goes to onError.
        if let Err(Thrown(exception)) = js.call(hook, js.undefined(), &[params]) {
          call_user(js, side, CallbackSlot::Error, &[exception]);
        }
      }
    }
    Event::Notification { method, params } => {
      side.borrow().forget_stale_list(&method);
      if !side.borrow_mut().has_callback(CallbackSlot::Notification) {
        return;
      }
      let params = match params.as_deref().map(|text| js.json_parse(text)) {
        None => js.undefined(),
        Some(Ok(params)) => params,
        // S3: params that are not JSON (left for this parse to find) skip the message.
        Some(Err(_)) => return,
      };
      call_user(
        js,
        side,
        CallbackSlot::Notification,
        &[js.string(&method), params],
      );
    }
    Event::Settled { ticket, outcome } => {
      let deferred = side.borrow_mut().finish(ticket);
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
      let deferred = side.borrow_mut().finish(ticket);
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
    Event::ServerRequestCancelled { id } => {
      let controller = side.borrow_mut().serving.remove(&id);
      if let Some(controller) = controller {
        if let Some(value) = js.ref_value(controller) {
          let _ = super::host::call_method(js, value, "abort", &[]);
        }
        js.delete_ref(controller);
      }
    }
    Event::Stderr(text) => {
      call_user(js, side, CallbackSlot::Stderr, &[js.string(&text)]);
    }
    Event::Auth { call, reply } => answer_auth_call(js, side, call, reply),
    Event::Error(error) => {
      call_user(
        js,
        side,
        CallbackSlot::Error,
        &[js_error::to_js(js, &error)],
      );
    }
    // A20: `onClose` (once, as for a close) while `connected` stays true.
    Event::ListenerEnded => {
      let first = !std::mem::replace(&mut side.borrow_mut().close_fired, true);
      if first {
        call_user(js, side, CallbackSlot::Close, &[]);
      }
    }
    Event::Closed => {
      side.borrow_mut().stop_host_reader();
      // S4: onClose comes after the rejections above; their handlers are already queued
      // as microtasks, so a microtask of our own runs after them.
      let queued = js
        .get(js.global(), "queueMicrotask")
        .ok()
        .filter(|f| js.is_function(*f))
        .and_then(|queue| {
          let side = side.clone();
          let fire = js
            .closure("onClosed", move |js, _| {
              fire_closed(js, &side);
              Ok(js.undefined())
            })
            .ok()?;
          js.call(queue, js.undefined(), &[fire]).ok()
        });
      if queued.is_none() {
        fire_closed(js, side);
      }
    }
  }
}

/// `onClose` exactly once, then every `close()` promise resolves. A21: after a `close()`
/// of the caller's, `onClose` is unset.
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
    if !waiters.is_empty() {
      side
        .borrow_mut()
        .set_callback(CallbackSlot::Close, js.undefined());
    }
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
  let host = JsHost::new(js);
  let handler = side.borrow_mut().callback(CallbackSlot::Request);
  let handled = handler.map(|handler| {
    let mut args = vec![js.string(method), parse_or_undefined(js, params)];
    // P6: the handler's `{signal}` aborts when the server cancels its request.
    if let Some((controller, extra)) = abort_controller(js) {
      args.push(extra);
      let controller = js.new_ref(controller, 1);
      if let Some(old) = side.borrow_mut().serving.insert(id.clone(), controller) {
        js.delete_ref(old);
      }
    }
    match js.call(handler, js.undefined(), &args) {
      // A promise (or any thenable) is answered when it settles, anything else at once.
      Ok(value) if is_thenable(js, value) => executor::settled(js, value),
      Ok(value) => ready(Ok(host.hold(value))),
      Err(Thrown(exception)) => ready(Err(host.hold(exception))),
    }
  });
  let served = Rc::downgrade(side);
  executor::spawn(js, async move {
    let answer = server_requests::answer(&host, handled).await;
    if let Some(side) = served.upgrade() {
      let controller = side.borrow_mut().serving.remove(&id);
      if let Some(controller) = controller {
        js.delete_ref(controller);
      }
    }
    session.answer(&id, answer.as_deref());
  });
}

/// O1: runs one of the OAuth flow's calls on `config.oauth` (its `redirect`, or its
/// `store`'s methods) and sends back what it settles with, as JSON.
fn answer_auth_call(
  js: Js,
  side: &Shared,
  call: crate::oauth::HostCall,
  reply: tokio::sync::oneshot::Sender<crate::oauth::HostAnswer>,
) {
  use crate::host::Values;
  use crate::oauth::HostCall;
  let host = JsHost::new(js);
  if call == HostCall::AuthError {
    // O6: what `onAuthError()` settles with; no hook (or a throwing one) means `null`.
    let hook = side.borrow_mut().callback(CallbackSlot::AuthError);
    let pending = hook.map(|hook| host.call(hook, js.undefined(), &[]));
    executor::spawn(js, async move {
      let answer = match pending {
        Some(pending) => pending
          .await
          .ok()
          .and_then(|v| host.to_json(&v).ok().flatten()),
        None => None,
      };
      let _ = reply.send(Ok(answer));
    });
    return;
  }
  let oauth = side.borrow().auth.and_then(|r| js.ref_value(r));
  if let (HostCall::Provider { method, args }, Some(provider)) = (&call, oauth) {
    let pending = provider_call(js, &host, provider, method, args);
    executor::spawn(js, async move {
      let answer = match pending.await {
        Ok(value) => host.to_json(&value).map_err(|thrown| host.message(&thrown)),
        Err(thrown) => Err(host.message(&thrown)),
      };
      let _ = reply.send(answer);
    });
    return;
  }
  let Some(oauth) = oauth else {
    let _ = reply.send(Err("config.oauth is gone".to_string()));
    return;
  };
  let store = || js.get(oauth, "store").unwrap_or_else(|_| js.undefined());
  let (target, method, args) = match call {
    HostCall::Redirect(url) => (oauth, "redirect", vec![js.string(&url)]),
    HostCall::StoreGet(key) => (store(), "get", vec![js.string(&key)]),
    HostCall::StoreSet(key, credential) => {
      let value = js
        .json_parse(&credential)
        .unwrap_or_else(|_| js.undefined());
      (store(), "set", vec![js.string(&key), value])
    }
    HostCall::StoreDelete(key) => (store(), "delete", vec![js.string(&key)]),
    HostCall::AuthError | HostCall::Provider { .. } => return,
  };
  let pending = host.call_method(&host.hold(target), method, &args);
  executor::spawn(js, async move {
    let answer = match pending.await {
      Ok(value) => host.to_json(&value).map_err(|thrown| host.message(&thrown)),
      Err(thrown) => Err(host.message(&thrown)),
    };
    let _ = reply.send(answer);
  });
}

/// O1: `provider[method](...args)`, or the property itself when it is not a function (the
/// SDK's `redirectUrl` and `clientMetadata` are getters); an absent optional method gives
/// `undefined`. `redirectToAuthorization` gets a `URL`, as the SDK passes one.
fn provider_call(
  js: Js,
  host: &JsHost,
  provider: Value,
  method: &str,
  args: &[String],
) -> crate::host::Pending<super::js::Held> {
  let value = match js.get(provider, method) {
    Ok(value) => value,
    Err(Thrown(error)) => return ready(Err(host.hold(error))),
  };
  if !js.is_function(value) {
    return ready(Ok(host.hold(value)));
  }
  let mut values: Vec<Value> = args
    .iter()
    .map(|a| js.json_parse(a).unwrap_or_else(|_| js.undefined()))
    .collect();
  if method == "redirectToAuthorization" {
    let url = js
      .get(js.global(), "URL")
      .ok()
      .filter(|c| js.is_function(*c))
      .and_then(|class| js.construct(class, &values).ok());
    if let Some(url) = url {
      values = vec![url];
    }
  }
  host.call(value, provider, &values)
}

/// A new `AbortController` and `{signal}` for a handler, where the runtime has one.
fn abort_controller(js: Js) -> Option<(Value, Value)> {
  let class = js.get(js.global(), "AbortController").ok()?;
  if !js.is_function(class) {
    return None;
  }
  let controller = js.construct(class, &[]).ok()?;
  let extra = js.object().ok()?;
  js.set(extra, "signal", js.get(controller, "signal").ok()?);
  Some((controller, extra))
}

fn is_thenable(js: Js, value: Value) -> bool {
  js.type_of(value) == sys::ValueType::napi_object
    && js.get(value, "then").is_ok_and(|then| js.is_function(then))
}
