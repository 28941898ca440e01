//! Requests to a transport's own origin, with connections of their own: HTTP/1.1 kept
//! alive in a pool (`h1`), or, where the TLS handshake agrees on it, one HTTP/2 connection
//! shared on hyper's connection API. reqwest re-parses the URL, walks its redirect, proxy
//! and pool layers and rebuilds its header maps on every request; a transport talks to one
//! origin, so this path does that once per transport. It is taken only where reqwest would
//! connect directly (no proxy for the origin) and check certificates; anything else goes
//! to reqwest.
use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::uri::PathAndQuery;
use http_body_util::{BodyExt, Either, Empty, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT};
use reqwest::{Method, StatusCode, Url};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tower_service::Service;

use super::h1;
use crate::http_client::{ProxyRules, ProxyVars};

type RequestBody = Either<Full<Bytes>, Empty<Bytes>>;
type Http2 = http2::SendRequest<RequestBody>;
pub type Failure = h1::Failure;

/// reqwest's idle timeout: a connection unused this long is not reused.
const IDLE_LIMIT: Duration = Duration::from_secs(90);
/// Idle connections kept; more in flight than this at once close when they finish.
const MAX_IDLE: usize = 128;
/// How long a request waits for another's TLS handshake before making its own.
const HANDSHAKE_TURN_WAIT: Duration = Duration::from_secs(10);
/// Connections one request tries (kept ones the server closed, refusals) before failing.
const MAX_ATTEMPTS: usize = 8;

/// The configured origin's connections.
pub struct DirectOrigin {
  /// The origin as a URL spells it, to tell which requests are its own.
  scheme: &'static str,
  host: String,
  port: u16,
  /// The origin on the wire: `Host` and `:authority`.
  authority: HeaderValue,
  /// The origin, as the connector takes it.
  dial: http::Uri,
  /// The configured URL and its request target, made once: nearly every request is to it.
  home: (Arc<Url>, PathAndQuery),
  connector: HttpConnector,
  tls: Option<(TlsConnector, ServerName<'static>)>,
  idle: Mutex<Vec<(h1::Connection, Instant)>>,
  /// The HTTP/2 connection, once a handshake agreed on h2: every request shares it.
  shared: Mutex<Option<Http2>>,
  /// Held by the TLS handshake under way while the server may speak HTTP/2.
  handshaking: tokio::sync::Mutex<()>,
  /// A handshake agreed on HTTP/1.1: connections open in parallel.
  http1_only: AtomicBool,
}

/// A connection ready for one request.
enum Ready {
  Http1(h1::Connection),
  Http2(Http2),
}

impl DirectOrigin {
  /// The origin of `url`, if requests to it go straight to it: no proxy for it under the
  /// rules reqwest goes by (`proxies`, else the system's), and, for `https:`, certificates
  /// checked by `tls` (the settings reqwest's client has; `None`: unchecked, reqwest's
  /// own path is used).
  pub fn for_url(
    url: &Url,
    proxies: Option<&ProxyVars>,
    tls: Option<&rustls::ClientConfig>,
  ) -> Option<Arc<Self>> {
    let scheme = match url.scheme() {
      "http" => "http",
      "https" => "https",
      _ => return None,
    };
    // reqwest turns a URL's user and password into `Authorization: Basic`: its path.
    if !url.username().is_empty() || url.password().is_some() {
      return None;
    }
    let host = url.host_str()?.to_string();
    let port = url.port_or_known_default()?;
    let uri: http::Uri = url.as_str().parse().ok()?;
    if matcher(proxies).intercept(&uri).is_some() {
      return None;
    }
    let authority = HeaderValue::from_str(uri.authority()?.as_str()).ok()?;
    let tls = match scheme {
      "https" => {
        let name = ServerName::try_from(tls_name(url)?).ok()?;
        Some((TlsConnector::from(Arc::new(tls?.clone())), name))
      }
      _ => None,
    };
    let home = (Arc::new(url.clone()), origin_form(url).try_into().ok()?);
    let dial = http::Uri::builder()
      .scheme(scheme)
      .authority(authority.as_bytes())
      .path_and_query("/")
      .build()
      .ok()?;
    Some(Arc::new(DirectOrigin {
      scheme,
      host,
      port,
      authority,
      dial,
      home,
      connector: connector(),
      tls,
      idle: Mutex::new(Vec::new()),
      shared: Mutex::new(None),
      handshaking: tokio::sync::Mutex::new(()),
      http1_only: AtomicBool::new(false),
    }))
  }

