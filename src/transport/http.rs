//! H1–H11: Streamable HTTP (POST answered with JSON or an SSE stream, the optional GET
//! listener, sessions) and, for `type: "sse"`, the legacy 2024-11-05 HTTP+SSE protocol.
//!
//! Every frame the session queues becomes its own POST task. A request's task watches the
//! request's cancel token, so an abort, a timeout or `close()` drops the HTTP exchange
//! itself (T7, T8, H9). Answers, whatever the channel, go through `Session::handle_frame`,
//! which keeps the order of notifications and responses (T3).
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, Url};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

use crate::error::{ClosedTransport, CoreError};
use crate::oauth::challenge::Challenge;
use crate::oauth::flow::{Authorizer, Rounds};
use crate::oauth::{AuthHost, HostAnswer, HostCall, OAuthSettings};
use crate::protocol::destination::{self, EndpointError};
use crate::protocol::headers::{self as routing, Route};
use crate::protocol::message::AnswerProblem;
use crate::protocol::resumption::{Attempt, Resumption};
use crate::session::{Ack, Event, EventSink, FrameSink, Outgoing, Sent, Session};
use crate::transport::event_stream::{EventReader, ReadItem};
use crate::transport::fetch;
use crate::transport::legacy_stream;
use crate::transport::response::Response;

// As `HeaderName`s, not text: a name given as text is parsed again at every use.
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static("last-event-id");
const METHOD_HEADER: HeaderName = HeaderName::from_static(routing::METHOD_HEADER);
const NAME_HEADER: HeaderName = HeaderName::from_static(routing::NAME_HEADER);

/// H2: protocol versions from this one on are sent as a header.
const FIRST_VERSION_WITH_HEADER: &str = "2025-06-18";
/// The longest a request waits for a GET listener being opened.
const LISTENER_OPEN_WAIT: Duration = Duration::from_secs(2);
/// H9: how long DELETE may take when requests have no timeout.
const DELETE_TIMEOUT_WITHOUT_TIMEOUT: Duration = Duration::from_secs(5);

/// A frame as it is POSTed: its bytes, shared by every send of it, and in the stateless era
/// the routing headers (N4) the session read as it wrote the frame.
#[derive(Clone)]
struct Posting<'a> {
  body: Bytes,
  route: Option<&'a Route>,
}

impl<'a> Posting<'a> {
  fn routed(body: Bytes, route: Option<&'a Route>) -> Self {
    Posting { body, route }
  }
}

impl From<String> for Posting<'_> {
  fn from(frame: String) -> Self {
    Posting::routed(frame.into(), None)
  }
}

#[derive(Debug, Clone)]
pub struct HttpConfig {
  pub url: Url,
  /// `config.headers`, sent after the defaults (they may override them).
  pub headers: Vec<(String, String)>,
  /// Per-phase timeout; `None` disables it.
  pub timeout: Option<Duration>,
  pub max_message_bytes: usize,
  /// A7 `requestIdFormat: "string"`.
  pub string_ids: bool,
  /// `type: "sse"`: a server that only speaks the 2024-11-05 protocol is detected (H11).
  pub allow_legacy: bool,
  /// P2: how often one broken stream is resumed (`config.reconnect?.maxRetries ?? 2`).
  pub max_resumptions: u32,
  /// O1: `config.oauth`: challenges are answered by our own OAuth flow.
  pub oauth: Option<OAuthSettings>,
  /// O6: the JS side has an `onAuthError` to ask on a 401/403 (set while the transport runs).
  pub auth_error_hook: Arc<AtomicBool>,
  /// A24 `headerPolicy: "origin-locked"`.
  pub origin_locked: bool,
  /// H10: the server's own CAs, and whether the runtime asked for no checks.
  pub trust: crate::http_client::Trust,
}

/// How frames go, once known: `type: "sse"` finds out with its first POST (H11).
#[derive(Debug)]
enum Mode {
  Streamable,
  /// H11: POSTs go to the endpoint the GET stream named; answers come on that stream.
  Legacy {
    endpoint: Url,
  },
}

struct Shared {
  config: HttpConfig,
  /// The defaults and `config.headers`; O6: `onAuthError` may replace the latter.
  headers: RwLock<HeaderMap>,
  /// The JS side, for the OAuth flow and `onAuthError`.
  host: Arc<dyn AuthHost>,
  /// Taken out by close(), so the pool and its keep-alive sockets go at once rather than
  /// whenever the JS object is collected.
  client: Mutex<Option<fetch::Fetcher>>,
  /// H3: the session id, as it goes out (a value of its own, valid as one).
  session_id: Mutex<Option<HeaderValue>>,
  /// Unset while `type: "sse"` has not found out (H11); set once, never changed.
  mode: OnceLock<Mode>,
  /// Held by the POST finding the mode out: the others wait for what it finds.
  probing: tokio::sync::Mutex<()>,
  /// Cancelled by close(): stops the GET listener and the legacy stream.
  closing: CancellationToken,
  /// Held while a GET listener waits for its answer: what we send meanwhile waits too, so
  /// that what the server sends on the GET stream in reply to it (its requests to us, most
  /// often) has a stream to go to.
  listener_opening: Arc<tokio::sync::RwLock<()>>,
  /// A GET listener is opening or reading: another `startSSEListener()` adds none (the agent
  /// keeps one per transport).
  listening: Arc<AtomicBool>,
  /// P3: the params of the last `initialize` we sent, to repeat it when the session expires.
  initialize_params: Mutex<Option<String>>,
  /// P3: one re-initialization at a time; the others wait for it and reuse its session.
  reinitializing: tokio::sync::Mutex<()>,
  /// Re-initializations waiting for that lock or holding it: a POST waits only if any.
  renewals: AtomicUsize,
  /// O2: the OAuth flow of `config.oauth`.
  auth: Option<Arc<Authorizer>>,
  /// A17: the version `setProtocolVersion` named: sent on everything after, whatever it is.
  announced_version: std::sync::RwLock<Option<HeaderValue>>,
  runtime: Handle,
}

pub struct HttpTransport {
  session: Arc<Session>,
  shared: Arc<Shared>,
}

impl HttpTransport {
  /// H1: no network traffic here; the session starts connected.
  ///
  /// # Errors
  /// `Network` if the HTTP client cannot be built (TLS roots, a bad proxy variable).
  pub fn connect(
    config: HttpConfig,
    events: Arc<dyn EventSink>,
    runtime: &Handle,
  ) -> Result<Self, CoreError> {
    let _context = runtime.enter();
    // H10: one pool per transport; proxies from HTTPS_PROXY/HTTP_PROXY/NO_PROXY.
    let client = fetch::Fetcher::new(&config.url, &config.trust)?;
    let headers = compose_headers(&config.headers);
    let mode = match config.allow_legacy {
      true => OnceLock::new(),
      false => OnceLock::from(Mode::Streamable),
    };
    let host: Arc<dyn AuthHost> = Arc::new(HostThroughEvents(events.clone()));
    let auth = match config.oauth.clone() {
      Some(settings) => {
        let client =
          crate::oauth::flow::http_client(&config.trust).map_err(|reason| CoreError::Network {
            message: format!("The OAuth client cannot be built: {reason}"),
            code: None,
          })?;
        Some(Arc::new(Authorizer::new(
          settings,
          config.url.clone(),
          client,
          host.clone(),
        )))
      }
      None => None,
    };
    let string_ids = config.string_ids;
    let timeout = config.timeout;
    let shared = Arc::new(Shared {
      config,
      headers: RwLock::new(headers),
      host,
      client: Mutex::new(Some(client)),
      session_id: Mutex::new(None),
      mode,
      probing: tokio::sync::Mutex::new(()),
      closing: CancellationToken::new(),
      listener_opening: Arc::default(),
      listening: Arc::default(),
      initialize_params: Mutex::new(None),
      reinitializing: tokio::sync::Mutex::new(()),
      renewals: AtomicUsize::new(0),
      auth,
      announced_version: Default::default(),
      runtime: runtime.clone(),
    });
    let outbox = Arc::new(Exchanges {
      shared: shared.clone(),
      session: OnceLock::new(),
    });
    // HTTP times each phase itself (T7): the session only times what a caller's own
    // timeouts ask for (P4).
    let session = Session::new(
      outbox.clone(),
      events.clone(),
      timeout,
      runtime.clone(),
      true,
    );
    let _ = outbox.session.set(Arc::downgrade(&session));
    if string_ids {
      session.use_string_ids();
    }
    Ok(HttpTransport { session, shared })
  }

