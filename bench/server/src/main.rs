//! The benchmark's MCP server: as little work per message as a server can do, so the
//! clients' costs dominate. Tools: `echo {text}`, `blob {bytes}` (one text content of that
//! size), `notify {count}` (that many notifications, then the result).
//!
//! `bench-server stdio` speaks newline-delimited JSON-RPC on stdin/stdout;
//! `bench-server http [--sse]` serves Streamable HTTP on 127.0.0.1 (an ephemeral port,
//! printed as `listening <port>`), answering with JSON or with an SSE stream;
//! `--tls <cert.pem> <key.pem>` serves it over https, HTTP/1.1 only unless `--h2` offers
//! HTTP/2 too (ALPN).
use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Value};

/// One outgoing message.
enum Frame {
  Text(String),
  /// A blob result: `head`, then `bytes` of the shared blob text, then `BLOB_TAIL`.
  Blob {
    head: String,
    bytes: usize,
  },
}

const BLOB_TAIL: &str = r#""}]}}"#;

impl Frame {
  /// Writes the frame; a blob's text goes out straight from the shared copy.
  fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
    match self {
      Frame::Text(text) => out.write_all(text.as_bytes()),
      Frame::Blob { head, bytes } => {
        out.write_all(head.as_bytes())?;
        XS.with_borrow(|xs| out.write_all(&xs.as_bytes()[..*bytes]))?;
        out.write_all(BLOB_TAIL.as_bytes())
      }
    }
  }

  fn into_text(self) -> String {
    match self {
      Frame::Text(text) => text,
      Frame::Blob { head, bytes } => {
        XS.with_borrow(|xs| [head.as_str(), &xs[..bytes], BLOB_TAIL].concat())
      }
    }
  }
}

/// The frames one incoming message produces: notifications first, then the response.
fn answer(message: &Value) -> Vec<Frame> {
  let Some(id) = message.get("id") else {
    return Vec::new();
  };
  let method = message.get("method").and_then(Value::as_str).unwrap_or("");
  let params = message.get("params").cloned().unwrap_or(Value::Null);
  let mut frames = Vec::new();
  let result = match method {
    "initialize" => json!({
      "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-03-26")),
      "capabilities": { "tools": {} },
      "serverInfo": { "name": "bench-server", "version": "1.0.0" },
    }),
    "ping" => json!({}),
    // 2026-07-28: the stateless era's discovery (every later request carries its `_meta`).
    "server/discover" => json!({
      "supportedVersions": ["2026-07-28"],
      "capabilities": { "tools": {} },
      "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "bench-server", "version": "1.0.0" } },
    }),
    "tools/list" => json!({ "tools": [
      { "name": "echo", "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } } },
      { "name": "blob", "inputSchema": { "type": "object", "properties": { "bytes": { "type": "number" } } } },
      { "name": "notify", "inputSchema": { "type": "object", "properties": { "count": { "type": "number" } } } },
    ]}),
    "tools/call" => {
      let args = params.get("arguments").cloned().unwrap_or(json!({}));
      match params.get("name").and_then(Value::as_str).unwrap_or("") {
        "echo" => {
          let text = args.get("text").and_then(Value::as_str).unwrap_or("");
          json!({ "content": [{ "type": "text", "text": text }] })
        }
        "blob" => {
          let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
          frames.push(blob_frame(id, bytes));
          return frames;
        }
        "notify" => {
          let count = args.get("count").and_then(Value::as_u64).unwrap_or(0);
          for i in 0..count {
            frames.push(Frame::Text(
              json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": i } })
                .to_string(),
            ));
          }
          json!({ "content": [{ "type": "text", "text": format!("sent {count}") }] })
        }
        other => {
          frames.push(Frame::Text(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": format!("Unknown tool: {other}") } }).to_string()));
          return frames;
        }
      }
    }
    _ => {
      frames.push(Frame::Text(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "Method not found" } }).to_string()));
      return frames;
    }
  };
  frames.push(Frame::Text(
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string(),
  ));
  frames
}

