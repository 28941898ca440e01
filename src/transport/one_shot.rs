//! `callMCP`'s HTTP exchange: one JSON-RPC POST without a session, timeout or abort. J2 (v12)
//! takes the status and the body text as they are; A53 (18.3.4) reads the body only until
//! the answer to its request is in it.
use std::sync::OnceLock;

use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};

use crate::error::CoreError;
use crate::protocol::response_select::{ResponseSelector, SelectError};
use crate::runtime;

/// The client both exchanges share, built once, or why there is none.
fn client() -> Result<&'static reqwest::Client, CoreError> {
  static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
  let built = CLIENT.get_or_init(|| {
    let _context = runtime::handle()?.enter();
    crate::http_client::builder().build().ok()
  });
  built.as_ref().ok_or_else(|| CoreError::Network {
    message: "The HTTP client could not start".to_string(),
    code: None,
  })
}

pub struct Answer {
  pub status: u16,
  pub status_text: String,
  pub body: String,
}

pub async fn post(url: reqwest::Url, frame: String) -> Result<Answer, CoreError> {
  let client = client()?;
  let response = client
    .post(url.clone())
    .header(CONTENT_TYPE, "application/json")
    .header(ACCEPT, "application/json, text/event-stream")
    .body(frame)
    .send()
    .await
    .map_err(|e| crate::transport::fetch_failure::network_error(&url, &e))?;
  let status = response.status();
  let body = response
    .text()
    .await
    .map_err(|e| crate::transport::fetch_failure::network_error(&url, &e))?;
  Ok(Answer {
    status: status.as_u16(),
    status_text: status.canonical_reason().unwrap_or_default().to_string(),
    body,
  })
}

/// What an A53 exchange came to.
pub enum Exchange {
  /// A status outside 2xx, with the body read whole (A54's `onHttpError` gets it).
  Refused {
    status: u16,
    status_text: String,
    headers: Vec<(String, String)>,
    body: String,
  },
  /// A 2xx answer: the answer's JSON text, or why the body held none.
  Answered(Result<String, SelectError>),
}

/// A54: POSTs `frame` with the JSON-RPC headers, `headers` over them, and reads the body
/// until `expected`'s answer is in it (a stream that stays open after it is let go).
pub async fn exchange(
  url: reqwest::Url,
  frame: String,
  headers: Vec<(String, String)>,
  expected: serde_json::Value,
) -> Result<Exchange, CoreError> {
  use futures::StreamExt;
  let client = client()?;
  let mut map = reqwest::header::HeaderMap::new();
  map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
  map.insert(
    ACCEPT,
    HeaderValue::from_static("application/json, text/event-stream"),
  );
  for (name, value) in headers {
    // A given header replaces the default of the same name, as the agent's spread does.
    let invalid = || CoreError::Network {
      message: format!("Invalid request header {name:?}"),
      code: None,
    };
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
    let value = HeaderValue::from_str(&value).map_err(|_| invalid())?;
    map.insert(name, value);
  }
  let request = client.post(url.clone()).headers(map);
  let response = request
    .body(frame)
    .send()
    .await
    .map_err(|e| crate::transport::fetch_failure::network_error(&url, &e))?;
  let status = response.status();
  if !status.is_success() {
    let headers = response
      .headers()
      .iter()
      .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
      .collect();
    let body = response
      .text()
      .await
      .map_err(|e| crate::transport::fetch_failure::network_error(&url, &e))?;
    return Ok(Exchange::Refused {
      status: status.as_u16(),
      status_text: status.canonical_reason().unwrap_or_default().to_string(),
      headers,
      body,
    });
  }
  let content_type = response
    .headers()
    .get(CONTENT_TYPE)
    .and_then(|v| v.to_str().ok())
    .map(str::to_string);
  let mut selector = ResponseSelector::new(expected, content_type.as_deref());
  let mut body = response.bytes_stream();
  while let Some(chunk) = body.next().await {
    let chunk = chunk.map_err(|e| crate::transport::fetch_failure::interrupted_error(&url, &e))?;
    match selector.push(&chunk) {
      Ok(Some(answer)) => return Ok(Exchange::Answered(Ok(answer))),
      Ok(None) => {}
      Err(error) => return Ok(Exchange::Answered(Err(error))),
    }
  }
  Ok(Exchange::Answered(selector.finish()))
}
