//! HTTP/1.1 on a connection the exchange owns (RFC 9112): the request written in one piece,
//! the answer's head parsed with `httparse`, its body framed by `Content-Length`, chunked
//! coding or the connection's end. No connection task and no channel between the exchange
//! and the socket: under 64 calls in flight, hyper's task per connection cost each call
//! hand-offs between the runtime's threads that this path does not make.
use std::fmt;
use std::io::Write;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// What a connection runs on: TCP, or TLS over it.
pub trait Io: AsyncRead + AsyncWrite + Send + Sync + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin> Io for T {}

/// hyper's limits, which this path replaces: the headers of one answer, and its head's size.
const MAX_HEADERS: usize = 100;
const MAX_HEAD: usize = 400 * 1024;
/// Room made before each read.
const READ_ROOM: usize = 8 * 1024;
/// A chunk-size line longer than this (extensions included) is refused.
const MAX_CHUNK_LINE: usize = 4 * 1024;

/// A protocol fault in the server's answer, named as hyper names its own.
#[derive(Debug)]
pub struct ProtocolError(&'static str);

impl fmt::Display for ProtocolError {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(self.0)
  }
}

impl std::error::Error for ProtocolError {}

/// Why an exchange failed, and whether the request had not left yet (so that it may go
/// again on another connection).
pub struct SendError {
  pub error: Failure,
  pub unsent: bool,
}

/// One HTTP/1.1 connection and what it has read past the last answer.
pub struct Connection {
  io: Box<dyn Io>,
  buf: BytesMut,
}

/// An answer's head.
pub struct Head {
  pub status: StatusCode,
  pub headers: HeaderMap,
}

/// The body of an answer, read from its connection; the connection is handed back by
/// `finished` once the body has ended and the connection may take another request.
pub struct Body {
  conn: Option<Connection>,
  framing: Framing,
  reusable: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
  Length(u64),
  ChunkSize,
  ChunkData(u64),
  ChunkEnd,
  Trailers,
  UntilClose,
  Done,
}

impl Connection {
  pub fn new(io: impl Io + 'static) -> Self {
    Connection {
      io: Box::new(io),
      buf: BytesMut::new(),
    }
  }

  /// Whether a kept connection may take a request: the server has neither closed it nor
  /// sent anything since its last answer.
  pub fn is_reusable(&mut self) -> bool {
    use futures::FutureExt;
    if !self.buf.is_empty() {
      return false;
    }
    let mut probe = [0u8; 1];
    self.io.read(&mut probe).now_or_never().is_none()
  }

  /// Sends one request and reads its answer's head.
  ///
  /// # Errors
  /// Writing or reading failed, or the answer's head is not HTTP/1.1; `unsent` when the
  /// request could not be written at all.
  pub async fn exchange(
    mut self,
    method: &Method,
    target: &str,
    authority: &HeaderValue,
    headers: &HeaderMap,
    body: Option<&Bytes>,
  ) -> Result<(Head, Body), SendError> {
    let request = encode(method, target, authority, headers, body);
    let mut written = 0;
    while written < request.len() {
      let failed = match self.io.write(&request[written..]).await {
        Ok(0) => std::io::ErrorKind::WriteZero.into(),
        Ok(n) => {
          written += n;
          continue;
        }
        Err(error) => error,
      };
      // Only a request none of which left may go again.
      return Err(SendError {
        error: failed.into(),
        unsent: written == 0,
      });
    }
    let sent = |error: Failure| SendError {
      error,
      unsent: false,
    };
    if let Err(error) = self.io.flush().await {
      return Err(sent(error.into()));
    }
    let (head, framing, reusable) = loop {
      let parsed = self.parse_head(method).map_err(sent)?;
      match parsed {
        Some(Parsed::Interim) => continue,
        Some(Parsed::Final(head, framing, reusable)) => break (head, framing, reusable),
        None => {
          if self.buf.len() > MAX_HEAD {
            return Err(sent(Box::new(ProtocolError("message head is too large"))));
          }
          if self.read_more().await.map_err(|e| sent(e.into()))? == 0 {
            return Err(sent(Box::new(ProtocolError(
              "connection closed before message completed",
            ))));
          }
        }
      }
    };
    Ok((
      head,
      Body {
        conn: Some(self),
        framing,
        reusable,
      },
    ))
  }

  async fn read_more(&mut self) -> std::io::Result<usize> {
    if self.buf.capacity() - self.buf.len() < READ_ROOM / 2 {
      self.buf.reserve(READ_ROOM);
    }
    self.io.read_buf(&mut self.buf).await
  }

