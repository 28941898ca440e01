//! A22/A23: the legacy HTTP+SSE transport (MCP 2024-11-05) as a transport of its own.
//! `open` GETs the server's event stream and waits for its first `endpoint` event, which
//! names the URL every frame is then POSTed to; answers, notifications and the server's
//! requests all arrive on that one stream. (`http.rs` also speaks this protocol, as a
//! fallback it detects for `type: "sse"`; this transport starts there.)
//!
//! A POST only says whether the server took the frame; the session correlates what comes
//! back on the stream. So a request has two phases under one deadline: its POST
//! (`Request timeout`), then the wait for its answer (`Legacy SSE response timeout`).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::event_stream::EventReader;
use super::http::{
  auth_error_headers, content_type_header, http_error, with_timeout, HostThroughEvents,
};
use super::legacy_stream;
use crate::error::{ClosedTransport, CoreError};
use crate::protocol::header_policy::{merge, same_name};
use crate::session::{Ack, Event, EventSink, Outgoing, Session};
use crate::transport::fetch;
use crate::transport::response::Response;

/// A23: generated for every POST; they win over configured headers whatever their case.
const POST_HEADERS: [(&str, &str); 2] = [
  ("Content-Type", "application/json"),
  ("Accept", "application/json, text/event-stream"),
];
/// A22: generated for the GET.
const STREAM_HEADERS: [(&str, &str); 1] = [("Accept", "text/event-stream")];
/// A17/A23: the legacy protocol has no session, version or resumption headers, so a
/// configured one is never sent either.
const NEVER_SENT: [&str; 3] = ["mcp-session-id", "mcp-protocol-version", "last-event-id"];

#[derive(Debug, Clone)]
pub struct LegacySseConfig {
  pub url: Url,
  /// `config.headers`.
  pub headers: Vec<(String, String)>,
  /// The request, notify and connect timeout; `None` disables it.
  pub timeout: Option<Duration>,
  pub max_message_bytes: usize,
  /// A7 `requestIdFormat: "string"`.
  pub string_ids: bool,
  /// A10: the JS side has an `onAuthError` to ask on a 401/403 to a POST.
  pub auth_error_hook: Arc<AtomicBool>,
  /// A24 `headerPolicy: "origin-locked"`.
  pub origin_locked: bool,
  /// H10: the server's own CAs, and whether the runtime asked for no checks.
  pub trust: crate::http_client::Trust,
}

pub use crate::error::LegacySseError;

/// A25: the answers to the legacy GET that mean the server speaks Streamable HTTP instead.
pub const FALLBACK_STATUSES: [u16; 4] = [400, 404, 405, 406];

/// A25: whether a failed legacy connect (its HTTP status, its message) falls back, once, to
/// Streamable HTTP.
pub fn falls_back_to_streamable_http(status: Option<u16>, message: &str) -> bool {
  status.is_some_and(|s| FALLBACK_STATUSES.contains(&s))
    || message.starts_with("Legacy SSE response is not an event stream")
}

/// Where a transport is in its life; it only moves down this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
  /// `open` is waiting for the endpoint event.
  Opening,
  Open,
  /// `open` failed before the endpoint was known: there is nothing to close.
  Failed,
  Closed,
}

struct Shared {
  config: LegacySseConfig,
  /// `config.headers`; A10: `onAuthError` may replace them.
  configured: RwLock<Vec<(String, String)>>,
  /// The JS side, for `onAuthError`.
  host: HostThroughEvents,
  /// Taken out on close, so the pool and its keep-alive sockets go at once.
  client: Mutex<Option<fetch::Fetcher>>,
  state: Mutex<State>,
  /// Where frames are POSTed; set once `open` has it.
  endpoint: OnceLock<Url>,
  /// Cancelled by close(): stops the GET and whatever is sent.
  closing: tokio_util::sync::CancellationToken,
  runtime: Handle,
}

pub struct LegacySseTransport {
  session: Arc<Session>,
  shared: Arc<Shared>,
}

