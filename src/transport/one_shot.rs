//! J2's HTTP exchange: one JSON-RPC POST without a session, timeout or abort; the status and
//! the body text come back as they are.
use std::sync::OnceLock;

use reqwest::header::{ACCEPT, CONTENT_TYPE};

use crate::error::CoreError;
use crate::runtime;

fn client() -> Option<&'static reqwest::Client> {
  static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
  CLIENT
    .get_or_init(|| {
      let _context = runtime::handle()?.enter();
      crate::http_client::builder().build().ok()
    })
    .as_ref()
}

pub struct Answer {
  pub status: u16,
  pub status_text: String,
  pub body: String,
}

pub async fn post(url: reqwest::Url, frame: String) -> Result<Answer, CoreError> {
  let client = client().ok_or_else(|| CoreError::Network {
    message: "The HTTP client could not start".to_string(),
    code: None,
  })?;
  let response = client
    .post(url.clone())
    .header(CONTENT_TYPE, "application/json")
    .header(ACCEPT, "application/json, text/event-stream")
    .body(frame)
    .send()
    .await
    .map_err(|e| crate::transport::fetch::network_error(&url, &e))?;
  let status = response.status();
  let body = response
    .text()
    .await
    .map_err(|e| crate::transport::fetch::network_error(&url, &e))?;
  Ok(Answer {
    status: status.as_u16(),
    status_text: status.canonical_reason().unwrap_or_default().to_string(),
    body,
  })
}