  pub fn session(&self) -> &Arc<Session> {
    &self.session
  }

  pub fn url(&self) -> &str {
    self.shared.config.url.as_str()
  }

  pub fn session_id(&self) -> Option<String> {
    self.shared.session_id()
  }

  /// O1: the OAuth flow of `config.oauth` / `config.authProvider`, if there is one.
  pub fn authorizer(&self) -> Option<Arc<Authorizer>> {
    self.shared.auth.clone()
  }

  /// O1: the time requests have waited for the user agent in the OAuth flow.
  pub fn user_wait(&self) -> Duration {
    self.shared.user_wait()
  }

  /// A17: every request, notification and stream from now on names `version`; `false` for
  /// a value a header cannot carry.
  pub fn set_protocol_version(&self, version: &str) -> bool {
    let Ok(value) = HeaderValue::from_str(version) else {
      return false;
    };
    if let Ok(mut announced) = self.shared.announced_version.write() {
      *announced = Some(value);
    }
    true
  }

  /// A20: the GET listener. `Event::Settled { ticket }` follows once the GET is answered
  /// (refused or failed included), or after the connect wait (from `timeout`: the
  /// resolver's, A9, else the config's), when the GET is dropped; reading goes on in the
  /// background. A stream that ends for good while connected emits `Event::ListenerEnded`.
  /// With a listener already running, nothing starts and the ticket settles at once.
  pub fn start_listener(&self, ticket: u64, timeout: Option<Option<Duration>>) {
    if self.shared.listening.swap(true, Ordering::AcqRel) {
      return self.session.events().emit(Event::Settled {
        ticket,
        outcome: Ok(None),
      });
    }
    let shared = self.shared.clone();
    let session = self.session.clone();
    let opening = self.shared.listener_opening.clone().try_write_owned().ok();
    let stop = self.shared.closing.child_token();
    let (answered, answer) = tokio::sync::oneshot::channel();
    let timeout = timeout.unwrap_or(self.shared.config.timeout);
    let wait = timeout.map(|timeout| {
      let ms = sse_connect_timeout_ms(timeout.as_secs_f64() * 1000.0);
      Duration::from_secs_f64(ms / 1000.0)
    });
    let events = session.events().clone();
    let dropped = stop.clone();
    self.shared.runtime.spawn(async move {
      let in_time = match wait {
        Some(wait) => tokio::time::timeout(wait, answer).await.is_ok(),
        None => {
          let _ = answer.await;
          true
        }
      };
      if !in_time {
        dropped.cancel();
      }
      events.emit(Event::Settled {
        ticket,
        outcome: Ok(None),
      });
    });
    self.shared.runtime.spawn(async move {
      let ended = session.is_connected()
        && tokio::select! {
          _ = stop.cancelled() => false,
          ended = listen(&shared, &session, opening, answered) => ended,
        };
      shared.listening.store(false, Ordering::Release);
      if ended && session.is_connected() {
        session.events().emit(Event::ListenerEnded);
      }
    });
  }

  /// H9: disconnects at once, stops the listener, drops requests in flight, then DELETEs
  /// the session (if any) and emits `Event::Closed`.
  pub fn close(&self) {
    if !self
      .session
      .disconnect(CoreError::Aborted(ClosedTransport::Http))
    {
      return;
    }
    self.shared.closing.cancel();
    let shared = self.shared.clone();
    let events = self.session.events().clone();
    self.shared.runtime.spawn(async move {
      let session_id = shared.session_id.lock().ok().and_then(|mut s| s.take());
      let client = shared.client.lock().ok().and_then(|mut c| c.take());
      if let (Some(session_id), Some(client)) = (session_id, client) {
        let limit = shared
          .config
          .timeout
          .unwrap_or(DELETE_TIMEOUT_WITHOUT_TIMEOUT);
        let mut headers = shared.base_headers();
        headers.insert(SESSION_HEADER, session_id);
        let url = &shared.config.url;
        let delete = fetch::send(
          &client,
          shared.locked_to(),
          Method::DELETE,
          url,
          headers,
          None,
        );
        let _ = tokio::time::timeout(limit, delete).await;
      }
      events.emit(Event::Closed);
    });
  }
}

impl Drop for HttpTransport {
  fn drop(&mut self) {
    self.close();
  }
}

impl Shared {
  /// The HTTP client, until close() has released it.
  fn client(&self) -> Result<fetch::Fetcher, CoreError> {
    self
      .client
      .lock()
      .ok()
      .and_then(|c| c.clone())
      .ok_or(CoreError::TransportClosed { stderr: None })
  }

  fn session_id(&self) -> Option<String> {
    let id = self.session_header()?;
    id.to_str().ok().map(str::to_string)
  }

  fn session_header(&self) -> Option<HeaderValue> {
    self.session_id.lock().ok().and_then(|s| s.clone())
  }

  /// A24: the configured URL, for an origin-locked transport.
  fn locked_to(&self) -> Option<&Url> {
    self.config.origin_locked.then_some(&self.config.url)
  }

  /// H3: any response may carry the session id; one the spec does not allow fails the
  /// exchange and is never stored (so never sent back).
  fn capture_session(&self, response: &Response) -> Result<(), CoreError> {
    let Some(value) = response.headers().get(&SESSION_HEADER) else {
      return Ok(());
    };
    let id =
      crate::protocol::session_id::parse(value.as_bytes()).ok_or(CoreError::InvalidSessionId)?;
    if let Ok(mut stored) = self.session_id.lock() {
      // Servers name it on every answer: it is copied only when it changes.
      if stored.as_ref().map(HeaderValue::as_bytes) != Some(id.as_bytes()) {
        *stored = HeaderValue::from_str(id).ok();
      }
    }
    Ok(())
  }

  /// H2: defaults, then config headers, then the session id and the negotiated version.
  /// Made with room for what a request adds (those two, N4's routing headers, a token): a
  /// copy of the configured map grew, and rehashed, as they went in.
  fn base_headers(&self) -> HeaderMap {
    const ADDED: usize = 6;
    let base = self.headers.read().unwrap_or_else(|p| p.into_inner());
    let mut headers = HeaderMap::with_capacity(base.len() + ADDED);
    for (name, value) in base.iter() {
      headers.append(name.clone(), value.clone());
    }
    headers
  }

  /// O6/A10: on a 401/403, `onAuthError()`'s headers (if it gives any) replace
  /// `config.headers`; whether the exchange should be tried again.
  async fn headers_from_auth_error(&self) -> bool {
    if !self.config.auth_error_hook.load(Ordering::Acquire) {
      return false;
    }
    let Some(pairs) = auth_error_headers(self.host.as_ref()).await else {
      return false;
    };
    if let Ok(mut headers) = self.headers.write() {
      *headers = compose_headers(&pairs);
    }
    true
  }

  fn request_headers(&self, session: &Session) -> HeaderMap {
    let mut headers = self.base_headers();
    if let Some(id) = self.session_header() {
      headers.insert(SESSION_HEADER, id);
    }
    let announced = self.announced_version.read().ok().and_then(|v| v.clone());
    if let Some(version) = announced.or_else(|| {
      session.read_protocol_version(|v| {
        (v >= FIRST_VERSION_WITH_HEADER)
          .then(|| version_header(v))
          .flatten()
      })
    }) {
      headers.insert(VERSION_HEADER, version);
    }
    headers
  }