  /// The head at the front of the buffer, taken off it; `None` until it is whole.
  fn parse_head(&mut self, method: &Method) -> Result<Option<Parsed>, Failure> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut answer = httparse::Response::new(&mut slots);
    let length = match answer.parse(&self.buf) {
      Ok(httparse::Status::Complete(length)) => length,
      Ok(httparse::Status::Partial) => return Ok(None),
      Err(httparse::Error::TooManyHeaders) => {
        return Err(Box::new(ProtocolError("message head is too large")))
      }
      Err(_) => return Err(Box::new(ProtocolError("invalid HTTP response parsed"))),
    };
    let status = StatusCode::from_u16(answer.code.unwrap_or(0))
      .map_err(|_| ProtocolError("invalid HTTP status-code parsed"))?;
    let http11 = answer.version == Some(1);
    let mut headers = HeaderMap::with_capacity(answer.headers.len());
    for header in answer.headers.iter() {
      let name = HeaderName::from_bytes(header.name.as_bytes())
        .map_err(|_| ProtocolError("invalid HTTP header parsed"))?;
      let value = HeaderValue::from_bytes(header.value)
        .map_err(|_| ProtocolError("invalid HTTP header parsed"))?;
      headers.append(name, value);
    }
    self.buf.advance(length);
    // 1xx answers but 101 come before the real one (RFC 9110 §15.2).
    if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
      return Ok(Some(Parsed::Interim));
    }
    let framing = framing(method, status, &headers)?;
    let reusable = http11
      && framing != Framing::UntilClose
      && status != StatusCode::SWITCHING_PROTOCOLS
      && !headers
        .get_all(CONNECTION)
        .iter()
        .any(|v| has_token(v.as_bytes(), b"close"));
    Ok(Some(Parsed::Final(
      Head { status, headers },
      framing,
      reusable,
    )))
  }
}

enum Parsed {
  Interim,
  Final(Head, Framing, bool),
}

/// How the body is delimited (RFC 9112 §6.3).
fn framing(method: &Method, status: StatusCode, headers: &HeaderMap) -> Result<Framing, Failure> {
  if method == Method::HEAD
    || status.is_informational()
    || status == StatusCode::NO_CONTENT
    || status == StatusCode::NOT_MODIFIED
  {
    return Ok(Framing::Done);
  }
  let codings = headers.get_all(TRANSFER_ENCODING);
  if codings.iter().next().is_some() {
    let last = codings
      .iter()
      .flat_map(|v| v.as_bytes().split(|b| *b == b','))
      .map(<[u8]>::trim_ascii)
      .rfind(|coding| !coding.is_empty());
    return Ok(match last {
      Some(coding) if coding.eq_ignore_ascii_case(b"chunked") => Framing::ChunkSize,
      _ => Framing::UntilClose,
    });
  }
  let mut length = None;
  for value in headers.get_all(CONTENT_LENGTH) {
    for part in value.as_bytes().split(|b| *b == b',') {
      let part = std::str::from_utf8(part.trim_ascii())
        .ok()
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse::<u64>().ok())
        .ok_or(ProtocolError("invalid content-length parsed"))?;
      if length.is_some_and(|known| known != part) {
        return Err(Box::new(ProtocolError("invalid content-length parsed")));
      }
      length = Some(part);
    }
  }
  Ok(length.map_or(Framing::UntilClose, |n| match n {
    0 => Framing::Done,
    n => Framing::Length(n),
  }))
}

/// Whether a comma-separated header value names `token` (any case).
fn has_token(value: &[u8], token: &[u8]) -> bool {
  value
    .split(|b| *b == b',')
    .any(|part| part.trim_ascii().eq_ignore_ascii_case(token))
}

/// The request as it goes on the wire: `Host` where the headers name none, and the body's
/// length where it has one (as hyper writes them).
fn encode(
  method: &Method,
  target: &str,
  authority: &HeaderValue,
  headers: &HeaderMap,
  body: Option<&Bytes>,
) -> Vec<u8> {
  let body_len = body.map_or(0, Bytes::len);
  let mut out = Vec::with_capacity(128 + target.len() + headers.len() * 48 + body_len);
  out.extend_from_slice(method.as_str().as_bytes());
  out.push(b' ');
  out.extend_from_slice(target.as_bytes());
  out.extend_from_slice(b" HTTP/1.1\r\n");
  if !headers.contains_key(HOST) {
    out.extend_from_slice(b"host: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\n");
  }
  for (name, value) in headers {
    if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
      continue;
    }
    out.extend_from_slice(name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
  }
  if let Some(body) = body {
    // Into the buffer itself: no string made per request. Writing to a Vec cannot fail.
    let _ = write!(out, "content-length: {}\r\n", body.len());
  }
  out.extend_from_slice(b"\r\n");
  if let Some(body) = body {
    out.extend_from_slice(body);
  }
  out
}