thread_local! {
  /// The blob text, made once per size rather than per call.
  static XS: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A blob's response, written out directly from one shared text: it needs no escaping, and
/// building or serializing 10 MiB per call would put the server's time into every measurement.
fn blob_frame(id: &Value, bytes: usize) -> Frame {
  XS.with_borrow_mut(|xs| {
    if xs.len() < bytes {
      *xs = "x".repeat(bytes);
    }
  });
  let head =
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
  Frame::Blob { head, bytes }
}

/// Plain blocking I/O: tokio's stdin/stdout hand every read and write to a blocking-pool
/// thread (and copy writes in 2 MiB pieces), which would add server time to every client's.
fn stdio(spin: Option<std::time::Duration>) -> std::io::Result<()> {
  use std::io::{BufRead, Write};
  let source: Box<dyn std::io::Read> = match spin {
    Some(window) => Box::new(SpinningStdin::new(window)),
    None => Box::new(std::io::stdin().lock()),
  };
  let mut input = std::io::BufReader::with_capacity(1 << 20, source);
  // fd 1 itself rather than stdout's LineWriter, so a burst of notifications shares writes.
  // SAFETY: fd 1 is open for the life of the process, and ManuallyDrop never closes it.
  let stdout = std::mem::ManuallyDrop::new(unsafe {
    <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(1)
  });
  let mut output = std::io::BufWriter::with_capacity(1 << 20, &*stdout);
  let mut line = String::new();
  loop {
    line.clear();
    if input.read_line(&mut line)? == 0 {
      return output.flush();
    }
    let Ok(message) = serde_json::from_str::<Value>(&line) else {
      continue;
    };
    for frame in answer(&message) {
      frame.write_to(&mut output)?;
      output.write_all(b"\n")?;
    }
    // Flush only when no more input is waiting, so bursts share writes.
    if input.buffer().is_empty() {
      output.flush()?;
    }
  }
}

/// `--spin`: stdin read without blocking for a while after each message before sleeping in
/// `poll`, as a busy server keeps its CPU awake; answers then leave within microseconds
/// of the request (the "fast" regime of the bench).
struct SpinningStdin {
  window: std::time::Duration,
}

impl SpinningStdin {
  fn new(window: std::time::Duration) -> Self {
    // SAFETY: fcntl on fd 0, which is open for the life of the process.
    unsafe {
      let flags = libc::fcntl(0, libc::F_GETFL);
      libc::fcntl(0, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    SpinningStdin { window }
  }
}

impl std::io::Read for SpinningStdin {
  fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
    let started = std::time::Instant::now();
    loop {
      // SAFETY: buf is valid for buf.len() bytes.
      let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
      if n >= 0 {
        return Ok(n as usize);
      }
      let error = std::io::Error::last_os_error();
      match error.kind() {
        std::io::ErrorKind::Interrupted => {}
        std::io::ErrorKind::WouldBlock if started.elapsed() < self.window => std::hint::spin_loop(),
        std::io::ErrorKind::WouldBlock => {
          let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
          };
          // SAFETY: one valid pollfd.
          unsafe { libc::poll(&mut fd, 1, -1) };
        }
        _ => return Err(error),
      }
    }
  }
}

async fn handle(
  request: Request<Incoming>,
  sse: bool,
) -> Result<Response<Full<Bytes>>, Infallible> {
  let body = request
    .into_body()
    .collect()
    .await
    .map(|b| b.to_bytes())
    .unwrap_or_default();
  let frames: Vec<String> = serde_json::from_slice::<Value>(&body)
    .map(|m| answer(&m))
    .unwrap_or_default()
    .into_iter()
    .map(Frame::into_text)
    .collect();
  let Some(last) = frames.last() else {
    return Ok(
      Response::builder()
        .status(202)
        .body(Full::new(Bytes::new()))
        .unwrap_or_default(),
    );
  };
  let (content_type, body) = if sse {
    let mut text = String::new();
    for frame in &frames {
      text.push_str("event: message\ndata: ");
      text.push_str(frame);
      text.push_str("\n\n");
    }
    ("text/event-stream", text)
  } else {
    ("application/json", last.clone())
  };
  Ok(
    Response::builder()
      .header("content-type", content_type)
      .body(Full::new(Bytes::from(body)))
      .unwrap_or_default(),
  )
}

/// `--tls <cert> <key>`: the server's certificate chain and key (PEM files), with HTTP/2
/// offered by ALPN when `h2`.
fn tls_acceptor(cert: &str, key: &str, h2: bool) -> std::io::Result<tokio_rustls::TlsAcceptor> {
  use rustls::pki_types::pem::PemObject;
  use rustls::pki_types::{CertificateDer, PrivateKeyDer};
  let invalid =
    |e: &dyn std::fmt::Display| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string());
  let certs = CertificateDer::pem_file_iter(cert)
    .map_err(|e| invalid(&e))?
    .collect::<Result<Vec<_>, _>>()
    .map_err(|e| invalid(&e))?;
  let key = PrivateKeyDer::from_pem_file(key).map_err(|e| invalid(&e))?;
  let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
  let mut config = rustls::ServerConfig::builder_with_provider(provider)
    .with_safe_default_protocol_versions()
    .map_err(|e| invalid(&e))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| invalid(&e))?;
  config.alpn_protocols = if h2 {
    vec![b"h2".to_vec(), b"http/1.1".to_vec()]
  } else {
    vec![b"http/1.1".to_vec()]
  };
  Ok(tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)))
}

async fn http(sse: bool, tls: Option<tokio_rustls::TlsAcceptor>) -> std::io::Result<()> {
  let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
  println!("listening {}", listener.local_addr()?.port());
  loop {
    let (stream, _) = listener.accept().await?;
    let _ = stream.set_nodelay(true);
    if let Some(tls) = tls.clone() {
      tokio::spawn(async move {
        let Ok(stream) = tls.accept(stream).await else {
          return;
        };
        let service = hyper::service::service_fn(move |request| handle(request, sse));
        let executor = hyper_util::rt::TokioExecutor::new();
        let _ = hyper_util::server::conn::auto::Builder::new(executor)
          .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
          .await;
      });
      continue;
    }
    tokio::spawn(async move {
      let service = hyper::service::service_fn(move |request| handle(request, sse));
      let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
    });
  }
}

fn main() -> std::io::Result<()> {
  let args: Vec<String> = std::env::args().skip(1).collect();
  match args.first().map(String::as_str) {
    Some("http") => {
      let tls = match args.iter().position(|a| a == "--tls") {
        Some(at) => {
          let (Some(cert), Some(key)) = (args.get(at + 1), args.get(at + 2)) else {
            return Err(std::io::Error::other("--tls needs <cert.pem> <key.pem>"));
          };
          Some(tls_acceptor(cert, key, args.iter().any(|a| a == "--h2"))?)
        }
        None => None,
      };
      tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(http(args.iter().any(|a| a == "--sse"), tls))
    }
    _ => stdio(
      args
        .iter()
        .any(|a| a == "--spin")
        .then(|| std::time::Duration::from_millis(5)),
    ),
  }
}