impl LegacySseTransport {
  /// No traffic yet: the session stays unconnected (T10 for requests) until `open` has the
  /// endpoint.
  ///
  /// # Errors
  /// `Network` if the HTTP client cannot be built (TLS roots, a bad proxy variable).
  pub fn new(
    config: LegacySseConfig,
    events: Arc<dyn EventSink>,
    runtime: &Handle,
  ) -> Result<Self, CoreError> {
    let _context = runtime.enter();
    let client = fetch::Fetcher::new(&config.url, &config.trust)?;
    let (outbox, outgoing) = mpsc::unbounded_channel();
    // The transport times each phase itself (T7); the session only what a caller's own
    // timeouts ask for (P4).
    let session = Session::new(
      Arc::new(outbox),
      events.clone(),
      config.timeout,
      runtime.clone(),
      true,
    );
    session.disconnect(CoreError::NotConnected);
    if config.string_ids {
      session.use_string_ids();
    }
    let shared = Arc::new(Shared {
      configured: RwLock::new(config.headers.clone()),
      config,
      host: HostThroughEvents(events),
      client: Mutex::new(Some(client)),
      state: Mutex::new(State::Opening),
      endpoint: OnceLock::new(),
      closing: Default::default(),
      runtime: runtime.clone(),
    });
    runtime.spawn(dispatch(outgoing, shared.clone(), Arc::downgrade(&session)));
    Ok(LegacySseTransport { session, shared })
  }

  pub fn session(&self) -> &Arc<Session> {
    &self.session
  }

  pub fn url(&self) -> &str {
    self.shared.config.url.as_str()
  }

  /// Where frames are POSTed, once known.
  pub fn endpoint(&self) -> Option<&str> {
    self.shared.endpoint.get().map(Url::as_str)
  }

  pub fn state(&self) -> State {
    *self.shared.state()
  }

  /// A22: GETs the stream and waits for its `endpoint` event, all within `limit`; then the
  /// session connects and the stream is read in the background until it ends or close().
  ///
  /// # Errors
  /// `Http` for a non-2xx answer, `LegacySse` for the protocol's failures, `Network` for
  /// the connection's, `TransportClosed` when close() came first.
  pub fn open(
    &self,
    limit: Option<Duration>,
  ) -> impl std::future::Future<Output = Result<(), CoreError>> + Send + 'static {
    let shared = self.shared.clone();
    let session = self.session.clone();
    async move {
      let find = std::pin::pin!(find_endpoint(&shared));
      let found = tokio::select! {
        biased;
        _ = shared.closing.cancelled() => Err(CoreError::TransportClosed { stderr: None }),
        found = with_timeout(limit, find) => match found {
          Ok(found) => found,
          Err(limit) => Err(LegacySseError::EndpointTimeout(limit).into()),
        },
      };
      let mut state = shared.state();
      if *state != State::Opening {
        return Err(CoreError::TransportClosed { stderr: None });
      }
      let (endpoint, events) = match found {
        Ok(found) => found,
        Err(error) => {
          *state = State::Failed;
          return Err(error);
        }
      };
      let _ = shared.endpoint.set(endpoint);
      *state = State::Open;
      // Under the state lock, so a close() right now finds the session connected.
      session.open();
      drop(state);
      shared
        .runtime
        .spawn(read_stream(shared.clone(), session, events));
      Ok(())
    }
  }

  /// A23: rejects pending requests with `Transport closed`, stops the stream and every
  /// POST, then emits `Event::Closed` (also while opening: the connect rejects).
  pub fn close(&self) {
    let before = std::mem::replace(&mut *self.shared.state(), State::Closed);
    if before == State::Closed {
      return;
    }
    self.shared.closing.cancel();
    self
      .session
      .disconnect(CoreError::Aborted(ClosedTransport::LegacySse));
    self.shared.release_client();
    self.session.events().emit(Event::Closed);
  }
}

impl Drop for LegacySseTransport {
  fn drop(&mut self) {
    // Collected, or replaced after a failed connect: stop the tasks; nobody listens for
    // `Closed` any more.
    self.shared.closing.cancel();
    self
      .session
      .disconnect(CoreError::TransportClosed { stderr: None });
  }
}

impl super::Transport for LegacySseTransport {
  fn session(&self) -> &Arc<Session> {
    &self.session
  }
  fn close(&self) {
    self.close()
  }
}