  /// Whether `url` is on this origin.
  pub fn serves(&self, url: &Url) -> bool {
    url.scheme() == self.scheme
      && url.port_or_known_default() == Some(self.port)
      && url.host_str() == Some(self.host.as_str())
  }

  /// One request to `url` (on this origin); over HTTP/1.1 the answer's body gives its
  /// connection back to the pool once read to the end.
  ///
  /// # Errors
  /// What connecting, the TLS handshake, writing or reading the answer's head failed with.
  pub async fn send(
    self: &Arc<Self>,
    method: Method,
    url: &Url,
    mut headers: HeaderMap,
    body: Option<Bytes>,
  ) -> Result<DirectAnswer, Failure> {
    // reqwest's default, where the request names none.
    headers
      .entry(ACCEPT)
      .or_insert(HeaderValue::from_static("*/*"));
    let mut refusals = 0;
    for _ in 0..MAX_ATTEMPTS {
      let (ready, reused) = match self.reuse().await {
        Some(ready) => (ready, true),
        // Boxed: a new connection (TCP, TLS) is the rare step and by far the largest
        // state; inline, every request's future carried its ~7.5 KiB.
        None => (Box::pin(self.connect()).await?, false),
      };
      match ready {
        Ready::Http2(mut sender) => {
          let mut request = http::Request::new(match &body {
            Some(bytes) => Either::Left(Full::new(bytes.clone())),
            None => Either::Right(Empty::new()),
          });
          *request.method_mut() = method.clone();
          *request.headers_mut() = headers.clone();
          // HTTP/2 names the origin in the URI (`:scheme`, `:authority`); a `host` the
          // request names goes along as reqwest lets it.
          *request.uri_mut() = http::Uri::builder()
            .scheme(self.scheme)
            .authority(self.authority.as_bytes())
            .path_and_query(self.target(url)?)
            .build()?;
          let mut error = match sender.try_send_request(request).await {
            Ok(answer) => return Ok(self.answer(Answer::Http2(answer), url)),
            Err(error) => {
              self.forget_closed_shared();
              error
            }
          };
          // A kept connection the server had closed meanwhile: the request never left, so
          // it goes again on a fresh one (as reqwest's pool retries it).
          if error.take_message().is_some() && reused {
            continue;
          }
          let error = error.into_error();
          // HTTP/2's word that the server did not process it: sent again, at most twice,
          // as reqwest's default retry policy does.
          if refusals < 2 && refused_unprocessed(&error) {
            refusals += 1;
            continue;
          }
          return Err(error.into());
        }
        Ready::Http1(connection) => {
          let target = self.target(url)?;
          // As hyper-util sets `Host` for reqwest: only where the request names none.
          let sent = connection
            .exchange(
              &method,
              target.as_str(),
              &self.authority,
              &headers,
              body.as_ref(),
            )
            .await;
          match sent {
            Ok(answer) => return Ok(self.answer(Answer::Http1(answer), url)),
            // A kept connection that failed before the request left: again, on another.
            Err(h1::SendError { unsent: true, .. }) if reused => continue,
            Err(failed) => return Err(failed.error),
          }
        }
      }
    }
    Err("no connection to the server could take the request".into())
  }

  /// `url`'s request target: its path and query.
  fn target(&self, url: &Url) -> Result<PathAndQuery, http::uri::InvalidUri> {
    if url.as_str() == self.home.0.as_str() {
      return Ok(self.home.1.clone());
    }
    origin_form(url).try_into()
  }