fn early_end(what: &'static str) -> Failure {
  Box::new(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what))
}

impl Body {
  /// The connection, once the body has ended and the connection may take another request.
  pub fn finished(&mut self) -> Option<Connection> {
    if self.framing != Framing::Done || !self.reusable {
      return None;
    }
    // Bytes past the answer would be a second answer nobody asked for.
    self.conn.take().filter(|conn| conn.buf.is_empty())
  }

  /// The body's next piece; `None` at its end.
  ///
  /// # Cancel safety
  /// Only reads wait, and what they read stays in the connection's buffer: dropped before
  /// it is ready, it has taken nothing from the body.
  ///
  /// # Errors
  /// Reading failed, the connection ended early, or the chunked coding is malformed.
  pub async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
    loop {
      let Some(conn) = self.conn.as_mut() else {
        return Ok(None);
      };
      match self.framing {
        Framing::Done => return Ok(None),
        Framing::Length(left) | Framing::ChunkData(left) if !conn.buf.is_empty() => {
          let n = conn
            .buf
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX));
          let rest = left - n as u64;
          self.framing = match (self.framing, rest) {
            (Framing::Length(_), 0) => Framing::Done,
            (Framing::Length(_), rest) => Framing::Length(rest),
            (_, 0) => Framing::ChunkEnd,
            (_, rest) => Framing::ChunkData(rest),
          };
          return Ok(Some(conn.buf.split_to(n).freeze()));
        }
        Framing::UntilClose if !conn.buf.is_empty() => {
          return Ok(Some(conn.buf.split().freeze()));
        }
        Framing::ChunkSize | Framing::Trailers => {
          if let Some(end) = memchr::memmem::find(&conn.buf, b"\r\n") {
            let line = conn.buf.split_to(end + 2);
            let line = &line[..end];
            self.framing = match self.framing {
              Framing::ChunkSize => match chunk_size(line)? {
                0 => Framing::Trailers,
                n => Framing::ChunkData(n),
              },
              // Trailers are not body; an empty line ends them.
              _ if line.is_empty() => Framing::Done,
              _ => Framing::Trailers,
            };
            continue;
          }
          if conn.buf.len() > MAX_CHUNK_LINE {
            return Err(Box::new(ProtocolError("invalid chunk size line")));
          }
        }
        Framing::ChunkEnd if conn.buf.len() >= 2 => {
          if &conn.buf[..2] != b"\r\n" {
            return Err(Box::new(ProtocolError("invalid chunk end")));
          }
          conn.buf.advance(2);
          self.framing = Framing::ChunkSize;
          continue;
        }
        _ => {}
      }
      if conn.read_more().await? == 0 {
        if self.framing == Framing::UntilClose {
          self.framing = Framing::Done;
          self.reusable = false;
          return Ok(None);
        }
        return Err(early_end(match self.framing {
          Framing::Length(_) => "end of file before message length reached",
          _ => "unexpected EOF during chunked body",
        }));
      }
    }
  }
}

/// A chunk-size line's size (hex, extensions after `;` ignored).
fn chunk_size(line: &[u8]) -> Result<u64, Failure> {
  let digits = line
    .split(|b| *b == b';')
    .next()
    .unwrap_or_default()
    .trim_ascii();
  std::str::from_utf8(digits)
    .ok()
    .filter(|d| !d.is_empty() && d.len() <= 16 && d.bytes().all(|b| b.is_ascii_hexdigit()))
    .and_then(|d| u64::from_str_radix(d, 16).ok())
    .ok_or_else(|| Box::new(ProtocolError("invalid chunk size line")) as Failure)
}

#[cfg(test)]
mod tests {
  use super::*;
  use tokio::io::duplex;

  /// The answer `wire` gives to a GET, its body read in pieces, and whether the
  /// connection came back.
  async fn answer(wire: &'static [u8]) -> (Result<(u16, Vec<u8>), String>, bool) {
    let (client, mut server) = duplex(64);
    let serve = tokio::spawn(async move {
      let mut request = [0u8; 512];
      let _ = server.read(&mut request).await;
      // In small writes: every state must survive a read that stops anywhere.
      for piece in wire.chunks(3) {
        if server.write_all(piece).await.is_err() {
          return;
        }
      }
    });
    let authority = HeaderValue::from_static("127.0.0.1:9");
    let result = Connection::new(client)
      .exchange(&Method::GET, "/mcp", &authority, &HeaderMap::new(), None)
      .await;
    let (head, mut body) = match result {
      Ok(parts) => parts,
      Err(e) => return (Err(e.error.to_string()), false),
    };
    let mut data = Vec::new();
    let read = async {
      while let Some(piece) = body.chunk().await? {
        data.extend_from_slice(&piece);
      }
      Ok::<_, Failure>(())
    };
    let outcome = match read.await {
      Ok(()) => Ok((head.status.as_u16(), data)),
      Err(e) => Err(e.to_string()),
    };
    let kept = body.finished().is_some();
    let _ = serve.await;
    (outcome, kept)
  }