  /// P3: POSTs `frame`; when the server answers 404 to a POST that carried our session id,
  /// the session has expired: `initialize` (same params) and `notifications/initialized`
  /// are repeated once, then `frame` is sent again. What that retry gets is the answer.
  async fn post_in_session(
    &self,
    session: &Session,
    url: &Url,
    frame: Posting<'_>,
  ) -> Result<Response, CoreError> {
    // A re-initialization under way replaces the session: wait for the new one. One that
    // starts after this look is as if it started after this POST (which then meets a 404).
    if self.renewals.load(Ordering::Acquire) > 0 {
      drop(self.reinitializing.lock().await);
    }
    let used = self.session_header();
    let mut rounds = Rounds::default();
    let response = self
      .post_authorized(session, url, &frame, &mut rounds)
      .await?;
    if response.status() != reqwest::StatusCode::NOT_FOUND {
      return Ok(response);
    }
    // Boxed, as every rare step of the POST chain: inline, each request's state carried it.
    if !Box::pin(self.renew_session(session, url, used.as_ref())).await {
      return Ok(response);
    }
    self
      .post_authorized(session, url, &frame, &mut rounds)
      .await
  }

  /// O2: POSTs `frame`; a challenge is answered by the OAuth flow and the frame sent again,
  /// until it is accepted, refused otherwise, or the flow fails (its error is the answer).
  async fn post_authorized(
    &self,
    session: &Session,
    url: &Url,
    frame: &Posting<'_>,
    rounds: &mut Rounds,
  ) -> Result<Response, CoreError> {
    let mut asked_hook = false;
    loop {
      let (response, used) = self.post_with_token(session, url, frame.clone()).await?;
      let Some(auth) = &self.auth else {
        // O6: without our own flow, the agent's hook may supply headers, for one retry.
        let refused = matches!(response.status().as_u16(), 401 | 403);
        if refused && !asked_hook {
          asked_hook = true;
          if self.headers_from_auth_error().await {
            continue;
          }
        }
        return Ok(response);
      };
      let Some(challenge) = auth_challenge(&response) else {
        return Ok(response);
      };
      let status = response.status().as_u16();
      drop(response);
      Box::pin(auth.authorize(status, challenge.as_ref(), used.as_deref(), rounds)).await?;
    }
  }

  /// P3: the server no longer knows session `used`; whether a session to retry in exists
  /// now (ours, or one a concurrent re-initialization made).
  async fn renew_session(&self, session: &Session, url: &Url, used: Option<&HeaderValue>) -> bool {
    let Some(used) = used else {
      return false;
    };
    let Some(params) = self.initialize_params.lock().ok().and_then(|p| p.clone()) else {
      return false;
    };
    let _counted = Counted::new(&self.renewals);
    let _one_at_a_time = self.reinitializing.lock().await;
    // Someone else's re-initialization may already have replaced the session.
    if self.session_header().as_ref() != Some(used) {
      return true;
    }
    if let Ok(mut stored) = self.session_id.lock() {
      *stored = None;
    }
    self.reinitialize(session, url, &params).await.is_ok()
  }

  /// P3: a fresh session: `initialize` with the original params, then `initialized`.
  async fn reinitialize(
    &self,
    session: &Session,
    url: &Url,
    params: &str,
  ) -> Result<(), CoreError> {
    const ID: &str = "\"mcp-native-reinitialize\"";
    let frame = format!(r#"{{"jsonrpc":"2.0","id":{ID},"method":"initialize","params":{params}}}"#);
    let response = self.post(session, url, frame.into()).await?;
    if !response.status().is_success() {
      return Err(http_error(response, true, self.config.max_message_bytes).await);
    }
    let answer = if content_type_is(&response, "text/event-stream") {
      let mut events = EventReader::new(response, self.config.max_message_bytes);
      loop {
        match events.next().await {
          Some(Ok(ReadItem::Event(event))) if event.data.contains(ID) => break event.data,
          Some(Ok(_)) => continue,
          Some(Err(error)) => return Err(error),
          None => return Err(CoreError::TransportClosed { stderr: None }),
        }
      }
    } else {
      let body = read_body(response, self.config.max_message_bytes).await?;
      String::from_utf8_lossy(&body).into_owned()
    };
    let answered: serde_json::Value =
      serde_json::from_str(&answer).map_err(|_| CoreError::InvalidJson(answer.clone()))?;
    if answered.get("result").is_none() {
      return Err(CoreError::InvalidJson(answer));
    }
    let initialized =
      crate::protocol::message::notification_frame("notifications/initialized", None);
    let response = self.post(session, url, initialized.into()).await?;
    if !response.status().is_success() {
      return Err(http_error(response, false, self.config.max_message_bytes).await);
    }
    Ok(())
  }

  /// P3: remembers the params of an `initialize` frame on its way out.
  fn note_initialize(&self, frame: &[u8]) {
    // Our frames name the method right after the id, so a large request costs nothing here.
    const METHOD: &[u8] = br#""method":"initialize""#;
    let head = &frame[..frame.len().min(64)];
    // Other frames seldom have a `z` this early: one scan instead of a window compare at
    // every byte (~540 instructions a call).
    if memchr::memchr(b'z', head).is_none() || !head.windows(METHOD.len()).any(|w| w == METHOD) {
      return;
    }
    #[derive(serde::Deserialize)]
    struct Initialize<'a> {
      method: &'a str,
      #[serde(borrow)]
      params: Option<&'a serde_json::value::RawValue>,
    }
    if let Ok(message) = serde_json::from_slice::<Initialize>(frame) {
      if message.method == "initialize" {
        if let Ok(mut stored) = self.initialize_params.lock() {
          *stored = Some(message.params.map_or("{}", |p| p.get()).to_string());
        }
      }
    }
  }

  async fn post(
    &self,
    session: &Session,
    url: &Url,
    frame: Posting<'_>,
  ) -> Result<Response, CoreError> {
    Ok(self.post_with_token(session, url, frame).await?.0)
  }

  /// A POST with the OAuth token, if any; the token goes back with the answer.
  async fn post_with_token(
    &self,
    session: &Session,
    url: &Url,
    frame: Posting<'_>,
  ) -> Result<(Response, Option<String>), CoreError> {
    let mut headers = self.request_headers(session);
    // N4: a stateless-era POST names its method (and tool, prompt or resource).
    if let Some(route) = frame.route {
      let method = match &route.method {
        Cow::Borrowed(known) => Ok(HeaderValue::from_static(known)),
        Cow::Owned(other) => HeaderValue::from_str(other),
      };
      let name = route.name.as_deref().map(HeaderValue::from_str);
      for (header, value) in [(METHOD_HEADER, Some(method)), (NAME_HEADER, name)] {
        if let Some(Ok(value)) = value {
          headers.insert(header, value);
        }
      }
    }
    if session.is_stateless() {
      for (name, value) in session.param_headers(&frame.body) {
        let name = HeaderName::from_bytes(name.as_bytes());
        if let (Ok(name), Ok(value)) = (name, HeaderValue::from_str(&value)) {
          headers.insert(name, value);
        }
      }
    }
    let token = match &self.auth {
      Some(_) => Box::pin(self.present(&mut headers, "POST", url)).await,
      None => None,
    };
    let client = self.client()?;
    let response = fetch::send(
      &client,
      self.locked_to(),
      Method::POST,
      url,
      headers,
      Some(frame.body),
    )
    .await?;
    self.capture_session(&response)?;
    if let (Some(auth), Some(nonce)) = (&self.auth, dpop_nonce(&response)) {
      auth.note_resource_nonce(&nonce);
    }
    Ok((response, token))
  }

  /// O2: the flow's token (`Bearer`, or O5's `DPoP` with a fresh proof for `method` on
  /// `url`), over any configured `Authorization`; the token goes back.
  async fn present(&self, headers: &mut HeaderMap, method: &str, url: &Url) -> Option<String> {
    // The token is for the server's origin only.
    if !destination::carries_credentials(&self.config.url, url) {
      return None;
    }
    let presented = self.auth.as_ref()?.present(method, url.as_str()).await?;
    if let Ok(value) = HeaderValue::from_str(&presented.authorization) {
      headers.insert(AUTHORIZATION, value);
    }
    if let Some(proof) = presented.proof.and_then(|p| HeaderValue::from_str(&p).ok()) {
      headers.insert("dpop", proof);
    }
    Some(presented.token)
  }