  /// The shared HTTP/2 connection or a kept HTTP/1.1 one, ready for a request.
  async fn reuse(&self) -> Option<Ready> {
    if let Some(mut sender) = self.shared_sender() {
      if sender.ready().await.is_ok() {
        return Some(Ready::Http2(sender));
      }
      self.forget_closed_shared();
    }
    loop {
      let (mut connection, since) = self
        .idle
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop()?;
      if since.elapsed() <= IDLE_LIMIT && connection.is_reusable() {
        return Some(Ready::Http1(connection));
      }
    }
  }

  fn shared_sender(&self) -> Option<Http2> {
    let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
    shared.as_ref().filter(|s| !s.is_closed()).cloned()
  }

  /// Drops the shared HTTP/2 connection once it has closed (a newer one stays).
  fn forget_closed_shared(&self) {
    let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
    if shared.as_ref().is_some_and(Http2::is_closed) {
      *shared = None;
    }
  }

  async fn connect(&self) -> Result<Ready, Failure> {
    let Some((connector, name)) = &self.tls else {
      return Ok(Ready::Http1(h1::Connection::new(
        self.tcp().await?.into_inner(),
      )));
    };
    // Until a handshake says the server speaks HTTP/1.1 only, one handshake at a time: an
    // HTTP/2 connection is shared, so 64 first requests at once open one, not 64.
    let _one_at_a_time = if self.http1_only.load(Ordering::Acquire) {
      None
    } else {
      match tokio::time::timeout(HANDSHAKE_TURN_WAIT, self.handshaking.lock()).await {
        Ok(turn) => {
          if let Some(sender) = self.shared_sender() {
            return Ok(Ready::Http2(sender));
          }
          (!self.http1_only.load(Ordering::Acquire)).then_some(turn)
        }
        // A handshake that stalls holds the others back for a while, not for good.
        Err(_) => None,
      }
    };
    let tls = connector
      .connect(name.clone(), self.tcp().await?.into_inner())
      .await?;
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
      self.http1_only.store(true, Ordering::Release);
      return Ok(Ready::Http1(h1::Connection::new(tls)));
    }
    let (sender, connection) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
    // Ends when every sender is gone, or the server closes.
    tokio::spawn(connection);
    *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender.clone());
    Ok(Ready::Http2(sender))
  }

  /// A TCP connection as reqwest's connector makes it (it is the same one): every address
  /// of the name, the other family tried after 300 ms, no delay, keep-alive probes.
  async fn tcp(&self) -> Result<TokioIo<TcpStream>, Failure> {
    let mut connector = self.connector.clone();
    Ok(connector.call(self.dial.clone()).await?)
  }

  fn answer(self: &Arc<Self>, answer: Answer, url: &Url) -> DirectAnswer {
    let (status, headers, body) = match answer {
      Answer::Http2(answer) => {
        let (head, body) = answer.into_parts();
        (head.status, head.headers, AnswerBody::Http2(body))
      }
      Answer::Http1((head, body)) => {
        let mut body = PooledBody {
          body,
          origin: Arc::downgrade(self),
        };
        // An empty answer (a 202, a 204) is complete as it comes.
        body.release_if_finished();
        (head.status, head.headers, AnswerBody::Http1(body))
      }
    };
    DirectAnswer {
      status,
      headers,
      // Shared where it is the configured one, as nearly always: no copy per answer.
      url: match url.as_str() == self.home.0.as_str() {
        true => self.home.0.clone(),
        false => Arc::new(url.clone()),
      },
      body,
    }
  }

  fn give_back(&self, connection: h1::Connection) {
    let now = Instant::now();
    let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
    // Connections that idled too long go, as reqwest's pool reaps them. They come back in
    // time order and leave from the back, so those are a run at the front: looking at every
    // kept connection on every answer was ~2 600 instructions a call with 64 in flight.
    let expired = idle
      .iter()
      .take_while(|(_, since)| now.saturating_duration_since(*since) > IDLE_LIMIT)
      .count();
    idle.drain(..expired);
    // One the server closed is found out when it is taken (`reuse`).
    if idle.len() < MAX_IDLE {
      idle.push((connection, now));
    }
  }
}