  #[tokio::test]
  async fn a_length_body_is_read_whole_and_its_connection_kept() {
    let (got, kept) = answer(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello").await;
    assert_eq!(got, Ok((200, b"hello".to_vec())));
    assert!(kept);
  }

  #[tokio::test]
  async fn chunked_with_extensions_and_trailers_is_decoded() {
    let wire = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n, world!!!\r\n0\r\nx-t: 1\r\n\r\n";
    let (got, kept) = answer(wire).await;
    assert_eq!(got, Ok((200, b"hello, world!!!".to_vec())));
    assert!(kept);
  }

  #[tokio::test]
  async fn interim_answers_are_skipped() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
    assert_eq!(answer(wire).await, (Ok((202, Vec::new())), true));
  }

  #[tokio::test]
  async fn a_body_until_close_ends_with_the_connection_which_is_not_kept() {
    let (got, kept) = answer(b"HTTP/1.1 200 OK\r\n\r\nuntil the end").await;
    assert_eq!(got, Ok((200, b"until the end".to_vec())));
    assert!(!kept);
  }

  #[tokio::test]
  async fn connection_close_and_http_1_0_are_not_kept() {
    let close = b"HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\ncontent-length: 2\r\n\r\nok";
    assert_eq!(answer(close).await, (Ok((200, b"ok".to_vec())), false));
    let old = b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok";
    assert_eq!(answer(old).await, (Ok((200, b"ok".to_vec())), false));
  }

  #[tokio::test]
  async fn early_ends_and_bad_framing_are_errors() {
    let cases: [(&'static [u8], &str); 6] = [
      (
        b"HTTP/1.1 200 OK\r\ncontent-len",
        "connection closed before message completed",
      ),
      (
        b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nshort",
        "end of file before message length reached",
      ),
      (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel",
        "unexpected EOF during chunked body",
      ),
      (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        "invalid chunk size line",
      ),
      (
        b"HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok",
        "invalid content-length parsed",
      ),
      (b"HTTP/9 200 OK\r\n\r\n", "invalid HTTP response parsed"),
    ];
    for (wire, message) in cases {
      assert_eq!(answer(wire).await.0, Err(message.to_string()), "{wire:?}");
    }
  }

  #[tokio::test]
  async fn a_kept_connection_is_reusable_until_the_server_closes_or_speaks() {
    for ending in [None, Some(&b"HTTP/1.1 408 Request Timeout\r\n\r\n"[..])] {
      let (client, mut server) = duplex(256);
      let authority = HeaderValue::from_static("127.0.0.1:9");
      let (headers, frame) = (HeaderMap::new(), Bytes::from_static(b"{}"));
      let exchange =
        Connection::new(client).exchange(&Method::POST, "/mcp", &authority, &headers, Some(&frame));
      let serve = async {
        let mut request = [0u8; 256];
        let _ = server.read(&mut request).await;
        server
          .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
          .await
          .unwrap();
      };
      let (answer, ()) = tokio::join!(exchange, serve);
      let Ok((_, mut body)) = answer else {
        panic!("no answer")
      };
      assert_eq!(body.chunk().await.unwrap().as_deref(), Some(&b"ok"[..]));
      assert_eq!(body.chunk().await.unwrap(), None);
      let mut kept = body.finished().expect("kept");
      assert!(kept.is_reusable());
      match ending {
        None => drop(server),
        Some(bytes) => server.write_all(bytes).await.unwrap(),
      }
      assert!(!kept.is_reusable());
    }
  }

  #[test]
  fn the_request_carries_host_and_length_as_hyper_writes_them() {
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("*/*"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("99"));
    let body = Bytes::from_static(b"{}");
    let authority = HeaderValue::from_static("example.test:8080");
    let wire = encode(&Method::POST, "/mcp?x=1", &authority, &headers, Some(&body));
    assert_eq!(
      String::from_utf8(wire).unwrap(),
      "POST /mcp?x=1 HTTP/1.1\r\nhost: example.test:8080\r\naccept: */*\r\ncontent-length: 2\r\n\r\n{}"
    );
    headers.insert(HOST, HeaderValue::from_static("named"));
    let wire = encode(&Method::GET, "/", &authority, &headers, None);
    assert_eq!(
      String::from_utf8(wire).unwrap(),
      "GET / HTTP/1.1\r\naccept: */*\r\nhost: named\r\n\r\n"
    );
  }
}