  /// Request timeouts do not count the time the user spends in the user agent.
  fn user_wait(&self) -> Duration {
    self.auth.as_ref().map_or(Duration::ZERO, |a| a.user_wait())
  }

  /// Waits (a bounded time) for a GET listener being opened to get its answer.
  async fn listener_opened(&self) {
    // Nearly always nothing is being opened: then no timer is set up for the wait. A
    // listener starts `listening` before it takes the lock.
    if !self.listening.load(Ordering::Acquire) || self.listener_opening.try_read().is_ok() {
      return;
    }
    let _ = tokio::time::timeout(LISTENER_OPEN_WAIT, self.listener_opening.read()).await;
  }

  /// Where frames are POSTed; for `type: "sse"` the first call finds out (H11).
  async fn post_url(&self) -> Url {
    match self.known_mode().await {
      Some(Mode::Legacy { endpoint }) => endpoint.clone(),
      _ => self.config.url.clone(),
    }
  }

  /// The mode, after the probe under way (if any) has ended; `None`: not found out yet.
  async fn known_mode(&self) -> Option<&Mode> {
    if let Some(mode) = self.mode.get() {
      return Some(mode);
    }
    drop(self.probing.lock().await);
    self.mode.get()
  }
}

/// Where the session's frames go: each starts its own exchange at once, from whichever
/// thread sent it (the JS thread, mostly), with no channel and dispatch task in between
/// (which measured no slower: the wake-ups per call are the same).
struct Exchanges {
  shared: Arc<Shared>,
  session: OnceLock<std::sync::Weak<Session>>,
}

impl FrameSink for Exchanges {
  fn send(&self, out: Outgoing) -> Result<Sent, Outgoing> {
    let Some(session) = self.session.get().and_then(std::sync::Weak::upgrade) else {
      return Err(out);
    };
    // The exchange's state is ~4.5 KiB: boxed once, only its pointer moves into the task
    // (unboxed, each spawn copied it two or three times: 5 % of the runtime's samples).
    let task = Box::pin(exchange_frame(self.shared.clone(), session, out));
    self.shared.runtime.spawn(task);
    Ok(Sent::Queued)
  }
}

async fn exchange_frame(shared: Arc<Shared>, session: Arc<Session>, out: Outgoing) {
  match out.ack {
    Ack::Request(id) => {
      let cancel = out.cancel.clone().unwrap_or_default();
      tokio::select! {
        // Aborted, timed out, answered or closed: the exchange is dropped here.
        _ = cancel.cancelled() => {}
        _ = send_request(&shared, &session, id, out, &cancel) => {}
      }
    }
    Ack::Notify(ticket) => {
      // H9/E4: close() drops a notify in flight; it rejects like a pending request.
      let frame = Posting::routed(out.frame.into(), out.route.as_ref());
      let outcome = tokio::select! {
        biased;
        _ = shared.closing.cancelled() => Err(CoreError::Aborted(ClosedTransport::Http)),
        outcome = send_notification(&shared, &session, frame, out.timeout) => outcome,
      };
      session.events().emit(Event::Settled {
        ticket,
        outcome: outcome.map(|()| None),
      });
    }
    // Answers to server requests and cancellations: best effort.
    Ack::None => {
      let send = async {
        let url = shared.post_url().await;
        let frame = Posting::routed(out.frame.into(), out.route.as_ref());
        let post = std::pin::pin!(shared.post(&session, &url, frame));
        with_timeout(out.timeout, post).await
      };
      tokio::select! {
        _ = shared.closing.cancelled() => {}
        _ = send => {}
      }
    }
  }
}

/// `work`, unless `limit` runs out first (then `Err(limit)`). `work` comes pinned where
/// its caller keeps it: an `async fn` keeps a future passed by value beside the local it
/// moves into, so every caller's state held it twice.
pub(crate) async fn with_timeout<T>(
  limit: Option<Duration>,
  work: Pin<&mut impl Future<Output = T>>,
) -> Result<T, Duration> {
  match limit {
    Some(limit) => tokio::time::timeout(limit, work).await.map_err(|_| limit),
    None => Ok(work.await),
  }
}

/// `with_timeout`, with the deadline moved on by whatever `apart()` grew by meanwhile (the
/// time spent in the user agent during an OAuth flow).
async fn with_timeout_apart<T>(
  limit: Option<Duration>,
  mut work: Pin<&mut impl Future<Output = T>>,
  apart: impl Fn() -> Duration,
) -> Result<T, Duration> {
  let Some(limit) = limit else {
    return Ok(work.await);
  };
  let start_apart = apart();
  let mut deadline = tokio::time::Instant::now() + limit;
  let mut counted = Duration::ZERO;
  loop {
    tokio::select! {
      outcome = &mut work => return Ok(outcome),
      () = tokio::time::sleep_until(deadline) => {
        let waited = apart().saturating_sub(start_apart);
        if waited <= counted {
          return Err(limit);
        }
        deadline += waited - counted;
        counted = waited;
      }
    }
  }
}

/// O2: a 401, or a 403 asking for more scopes: the OAuth flow's business. The inner
/// `None` is a 401 without a readable Bearer challenge.
fn auth_challenge(response: &Response) -> Option<Option<Challenge>> {
  let challenge = response
    .headers()
    .get_all(reqwest::header::WWW_AUTHENTICATE)
    .iter()
    .filter_map(|v| v.to_str().ok())
    .find_map(Challenge::parse);
  match response.status().as_u16() {
    401 => Some(challenge),
    403
      if challenge
        .as_ref()
        .is_some_and(Challenge::is_insufficient_scope) =>
    {
      Some(challenge)
    }
    _ => None,
  }
}

/// O5: a `DPoP-Nonce` the server sends for the next proofs.
fn dpop_nonce(response: &Response) -> Option<String> {
  response
    .headers()
    .get("dpop-nonce")
    .and_then(|v| v.to_str().ok())
    .map(str::to_string)
}

/// The defaults, then `headers` (which may override them).
/// The headers every request starts from: the configured ones, then ours. A17: a header
/// the client generates wins over a configured one whatever its case (header names are
/// case-insensitive), and one it generates only sometimes (the session, the version, the
/// resumption point) is never taken from the config.
fn compose_headers(configured: &[(String, String)]) -> HeaderMap {
  let mut headers = HeaderMap::new();
  for (name, value) in configured {
    let (Ok(name), Ok(value)) = (
      HeaderName::from_bytes(name.as_bytes()),
      HeaderValue::from_str(value),
    ) else {
      continue;
    };
    let generated = [SESSION_HEADER, VERSION_HEADER, LAST_EVENT_ID_HEADER];
    if !generated.contains(&name) {
      headers.insert(name, value);
    }
  }
  headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
  headers.insert(
    ACCEPT,
    HeaderValue::from_static("application/json, text/event-stream"),
  );
  headers
}

/// O6/A10: what `onAuthError()` settled with, as header pairs; `None` for `null` (or no
/// hook, or anything that is not a record).
pub(crate) async fn auth_error_headers(host: &dyn AuthHost) -> Option<Vec<(String, String)>> {
  let Ok(Some(text)) = host.call(HostCall::AuthError).await else {
    return None;
  };
  let record =
    serde_json::from_str::<Option<std::collections::BTreeMap<String, serde_json::Value>>>(&text)
      .ok()??;
  let pairs = record
    .into_iter()
    .filter_map(|(name, value)| match value {
      serde_json::Value::String(text) => Some((name, text)),
      serde_json::Value::Number(n) => Some((name, n.to_string())),
      _ => None,
    })
    .collect();
  Some(pairs)
}

/// The flow's host calls travel the event queue to the JS thread and back.
pub(crate) struct HostThroughEvents(pub(crate) Arc<dyn EventSink>);

impl AuthHost for HostThroughEvents {
  fn call(&self, call: HostCall) -> futures::future::BoxFuture<'static, HostAnswer> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    self.0.emit(Event::Auth { call, reply });
    Box::pin(async move {
      answer
        .await
        .unwrap_or_else(|_| Err("the transport's JavaScript side is gone".to_string()))
    })
  }
}

