//! One connection's correlation core: id allocation, the one table of requests (`requests`),
//! timeouts, cancellation and server-request answering. Transport-agnostic and napi-free:
//! frames go out through an ordered queue, everything JS must see comes out as `Event`s in
//! order, and the JS side's handles for each request are kept in the same table.
pub mod queue;
mod requests;
pub mod runs;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::CoreError;
use crate::protocol::headers::{self, Route};
use crate::protocol::json_text::JsonText;
use crate::protocol::line_scan::LineScan;
use crate::protocol::message::{self, Applied, Incoming, RpcError, WireId};
use crate::protocol::plain_notification::{plain_notification, PlainNotification};
use crate::protocol::subscriptions;
use crate::protocol::tool_headers;
use crate::protocol::tree;
pub use requests::{Hooks, HostRef};
use requests::{Requests, Wire};

/// P4: the server's progress on one of our requests.
const PROGRESS: &str = "notifications/progress";
/// P6/T9: a cancellation, of a request either side sent.
const CANCELLED: &str = "notifications/cancelled";

/// Whether a plain notification goes to JS as it is: progress, cancellation and the
/// notifications of a subscription (N7) are acted on here, after the full parse.
fn needs_nothing_here(plain: &PlainNotification) -> bool {
  plain.method != PROGRESS
    && plain.method != CANCELLED
    && !plain
      .params
      .is_some_and(subscriptions::mentions_subscription)
}

/// What the JS side is told, in the order it must see it (T3).
#[derive(Debug)]
pub enum Event {
  Notification {
    method: String,
    /// The params' JSON text. A plain notification's is not checked in Rust: the host's
    /// parse is, and a notification whose params do not parse is skipped (S3).
    params: Option<Box<str>>,
  },
  /// A request (`Some(result)`) or a notify (`None`) finished.
  Settled {
    ticket: u64,
    outcome: Result<Option<JsonText>, CoreError>,
  },
  /// A large, string-heavy result, parsed here so the JS thread only builds it (see
  /// `message::prefers_tree`).
  SettledTree {
    ticket: u64,
    result: tree::ResultTree,
  },
  /// P4: a `notifications/progress` for request `ticket`, its params without the token.
  Progress {
    ticket: u64,
    params: Box<RawValue>,
  },
  /// P6: the server cancelled its request `id` (raw JSON) while our handler ran.
  ServerRequestCancelled {
    id: String,
  },
  /// T11: a server request that needs the JS `onRequest` handler.
  ServerRequest {
    id: Box<RawValue>,
    method: String,
    params: Option<Box<RawValue>>,
  },
  Stderr(String),
  Error(CoreError),
  Closed,
  /// A20: the GET listener's stream ended for good; the transport stays connected.
  ListenerEnded,
  /// O1: the OAuth flow needs the caller's `redirect` or token store.
  Auth {
    call: crate::host::HostCall,
    reply: tokio::sync::oneshot::Sender<crate::host::HostAnswer>,
  },
}

/// Receives events on the I/O threads and hands them to JS in order.
pub trait EventSink: Send + Sync + 'static {
  fn emit(&self, event: Event);
}

/// What a written frame settles once it is on the wire (or fails to get there).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ack {
  None,
  Request(u64),
  Notify(u64),
}

/// Where a session's frames go. `send` may put the frame on the wire at once (`Written`) or
/// queue it for a writer task (`Queued`); it hands the frame back when the writer is gone.
pub trait FrameSink: Send + Sync + 'static {
  fn send(&self, out: Outgoing) -> Result<Sent, Outgoing>;
  /// Holds requests until `release` (S7: written together); false if this sink never does.
  fn hold(&self) -> bool {
    false
  }
  fn release(&self) {}
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sent {
  Written,
  Queued,
}

impl FrameSink for mpsc::UnboundedSender<Outgoing> {
  fn send(&self, out: Outgoing) -> Result<Sent, Outgoing> {
    mpsc::UnboundedSender::send(self, out)
      .map(|()| Sent::Queued)
      .map_err(|e| e.0)
  }
}

#[derive(Debug)]
pub struct Outgoing {
  pub frame: String,
  pub ack: Ack,
  /// For requests: cancelled once nobody waits for the answer any more (answered, timed
  /// out, aborted, closed), so a transport can drop the work in flight (T7, T8).
  pub cancel: Option<CancellationToken>,
  /// P4: the session times this request itself (its caller chose the timeouts), so the
  /// transport must not apply its own.
  pub session_timed: bool,
  /// N7: a `subscriptions/listen` request: its stream lasts until the server ends it, and
  /// is opened again (with a new id) when it breaks.
  pub subscription: bool,
  /// The transport-level timeout for this frame (A9: resolved as it was sent); `None`: none.
  pub timeout: Option<Duration>,
  /// N4: in the stateless era, the routing headers of a request or notification.
  pub route: Option<Route>,
}

/// P4: what a caller may ask of one request beyond T2.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RequestOptions {
  /// Send `_meta.progressToken` and report matching progress as `Event::Progress`.
  pub progress: bool,
  /// The caller's timeouts; `None` keeps the transport's.
  pub timing: Option<RequestTiming>,
  /// N7: a subscription: never timed, and it settles with no value (never an error) when
  /// it ends, however it ends.
  pub subscription: bool,
  /// A9: replaces the transport's configured timeout for this request (`Some(None)`: none).
  pub base_timeout: Option<Option<Duration>>,
}

/// A number field of a request's options as the caller gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionField {
  /// Absent, `null` or `undefined`.
  Absent,
  Number(f64),
  /// Anything else.
  Other,
}

impl RequestOptions {
  /// P4: a request's options from `onProgress` (whether one was given), `timeout`,
  /// `maxTotalTimeout` (milliseconds; 0 is no bound) and `resetTimeoutOnProgress`.
  ///
  /// # Errors
  /// The TypeError message naming a field that is not a non-negative number (E2).
  pub fn from_fields(
    progress: bool,
    timeout: OptionField,
    max_total: OptionField,
    reset_on_progress: bool,
  ) -> Result<Self, String> {
    let duration = |name: &str, field: OptionField| match field {
      OptionField::Absent => Ok(None),
      OptionField::Number(ms) if ms.is_finite() && ms >= 0.0 => {
        Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
      }
      _ => Err(format!(
        "The \"options.{name}\" field must be a non-negative number"
      )),
    };
    let timeout = duration("timeout", timeout)?;
    let max_total = duration("maxTotalTimeout", max_total)?.filter(|d| !d.is_zero());
    let timing =
      (timeout.is_some() || max_total.is_some() || reset_on_progress).then_some(RequestTiming {
        timeout,
        reset_on_progress,
        max_total,
      });
    Ok(RequestOptions {
      progress,
      timing,
      subscription: false,
      base_timeout: None,
    })
  }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RequestTiming {
  /// `None`: the transport's configured timeout; `Some(ZERO)`: no timeout.
  pub timeout: Option<Duration>,
  /// Each progress notification restarts the timeout.
  pub reset_on_progress: bool,
  /// Bounds the whole request, progress or not.
  pub max_total: Option<Duration>,
}

struct State {
  connected: bool,
  next_ticket: u64,
  requests: Requests<HostRef>,
  /// P6: the server's requests our handlers are still working on, by raw JSON id.
  serving: std::collections::HashSet<String>,
  /// N3: in the stateless era, the `_meta` every request carries.
  stateless_meta: Option<message::MetaEnvelope>,
  /// N4: the tool parameters mirrored into `Mcp-Param-*` headers, from `tools/list`.
  tool_headers: tool_headers::ToolHeaders,
  /// A7: with `requestIdFormat: "string"`, request `n` goes out as the hex of `n ^ salt`.
  hex_salt: Option<u64>,
  /// Notifies and listeners get tickets of their own, so requests are numbered 1, 2, 3…
  next_local_ticket: u64,
}

/// Where the tickets that never go on the wire start: past every JS-safe request id.
const LOCAL_TICKETS: u64 = 1 << 53;

pub struct Session {
  state: Mutex<State>,
  outbox: Arc<dyn FrameSink>,
  events: Arc<dyn EventSink>,
  timeout: Option<Duration>,
  runtime: Handle,
  /// Whether the transport is HTTP's: it drops work in flight through `Outgoing::cancel`,
  /// and in the stateless era sends `Outgoing::route` as headers (N4).
  cancel_tokens: bool,
  /// The version the server answered `initialize` with, or the stateless era's (H2 sends
  /// it as a header). Apart from the state: every HTTP request reads it on a runtime
  /// thread, and under the state's lock that read waited on the JS thread's calls.
  protocol_version: std::sync::RwLock<Option<String>>,
  /// N3: `stateless_meta.is_some()`, read on every POST without taking the lock.
  stateless: std::sync::atomic::AtomicBool,
  /// N4: whether any tool mirrors a parameter in a header, read on every stateless POST
  /// without taking the lock.
  mirrors_params: std::sync::atomic::AtomicBool,
  /// For the timers, which must not keep the session alive.
  me: std::sync::Weak<Session>,
  /// `requests.keeps_alive()`, read by the JS side after each change without the lock.
  keeps_alive: AtomicBool,
}

impl State {
  /// N7: whether the subscription a notification names (by its wire id) is one of ours
  /// and still open.
  fn is_open_subscription(&self, id: Option<WireId>) -> bool {
    id.and_then(|id| self.request_number(id)).is_some_and(|id| {
      let ticket = self.requests.ticket_of(id);
      self
        .requests
        .waiting(ticket)
        .is_some_and(|w| w.subscription)
    })
  }

