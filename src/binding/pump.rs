//! Delivers core events to JS, in order and in batches, through one threadsafe function per
//! transport. Responses travel the same queue as notifications, so a notification the server
//! sent first is always handled first (T3), and a burst costs one hop to the JS thread.
use std::time::Instant;

use super::auth_call;
use super::executor;
use super::js::timer_function;
use super::js::{Js, Thrown, Value};
use super::js_error;
use super::js_side::{call_user, invoke_user, CallbackSlot, Shared};
use super::loop_spin;
use super::server_request;
use super::tree_value::build_tree;
use crate::runtime::turn::{TurnBudget, CHUNK_EVENTS};
use crate::session::runs::{pieces, Piece};
use crate::session::Event;

/// Runs `read` (a host reader's read, on the JS thread) and delivers the events it emits
/// right after, without the trip through the threadsafe function.
pub fn read_here<T>(js: Js, side: &Shared, read: impl FnOnce() -> T) -> T {
  let pump = side.borrow().sink();
  let result = crate::session::queue::collecting(&pump, || executor::in_runtime(read));
  deliver(js, side);
  result
}

/// Delivers what is queued: the threadsafe function's call, and a host reader's.
pub fn deliver(js: Js, side: &Shared) {
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
  for piece in pieces(events) {
    match piece {
      Piece::One(event) => dispatch(js, side, event),
      Piece::Run { events, array } => dispatch_run(js, side, events, &array),
    }
  }
}

/// A run of results and notifications whose payloads are `array`, parsed at once.
fn dispatch_run(js: Js, side: &Shared, run: Vec<Event>, array: &str) {
  // Params Rust did not check might still parse some other way: the count shows whether
  // each stood for exactly one element.
  let parsed = js
    .json_parse(array)
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

fn dispatch(js: Js, side: &Shared, event: Event) {
  match event {
    Event::Progress { ticket, params } => {
      let hook = side.borrow().progress_hook(ticket);
      if let Some(hook) = hook {
        let params = js.json_parse_or_undefined(Some(params.get()));
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
        Err(error) => {
          let transport = side.borrow().transport;
          js.reject(deferred, js_error::to_js(js, transport, &error))
        }
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
      server_request::answer(js, side, id.get().to_string(), &method, params.as_deref())
    }
    Event::ServerRequestCancelled { id } => server_request::cancel(js, side, &id),
    Event::Stderr(text) => {
      call_user(js, side, CallbackSlot::Stderr, &[js.string(&text)]);
    }
    Event::Auth { call, reply } => auth_call::answer(js, side, call, reply),
    Event::Error(error) => {
      call_user(
        js,
        side,
        CallbackSlot::Error,
        &[js_error::reported(js, &error)],
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