/// `version` as a header value: the versions we speak are static, copied on no request.
fn version_header(version: &str) -> Option<HeaderValue> {
  match crate::protocol::versions::known(version) {
    Some(known) => Some(HeaderValue::from_static(known)),
    None => HeaderValue::from_str(version).ok(),
  }
}

/// The `Content-Type` header as sent (empty when missing).
pub(crate) fn content_type_header(response: &Response) -> String {
  response
    .headers()
    .get(CONTENT_TYPE)
    .and_then(|v| v.to_str().ok())
    .unwrap_or_default()
    .to_string()
}

/// Whether the `Content-Type` header starts with `kind` (lowercase), in any case; read in
/// place, as it is on every answer.
fn content_type_is(response: &Response, kind: &str) -> bool {
  response
    .headers()
    .get(CONTENT_TYPE)
    .and_then(|v| v.to_str().ok())
    .and_then(|v| v.get(..kind.len()))
    .is_some_and(|named| named.eq_ignore_ascii_case(kind))
}

/// H7: success on any 2xx.
async fn send_notification(
  shared: &Arc<Shared>,
  session: &Arc<Session>,
  frame: Posting<'_>,
  timeout: Option<Duration>,
) -> Result<(), CoreError> {
  let exchange = async {
    shared.listener_opened().await;
    let url = shared.post_url().await;
    let response = shared.post_in_session(session, &url, frame).await?;
    if response.status().is_success() {
      if content_type_is(&response, "text/event-stream") {
        read_in_background(shared, session, response);
      }
      return Ok(());
    }
    Err(http_error(response, false, shared.config.max_message_bytes).await)
  };
  with_timeout_apart(timeout, std::pin::pin!(exchange), || shared.user_wait())
    .await
    .map_err(CoreError::NotifyTimeout)?
}

/// A18: what a server sends on the event stream that answers a notification (its requests,
/// notifications) is delivered while the notify itself has already succeeded; A50: the
/// read has no deadline of its own and ends with the stream or the transport.
fn read_in_background(shared: &Arc<Shared>, session: &Arc<Session>, response: Response) {
  let session = session.clone();
  let closing = shared.closing.clone();
  let limit = shared.config.max_message_bytes;
  shared.runtime.spawn(async move {
    let mut events = EventReader::new(response, limit);
    let mut never = Resumption::new(0);
    let read = deliver_events(&session, &mut events, None, &mut never);
    tokio::select! {
      _ = closing.cancelled() => {}
      _ = read => {}
    }
  });
}

/// One request: its exchanges with the server. N5: in the stateless era a response stream
/// that breaks before the answer loses the request, which goes out once more under a new
/// id; a subscription (N7) is opened again each time, with the listener's backoff.
async fn send_request(
  shared: &Shared,
  session: &Arc<Session>,
  id: u64,
  out: Outgoing,
  cancel: &CancellationToken,
) {
  let fail = |error: CoreError| session.write_failed(Ack::Request(id), error);
  // As `Bytes`, the kept copy and every POST's body share the frame.
  let mut frame = Bytes::from(out.frame);
  let mut backoff = Resumption::new(shared.config.max_resumptions);
  let mut resent = false;
  loop {
    // Only a stateless-era request can be sent again: only then is a copy kept.
    let (sent, kept) = if session.is_stateless() {
      (frame.clone(), Some(frame))
    } else {
      (frame, None)
    };
    let Some(broken) = exchange(
      shared,
      session,
      id,
      Posting::routed(sent, out.route.as_ref()),
      cancel,
      // P4: a request with the caller's own timeouts is timed by the session instead.
      out.timeout.filter(|_| !out.session_timed),
      &mut backoff,
    )
    .await
    else {
      return;
    };
    let Some(kept) = kept else {
      return fail(broken.unwrap_or(CoreError::NoResponse(session.id_text(id))));
    };
    frame = kept;
    let again = if out.subscription {
      backoff.next_attempt(true, now())
    } else {
      (!resent).then_some(Attempt {
        from: None,
        wait: Duration::ZERO,
      })
    };
    let reissued = again.and_then(|attempt| Some((attempt, session.reissue(id)?)));
    let Some((attempt, wire_id)) = reissued else {
      return fail(broken.unwrap_or(CoreError::NoResponse(session.id_text(id))));
    };
    let reissued = std::str::from_utf8(&frame)
      .ok()
      .and_then(|text| crate::protocol::message::with_request_id(text, &session.id_json(wire_id)));
    let Some(next) = reissued else {
      return fail(broken.unwrap_or(CoreError::NoResponse(session.id_text(id))));
    };
    tokio::time::sleep(attempt.wait).await;
    frame = Bytes::from(next);
    resent = true;
  }
}

/// One POST of request `id` and its answer. `None` once the request is settled; the
/// stream's failure (if any) when a stateless-era stream ended before the answer.
async fn exchange(
  shared: &Shared,
  session: &Arc<Session>,
  id: u64,
  frame: Posting<'_>,
  cancel: &CancellationToken,
  timeout: Option<Duration>,
  backoff: &mut Resumption,
) -> Option<Option<CoreError>> {
  let fail = |error: CoreError| session.write_failed(Ack::Request(id), error);
  // A50: one deadline for the POST, its answer and the streams that resume it; the time
  // spent in the user agent during an OAuth flow does not count.
  let started = tokio::time::Instant::now();
  let apart_at_start = shared.user_wait();
  let remaining = || {
    timeout.map(|limit| {
      let apart = shared.user_wait().saturating_sub(apart_at_start);
      limit.saturating_sub(started.elapsed().saturating_sub(apart))
    })
  };
  let timed_out = |limit: Duration| CoreError::RequestTimeout(timeout.unwrap_or(limit));
  // Phase 1: the POST, and a JSON body.
  shared.note_initialize(&frame.body);
  // The big futures go in pinned where they are: an `async fn` keeps its arguments beside
  // the locals they move into, so passed by value they took their room twice.
  let phase = with_timeout_apart(
    timeout,
    std::pin::pin!(async {
      shared.listener_opened().await;
      let response = match post_with_legacy_probe(shared, session, frame).await? {
        Posted::Response(response) => response,
        Posted::Refused(refused) => return refusal(session, refused),
      };
      if !response.status().is_success() {
        let refused = refused(session, response, shared.config.max_message_bytes).await;
        return refusal(session, refused);
      }
      if content_type_is(&response, "text/event-stream") {
        return Ok(Some(response));
      }
      if matches!(shared.mode.get(), Some(Mode::Legacy { .. })) {
        // H11: the answer arrives on the legacy stream.
        cancel.cancelled().await;
        return Ok(None);
      }
      // H5: anything else is read as JSON, as the agent does.
      let body = read_body(response, shared.config.max_message_bytes).await?;
      // `from_utf8` checks eight bytes at a time; the lossy walk went byte by byte (~600
      // instructions for a small answer). Only invalid text takes it.
      let text = match std::str::from_utf8(&body) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(&body),
      };
      let read = match crate::protocol::message::read_answer(&text) {
        Err(AnswerProblem::NotJson) => return Err(CoreError::InvalidJson(text.into_owned())),
        Err(AnswerProblem::Malformed(words)) => return Err(CoreError::MalformedAnswer(words)),
        Ok(read) => read,
      };
      session.handle_answer(id, &text, read);
      Ok(None)
    }),
    || shared.user_wait(),
  )
  .await;
  let stream = match phase {
    Err(limit) => {
      session.time_out(id, CoreError::RequestTimeout(limit));
      return None;
    }
    Ok(Err(error)) => {
      fail(error);
      return None;
    }
    Ok(Ok(None)) => {
      if session.is_pending(id) {
        fail(CoreError::NoResponse(session.id_text(id)));
      }
      return None;
    }
    Ok(Ok(Some(stream))) => stream,
  };
  if session.is_stateless() {
    // N5: no resumption in this era: a stream that ends early is the request lost.
    let mut events = EventReader::new(stream, shared.config.max_message_bytes);
    let delivered = std::pin::pin!(deliver_events(session, &mut events, Some(id), backoff));
    return match with_timeout(remaining(), delivered).await {
      Err(limit) => {
        session.time_out(id, timed_out(limit));
        None
      }
      Ok(Err(error @ CoreError::InvalidJson(_))) => {
        fail(error);
        None
      }
      Ok(ended) => session.is_pending(id).then(|| ended.err()),
    };
  }
  // Phase 2: events until the answer, on this stream or, after it ends or breaks, on the
  // streams that resume it (P2), within what is left of the deadline (A50).
  let answered = with_timeout(
    remaining(),
    std::pin::pin!(follow_answer(shared, session, stream, id)),
  )
  .await;
  match answered {
    Err(limit) => session.time_out(id, timed_out(limit)),
    Ok(Err(error)) => fail(error),
    Ok(Ok(())) => {
      if session.is_pending(id) {
        fail(CoreError::NoResponse(session.id_text(id)));
      }
    }
  }
  None
}