  /// A7: the id as JSON text for request number `id`.
  fn id_json(&self, id: u64) -> message::IdJson {
    match self.hex_salt {
      Some(salt) => message::IdJson::hex(id ^ salt),
      None => message::IdJson::number(id),
    }
  }

  /// A7: the request number a response's id names: ids are matched by type and value.
  fn request_number(&self, id: WireId) -> Option<u64> {
    match (id, self.hex_salt) {
      (WireId::Number(n), None) => Some(n),
      (WireId::Hex(h), Some(salt)) => Some(h ^ salt),
      _ => None,
    }
  }

  fn local_ticket(&mut self) -> u64 {
    let ticket = self.next_local_ticket;
    self.next_local_ticket += 1;
    ticket
  }
}

impl Session {
  /// `timeout` of `None` disables request timeouts (config `timeout: 0`).
  pub fn new(
    outbox: Arc<dyn FrameSink>,
    events: Arc<dyn EventSink>,
    timeout: Option<Duration>,
    runtime: Handle,
    cancel_tokens: bool,
  ) -> Arc<Self> {
    Arc::new_cyclic(|me| Session {
      me: me.clone(),
      state: Mutex::new(State {
        connected: true,
        next_ticket: 1,
        next_local_ticket: LOCAL_TICKETS,
        hex_salt: None,
        requests: Requests::default(),
        serving: Default::default(),
        stateless_meta: None,
        tool_headers: Default::default(),
      }),
      outbox,
      events,
      timeout,
      runtime,
      cancel_tokens,
      protocol_version: Default::default(),
      stateless: Default::default(),
      mirrors_params: Default::default(),
      keeps_alive: AtomicBool::new(false),
    })
  }

  fn state(&self) -> MutexGuard<'_, State> {
    // A panic while holding the lock leaves plain data behind; keep serving.
    self
      .state
      .lock()
      .unwrap_or_else(|poisoned| poisoned.into_inner())
  }

  pub fn is_connected(&self) -> bool {
    self.state().connected
  }

  pub fn events(&self) -> &Arc<dyn EventSink> {
    &self.events
  }