impl Shared {
  fn state(&self) -> MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(|p| p.into_inner())
  }

  fn client(&self) -> Result<fetch::Fetcher, CoreError> {
    self
      .client
      .lock()
      .ok()
      .and_then(|c| c.clone())
      .ok_or(CoreError::TransportClosed { stderr: None })
  }

  fn release_client(&self) {
    let released = self.client.lock().ok().and_then(|mut c| c.take());
    drop(released);
  }

  fn headers(&self, generated: &[(&str, &str)]) -> HeaderMap {
    let configured = self
      .configured
      .read()
      .map(|h| h.clone())
      .unwrap_or_else(|p| p.into_inner().clone());
    request_headers(&configured, generated)
  }

  /// POSTs `frame` to the endpoint. A10: a 401/403 asks `onAuthError`; headers it gives
  /// replace `config.headers`, and the POST is sent once more with them.
  /// A24: the configured URL, for an origin-locked transport.
  fn locked_to(&self) -> Option<&Url> {
    self.config.origin_locked.then_some(&self.config.url)
  }

  async fn post(&self, frame: Bytes) -> Result<Response, CoreError> {
    let endpoint = self.endpoint.get().ok_or(CoreError::NotConnected)?;
    let client = self.client()?;
    let send = |headers: HeaderMap| {
      let body = Some(frame.clone());
      fetch::send(
        &client,
        self.locked_to(),
        Method::POST,
        endpoint,
        headers,
        body,
      )
    };
    let response = send(self.headers(&POST_HEADERS)).await?;
    let refused = matches!(response.status().as_u16(), 401 | 403);
    if !refused || !self.config.auth_error_hook.load(Ordering::Acquire) {
      return Ok(response);
    }
    let Some(replaced) = auth_error_headers(&self.host).await else {
      return Ok(response);
    };
    drop(response);
    if let Ok(mut configured) = self.configured.write() {
      *configured = replaced;
    }
    send(self.headers(&POST_HEADERS)).await
  }
}

/// A17/A24: `configured` (without what this protocol never sends), then `generated`,
/// which win whatever their case. Names or values a header cannot carry are left out.
fn request_headers(configured: &[(String, String)], generated: &[(&str, &str)]) -> HeaderMap {
  let configured: Vec<(String, String)> = configured
    .iter()
    .filter(|(name, _)| !NEVER_SENT.iter().any(|ours| same_name(ours, name)))
    .cloned()
    .collect();
  let generated: Vec<(String, String)> = generated
    .iter()
    .map(|(name, value)| (name.to_string(), value.to_string()))
    .collect();
  let mut headers = HeaderMap::new();
  for (name, value) in merge(&generated, &configured) {
    if let (Ok(name), Ok(value)) = (
      HeaderName::from_bytes(name.as_bytes()),
      HeaderValue::from_str(&value),
    ) {
      headers.insert(name, value);
    }
  }
  headers
}

/// `work`, unless `deadline` passes first (`None`).
async fn before<T>(
  deadline: Option<Instant>,
  work: impl std::future::Future<Output = T>,
) -> Option<T> {
  match deadline {
    Some(deadline) => tokio::time::timeout_at(deadline, work).await.ok(),
    None => Some(work.await),
  }
}

/// A22: the GET, and its events up to the first `endpoint` one. Events before it have no
/// session to go to yet and are dropped.
async fn find_endpoint(shared: &Shared) -> Result<(Url, EventReader), CoreError> {
  let url = &shared.config.url;
  let limit = shared.config.max_message_bytes;
  let headers = shared.headers(&STREAM_HEADERS);
  let client = shared.client()?;
  let response = fetch::send(&client, shared.locked_to(), Method::GET, url, headers, None).await?;
  if !response.status().is_success() {
    return Err(http_error(response, false, limit).await);
  }
  if matches!(response.status().as_u16(), 204 | 205) {
    return Err(LegacySseError::NoBody.into());
  }
  let content_type = content_type_header(&response);
  if !content_type.is_empty()
    && !content_type
      .to_ascii_lowercase()
      .contains("text/event-stream")
  {
    return Err(LegacySseError::NotEventStream(content_type).into());
  }
  let mut events = EventReader::new(response, limit);
  let endpoint = legacy_stream::endpoint_event(&mut events, url).await?;
  Ok((endpoint, events))
}