/// What a connection answered, before it is made a `DirectAnswer`.
enum Answer {
  Http1((h1::Head, h1::Body)),
  Http2(http::Response<Incoming>),
}

/// The TCP connector reqwest builds by default (the same type, the same settings).
fn connector() -> HttpConnector {
  let mut connector = HttpConnector::new();
  connector.enforce_http(false);
  connector.set_nodelay(true);
  connector.set_keepalive(Some(Duration::from_secs(15)));
  connector.set_keepalive_interval(Some(Duration::from_secs(15)));
  connector.set_keepalive_retries(Some(3));
  #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
  connector.set_tcp_user_timeout(Some(Duration::from_secs(30)));
  connector
}

/// An HTTP/2 refusal that says the server did not process the request: a graceful
/// GOAWAY, or REFUSED_STREAM (RFC 9113 §8.7), as reqwest classifies them.
fn refused_unprocessed(error: &hyper::Error) -> bool {
  let Some(h2) = error.source().and_then(|e| e.downcast_ref::<h2::Error>()) else {
    return false;
  };
  h2.is_remote()
    && ((h2.is_go_away() && h2.reason() == Some(h2::Reason::NO_ERROR))
      || (h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM)))
}

/// A URL's host as the TLS name wants it (an IPv6 address unbracketed).
fn tls_name(url: &Url) -> Option<String> {
  Some(match url.host()? {
    url::Host::Domain(name) => name.to_string(),
    url::Host::Ipv4(ip) => ip.to_string(),
    url::Host::Ipv6(ip) => ip.to_string(),
  })
}

/// The request target of HTTP/1.1: the path and the query.
fn origin_form(url: &Url) -> String {
  match url.query() {
    Some(query) => format!("{}?{query}", url.path()),
    None => url.path().to_string(),
  }
}

/// `proxies`' rules as hyper-util's matcher, the one reqwest's own proxies go by.
fn matcher(proxies: Option<&ProxyVars>) -> Matcher {
  match crate::http_client::proxy_rules(proxies) {
    ProxyRules::System => Matcher::from_system(),
    ProxyRules::Runtime { http, https, no } => {
      let mut builder = Matcher::builder();
      if let Some(url) = http {
        builder = builder.http(url);
      }
      if let Some(url) = https {
        builder = builder.https(url);
      }
      if let Some(no) = no {
        builder = builder.no(no);
      }
      builder.build()
    }
  }
}

/// An answer as hyper gave it: its head, the URL it answers, its body. Made into a
/// `reqwest::Response` (a boxed URL, an extensions map, three body wrappers), it cost about
/// 1 200 instructions a call more.
pub struct DirectAnswer {
  status: StatusCode,
  headers: HeaderMap,
  url: Arc<Url>,
  body: AnswerBody,
}

impl std::fmt::Debug for DirectAnswer {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("DirectAnswer")
      .field("status", &self.status)
      .finish_non_exhaustive()
  }
}

impl DirectAnswer {
  pub fn status(&self) -> StatusCode {
    self.status
  }

  pub fn headers(&self) -> &HeaderMap {
    &self.headers
  }

  pub fn url(&self) -> &Url {
    &self.url
  }

  /// The body's next piece; `None` at its end.
  ///
  /// # Cancel safety
  /// A piece is taken from hyper, or from the HTTP/1.1 connection's buffer, only as it is
  /// returned: dropped, nothing is lost.
  pub async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
    match &mut self.body {
      AnswerBody::Http2(body) => {
        while let Some(frame) = body.frame().await {
          // Trailers are not body.
          if let Ok(data) = frame?.into_data() {
            return Ok(Some(data));
          }
        }
        Ok(None)
      }
      AnswerBody::Http1(pooled) => {
        let piece = pooled.body.chunk().await?;
        pooled.release_if_finished();
        Ok(piece)
      }
    }
  }
}

enum AnswerBody {
  Http1(PooledBody),
  Http2(Incoming),
}

/// An answer's body that gives its HTTP/1.1 connection back once read to the end (dropped
/// before, the connection closes: what is left of the answer is never read).
struct PooledBody {
  body: h1::Body,
  origin: Weak<DirectOrigin>,
}