  /// Sends a request (T2) and returns its id; the outcome arrives as `Event::Settled`.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn request(self: &Arc<Self>, method: &str, params: Option<&str>) -> Result<u64, CoreError> {
    self.request_with(method, params, RequestOptions::default())
  }

  /// `request` with P4's progress reporting and per-request timeouts.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn request_with(
    self: &Arc<Self>,
    method: &str,
    params: Option<&str>,
    options: RequestOptions,
  ) -> Result<u64, CoreError> {
    self.send_request(method, params, options, None)
  }

  /// `request_with` for a caller on the JS side, told through `hooks` (its entry stays in
  /// the table until `finish`).
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn request_tracked(
    self: &Arc<Self>,
    method: &str,
    params: Option<&str>,
    options: RequestOptions,
    hooks: Hooks<HostRef>,
  ) -> Result<u64, CoreError> {
    self.send_request(method, params, options, Some(hooks))
  }

  fn send_request(
    self: &Arc<Self>,
    method: &str,
    params: Option<&str>,
    options: RequestOptions,
    hooks: Option<Hooks<HostRef>>,
  ) -> Result<u64, CoreError> {
    let mut state = self.state();
    if !state.connected {
      return Err(CoreError::NotConnected);
    }
    let id = state.next_ticket;
    // Params that are not an object (T2 lets them through) carry no token.
    let with_token = options
      .progress
      .then(|| message::with_progress_token(params, id))
      .flatten();
    let params = with_token.as_deref().or(params);
    let route = self.route(&state, method, params);
    // N3: the stateless era's envelope, on every request, spliced as the frame is written.
    let frame = {
      let id_json = state.id_json(id);
      let id_json = id_json.as_str();
      match state
        .stateless_meta
        .as_ref()
        .and_then(|m| m.applied(params))
      {
        Some(Applied::Spliced(pieces)) => {
          message::request_frame_from_pieces(id_json, method, &pieces)
        }
        Some(Applied::Rebuilt(text)) => {
          message::request_frame_with_id(id_json, method, Some(&text))
        }
        None => message::request_frame_with_id(id_json, method, params),
      }
    };
    state.next_ticket += 1;
    let base = options.base_timeout.unwrap_or(self.timeout);
    // Without the caller's timing, transports that time their own phases (HTTP) arm none.
    let timeout = match options.timing {
      _ if options.subscription => None,
      Some(timing) => timing.timeout.or(base),
      None if self.cancel_tokens => None,
      None => base,
    }
    .filter(|t| !t.is_zero());
    let timer = timeout.map(|timeout| self.arm(id, timeout));
    let total_timer = options
      .timing
      .and_then(|t| t.max_total)
      .map(|limit| self.arm(id, limit));
    // Queued under the lock so frames leave in call order (S7).
    let cancel = self.cancel_tokens.then(CancellationToken::new);
    if self
      .outbox
      .send(Outgoing {
        frame,
        ack: Ack::Request(id),
        cancel: cancel.clone(),
        session_timed: options.timing.is_some() || options.subscription,
        subscription: options.subscription,
        timeout: base,
        route,
      })
      .is_err()
    {
      for timer in [timer, total_timer].into_iter().flatten() {
        timer.abort();
      }
      return Err(CoreError::NotConnected);
    }
    let resets = options.timing.is_some_and(|t| t.reset_on_progress);
    let lists_tools = method == "tools/list" && state.stateless_meta.is_some();
    let wire = Wire {
      is_initialize: method == "initialize",
      lists_tools,
      timer,
      total_timer,
      cancel,
      progress: options.progress,
      reset_after: timeout.filter(|_| resets),
      subscription: options.subscription,
    };
    state.requests.insert(id, Some(wire), hooks);
    self.note_keep_alive(&state);
    Ok(id)
  }

  /// P6: `notifications/cancelled` for a request of the server's that a handler of ours
  /// is working on: it will not be answered, and the handler is told.
  fn server_cancelled(&self, params: Option<&RawValue>) {
    let Some(id) = message::cancelled_request_id(params) else {
      return;
    };
    if self.state().serving.remove(&id) {
      self.events.emit(Event::ServerRequestCancelled { id });
    }
  }

  /// A timer that times request `id` out after `limit`.
  fn arm(&self, id: u64, limit: Duration) -> JoinHandle<()> {
    let session = self.me.clone();
    self.runtime.spawn(async move {
      tokio::time::sleep(limit).await;
      if let Some(session) = session.upgrade() {
        session.expire(id, limit);
      }
    })
  }

  /// P4: a progress notification for one of our requests: reported to it, and its timeout
  /// restarted when the caller asked for that.
  fn progressed(&self, params: Option<&RawValue>) {
    let Some(id) = message::progress_token(params) else {
      return;
    };
    let mut state = self.state();
    let Some(pending) = state.requests.waiting_mut(id).filter(|p| p.progress) else {
      return;
    };
    if let Some(limit) = pending.reset_after {
      if let Some(timer) = pending.timer.take() {
        timer.abort();
      }
      pending.timer = Some(self.arm(id, limit));
    }
    drop(state);
    if let Some(params) = params.and_then(message::without_progress_token) {
      self.events.emit(Event::Progress { ticket: id, params });
    }
  }

  /// Sends a notification; `Event::Settled` with `None` follows once it is written.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn notify(&self, method: &str, params: Option<&str>) -> Result<u64, CoreError> {
    self.notify_with(method, params, None)
  }

  /// `notify` with A9's resolved timeout in place of the transport's (`Some(None)`: none).
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn notify_with(
    &self,
    method: &str,
    params: Option<&str>,
    base_timeout: Option<Option<Duration>>,
  ) -> Result<u64, CoreError> {
    self.send_notify(method, params, base_timeout, None)
  }

  /// `notify_with` for a caller on the JS side, told through `hooks`.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn notify_tracked(
    &self,
    method: &str,
    params: Option<&str>,
    base_timeout: Option<Option<Duration>>,
    hooks: Hooks<HostRef>,
  ) -> Result<u64, CoreError> {
    self.send_notify(method, params, base_timeout, Some(hooks))
  }

  fn send_notify(
    &self,
    method: &str,
    params: Option<&str>,
    base_timeout: Option<Option<Duration>>,
    hooks: Option<Hooks<HostRef>>,
  ) -> Result<u64, CoreError> {
    let mut state = self.state();
    if !state.connected {
      return Err(CoreError::NotConnected);
    }
    let ticket = state.local_ticket();
    // In the table before the frame can be written, which settles it.
    if hooks.is_some() {
      state.requests.insert(ticket, None, hooks);
    }
    let frame = message::notification_frame(method, params);
    let route = self.route(&state, method, params);
    let sent = self.outbox.send(Outgoing {
      frame,
      ack: Ack::Notify(ticket),
      cancel: None,
      session_timed: false,
      subscription: false,
      timeout: base_timeout.unwrap_or(self.timeout),
      route,
    });
    let Ok(sent) = sent else {
      state.requests.finish(ticket);
      return Err(CoreError::NotConnected);
    };
    self.note_keep_alive(&state);
    drop(state);
    if sent == Sent::Written {
      self.write_done(Ack::Notify(ticket));
    }
    Ok(ticket)
  }

  /// Whether requests are now held until `release_requests`.
  pub fn hold_requests(&self) -> bool {
    self.outbox.hold()
  }

  pub fn release_requests(&self) {
    self.outbox.release();
  }

  /// T8: the caller gave up on request `id`: its entry is gone, the server is told if it
  /// could still answer, and the caller's hooks come back to be released (`None` once the
  /// caller has been told how it ended: a late abort changes nothing).
  pub fn abort(&self, id: u64, reason: &str) -> Option<Hooks<HostRef>> {
    let finished = {
      let mut state = self.state();
      let finished = state.requests.finish(id)?;
      self.note_keep_alive(&state);
      finished
    };
    if let Some(wire) = finished.wire {
      self.cancelled(id, wire, reason);
    }
    finished.hooks
  }

  /// The JS side has told the caller of `ticket` how it ended: the hooks to release.
  pub fn finish(&self, ticket: u64) -> Option<Hooks<HostRef>> {
    let mut state = self.state();
    let finished = state.requests.finish(ticket)?;
    self.note_keep_alive(&state);
    drop(state);
    if let Some(wire) = finished.wire {
      wire.stop();
    }
    finished.hooks
  }

  /// The hooks of `ticket` while its caller waits (P4: its `onProgress`; T8: its signal).
  pub fn hooks(&self, ticket: u64) -> Option<Hooks<HostRef>> {
    self.state().requests.hooks(ticket)
  }

  /// T8: the caller listens for an abort of `ticket` with `listener` on `signal`; false
  /// when its caller has been told already (the listener is then the caller's to drop).
  pub fn set_abort(&self, ticket: u64, signal: HostRef, listener: HostRef) -> bool {
    self.state().requests.set_abort(ticket, signal, listener)
  }

  /// A JS promise the session does not send anything for (the SSE listener): its ticket,
  /// which the transport settles.
  pub fn track(&self, hooks: Hooks<HostRef>) -> u64 {
    let mut state = self.state();
    let ticket = state.local_ticket();
    state.requests.insert(ticket, None, Some(hooks));
    self.note_keep_alive(&state);
    ticket
  }

  /// Whether a caller still waits for an outcome that keeps the host alive.
  pub fn keeps_alive(&self) -> bool {
    self.keeps_alive.load(Ordering::Acquire)
  }

  fn note_keep_alive(&self, state: &State) {
    self
      .keeps_alive
      .store(state.requests.keeps_alive(), Ordering::Release);
  }

  fn expire(&self, id: u64, timeout: Duration) {
    self.time_out(id, CoreError::RequestTimeout(timeout));
  }

  /// T7/T9: a transport-side timer for request `id` ran out (HTTP times its phases itself).
  pub fn time_out(&self, id: u64, error: CoreError) {
    let wire = self.state().requests.settle(id);
    if let Some(wire) = wire {
      // The cancel is queued first, so anything JS sends after seeing the rejection follows it.
      self.cancelled(id, wire, &error.to_string());
      self.events.emit(Event::Settled {
        ticket: id,
        outcome: Err(error),
      });
    }
  }

  /// T9: tell the server, best effort, that we no longer wait for `id`. N5: over HTTP in
  /// the stateless era, closing the request's stream (its cancel token) says it instead.
  fn cancelled(&self, id: u64, wire: Wire, reason: &str) {
    let is_initialize = wire.is_initialize;
    wire.stop();
    let closes_stream = self.cancel_tokens && self.is_stateless();
    if !is_initialize && !closes_stream && self.is_connected() {
      let params = message::cancelled_params(&self.id_json(id), reason);
      // Sent only outside HTTP's stateless era: no routing headers.
      self.send_unacked(message::notification_frame(CANCELLED, Some(&params)), None);
    }
  }

  /// N4: the routing headers of a frame, for HTTP in the stateless era.
  fn route(&self, state: &State, method: &str, params: Option<&str>) -> Option<Route> {
    (self.cancel_tokens && state.stateless_meta.is_some()).then(|| headers::route(method, params))
  }

  /// Queues a frame nobody waits for; if the writer is gone the transport is closing anyway.
  fn send_unacked(&self, frame: String, route: Option<Route>) {
    let _ = self.outbox.send(Outgoing {
      frame,
      ack: Ack::None,
      cancel: None,
      session_timed: false,
      subscription: false,
      timeout: self.timeout,
      route,
    });
  }

  /// One frame from the server (S3: anything that is not JSON-RPC is skipped).
  pub fn handle_frame(&self, frame: &str) {
    self.handle(frame, None)
  }

  /// One line from the server, kept whole so a large result's strings can point into it.
  /// `scan` is what the framer learned of it while it arrived, if it was long.
  pub fn handle_line(&self, line: bytes::Bytes, scan: Option<LineScan>) {
    let quotes = scan
      .as_ref()
      .filter(|scan| scan.len() == line.len())
      .and_then(LineScan::plain_tree_quotes);
    if let Some(quotes) = quotes.filter(|_| !self.screens_tools()) {
      if !self.is_connected() {
        return;
      }
      if let Some((id, result)) = tree::parse_plain_response(line.clone(), quotes) {
        self.settle_tree(id, result);
        return;
      }
    }
    // S3: a line that is not UTF-8 is not JSON either: skipped.
    if let Ok(text) = std::str::from_utf8(&line) {
      self.handle(text, Some(&line));
    }
  }

  fn settle_tree(&self, id: u64, result: tree::ResultTree) {
    let (ticket, pending) = {
      let mut state = self.state();
      match state.request_number(WireId::Number(id)) {
        Some(id) => state.requests.settle_answered(id),
        None => return,
      }
    };
    if let Some(pending) = pending {
      let subscription = pending.subscription;
      pending.stop();
      if subscription {
        return self.subscription_ended(ticket);
      }
      self.events.emit(Event::SettledTree { ticket, result });
    }
  }

  /// N7: a subscription's promise settles with no value, however it ended.
  fn subscription_ended(&self, ticket: u64) {
    self.events.emit(Event::Settled {
      ticket,
      outcome: Ok(None),
    });
  }

  /// A18: a JSON body is the answer to request `id`, which POSTed it, whatever id it names.
  /// `read`: the body as `message::read_answer` already read it, if it did.
  pub fn handle_answer(&self, id: u64, frame: &str, read: Option<Incoming>) {
    if !self.is_connected() {
      return;
    }
    let read = read.map_or_else(|| message::classify(frame), Ok);
    if let Ok(Incoming::Response { id: named, outcome }) = read {
      let ours = named.and_then(|named| self.state().request_number(named));
      // A big result naming this request is built as a tree (`handle`); any other answers
      // it as read here, without reading it twice.
      let as_tree = ours == Some(id) && message::prefers_tree(frame) && !self.screens_tools();
      if !as_tree {
        return self.settle_response(id, outcome);
      }
    }
    self.handle(frame, None)
  }

  /// Settles request number `id` (a wire number; reissued ones map to their request).
  fn settle_response(&self, id: u64, outcome: Result<JsonText, message::RpcError>) {
    let mut state = self.state();
    let (ticket, pending) = state.requests.settle_answered(id);
    if let (Some(pending), Ok(result)) = (&pending, &outcome) {
      if pending.is_initialize {
        self.set_protocol_version(message::protocol_version(result));
      }
    }
    drop(state);
    let Some(pending) = pending else { return };
    let (lists_tools, subscription) = (pending.lists_tools, pending.subscription);
    pending.stop();
    if subscription {
      return self.subscription_ended(ticket);
    }
    let outcome = match outcome {
      Ok(result) if lists_tools => Ok(self.screen_tools(result)),
      other => other,
    };
    let outcome = outcome.map(Some).map_err(|e| CoreError::Rpc {
      code: e.code,
      message: e.message,
      data: e.data,
    });
    self.events.emit(Event::Settled { ticket, outcome });
  }

  fn handle(&self, frame: &str, owner: Option<&bytes::Bytes>) {
    if !self.is_connected() {
      // After close() nothing more reaches JS.
      return;
    }
    if let Some(batch) = message::batch(frame) {
      // A8: a batch is its messages, in order.
      return batch.iter().for_each(|one| self.handle(one.get(), None));
    }
    if message::prefers_tree(frame) && !self.screens_tools() {
      let owned = owner
        .cloned()
        .unwrap_or_else(|| bytes::Bytes::copy_from_slice(frame.as_bytes()));
      if let Some((id, result)) = tree::parse_response(owned) {
        self.settle_tree(id, result);
        return;
      }
    }
    if let Some(plain) = plain_notification(frame).filter(needs_nothing_here) {
      return self.events.emit(Event::Notification {
        method: plain.method.to_owned(),
        params: plain.params.map(Box::from),
      });
    }
    match message::classify(frame) {
      Ok(Incoming::Response { id, outcome }) => {
        // T5: unknown ids (and ids that are not ours) are ignored.
        let Some(id) = id else { return };
        let Some(id) = self.state().request_number(id) else {
          return;
        };
        self.settle_response(id, outcome);
      }
      Ok(Incoming::Notification { method, params }) => {
        // N7: a notification of a subscription reaches JS only while that subscription is
        // ours and open; its acknowledgement is ours alone. Only those take the lock.
        if let Some(subscription) = subscriptions::subscription_id(params.as_deref()) {
          let open = self.state().is_open_subscription(subscription);
          if !open || method == subscriptions::ACKNOWLEDGED {
            return;
          }
        }
        if method == PROGRESS {
          self.progressed(params.as_deref());
        }
        if method == CANCELLED {
          self.server_cancelled(params.as_deref());
        }
        self.events.emit(Event::Notification {
          method,
          params: params.map(Box::from),
        });
      }
      Ok(Incoming::Request { id, method, params }) => {
        if method == "ping" {
          // T11: answered here, without a trip to the JS thread.
          self.send_answer(id.get(), Ok("{}"));
        } else {
          self.state().serving.insert(id.get().to_string());
          self
            .events
            .emit(Event::ServerRequest { id, method, params });
        }
      }
      Err(_) => {}
    }
  }

  /// T11: answer a server request (`id` is the raw JSON id it came with).
  pub fn answer(&self, id: &str, outcome: Result<&str, &RpcError>) {
    // P6: a request the server cancelled gets no answer (MCP: SHOULD NOT respond).
    if self.state().serving.remove(id) {
      self.send_answer(id, outcome);
    }
  }

  fn send_answer(&self, id: &str, outcome: Result<&str, &RpcError>) {
    if !self.is_connected() {
      return;
    }
    let frame = match outcome {
      Ok(result) => message::result_frame(id, result),
      Err(error) => message::error_frame(id, error),
    };
    self.send_unacked(frame, None);
  }

  /// The writer put a frame on the wire.
  pub fn write_done(&self, ack: Ack) {
    if let Ack::Notify(ticket) = ack {
      self.events.emit(Event::Settled {
        ticket,
        outcome: Ok(None),
      });
    }
  }

  /// S7: the frame could not be written; its request or notify rejects.
  pub fn write_failed(&self, ack: Ack, error: CoreError) {
    let ticket = match ack {
      Ack::None => return,
      Ack::Notify(ticket) => ticket,
      Ack::Request(id) => match self.state().requests.settle(id) {
        Some(wire) if wire.subscription => {
          wire.stop();
          return self.subscription_ended(id);
        }
        Some(wire) => {
          wire.stop();
          id
        }
        None => return,
      },
    };
    self.events.emit(Event::Settled {
      ticket,
      outcome: Err(error),
    });
  }

  /// Disconnects and rejects every pending request with `error`. Returns false if the
  /// session was already disconnected.
  pub fn disconnect(&self, error: CoreError) -> bool {
    let drained = {
      let mut state = self.state();
      if !state.connected {
        return false;
      }
      state.connected = false;
      state.requests.settle_all()
    };
    for (id, wire) in drained {
      let subscription = wire.subscription;
      wire.stop();
      if subscription {
        self.subscription_ended(id);
        continue;
      }
      self.events.emit(Event::Settled {
        ticket: id,
        outcome: Err(error.clone()),
      });
    }
    true
  }

  /// A22: connects a session that `disconnect` left unconnected while its transport was
  /// still opening its channel (the legacy SSE stream before its endpoint event). Only for
  /// a session that has carried no frame yet: nothing of a closed one comes back.
  pub fn open(&self) {
    self.state().connected = true;
  }

  /// N5/N7: request `ticket`, whose stream broke, goes out again under a new id (the one
  /// returned); its answer still settles `ticket`. `None` once it is no longer pending.
  pub fn reissue(&self, ticket: u64) -> Option<u64> {
    let mut state = self.state();
    if !state.connected || state.requests.waiting(ticket).is_none() {
      return None;
    }
    let id = state.next_ticket;
    state.next_ticket += 1;
    state.requests.reissue(ticket, id);
    Some(id)
  }

  /// N7: opens a subscription: `subscriptions/listen` with `params` (the filter). Its
  /// ticket settles with no value when it ends.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn listen(self: &Arc<Self>, params: &str) -> Result<u64, CoreError> {
    self.send_request(subscriptions::LISTEN, Some(params), Self::LISTENING, None)
  }

  /// `listen` for a caller on the JS side, told through `hooks`.
  ///
  /// # Errors
  /// `NotConnected` when the session is closed (T10).
  pub fn listen_tracked(
    self: &Arc<Self>,
    params: &str,
    hooks: Hooks<HostRef>,
  ) -> Result<u64, CoreError> {
    self.send_request(
      subscriptions::LISTEN,
      Some(params),
      Self::LISTENING,
      Some(hooks),
    )
  }

  const LISTENING: RequestOptions = RequestOptions {
    progress: false,
    timing: None,
    subscription: true,
    base_timeout: None,
  };

  /// A7: requests from now on carry unique 16-character lowercase hex ids.
  pub fn use_string_ids(&self) {
    let mut salt = [0u8; 8];
    // Unpredictable ids are a nicety, not a need: a failed draw keeps them unique anyway.
    let _ = getrandom::fill(&mut salt);
    self.state().hex_salt = Some(u64::from_le_bytes(salt));
  }

  /// A7: request number `id` as the JSON text it goes out with.
  pub fn id_json(&self, id: u64) -> String {
    self.state().id_json(id).as_str().to_owned()
  }

  /// Request number `id` as its error messages name it (no quotes).
  pub fn id_text(&self, id: u64) -> String {
    self.id_json(id).trim_matches('"').to_string()
  }

  /// What `read` makes of the negotiated version, read in place (on every HTTP request).
  pub fn read_protocol_version<T>(&self, read: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    let version = self.protocol_version.read();
    version
      .unwrap_or_else(|p| p.into_inner())
      .as_deref()
      .and_then(read)
  }

  fn set_protocol_version(&self, version: Option<String>) {
    let mut slot = self
      .protocol_version
      .write()
      .unwrap_or_else(|p| p.into_inner());
    *slot = version;
  }

  /// N3: from now on requests are stateless ones of `version`, each carrying `meta` in its
  /// `_meta`; `None` goes back to the handshake era (a server that only speaks that).
  pub fn set_stateless(&self, era: Option<(String, serde_json::Map<String, serde_json::Value>)>) {
    let mut state = self.state();
    match era {
      Some((version, meta)) => {
        self.set_protocol_version(Some(version));
        state.stateless_meta = Some(message::MetaEnvelope::new(meta));
        self
          .stateless
          .store(true, std::sync::atomic::Ordering::Release);
      }
      None => {
        self.set_protocol_version(None);
        state.stateless_meta = None;
        self
          .stateless
          .store(false, std::sync::atomic::Ordering::Release);
      }
    }
  }

  /// N4: `tools/list` answers go through `screen_tools`, not the large-result fast path.
  fn screens_tools(&self) -> bool {
    self.state().requests.any_waiting(|w| w.lists_tools)
  }

  /// N4: drops the tools whose `x-mcp-header` annotations are invalid (each one reported)
  /// and keeps the mirrored parameters of the others.
  fn screen_tools(&self, result: JsonText) -> JsonText {
    let Some(screened) = tool_headers::screen_tools_list(result.get()) else {
      return result;
    };
    let mut state = self.state();
    state.tool_headers.extend(screened.headers);
    if !state.tool_headers.is_empty() {
      self
        .mirrors_params
        .store(true, std::sync::atomic::Ordering::Release);
    }
    drop(state);
    for (tool, reason) in screened.dropped {
      self
        .events
        .emit(Event::Error(CoreError::ToolDropped { tool, reason }));
    }
    screened
      .result
      .and_then(|text| JsonText::parse(&text))
      .unwrap_or(result)
  }

  /// N4: the `Mcp-Param-*` headers of a `tools/call` frame. The frame is looked at only
  /// once a tool mirrors a parameter.
  pub fn param_headers(&self, frame: &[u8]) -> Vec<(String, String)> {
    if !self
      .mirrors_params
      .load(std::sync::atomic::Ordering::Acquire)
    {
      return Vec::new();
    }
    // Our frames are made from `String`s: always UTF-8.
    let frame = std::str::from_utf8(frame).unwrap_or_default();
    tool_headers::call_headers(frame, &self.state().tool_headers)
  }

  /// N9: one more entry of the stateless envelope; `false` outside that era.
  pub fn set_meta_entry(&self, key: String, value: serde_json::Value) -> bool {
    match &mut self.state().stateless_meta {
      Some(meta) => {
        meta.insert(key, value);
        true
      }
      None => false,
    }
  }

  pub fn is_stateless(&self) -> bool {
    self.stateless.load(std::sync::atomic::Ordering::Acquire)
  }

  /// Whether request `id` is still waiting for its answer.
  pub fn is_pending(&self, id: u64) -> bool {
    self.state().requests.waiting(id).is_some()
  }

  pub fn pending_count(&self) -> usize {
    self.state().requests.waiting_count()
  }
}