/// A23: the stream, until it ends, breaks or close(). Its end is the transport's: pending
/// requests reject (with the stream's failure, if it failed), then `Event::Closed`.
async fn read_stream(shared: Arc<Shared>, session: Arc<Session>, mut events: EventReader) {
  let ended = tokio::select! {
    _ = shared.closing.cancelled() => return,
    ended = legacy_stream::deliver(&session, &mut events) => ended,
  };
  let mut state = shared.state();
  if *state != State::Open {
    return;
  }
  *state = State::Closed;
  drop(state);
  let error = match ended {
    Ok(()) => LegacySseError::StreamClosed.into(),
    Err(error) => {
      session.events().emit(Event::Error(error.clone()));
      error
    }
  };
  session.disconnect(error);
  shared.release_client();
  session.events().emit(Event::Closed);
}

async fn dispatch(
  mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
  shared: Arc<Shared>,
  session: std::sync::Weak<Session>,
) {
  while let Some(out) = outgoing.recv().await {
    let Some(session) = session.upgrade() else {
      return;
    };
    let shared = shared.clone();
    shared.runtime.clone().spawn(async move {
      let frame = Bytes::from(out.frame);
      match out.ack {
        Ack::Request(id) => {
          let cancel = out.cancel.unwrap_or_default();
          // P4: a request with the caller's own timeouts is timed by the session instead.
          let limit = out.timeout.filter(|_| !out.session_timed);
          tokio::select! {
            // Answered, aborted, timed out or closed: the POST in flight is dropped here.
            _ = cancel.cancelled() => {}
            _ = send_request(&shared, &session, id, frame, limit) => {}
          }
        }
        Ack::Notify(ticket) => {
          let outcome = tokio::select! {
            biased;
            _ = shared.closing.cancelled() => Err(CoreError::Aborted(ClosedTransport::LegacySse)),
            outcome = send_notification(&shared, frame, out.timeout) => outcome,
          };
          session.events().emit(Event::Settled {
            ticket,
            outcome: outcome.map(|()| None),
          });
        }
        // Answers to server requests and cancellations: best effort.
        Ack::None => {
          let post = std::pin::pin!(shared.post(frame));
          tokio::select! {
            _ = shared.closing.cancelled() => {}
            _ = with_timeout(out.timeout, post) => {}
          }
        }
      }
    });
  }
}

/// A23: the POST, then the wait for the answer on the stream, both before one deadline.
/// The answer itself ends this future from outside (the request's cancel token).
async fn send_request(
  shared: &Shared,
  session: &Session,
  id: u64,
  frame: Bytes,
  limit: Option<Duration>,
) {
  let deadline = limit.map(|limit| Instant::now() + limit);
  let posted = async {
    let response = shared.post(frame).await?;
    if response.status().is_success() {
      return Ok(());
    }
    Err(http_error(response, false, shared.config.max_message_bytes).await)
  };
  match before(deadline, posted).await {
    None => {
      let limit = limit.unwrap_or_default();
      return session.time_out(id, CoreError::RequestTimeout(limit));
    }
    Some(Err(error)) => return session.write_failed(Ack::Request(id), error),
    Some(Ok(())) => {}
  }
  let (Some(deadline), Some(limit)) = (deadline, limit) else {
    return std::future::pending().await;
  };
  tokio::time::sleep_until(deadline).await;
  session.time_out(id, LegacySseError::ResponseTimeout(limit).into());
}