/// Counts itself in `count` while it lives.
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
  fn new(count: &'a AtomicUsize) -> Self {
    count.fetch_add(1, Ordering::AcqRel);
    Counted(count)
  }
}

impl Drop for Counted<'_> {
  fn drop(&mut self) {
    self.0.fetch_sub(1, Ordering::AcqRel);
  }
}

/// What a POST came to.
enum Posted {
  Response(Response),
  /// A non-2xx answer, already read.
  Refused(Refusal),
}

enum Refusal {
  /// N3: a stateless server answers a refused request with its JSON-RPC error (-32022 and
  /// the versions it speaks, -32020, …) in a 4xx: that error is the answer.
  Answer(String),
  Error(CoreError),
}

async fn refused(session: &Session, response: Response, limit: usize) -> Refusal {
  let json = session.is_stateless() && content_type_is(&response, "application/json");
  match http_error(response, true, limit).await {
    CoreError::Http { body, .. } if json && crate::protocol::message::is_error_response(&body) => {
      Refusal::Answer(body)
    }
    error => Refusal::Error(error),
  }
}

/// Phase 1's end after a refusal: the answer it carried settles the request.
fn refusal(session: &Session, refusal: Refusal) -> Result<Option<Response>, CoreError> {
  match refusal {
    Refusal::Answer(body) => {
      session.handle_frame(&body);
      Ok(None)
    }
    Refusal::Error(error) => Err(error),
  }
}

/// POSTs a frame; for `type: "sse"` the first 4xx answer triggers the legacy probe (H11),
/// unless it is a stateless server's JSON-RPC error (N2: that server is modern).
async fn post_with_legacy_probe(
  shared: &Shared,
  session: &Arc<Session>,
  frame: Posting<'_>,
) -> Result<Posted, CoreError> {
  // Nearly always known: then no lock is taken.
  let turn = match shared.mode.get() {
    Some(_) => None,
    None => Some(shared.probing.lock().await),
  };
  if let Some(mode) = shared.mode.get() {
    drop(turn);
    let url = match mode {
      Mode::Legacy { endpoint } => endpoint,
      Mode::Streamable => &shared.config.url,
    };
    return shared
      .post_in_session(session, url, frame)
      .await
      .map(Posted::Response);
  }
  let mut rounds = Rounds::default();
  let response = shared
    .post_authorized(session, &shared.config.url, &frame, &mut rounds)
    .await?;
  let status = response.status().as_u16();
  let rejected_post = (400..500).contains(&status) && status != 401 && status != 403;
  // Set only here, under the turn: `set` cannot find it set already.
  if !rejected_post {
    let _ = shared.mode.set(Mode::Streamable);
    return Ok(Posted::Response(response));
  }
  let refusal = refused(session, response, shared.config.max_message_bytes).await;
  if matches!(refusal, Refusal::Answer(_)) {
    let _ = shared.mode.set(Mode::Streamable);
    return Ok(Posted::Refused(refusal));
  }
  match open_legacy_stream(shared, session).await? {
    Some(endpoint) => {
      let _ = shared.mode.set(Mode::Legacy {
        endpoint: endpoint.clone(),
      });
      drop(turn);
      shared
        .post(session, &endpoint, frame)
        .await
        .map(Posted::Response)
    }
    None => Ok(Posted::Refused(refusal)),
  }
}

/// H11: GET the SSE endpoint; on an `endpoint` event, keep reading the stream for answers
/// in the background and return the POST URL. An endpoint on another origin is refused
/// (the configured headers would follow every POST there).
async fn open_legacy_stream(
  shared: &Shared,
  session: &Arc<Session>,
) -> Result<Option<Url>, CoreError> {
  let Opened::Stream(events) = open_stream(shared, session, None).await else {
    return Ok(None);
  };
  let mut events = *events;
  let endpoint = match legacy_stream::endpoint_event(&mut events, &shared.config.url).await {
    Ok(endpoint) => endpoint,
    // Credentials never leave their origin: a server naming another one is refused.
    Err(mismatch @ CoreError::Endpoint(EndpointError::OriginMismatch { .. })) => {
      return Err(mismatch)
    }
    // Not a legacy server after all: the POST's refusal stands.
    Err(_) => return Ok(None),
  };
  let session = session.clone();
  let closing = shared.closing.clone();
  shared.runtime.spawn(async move {
    tokio::select! {
      _ = closing.cancelled() => {}
      ended = legacy_stream::deliver(&session, &mut events) => {
        // The stream was the only way answers could come back: the transport is over, and
        // what ended it is what the pending requests hear (A23).
        let reason = match ended {
          Ok(()) => CoreError::TransportClosed { stderr: None },
          Err(error) => {
            session.events().emit(Event::Error(error.clone()));
            error
          }
        };
        if session.disconnect(reason) {
          session.events().emit(Event::Closed);
        }
      }
    }
  });
  Ok(Some(endpoint))
}

fn listener_headers(shared: &Shared, session: &Session) -> HeaderMap {
  let mut headers = shared.request_headers(session);
  headers.remove(CONTENT_TYPE);
  headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
  headers
}

/// A20: GETs the server's stream; 405 or any non-2xx means "not offered". `answered` is
/// told once the GET has its answer. Whether the stream, once opened, ended for good (so
/// the caller hears `onClose`): after an end with an event id and an event since the last
/// resume it is picked up again (A19), after a session expiry renewed (P3).
async fn listen(
  shared: &Shared,
  session: &Arc<Session>,
  opening: Option<tokio::sync::OwnedRwLockWriteGuard<()>>,
  answered: tokio::sync::oneshot::Sender<()>,
) -> bool {
  // H11: the legacy protocol's one stream already carries everything.
  if matches!(shared.known_mode().await, Some(Mode::Legacy { .. })) {
    return false;
  }
  let mut resumption = Resumption::new(shared.config.max_resumptions);
  let mut opened = open_stream(shared, session, None).await;
  drop(opening);
  let _ = answered.send(());
  let mut streamed = false;
  loop {
    let mut events = match opened {
      Opened::Stream(events) => events,
      // P3: the session expired under the listener: renewed, it listens on the new one.
      Opened::Expired { used } => {
        let url = shared.config.url.clone();
        if !shared.renew_session(session, &url, used.as_ref()).await {
          return streamed;
        }
        resumption = Resumption::new(shared.config.max_resumptions);
        opened = open_stream(shared, session, None).await;
        if let Opened::Expired { .. } = opened {
          return streamed;
        }
        continue;
      }
      Opened::Refused(_) => return streamed,
      Opened::Failed(error) => {
        session.events().emit(Event::Error(error));
        return streamed;
      }
    };
    streamed = true;
    let ended = deliver_events(session, &mut events, None, &mut resumption).await;
    drop(events);
    let attempt = resumption
      .progressed()
      .then(|| resumption.next_attempt(false, now()))
      .flatten();
    let Some(attempt) = attempt else {
      if let Err(error) = ended {
        session.events().emit(Event::Error(error));
      }
      return true;
    };
    opened = resume(shared, session, &mut resumption, attempt).await;
  }
}