impl PooledBody {
  fn release_if_finished(&mut self) {
    if let Some(connection) = self.body.finished() {
      if let Some(origin) = self.origin.upgrade() {
        origin.give_back(connection);
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::http_client::Trust;
  use crate::transport::test_http::{serve, Answer};
  use reqwest::header::HOST;

  fn vars(pairs: &[(&str, &str)]) -> Trust {
    Trust {
      proxies: Some(ProxyVars(
        pairs
          .iter()
          .map(|(k, v)| (k.to_string(), v.to_string()))
          .collect(),
      )),
      ..Trust::default()
    }
  }

  /// The origin a transport configured with `at` and `trust` goes direct to.
  fn direct(at: &Url, trust: &Trust) -> Option<Arc<DirectOrigin>> {
    let tls = crate::http_client::tls_settings(trust).unwrap();
    DirectOrigin::for_url(at, trust.proxies.as_ref(), tls.as_ref())
  }

  fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
  }

  async fn text(origin: &Arc<DirectOrigin>, at: &Url, body: Option<&'static str>) -> String {
    let method = if body.is_some() {
      Method::POST
    } else {
      Method::GET
    };
    let answer = origin
      .send(
        method,
        at,
        HeaderMap::new(),
        body.map(|b| Bytes::from_static(b.as_bytes())),
      )
      .await
      .unwrap();
    assert_eq!(answer.url(), at);
    let answer = crate::transport::response::Response::Direct(Box::new(answer));
    answer.text().await.unwrap()
  }

  #[test]
  fn h10_only_an_origin_with_no_proxy_and_checked_certificates_goes_direct() {
    let at = url("http://127.0.0.1:9/mcp");
    let none = vars(&[]);
    assert!(direct(&at, &none).is_some());
    let tls = url("https://127.0.0.1:9/mcp");
    assert!(direct(&tls, &none).is_some());
    let unchecked = Trust {
      insecure: true,
      ..none.clone()
    };
    assert!(direct(&tls, &unchecked).is_none());
    assert!(direct(&url("ftp://127.0.0.1/"), &none).is_none());
    // reqwest makes a URL's user and password a Basic authorization: its path.
    assert!(direct(&url("http://user:pw@127.0.0.1:9/mcp"), &none).is_none());
    assert!(direct(&url("http://token@127.0.0.1:9/mcp"), &none).is_none());
    let proxied = vars(&[("HTTP_PROXY", "http://127.0.0.1:3128")]);
    assert!(direct(&at, &proxied).is_none());
    // Only https goes through the proxy: http still goes direct.
    let https_only = vars(&[("https_proxy", "http://127.0.0.1:3128")]);
    assert!(direct(&at, &https_only).is_some());
    let around = vars(&[
      ("ALL_PROXY", "http://127.0.0.1:3128"),
      ("NO_PROXY", "127.0.0.1"),
    ]);
    assert!(direct(&at, &around).is_some());
    let cgi = vars(&[
      ("HTTP_PROXY", "http://127.0.0.1:3128"),
      ("REQUEST_METHOD", "GET"),
    ]);
    assert!(direct(&at, &cgi).is_some());
  }

  #[test]
  fn h10_the_origin_serves_its_own_scheme_host_and_port_only() {
    let origin = direct(&url("http://localhost/mcp"), &vars(&[])).unwrap();
    assert!(origin.serves(&url("http://localhost:80/other?q=1")));
    assert!(!origin.serves(&url("https://localhost/mcp")));
    assert!(!origin.serves(&url("http://localhost:8080/mcp")));
    assert!(!origin.serves(&url("http://127.0.0.1/mcp")));
    let v6 = direct(&url("http://[::1]:8080/"), &vars(&[])).unwrap();
    assert!(v6.serves(&url("http://[0:0:0:0:0:0:0:1]:8080/x")));
    assert_eq!(v6.authority, "[::1]:8080");
  }

  #[tokio::test]
  async fn h10_requests_in_turn_share_one_connection_with_reqwests_host_and_accept() {
    let server = serve("127.0.0.1", |r| Answer::new("200 OK").body(r.path.clone())).await;
    let at = url(&format!("{}/mcp?x=1", server.origin));
    let origin = direct(&at, &vars(&[])).unwrap();
    for _ in 0..3 {
      assert_eq!(text(&origin, &at, Some("{}")).await, "/mcp?x=1");
    }
    let requests = server.requests();
    assert_eq!(
      requests.iter().map(|r| r.connection).collect::<Vec<_>>(),
      [0, 0, 0]
    );
    let host = at.host_str().unwrap().to_string() + ":" + &at.port().unwrap().to_string();
    assert_eq!(requests[0].header("host"), Some(host.as_str()));
    assert_eq!(requests[0].header("accept"), Some("*/*"));
    assert_eq!(requests[0].header("content-length"), Some("2"));
    assert_eq!(requests[0].body, "{}");
  }

  #[tokio::test]
  async fn h10_a_host_and_an_accept_the_request_names_are_kept_as_reqwest_keeps_them() {
    let server = serve("127.0.0.1", |_| Answer::new("200 OK")).await;
    let at = url(&format!("{}/mcp", server.origin));
    let origin = direct(&at, &vars(&[])).unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(HOST, HeaderValue::from_static("virtual.example"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    drop(origin.send(Method::GET, &at, headers, None).await.unwrap());
    let sent = &server.requests()[0];
    assert_eq!(sent.header("host"), Some("virtual.example"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
  }

  #[tokio::test]
  async fn h10_an_answer_dropped_unread_takes_its_connection_with_it() {
    let server = serve("127.0.0.1", |_| Answer::new("200 OK").body("unread")).await;
    let at = url(&format!("{}/mcp", server.origin));
    let origin = direct(&at, &vars(&[])).unwrap();
    let answer = origin
      .send(Method::GET, &at, HeaderMap::new(), None)
      .await
      .unwrap();
    drop(answer);
    assert_eq!(text(&origin, &at, None).await, "unread");
    // An empty answer is whole without being read: its connection is kept.
    let empty = serve("127.0.0.1", |_| Answer::new("202 Accepted")).await;
    let at = url(&format!("{}/mcp", empty.origin));
    let origin = direct(&at, &vars(&[])).unwrap();
    for _ in 0..2 {
      drop(
        origin
          .send(Method::POST, &at, HeaderMap::new(), None)
          .await
          .unwrap(),
      );
    }
    let connections = |s: &crate::transport::test_http::Server| {
      s.requests()
        .iter()
        .map(|r| r.connection)
        .collect::<Vec<_>>()
    };
    assert_eq!(connections(&server), [0, 1]);
    assert_eq!(connections(&empty), [0, 0]);
  }

  #[tokio::test]
  async fn h10_a_connection_the_server_closed_while_kept_is_replaced_and_nothing_sent_twice() {
    let server = serve("127.0.0.1", |_| Answer::new("200 OK").body("ok").close()).await;
    let at = url(&format!("{}/mcp", server.origin));
    let origin = direct(&at, &vars(&[])).unwrap();
    for _ in 0..3 {
      assert_eq!(text(&origin, &at, Some("{}")).await, "ok");
      tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let requests = server.requests();
    assert_eq!(
      requests.iter().map(|r| r.connection).collect::<Vec<_>>(),
      [0, 1, 2]
    );
  }

  #[tokio::test]
  async fn w8_a_refused_connection_keeps_the_os_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = url(&format!("http://{}/mcp", listener.local_addr().unwrap()));
    drop(listener);
    let origin = direct(&at, &vars(&[])).unwrap();
    let error = origin
      .send(Method::GET, &at, HeaderMap::new(), None)
      .await
      .unwrap_err();
    // reqwest's connector's error, around the OS's.
    let mut source: Option<&(dyn Error + 'static)> = Some(error.as_ref());
    let mut refused = false;
    while let Some(current) = source {
      refused |= current
        .downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
      source = current.source();
    }
    assert!(refused, "{error:?}");
  }
}