/// A23: success on any 2xx.
async fn send_notification(
  shared: &Shared,
  frame: Bytes,
  limit: Option<Duration>,
) -> Result<(), CoreError> {
  let exchange = async {
    let response = shared.post(frame).await?;
    if response.status().is_success() {
      return Ok(());
    }
    Err(http_error(response, false, shared.config.max_message_bytes).await)
  };
  with_timeout(limit, std::pin::pin!(exchange))
    .await
    .map_err(CoreError::NotifyTimeout)?
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::session::tests::Recorder;
  use tokio::io::{AsyncReadExt, AsyncWriteExt};
  use tokio::net::{TcpListener, TcpStream};

  #[test]
  fn a25_which_legacy_failures_fall_back_to_streamable_http() {
    for status in [400, 404, 405, 406] {
      assert!(falls_back_to_streamable_http(Some(status), "HTTP 4xx"));
    }
    for status in [401, 403, 500, 503] {
      assert!(!falls_back_to_streamable_http(Some(status), "HTTP"));
    }
    let not_sse = LegacySseError::NotEventStream("application/json".into()).to_string();
    assert!(falls_back_to_streamable_http(None, &not_sse));
    assert!(!falls_back_to_streamable_http(
      None,
      "Legacy SSE endpoint event not received"
    ));
  }

  #[test]
  fn a17_generated_headers_win_and_session_headers_are_never_sent() {
    let configured = vec![
      ("accept".to_string(), "*/*".to_string()),
      ("X-Key".to_string(), "k".to_string()),
      ("MCP-Session-Id".to_string(), "forged".to_string()),
      ("mcp-protocol-version".to_string(), "1999-01-01".to_string()),
      ("Bad Name".to_string(), "x".to_string()),
    ];
    let headers = request_headers(&configured, &POST_HEADERS);
    assert_eq!(headers["accept"], "application/json, text/event-stream");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-key"], "k");
    assert_eq!(headers.len(), 3);
    let headers = request_headers(&configured, &STREAM_HEADERS);
    assert_eq!(headers["accept"], "text/event-stream");
    assert!(headers.get("content-type").is_none());
  }

  #[test]
  fn legacy_messages_match_the_contract() {
    let cases: [(CoreError, &str); 5] = [
      (
        LegacySseError::NoBody.into(),
        "Legacy SSE response did not include a body",
      ),
      (
        LegacySseError::NoEndpoint.into(),
        "Legacy SSE endpoint event not received",
      ),
      (
        LegacySseError::EndpointTimeout(Duration::from_millis(150)).into(),
        "Legacy SSE endpoint timeout after 150ms",
      ),
      (
        LegacySseError::ResponseTimeout(Duration::from_millis(20)).into(),
        "Legacy SSE response timeout after 20ms",
      ),
      (
        LegacySseError::StreamClosed.into(),
        "Transport closed: legacy SSE stream closed",
      ),
    ];
    for (error, text) in cases {
      assert_eq!(error.to_string(), text);
    }
  }

  /// A one-connection-at-a-time HTTP/1.1 server: GETs get `stream` (then the connection
  /// stays open until `end` fires), POSTs get 202 and their bodies go to `posted`.
  struct Server {
    url: String,
    posted: mpsc::UnboundedReceiver<String>,
    stream: mpsc::UnboundedSender<String>,
  }

  async fn server(first: &'static str) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sse", listener.local_addr().unwrap());
    let (posted_tx, posted) = mpsc::unbounded_channel();
    let (stream, stream_rx) = mpsc::unbounded_channel::<String>();
    let stream_rx = Arc::new(tokio::sync::Mutex::new(stream_rx));
    tokio::spawn(async move {
      loop {
        let (socket, _) = listener.accept().await.unwrap();
        let posted = posted_tx.clone();
        let stream_rx = stream_rx.clone();
        tokio::spawn(serve(socket, first, posted, stream_rx));
      }
    });
    Server {
      url,
      posted,
      stream,
    }
  }

  async fn serve(
    mut socket: TcpStream,
    first: &'static str,
    posted: mpsc::UnboundedSender<String>,
    stream: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>,
  ) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
      let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
          break at + 4;
        }
        match socket.read(&mut chunk).await {
          Ok(0) | Err(_) => return,
          Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
      };
      let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
      let length: usize = head
        .lines()
        .find_map(|l| {
          l.to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
      while buffer.len() < head_end + length {
        let n = socket.read(&mut chunk).await.unwrap();
        buffer.extend_from_slice(&chunk[..n]);
      }
      let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).to_string();
      buffer.drain(..head_end + length);
      if head.starts_with("GET") {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let chunked = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
        socket.write_all(chunked(first).as_bytes()).await.unwrap();
        let mut stream = stream.lock().await;
        while let Some(text) = stream.recv().await {
          if text.is_empty() {
            break;
          }
          if socket.write_all(chunked(&text).as_bytes()).await.is_err() {
            return;
          }
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
        return;
      }
      let _ = posted.send(body);
      let answer = "HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\n\r\nAccepted";
      if socket.write_all(answer.as_bytes()).await.is_err() {
        return;
      }
    }
  }

  fn config(url: &str, timeout: Option<Duration>) -> LegacySseConfig {
    LegacySseConfig {
      url: Url::parse(url).unwrap(),
      headers: Vec::new(),
      timeout,
      max_message_bytes: 1 << 20,
      string_ids: false,
      auth_error_hook: Default::default(),
      origin_locked: false,
      trust: Default::default(),
    }
  }

  fn settled(recorder: &Recorder) -> Vec<(u64, Result<String, String>)> {
    recorder
      .0
      .lock()
      .unwrap()
      .iter()
      .filter_map(|e| match e {
        Event::Settled { ticket, outcome } => Some((
          *ticket,
          outcome
            .as_ref()
            .map(|r| r.as_ref().map_or("", |r| r.get()).to_string())
            .map_err(|e| e.to_string()),
        )),
        _ => None,
      })
      .collect()
  }

  async fn until(check: impl Fn() -> bool) {
    for _ in 0..500 {
      if check() {
        return;
      }
      tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting");
  }

  #[tokio::test]
  async fn a22_a23_request_answered_on_the_stream_then_stream_end_rejects_pending() {
    let mut server = server("event: endpoint\ndata: /messages?s=1\n\n").await;
    let recorder = Arc::new(Recorder::default());
    let transport = LegacySseTransport::new(
      config(&server.url, Some(Duration::from_secs(5))),
      recorder.clone(),
      &Handle::current(),
    )
    .unwrap();
    assert!(!transport.session().is_connected());
    assert_eq!(
      transport.session().request("x", None),
      Err(CoreError::NotConnected)
    );
    transport.open(Some(Duration::from_secs(5))).await.unwrap();
    assert_eq!(transport.state(), State::Open);
    assert!(transport.endpoint().unwrap().ends_with("/messages?s=1"));
    let first = transport.session().request("tools/list", None).unwrap();
    let posted = server.posted.recv().await.unwrap();
    assert!(posted.contains(r#""method":"tools/list""#));
    server
      .stream
      .send(format!("data: [DONE]\n\ndata:\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{first},\"result\":{{\"ok\":1}}}}\n\n"))
      .unwrap();
    until(|| !settled(&recorder).is_empty()).await;
    assert_eq!(settled(&recorder), [(first, Ok(r#"{"ok":1}"#.to_string()))]);
    let second = transport.session().request("tools/list", None).unwrap();
    server.posted.recv().await.unwrap();
    server.stream.send(String::new()).unwrap();
    until(|| settled(&recorder).len() == 2).await;
    assert_eq!(
      settled(&recorder)[1],
      (
        second,
        Err("Transport closed: legacy SSE stream closed".to_string())
      )
    );
    until(|| {
      recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, Event::Closed))
    })
    .await;
    assert!(!transport.session().is_connected());
    assert_eq!(transport.state(), State::Closed);
  }

  #[tokio::test]
  async fn a23_the_answer_must_come_before_the_request_deadline() {
    let mut server = server("event: endpoint\ndata: /messages\n\n").await;
    let recorder = Arc::new(Recorder::default());
    let limit = Duration::from_millis(150);
    let transport = LegacySseTransport::new(
      config(&server.url, Some(limit)),
      recorder.clone(),
      &Handle::current(),
    )
    .unwrap();
    transport.open(Some(limit)).await.unwrap();
    let id = transport.session().request("slow", None).unwrap();
    server.posted.recv().await.unwrap();
    until(|| !settled(&recorder).is_empty()).await;
    assert_eq!(
      settled(&recorder),
      [(
        id,
        Err("Legacy SSE response timeout after 150ms".to_string())
      )]
    );
    // T9: the server is told.
    let cancelled = server.posted.recv().await.unwrap();
    assert!(cancelled.contains("notifications/cancelled"));
    transport.close();
    assert_eq!(transport.state(), State::Closed);
  }

  #[tokio::test]
  async fn a22_no_endpoint_in_time_and_close_while_opening() {
    let server = server(": nothing yet\n\n").await;
    let recorder = Arc::new(Recorder::default());
    let transport = LegacySseTransport::new(
      config(&server.url, None),
      recorder.clone(),
      &Handle::current(),
    )
    .unwrap();
    let error = transport
      .open(Some(Duration::from_millis(100)))
      .await
      .unwrap_err();
    assert_eq!(error.to_string(), "Legacy SSE endpoint timeout after 100ms");
    assert_eq!(transport.state(), State::Failed);
    let transport = LegacySseTransport::new(
      config(&server.url, None),
      recorder.clone(),
      &Handle::current(),
    )
    .unwrap();
    let opening = tokio::spawn(transport.open(None));
    tokio::time::sleep(Duration::from_millis(50)).await;
    transport.close();
    assert_eq!(
      opening.await.unwrap(),
      Err(CoreError::TransportClosed { stderr: None })
    );
  }
}