/// H6 + P2: events of a POST's SSE answer until request `id` is answered; when the stream
/// ends or breaks first, GET it again from its last event id while attempts remain.
async fn follow_answer(
  shared: &Shared,
  session: &Arc<Session>,
  response: Response,
  id: u64,
) -> Result<(), CoreError> {
  let mut resumption = Resumption::new(shared.config.max_resumptions);
  let mut events = EventReader::new(response, shared.config.max_message_bytes);
  let mut resumed = false;
  loop {
    let ended = deliver_events(session, &mut events, Some(id), &mut resumption).await;
    if matches!(ended, Err(CoreError::InvalidJson(_))) || !session.is_pending(id) {
      return ended;
    }
    let Some(attempt) = resumption.next_attempt(false, now()) else {
      // Once resumed, running out of attempts is "no response", whatever broke last.
      return if resumed { Ok(()) } else { ended };
    };
    resumed = true;
    match resume(shared, session, &mut resumption, attempt).await {
      Opened::Stream(resumed) => events = *resumed,
      // A19: a refused or failing GET is the request's error; with the session gone the
      // answer cannot come any more.
      Opened::Refused(error) | Opened::Failed(error) => return Err(error),
      Opened::Expired { .. } => return Ok(()),
    }
  }
}

/// The clock the reopen rate is counted on (tokio's, so paused-clock tests see it move).
fn now() -> std::time::Instant {
  tokio::time::Instant::now().into_std()
}

/// One stream (re)opened by GET.
enum Opened {
  Stream(Box<EventReader>),
  /// A non-2xx answer, or one that is not an event stream, in A19's words.
  Refused(CoreError),
  /// P3: 404 to a GET that carried session id `used`.
  Expired {
    used: Option<HeaderValue>,
  },
  Failed(CoreError),
}

/// P2: waits `attempt.wait`, then GETs from its event id; a network failure spends the
/// next attempt, a refusal ends the resumption.
async fn resume(
  shared: &Shared,
  session: &Arc<Session>,
  resumption: &mut Resumption,
  mut attempt: Attempt,
) -> Opened {
  loop {
    tokio::time::sleep(attempt.wait).await;
    match open_stream(shared, session, attempt.from.as_deref()).await {
      Opened::Failed(error) => match resumption.next_attempt(true, now()) {
        Some(next) => attempt = next,
        None => return Opened::Failed(error),
      },
      opened => return opened,
    }
  }
}

async fn open_stream(shared: &Shared, session: &Arc<Session>, from: Option<&str>) -> Opened {
  let client = match shared.client() {
    Ok(client) => client,
    Err(error) => return Opened::Failed(error),
  };
  let headers = |shared: &Shared| {
    let mut headers = listener_headers(shared, session);
    if let Some(value) = from.and_then(|id| HeaderValue::from_str(id).ok()) {
      headers.insert(LAST_EVENT_ID_HEADER, value);
    }
    headers
  };
  let mut first = headers(shared);
  shared.present(&mut first, "GET", &shared.config.url).await;
  let used = shared.session_header();
  let get = |headers: HeaderMap| {
    let url = &shared.config.url;
    fetch::send(&client, shared.locked_to(), Method::GET, url, headers, None)
  };
  let mut response = match get(first).await {
    Ok(response) => response,
    Err(error) => return Opened::Failed(error),
  };
  // O6/A10: a resume GET refused for its credentials is tried once more with the hook's.
  let status = response.status().as_u16();
  let hooked = shared.config.auth_error_hook.load(Ordering::Acquire);
  if matches!(status, 401 | 403) && from.is_some() && shared.auth.is_none() && hooked {
    if !shared.headers_from_auth_error().await {
      return Opened::Refused(CoreError::ResumeRefused {
        status,
        body: "auth refresh failed".to_string(),
      });
    }
    response = match get(headers(shared)).await {
      Ok(response) => response,
      Err(error) => return Opened::Failed(error),
    };
  }
  if let Err(error) = shared.capture_session(&response) {
    return Opened::Failed(error);
  }
  if response.status() == reqwest::StatusCode::NOT_FOUND && used.is_some() {
    return Opened::Expired { used };
  }
  if !response.status().is_success() {
    let status = response.status().as_u16();
    // Only a resume reports the body (A19); a listener that is not offered stays quiet.
    let body = match from {
      Some(_) => body_text(response, shared.config.max_message_bytes).await,
      None => String::new(),
    };
    return Opened::Refused(CoreError::ResumeRefused { status, body });
  }
  if !content_type_is(&response, "text/event-stream") {
    let named = content_type_header(&response);
    return Opened::Refused(CoreError::ResumeNotEventStream(named));
  }
  Opened::Stream(Box::new(EventReader::new(
    response,
    shared.config.max_message_bytes,
  )))
}

/// Feeds each event's JSON into the session. Stops at `[DONE]`, at the end of the stream,
/// or once request `until` is no longer pending. A payload that is not JSON fails a
/// request's stream (H6) and is reported by the listener.
async fn deliver_events(
  session: &Arc<Session>,
  events: &mut EventReader,
  until: Option<u64>,
  resumption: &mut Resumption,
) -> Result<(), CoreError> {
  while let Some(item) = events.next().await {
    match item? {
      ReadItem::TooLarge => session
        .events()
        .emit(Event::Error(CoreError::MessageTooLarge {
          limit: events.limit(),
        })),
      ReadItem::Event(event) => {
        resumption.observe(&event);
        let data = event.data.trim();
        // H6: a priming event (only id/retry) carries nothing.
        if data.is_empty() || event.event.as_deref() == Some("endpoint") {
          continue;
        }
        if data == "[DONE]" {
          return Ok(());
        }
        if serde_json::from_str::<serde::de::IgnoredAny>(data).is_err() {
          let error = CoreError::InvalidJson(data.to_string());
          if until.is_some() {
            return Err(error);
          }
          session.events().emit(Event::Error(error));
          continue;
        }
        session.handle_frame(data);
        if until.is_some_and(|id| !session.is_pending(id)) {
          return Ok(());
        }
      }
    }
  }
  Ok(())
}

/// E3: a body is read up to `limit` bytes.
async fn read_body(mut response: Response, limit: usize) -> Result<Bytes, CoreError> {
  // Most answers come in one chunk: that one is kept as it came, not copied.
  let mut first: Option<Bytes> = None;
  let mut joined = Vec::new();
  let mut read = 0;
  while let Some(chunk) = response.chunk().await? {
    read += chunk.len();
    if read > limit {
      return Err(CoreError::BodyTooLarge { limit });
    }
    match &first {
      None => first = Some(chunk),
      Some(first) => {
        if joined.is_empty() {
          joined.extend_from_slice(first);
        }
        joined.extend_from_slice(&chunk);
      }
    }
  }
  Ok(if joined.is_empty() {
    first.unwrap_or_default()
  } else {
    Bytes::from(joined)
  })
}

/// A refused answer's body as text (lossy; empty when it cannot be read).
async fn body_text(response: Response, limit: usize) -> String {
  read_body(response, limit)
    .await
    .map(|b| String::from_utf8_lossy(&b).into_owned())
    .unwrap_or_default()
}

/// H4/H7: status, body text and the auth hints of a non-2xx answer.
pub(crate) async fn http_error(
  response: Response,
  hint_in_message: bool,
  limit: usize,
) -> CoreError {
  let header = |name: &str| {
    response
      .headers()
      .get(name)
      .and_then(|v| v.to_str().ok())
      .map(str::to_string)
  };
  let www_authenticate = header("www-authenticate");
  let mcp_auth_server = header("mcp-auth-server");
  let status = response.status().as_u16();
  let body = body_text(response, limit).await;
  CoreError::Http {
    status,
    body,
    www_authenticate,
    mcp_auth_server,
    hint_in_message,
  }
}

