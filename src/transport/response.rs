//! What a request got back, whichever way it went out: reqwest's answer, or the direct
//! path's (`DirectOrigin`) as hyper gave it.
use bytes::Bytes;
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};

use super::direct_origin::DirectAnswer;
use super::fetch_failure::interrupted;
use crate::error::CoreError;

#[derive(Debug)]
pub enum Response {
  Reqwest(reqwest::Response),
  /// Boxed: an answer is moved up through every floor of the POST chain, and inline it was
  /// twice the size of reqwest's (264 bytes against 136).
  Direct(Box<DirectAnswer>),
}

impl Response {
  pub fn status(&self) -> StatusCode {
    match self {
      Response::Reqwest(answer) => answer.status(),
      Response::Direct(answer) => answer.status(),
    }
  }

  pub fn headers(&self) -> &HeaderMap {
    match self {
      Response::Reqwest(answer) => answer.headers(),
      Response::Direct(answer) => answer.headers(),
    }
  }

  /// The URL this answers (after redirects, the last one).
  pub fn url(&self) -> &Url {
    match self {
      Response::Reqwest(answer) => answer.url(),
      Response::Direct(answer) => answer.url(),
    }
  }

  /// The body's next piece; `None` at its end. A break is A46's interrupted error.
  ///
  /// # Cancel safety
  /// Dropped before it is ready, it has taken nothing from the body.
  pub async fn chunk(&mut self) -> Result<Option<Bytes>, CoreError> {
    match self {
      Response::Reqwest(answer) => answer
        .chunk()
        .await
        .map_err(|e| interrupted(answer.url(), &e, e.is_timeout())),
      Response::Direct(answer) => answer
        .chunk()
        .await
        .map_err(|e| interrupted(answer.url(), e.as_ref(), false)),
    }
  }

  /// The whole body as text (lossy).
  #[cfg(test)]
  pub async fn text(mut self) -> Result<String, CoreError> {
    let mut body = Vec::new();
    while let Some(chunk) = self.chunk().await? {
      body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
  }
}