#[cfg(test)]
pub mod tests {
  use super::*;

  #[derive(Default)]
  pub struct Recorder(pub Mutex<Vec<Event>>);

  impl EventSink for Recorder {
    fn emit(&self, event: Event) {
      self.0.lock().unwrap().push(event);
    }
  }

  impl Recorder {
    fn take(&self) -> Vec<Event> {
      std::mem::take(&mut *self.0.lock().unwrap())
    }
  }

  fn session(
    timeout: Option<Duration>,
  ) -> (
    Arc<Session>,
    Arc<Recorder>,
    mpsc::UnboundedReceiver<Outgoing>,
  ) {
    let (tx, rx) = mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder::default());
    let s = Session::new(
      Arc::new(tx),
      recorder.clone(),
      timeout,
      Handle::current(),
      false,
    );
    (s, recorder, rx)
  }

  fn frames(rx: &mut mpsc::UnboundedReceiver<Outgoing>) -> Vec<String> {
    std::iter::from_fn(|| rx.try_recv().ok())
      .map(|o| o.frame)
      .collect()
  }

  #[tokio::test]
  async fn responses_settle_their_own_request_and_unknown_ids_are_ignored() {
    let (s, rec, mut rx) = session(None);
    let a = s.request("tools/list", None).unwrap();
    let b = s.request("tools/call", Some(r#"{"name":"x"}"#)).unwrap();
    assert_ne!(a, b);
    assert_eq!(
      frames(&mut rx),
      vec![
        format!(r#"{{"jsonrpc":"2.0","id":{a},"method":"tools/list","params":{{}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":{b},"method":"tools/call","params":{{"name":"x"}}}}"#),
      ]
    );
    s.handle_frame(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#);
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":{b},"result":{{"ok":true}}}}"#
    ));
    let events = rec.take();
    assert_eq!(events.len(), 1);
    match &events[0] {
      Event::Settled {
        ticket,
        outcome: Ok(Some(result)),
      } => {
        assert_eq!(*ticket, b);
        assert_eq!(result.get(), r#"{"ok":true}"#);
      }
      other => panic!("unexpected {other:?}"),
    }
    assert_eq!(s.pending_count(), 1);
  }

  #[tokio::test]
  async fn a7_requests_are_numbered_1_2_3_whatever_notifies_go_between() {
    let (s, _rec, mut rx) = session(None);
    let first = s.request("initialize", None).unwrap();
    s.notify("notifications/initialized", None).unwrap();
    let second = s.request("tools/list", None).unwrap();
    assert_eq!((first, second), (1, 2));
    let ids: Vec<String> = frames(&mut rx)
      .iter()
      .filter_map(|f| {
        serde_json::from_str::<serde_json::Value>(f)
          .ok()?
          .get("id")
          .map(|i| i.to_string())
      })
      .collect();
    assert_eq!(ids, ["1", "2"]);
  }

  #[tokio::test]
  async fn a7_string_ids_are_unique_hex_and_matched_by_type_and_value() {
    let (s, rec, mut rx) = session(None);
    s.use_string_ids();
    let a = s.request("tools/list", None).unwrap();
    let b = s.request("tools/list", None).unwrap();
    let sent: Vec<String> = frames(&mut rx)
      .iter()
      .map(|f| {
        serde_json::from_str::<serde_json::Value>(f).unwrap()["id"]
          .as_str()
          .unwrap()
          .to_string()
      })
      .collect();
    assert_ne!(sent[0], sent[1]);
    for id in &sent {
      assert!(
        id.len() == 16
          && id
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
      );
    }
    // The number the string stands for is not our id, nor is the upper-case spelling.
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{a},"result":{{}}}}"#));
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":"{}","result":{{}}}}"#,
      sent[0].to_uppercase()
    ));
    assert!(settled(&rec.take()).is_empty());
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":"{}","result":{{"b":1}}}}"#,
      sent[1]
    ));
    assert_eq!(settled(&rec.take()), [(b, r#"{"b":1}"#.to_string())]);
    assert_eq!(s.id_text(a), sent[0]);
  }

  fn settled(events: &[Event]) -> Vec<(u64, String)> {
    events
      .iter()
      .filter_map(|e| match e {
        Event::Settled { ticket, outcome } => Some((
          *ticket,
          match outcome {
            Ok(value) => value
              .as_ref()
              .map_or("none".into(), |v| v.get().to_string()),
            Err(error) => error.to_string(),
          },
        )),
        _ => None,
      })
      .collect()
  }

  fn notified(events: &[Event]) -> Vec<String> {
    events
      .iter()
      .filter_map(|e| match e {
        Event::Notification { method, .. } => Some(method.clone()),
        _ => None,
      })
      .collect()
  }

  #[tokio::test(start_paused = true)]
  async fn n7_a_subscription_is_untimed_its_own_notifications_only_and_ends_without_error() {
    let (s, rec, mut rx) = session(Some(Duration::from_millis(50)));
    let listen = s.listen(r#"{"notifications":{}}"#).unwrap();
    let out = rx.try_recv().unwrap();
    assert!(out.subscription && out.session_timed);
    assert!(out.frame.contains(r#""method":"subscriptions/listen""#));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(s.is_pending(listen));
    let on = |id: &str, method: &str| {
      format!(
        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}}}}}}"#
      )
    };
    s.handle_frame(&on(
      &listen.to_string(),
      "notifications/subscriptions/acknowledged",
    ));
    s.handle_frame(&on(&listen.to_string(), "notifications/tools/list_changed"));
    s.handle_frame(&on("999", "notifications/prompts/list_changed"));
    s.handle_frame(&on(r#""theirs""#, "notifications/prompts/list_changed"));
    s.handle_frame(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#);
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":{listen},"error":{{"code":-32603,"message":"x"}}}}"#
    ));
    // Ended: what still arrives for it is dropped.
    s.handle_frame(&on(&listen.to_string(), "notifications/tools/list_changed"));
    let events = rec.take();
    assert_eq!(
      notified(&events),
      ["notifications/tools/list_changed", "notifications/message"]
    );
    assert_eq!(settled(&events), [(listen, "none".to_string())]);
    // Closing ends another one without an error, where requests reject.
    let again = s.listen("{}").unwrap();
    let call = s.request("tools/call", None).unwrap();
    s.disconnect(CoreError::TransportClosed { stderr: None });
    assert_eq!(
      settled(&rec.take()),
      [
        (again, "none".to_string()),
        (call, "Transport closed".to_string())
      ]
    );
  }

  #[tokio::test]
  async fn n5_a_reissued_request_settles_its_ticket_from_the_new_id() {
    let (s, rec, _rx) = session(None);
    let ticket = s
      .request("tools/call", Some(r#"{"_meta":{"progressToken":1}}"#))
      .unwrap();
    let first = s.reissue(ticket).unwrap();
    let second = s.reissue(ticket).unwrap();
    assert!(first != ticket && second != first);
    // Only the id it went out under last is answered for it.
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":{first},"result":{{"old":1}}}}"#
    ));
    assert!(rec.take().is_empty());
    s.handle_frame(&format!(
      r#"{{"jsonrpc":"2.0","id":{second},"result":{{"ok":1}}}}"#
    ));
    assert_eq!(settled(&rec.take()), [(ticket, r#"{"ok":1}"#.to_string())]);
    assert_eq!(s.reissue(ticket), None);
  }

  #[tokio::test]
  async fn n5_over_http_in_the_stateless_era_a_cancel_closes_the_stream_only() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder::default());
    let s = Session::new(Arc::new(tx), recorder, None, Handle::current(), true);
    s.set_stateless(Some(("2026-07-28".into(), serde_json::Map::new())));
    let id = s.request("tools/call", None).unwrap();
    let out = rx.try_recv().unwrap();
    s.abort(id, "Aborted");
    assert!(out.cancel.unwrap().is_cancelled());
    assert!(rx.try_recv().is_err());
  }

  #[tokio::test]
  async fn n4_over_http_in_the_stateless_era_frames_carry_their_routing_headers() {
    let era = || Some(("2026-07-28".into(), serde_json::Map::new()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder::default());
    let http = Session::new(Arc::new(tx), recorder, None, Handle::current(), true);
    http
      .request("tools/call", Some(r#"{"name":"add"}"#))
      .unwrap();
    assert_eq!(rx.try_recv().unwrap().route, None);
    http.set_stateless(era());
    http
      .request("tools/call", Some(r#"{"name":"add"}"#))
      .unwrap();
    let route = rx.try_recv().unwrap().route.unwrap();
    assert_eq!(
      (&*route.method, route.name.as_deref()),
      ("tools/call", Some("add"))
    );
    http.notify("notifications/x", None).unwrap();
    let route = rx.try_recv().unwrap().route.unwrap();
    assert_eq!((&*route.method, route.name), ("notifications/x", None));
    // Answers name no method; stdio sends no headers.
    http.handle_frame(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let answer = rx.try_recv().unwrap();
    assert!(answer.frame.contains(r#""result""#) && answer.route.is_none());
    let (s, _rec, mut rx) = session(None);
    s.set_stateless(era());
    s.request("tools/call", Some(r#"{"name":"add"}"#)).unwrap();
    assert_eq!(rx.try_recv().unwrap().route, None);
  }

  #[tokio::test]
  async fn notifications_keep_their_place_before_the_response() {
    let (s, rec, _rx) = session(None);
    let id = s.request("tools/call", None).unwrap();
    s.handle_frame(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}"#);
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#));
    let events = rec.take();
    assert!(
      matches!(&events[0], Event::Notification { method, .. } if method == "notifications/progress")
    );
    assert!(matches!(&events[1], Event::Settled { outcome: Ok(Some(r)), .. } if r.get() == "null"));
  }

  #[tokio::test]
  async fn ping_is_answered_without_js_and_other_requests_go_to_js() {
    let (s, rec, mut rx) = session(None);
    s.handle_frame(r#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#);
    assert_eq!(
      frames(&mut rx),
      vec![r#"{"jsonrpc":"2.0","id":"p1","result":{}}"#.to_string()]
    );
    s.handle_frame(r#"{"jsonrpc":"2.0","id":5,"method":"roots/list","params":{}}"#);
    assert!(
      matches!(&rec.take()[0], Event::ServerRequest { method, .. } if method == "roots/list")
    );
  }

  fn progress(id: u64, step: u32) -> String {
    format!(
      r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":{step}}}}}"#
    )
  }

  fn timed_out(events: &[Event]) -> Vec<String> {
    events
      .iter()
      .filter_map(|e| match e {
        Event::Settled {
          outcome: Err(error),
          ..
        } => Some(error.to_string()),
        _ => None,
      })
      .collect()
  }

  #[tokio::test]
  async fn p4_progress_adds_the_token_and_reports_matching_notifications_first() {
    let (s, rec, mut rx) = session(None);
    let options = RequestOptions {
      progress: true,
      ..Default::default()
    };
    let id = s
      .request_with(
        "tools/call",
        Some(r#"{"name":"x","_meta":{"a":1}}"#),
        options,
      )
      .unwrap();
    let other = s.request("tools/call", None).unwrap();
    assert_eq!(
      frames(&mut rx)[0],
      format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"x","_meta":{{"a":1,"progressToken":{id}}}}}}}"#
      )
    );
    s.handle_frame(&progress(id, 1));
    // A token that is not one of ours, or a request that did not ask: only a notification.
    s.handle_frame(&progress(other, 1));
    s.handle_frame(&progress(999, 1));
    let events = rec.take();
    assert_eq!(events.len(), 4);
    match &events[0] {
      Event::Progress { ticket, params } => {
        assert_eq!(*ticket, id);
        assert_eq!(params.get(), r#"{"progress":1}"#);
      }
      other => panic!("unexpected {other:?}"),
    }
    assert!(events[1..]
      .iter()
      .all(|e| matches!(e, Event::Notification { .. })));
  }

  #[tokio::test(start_paused = true)]
  async fn p4_the_callers_timeout_restarts_on_progress_but_max_total_does_not() {
    let (s, rec, _rx) = session(Some(Duration::from_secs(60)));
    let timing = RequestTiming {
      timeout: Some(Duration::from_millis(100)),
      reset_on_progress: true,
      max_total: Some(Duration::from_millis(350)),
    };
    let id = s
      .request_with(
        "tools/call",
        None,
        RequestOptions {
          progress: true,
          timing: Some(timing),
          ..Default::default()
        },
      )
      .unwrap();
    // Progress every 80 ms keeps the 100 ms timeout from firing...
    for step in 1..=4 {
      tokio::time::sleep(Duration::from_millis(80)).await;
      s.handle_frame(&progress(id, step));
    }
    assert!(timed_out(&rec.take()).is_empty(), "progress kept it alive");
    // ...until the total runs out at 350 ms, before the restarted timeout (420 ms).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(timed_out(&rec.take()), ["Request timeout after 350ms"]);
  }

  #[tokio::test(start_paused = true)]
  async fn p4_a_per_request_timeout_replaces_the_configured_one_and_zero_means_none() {
    let (s, rec, _rx) = session(Some(Duration::from_millis(50)));
    let with = |timeout: u64| RequestOptions {
      timing: Some(RequestTiming {
        timeout: Some(Duration::from_millis(timeout)),
        ..Default::default()
      }),
      ..Default::default()
    };
    s.request_with("a", None, with(200)).unwrap();
    let untimed = s.request_with("b", None, with(0)).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(timed_out(&rec.take()).is_empty());
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(timed_out(&rec.take()), ["Request timeout after 200ms"]);
    assert!(s.is_pending(untimed));
  }

  #[tokio::test]
  async fn p6_a_server_request_it_cancelled_is_reported_and_never_answered() {
    let (s, rec, mut rx) = session(None);
    s.handle_frame(r#"{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage"}"#);
    s.handle_frame(r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#);
    s.handle_frame(
      r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#,
    );
    // One that is not in flight changes nothing.
    s.handle_frame(
      r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}}"#,
    );
    let events = rec.take();
    assert!(events
      .iter()
      .any(|e| matches!(e, Event::ServerRequestCancelled { id } if id == "\"a\"")));
    assert_eq!(
      events
        .iter()
        .filter(|e| matches!(e, Event::ServerRequestCancelled { .. }))
        .count(),
      1
    );
    s.answer("\"a\"", Ok("{}"));
    s.answer("7", Ok("{}"));
    // Answered once only.
    s.answer("7", Ok("{}"));
    assert_eq!(frames(&mut rx), [r#"{"jsonrpc":"2.0","id":7,"result":{}}"#]);
  }

  #[tokio::test(start_paused = true)]
  async fn a_timeout_rejects_and_sends_cancelled_but_never_for_initialize() {
    let (s, rec, mut rx) = session(Some(Duration::from_millis(50)));
    let init = s.request("initialize", None).unwrap();
    let call = s.request("tools/call", None).unwrap();
    frames(&mut rx);
    tokio::time::sleep(Duration::from_millis(60)).await;
    let events = rec.take();
    let mut timed_out: Vec<u64> = events
      .iter()
      .map(|e| match e {
        Event::Settled {
          ticket,
          outcome: Err(CoreError::RequestTimeout(d)),
        } => {
          assert_eq!(*d, Duration::from_millis(50));
          *ticket
        }
        other => panic!("unexpected {other:?}"),
      })
      .collect();
    timed_out.sort();
    assert_eq!(timed_out, vec![init, call]);
    assert_eq!(
      frames(&mut rx),
      vec![format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{call},"reason":"Request timeout after 50ms"}}}}"#
      )]
    );
    assert_eq!(s.pending_count(), 0);
  }

  #[tokio::test]
  async fn abort_removes_the_entry_and_a_late_response_is_ignored() {
    let (s, rec, mut rx) = session(None);
    let id = s.request("tools/call", None).unwrap();
    s.abort(id, "Aborted");
    assert_eq!(s.pending_count(), 0);
    assert!(frames(&mut rx)[1].contains(r#""method":"notifications/cancelled""#));
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert!(rec.take().is_empty());
  }

  #[tokio::test]
  async fn disconnect_rejects_everything_pending_and_later_calls_fail() {
    let (s, rec, _rx) = session(None);
    let a = s.request("a", None).unwrap();
    let b = s.request("b", None).unwrap();
    assert!(s.disconnect(CoreError::TransportClosed { stderr: None }));
    assert!(!s.disconnect(CoreError::TransportClosed { stderr: None }));
    let tickets: Vec<u64> = rec
      .take()
      .into_iter()
      .map(|e| match e {
        Event::Settled {
          ticket,
          outcome: Err(CoreError::TransportClosed { .. }),
        } => ticket,
        other => panic!("unexpected {other:?}"),
      })
      .collect();
    assert_eq!(tickets, vec![a, b]);
    assert_eq!(s.request("c", None), Err(CoreError::NotConnected));
    assert_eq!(s.notify("n", None), Err(CoreError::NotConnected));
  }

  #[tokio::test]
  async fn a_failed_write_rejects_only_its_own_request() {
    let (s, rec, _rx) = session(None);
    let a = s.request("a", None).unwrap();
    let _b = s.request("b", None).unwrap();
    s.write_failed(Ack::Request(a), CoreError::Write("EPIPE".into()));
    let events = rec.take();
    assert_eq!(events.len(), 1);
    assert!(
      matches!(&events[0], Event::Settled { ticket, outcome: Err(CoreError::Write(_)) } if *ticket == a)
    );
    assert_eq!(s.pending_count(), 1);
  }
  fn hooks(promise: usize) -> Hooks<HostRef> {
    Hooks::promise(HostRef::new(promise))
  }

  #[tokio::test(start_paused = true)]
  async fn a_timed_out_request_keeps_its_hooks_and_the_host_alive_until_its_caller_is_told() {
    let (s, rec, _rx) = session(Some(Duration::from_millis(50)));
    let with_progress = Hooks {
      progress: Some(HostRef::new(2)),
      ..hooks(1)
    };
    let id = s
      .request_tracked("tools/call", None, RequestOptions::default(), with_progress)
      .unwrap();
    assert!(s.keeps_alive());
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(timed_out(&rec.take()), ["Request timeout after 50ms"]);
    assert!(!s.is_pending(id));
    // The rejection is still on its way to JS: the host stays up for it.
    assert!(s.keeps_alive());
    assert_eq!(s.hooks(id), Some(with_progress));
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert!(rec.take().is_empty(), "a late answer is ignored");
    assert_eq!(s.finish(id), Some(with_progress));
    assert!(!s.keeps_alive());
    assert_eq!(s.finish(id), None, "released exactly once");
  }

  #[tokio::test]
  async fn an_abort_after_the_answer_arrived_but_before_js_saw_it_wins_without_a_cancel() {
    let (s, rec, mut rx) = session(None);
    let id = s
      .request_tracked("tools/call", None, RequestOptions::default(), hooks(1))
      .unwrap();
    assert!(s.set_abort(id, HostRef::new(3), HostRef::new(4)));
    frames(&mut rx);
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert_eq!(settled(&rec.take()), [(id, "{}".to_string())]);
    let aborted = s.abort(id, "Aborted").unwrap();
    assert_eq!(aborted.abort, Some((HostRef::new(3), HostRef::new(4))));
    assert!(frames(&mut rx).is_empty(), "the server already answered");
    // The answer's delivery then finds nobody to tell.
    assert_eq!(s.finish(id), None);
    assert!(!s.keeps_alive());
  }

  #[tokio::test]
  async fn an_abort_before_the_answer_tells_the_server_and_the_answer_is_ignored() {
    let (s, rec, mut rx) = session(None);
    let id = s
      .request_tracked("tools/call", None, RequestOptions::default(), hooks(1))
      .unwrap();
    frames(&mut rx);
    assert_eq!(s.abort(id, "user gave up"), Some(hooks(1)));
    assert!(!s.keeps_alive());
    assert_eq!(
      frames(&mut rx),
      [format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"user gave up"}}}}"#
      )]
    );
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    assert!(rec.take().is_empty());
    assert_eq!(s.abort(id, "again"), None, "a late abort changes nothing");
    assert!(!s.set_abort(id, HostRef::new(3), HostRef::new(4)));
  }

  #[tokio::test]
  async fn a_close_with_requests_in_flight_rejects_them_and_holds_their_callers_until_told() {
    let (s, rec, _rx) = session(None);
    let a = s
      .request_tracked("a", None, RequestOptions::default(), hooks(1))
      .unwrap();
    let b = s
      .request_tracked("b", None, RequestOptions::default(), hooks(2))
      .unwrap();
    let listener = s.track(Hooks::background(HostRef::new(3)));
    assert!(s.disconnect(CoreError::TransportClosed { stderr: None }));
    assert_eq!(
      settled(&rec.take()),
      [
        (a, "Transport closed".to_string()),
        (b, "Transport closed".to_string())
      ]
    );
    s.handle_frame(&format!(r#"{{"jsonrpc":"2.0","id":{a},"result":{{}}}}"#));
    assert!(rec.take().is_empty());
    assert!(s.keeps_alive());
    assert_eq!(s.finish(a), Some(hooks(1)));
    assert!(s.keeps_alive());
    assert_eq!(s.finish(b), Some(hooks(2)));
    // The listener's promise is the transport's to settle; it never held the host.
    assert!(!s.keeps_alive());
    assert_eq!(s.finish(listener), Some(Hooks::background(HostRef::new(3))));
    let refused = s.request_tracked("c", None, RequestOptions::default(), hooks(4));
    assert_eq!(refused, Err(CoreError::NotConnected));
    assert!(!s.keeps_alive(), "a refused request leaves nothing behind");
  }

  #[tokio::test(start_paused = true)]
  async fn p4_reset_timeout_on_progress_reaches_the_callers_progress_hook_until_it_times_out() {
    let (s, rec, _rx) = session(None);
    let options = RequestOptions {
      progress: true,
      timing: Some(RequestTiming {
        timeout: Some(Duration::from_millis(100)),
        reset_on_progress: true,
        max_total: None,
      }),
      ..Default::default()
    };
    let with_progress = Hooks {
      progress: Some(HostRef::new(9)),
      ..hooks(1)
    };
    let id = s
      .request_tracked("tools/call", None, options, with_progress)
      .unwrap();
    for step in 1..=3 {
      tokio::time::sleep(Duration::from_millis(80)).await;
      s.handle_frame(&progress(id, step));
    }
    let events = rec.take();
    let reported = events
      .iter()
      .filter(|e| matches!(e, Event::Progress { ticket, .. } if *ticket == id))
      .count();
    assert_eq!(reported, 3);
    assert!(timed_out(&events).is_empty());
    assert_eq!(s.hooks(id).and_then(|h| h.progress), Some(HostRef::new(9)));
    tokio::time::sleep(Duration::from_millis(101)).await;
    assert_eq!(timed_out(&rec.take()), ["Request timeout after 100ms"]);
    assert_eq!(s.finish(id), Some(with_progress));
  }

  #[tokio::test]
  async fn a_tracked_notify_settles_once_written_and_holds_the_host_until_told() {
    let (s, rec, mut rx) = session(None);
    let ticket = s.notify_tracked("n", None, None, hooks(1)).unwrap();
    assert!(s.keeps_alive());
    let out = rx.try_recv().unwrap();
    s.write_done(out.ack);
    assert_eq!(settled(&rec.take()), [(ticket, "none".to_string())]);
    assert!(s.keeps_alive());
    assert_eq!(s.finish(ticket), Some(hooks(1)));
    assert!(!s.keeps_alive());
    drop(rx);
    assert_eq!(
      s.notify_tracked("n", None, None, hooks(2)),
      Err(CoreError::NotConnected)
    );
    assert!(
      !s.keeps_alive(),
      "a notify that could not be sent leaves nothing behind"
    );
  }
}

#[cfg(test)]
mod option_tests {
  use super::{OptionField, RequestOptions, RequestTiming};
  use std::time::Duration;

  #[test]
  fn p4_request_options_from_their_fields() {
    let absent = OptionField::Absent;
    assert_eq!(
      RequestOptions::from_fields(false, absent, absent, false),
      Ok(RequestOptions::default())
    );
    let options = RequestOptions::from_fields(
      true,
      OptionField::Number(1500.0),
      OptionField::Number(0.0),
      true,
    );
    assert_eq!(
      options.map(|o| (o.progress, o.timing)),
      Ok((
        true,
        Some(RequestTiming {
          timeout: Some(Duration::from_millis(1500)),
          reset_on_progress: true,
          // 0 is no bound.
          max_total: None,
        })
      ))
    );
  }

  #[test]
  fn e2_a_bad_timeout_names_its_field() {
    let absent = OptionField::Absent;
    for bad in [
      OptionField::Number(-1.0),
      OptionField::Number(f64::NAN),
      OptionField::Number(f64::INFINITY),
      OptionField::Other,
    ] {
      assert_eq!(
        RequestOptions::from_fields(false, bad, absent, false),
        Err("The \"options.timeout\" field must be a non-negative number".to_string())
      );
      assert_eq!(
        RequestOptions::from_fields(false, absent, bad, false),
        Err("The \"options.maxTotalTimeout\" field must be a non-negative number".to_string())
      );
    }
  }
}