/// A20 `resolveSSEConnectTimeoutMs(timeout)`: how long `startSSEListener()` waits for the
/// GET's answer: 0 when the timeout is off (0, negative or not a number), else a quarter of
/// it, at least 1 ms and at most a second.
pub fn sse_connect_timeout_ms(timeout_ms: f64) -> f64 {
  if timeout_ms.is_nan() || timeout_ms <= 0.0 {
    return 0.0;
  }
  (timeout_ms / 4.0).floor().clamp(1.0, 1000.0)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::tests::Recorder;
  use crate::transport::test_http::{serve, Answer, Request};

  fn config(url: &str, allow_legacy: bool) -> HttpConfig {
    HttpConfig {
      url: Url::parse(url).unwrap(),
      headers: vec![("X-Key".to_string(), "secret".to_string())],
      timeout: Some(Duration::from_secs(5)),
      max_message_bytes: 1 << 20,
      string_ids: false,
      allow_legacy,
      max_resumptions: 2,
      oauth: None,
      auth_error_hook: Arc::default(),
      origin_locked: false,
      trust: Default::default(),
    }
  }

  /// The outcome of request `ticket` once settled: the result's JSON, or the error's text.
  async fn settled(recorder: &Recorder, ticket: u64) -> Result<String, String> {
    for _ in 0..500 {
      let found = recorder.0.lock().unwrap().iter().find_map(|e| match e {
        Event::Settled { ticket: t, outcome } if *t == ticket => Some(
          outcome
            .as_ref()
            .map(|r| r.as_ref().map_or("", |r| r.get()).to_string())
            .map_err(|e| e.to_string()),
        ),
        _ => None,
      });
      if let Some(outcome) = found {
        return outcome;
      }
      tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("request {ticket} never settled");
  }

  /// A JSON answer to the request in `r` (202 for a notification).
  fn answer(r: &Request, result: &str) -> Answer {
    let message: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let Some(id) = message.get("id") else {
      return Answer::new("202 Accepted");
    };
    Answer::new("200 OK")
      .header("content-type", "application/json")
      .body(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
      ))
  }

  #[tokio::test]
  async fn h11_a_legacy_endpoint_on_another_origin_gets_nothing() {
    let b = serve("127.0.0.2", |r| answer(r, "{}")).await;
    let endpoint = format!("{}/steal", b.origin);
    let a = serve("127.0.0.1", move |r| match r.method.as_str() {
      "GET" => Answer::new("200 OK")
        .header("content-type", "text/event-stream")
        .body(format!("event: endpoint\ndata: {endpoint}\n\n"))
        .hold(),
      _ => Answer::new("405 Method Not Allowed"),
    })
    .await;
    let recorder = Arc::new(Recorder::default());
    let url = format!("{}/sse", a.origin);
    let transport =
      HttpTransport::connect(config(&url, true), recorder.clone(), &Handle::current()).unwrap();
    let ticket = transport.session().request("initialize", None).unwrap();
    assert_eq!(
      settled(&recorder, ticket).await,
      Err(format!(
        "Legacy SSE endpoint origin mismatch: expected {}, received {}",
        a.origin, b.origin
      ))
    );
    assert!(b.requests().is_empty());
    transport.close();
  }

  /// H11 reads the legacy stream by A23's rules, as `LegacySseTransport` does: `[DONE]`
  /// is skipped (the one stream carries everything after it too), and an event that is not
  /// JSON ends the transport with its own error.
  #[tokio::test]
  async fn h11_the_legacy_stream_follows_a23() {
    let a = serve("127.0.0.1", |r| match r.method.as_str() {
      "GET" => Answer::new("200 OK")
        .header("content-type", "text/event-stream")
        .body(concat!(
          "event: endpoint\ndata: /messages\n\n",
          "data: [DONE]\n\n",
          "data: {\"jsonrpc\":\"2.0\",\"method\":\"after/done\"}\n\n",
          "data: not json\n\n",
        ))
        .hold(),
      "POST" if r.path == "/messages" => Answer::new("202 Accepted"),
      _ => Answer::new("405 Method Not Allowed"),
    })
    .await;
    let recorder = Arc::new(Recorder::default());
    let url = format!("{}/sse", a.origin);
    let transport =
      HttpTransport::connect(config(&url, true), recorder.clone(), &Handle::current()).unwrap();
    transport.session().request("initialize", None).unwrap();
    let closed = || {
      recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::Closed))
    };
    for _ in 0..500 {
      if closed() {
        break;
      }
      tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let events = recorder.0.lock().unwrap();
    let notified = events
      .iter()
      .any(|e| matches!(e, Event::Notification { method, .. } if method == "after/done"));
    assert!(notified, "the message after [DONE] arrives: {events:?}");
    let ended = events.iter().any(|e| {
      matches!(e, Event::Error(error) if error.to_string()
        == "Legacy SSE message event contained non-JSON data: not json")
    });
    assert!(
      ended,
      "non-JSON ends the stream with A23's error: {events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, Event::Closed)));
  }

  #[tokio::test]
  async fn h11_an_endpoint_on_the_same_origin_is_used() {
    let a = serve("127.0.0.1", |r| {
      match (r.method.as_str(), r.path.as_str()) {
        ("GET", _) => Answer::new("200 OK")
          .header("content-type", "text/event-stream")
          .body("event: endpoint\ndata: /messages?s=1\n\n")
          .hold(),
        ("POST", "/messages?s=1") => Answer::new("202 Accepted"),
        _ => Answer::new("405 Method Not Allowed"),
      }
    })
    .await;
    let recorder = Arc::new(Recorder::default());
    let url = format!("{}/sse", a.origin);
    let transport =
      HttpTransport::connect(config(&url, true), recorder.clone(), &Handle::current()).unwrap();
    transport.session().request("initialize", None).unwrap();
    for _ in 0..500 {
      if a.requests().iter().any(|r| r.path == "/messages?s=1") {
        break;
      }
      tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let posted: Vec<_> = a
      .requests()
      .into_iter()
      .filter(|r| r.path == "/messages?s=1")
      .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].header("x-key"), Some("secret"));
    transport.close();
  }

  #[tokio::test]
  async fn h3_a_session_id_that_is_not_visible_ascii_is_refused_and_never_sent() {
    for id in ["a b", "a\tb", ""] {
      let a = serve("127.0.0.1", move |r| {
        answer(r, "{}").header("mcp-session-id", id)
      })
      .await;
      let recorder = Arc::new(Recorder::default());
      let url = format!("{}/mcp", a.origin);
      let transport =
        HttpTransport::connect(config(&url, false), recorder.clone(), &Handle::current()).unwrap();
      let first = transport.session().request("initialize", None).unwrap();
      assert_eq!(
        settled(&recorder, first).await,
        Err("Invalid Mcp-Session-Id from server: only visible ASCII (0x21-0x7E) is allowed".into())
      );
      let second = transport.session().request("ping", None).unwrap();
      let _ = settled(&recorder, second).await;
      assert_eq!(transport.session_id(), None);
      assert!(a
        .requests()
        .iter()
        .all(|r| r.header("mcp-session-id").is_none()));
      transport.close();
    }
  }

  #[tokio::test]
  async fn h3_a_visible_session_id_is_kept_and_sent_back() {
    let a = serve("127.0.0.1", |r| {
      answer(r, "{}").header("mcp-session-id", "s-1")
    })
    .await;
    let recorder = Arc::new(Recorder::default());
    let url = format!("{}/mcp", a.origin);
    let transport =
      HttpTransport::connect(config(&url, false), recorder.clone(), &Handle::current()).unwrap();
    let first = transport.session().request("initialize", None).unwrap();
    assert_eq!(settled(&recorder, first).await, Ok("{}".to_string()));
    let second = transport.session().request("ping", None).unwrap();
    assert_eq!(settled(&recorder, second).await, Ok("{}".to_string()));
    assert_eq!(transport.session_id().as_deref(), Some("s-1"));
    assert_eq!(a.requests()[1].header("mcp-session-id"), Some("s-1"));
    transport.close();
  }

  #[test]
  fn a20_the_listener_waits_a_quarter_of_the_timeout_within_1_ms_and_1_s() {
    assert_eq!(sse_connect_timeout_ms(0.0), 0.0);
    assert_eq!(sse_connect_timeout_ms(-5.0), 0.0);
    assert_eq!(sse_connect_timeout_ms(f64::NAN), 0.0);
    assert_eq!(sse_connect_timeout_ms(2.0), 1.0);
    assert_eq!(sse_connect_timeout_ms(30_000.0), 1000.0);
    assert_eq!(sse_connect_timeout_ms(1_001.0), 250.0);
    assert_eq!(sse_connect_timeout_ms(f64::INFINITY), 1000.0);
  }
}
