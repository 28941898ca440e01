//! For the transports' cargo tests: an HTTP/1.1 server on a loopback address of the test's
//! choosing (127.0.0.1 and 127.0.0.2 are two origins) that records every request and
//! answers each with what the test's function says.
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone)]
pub struct Request {
  pub method: String,
  pub path: String,
  /// Lowercased names, in the order sent.
  pub headers: Vec<(String, String)>,
  pub body: String,
  /// Which connection it came on: 0 for the server's first, and so on.
  pub connection: usize,
}

impl Request {
  pub fn header(&self, name: &str) -> Option<&str> {
    self
      .headers
      .iter()
      .find(|(n, _)| n == name)
      .map(|(_, v)| v.as_str())
  }
}

/// A whole answer: status line, headers and body; `content-length` is added.
pub struct Answer {
  pub status: &'static str,
  pub headers: Vec<(&'static str, String)>,
  pub body: String,
  /// Keep the connection open after the body (an event stream that goes on).
  pub hold: bool,
  /// Close the connection after the body without saying so (a keep-alive timeout).
  pub close: bool,
}

impl Answer {
  pub fn new(status: &'static str) -> Self {
    Answer {
      status,
      headers: Vec::new(),
      body: String::new(),
      hold: false,
      close: false,
    }
  }

  pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
    self.headers.push((name, value.into()));
    self
  }

  pub fn body(mut self, body: impl Into<String>) -> Self {
    self.body = body.into();
    self
  }

  pub fn hold(mut self) -> Self {
    self.hold = true;
    self
  }

  pub fn close(mut self) -> Self {
    self.close = true;
    self
  }
}

pub struct Server {
  /// `http://<host>:<port>`
  pub origin: String,
  requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
  pub fn requests(&self) -> Vec<Request> {
    self.requests.lock().unwrap().clone()
  }
}

pub async fn serve(
  host: &str,
  answer: impl Fn(&Request) -> Answer + Send + Sync + 'static,
) -> Server {
  let listener = TcpListener::bind((host, 0)).await.unwrap();
  let origin = format!("http://{}", listener.local_addr().unwrap());
  let requests = Arc::new(Mutex::new(Vec::new()));
  let answer = Arc::new(answer);
  let recorded = requests.clone();
  tokio::spawn(async move {
    let mut accepted = 0;
    while let Ok((socket, _)) = listener.accept().await {
      tokio::spawn(connection(
        socket,
        accepted,
        recorded.clone(),
        answer.clone(),
      ));
      accepted += 1;
    }
  });
  Server { origin, requests }
}

async fn connection(
  mut socket: TcpStream,
  index: usize,
  requests: Arc<Mutex<Vec<Request>>>,
  answer: Arc<dyn Fn(&Request) -> Answer + Send + Sync>,
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
    let mut lines = head.lines();
    let mut start = lines.next().unwrap_or_default().split(' ');
    let method = start.next().unwrap_or_default().to_string();
    let path = start.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
      .filter_map(|l| l.split_once(':'))
      .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
      .collect();
    let length = headers
      .iter()
      .find(|(n, _)| n == "content-length")
      .and_then(|(_, v)| v.parse().ok())
      .unwrap_or(0);
    while buffer.len() < head_end + length {
      match socket.read(&mut chunk).await {
        Ok(0) | Err(_) => return,
        Ok(n) => buffer.extend_from_slice(&chunk[..n]),
      }
    }
    let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).to_string();
    buffer.drain(..head_end + length);
    let request = Request {
      method,
      path,
      headers,
      body,
      connection: index,
    };
    requests.lock().unwrap().push(request.clone());
    let reply = answer(&request);
    let mut text = format!("HTTP/1.1 {}\r\n", reply.status);
    for (name, value) in &reply.headers {
      text.push_str(&format!("{name}: {value}\r\n"));
    }
    if !reply.hold {
      text.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    text.push_str("\r\n");
    text.push_str(&reply.body);
    if socket.write_all(text.as_bytes()).await.is_err() {
      return;
    }
    if reply.close {
      return;
    }
    if reply.hold {
      // An open stream: it ends when the client goes away.
      let _ = socket.read(&mut chunk).await;
      return;
    }
  }
}
