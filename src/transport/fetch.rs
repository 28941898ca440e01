//! A24: how both HTTP transports fetch. Unlocked, reqwest follows redirects as `fetch`
//! does; with `headerPolicy: "origin-locked"` the client follows none itself and each hop
//! is decided by `protocol::redirects`.
use bytes::Bytes;
use reqwest::header::{HeaderMap, LOCATION};
use reqwest::{Client, Method, Response, Url};

use super::http::network_error;
use crate::error::CoreError;
use crate::protocol::redirects::{self, Hop};

/// The client builder for a transport: an origin-locked one never redirects on its own.
pub fn client_builder(origin_locked: bool) -> reqwest::ClientBuilder {
  let builder = super::http_client_builder();
  if origin_locked {
    builder.redirect(reqwest::redirect::Policy::none())
  } else {
    builder
  }
}

/// One request. `locked_to` is the configured URL of an origin-locked transport: headers
/// other than the generated ones go only to its origin, and redirects are followed by hand.
pub async fn send(
  client: &Client,
  locked_to: Option<&Url>,
  method: Method,
  url: &Url,
  headers: HeaderMap,
  body: Option<Bytes>,
) -> Result<Response, CoreError> {
  let request = |at: &Url, headers: HeaderMap| {
    let builder = client.request(method.clone(), at.clone()).headers(headers);
    match &body {
      Some(body) => builder.body(body.clone()),
      None => builder,
    }
  };
  let Some(configured) = locked_to else {
    return request(url, headers)
      .send()
      .await
      .map_err(|e| network_error(url, &e));
  };
  let mut current = url.clone();
  let mut hops = 0;
  loop {
    let mut sent = HeaderMap::new();
    for (name, value) in &headers {
      if redirects::may_send(configured, &current, name.as_str()) {
        sent.append(name.clone(), value.clone());
      }
    }
    let response = request(&current, sent)
      .send()
      .await
      .map_err(|e| network_error(&current, &e))?;
    let location = response
      .headers()
      .get(LOCATION)
      .and_then(|v| v.to_str().ok());
    let status = response.status().as_u16();
    match redirects::next_hop(url, &current, method.as_str(), status, location, hops) {
      Hop::Answer => return Ok(response),
      Hop::Follow(next) => {
        current = next;
        hops += 1;
      }
      Hop::Refuse(error) => return Err(error.into()),
    }
  }
}
