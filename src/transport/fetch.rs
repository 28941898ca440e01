//! How both HTTP transports fetch: redirects are followed here, never by reqwest, so every
//! hop passes the one origin rule (`protocol::destination`): the configured headers go only
//! to the configured origin. Unlocked, the hops are those `fetch` takes (A24); with
//! `headerPolicy: "origin-locked"` they are `protocol::redirects`' stricter ones.
use std::sync::Arc;

use bytes::Bytes;
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION};
use reqwest::{Client, Method, Url};

use super::direct_origin::DirectOrigin;
use super::fetch_failure::{failure, network_error};
use super::response::Response;
use crate::error::CoreError;
use crate::protocol::destination;
use crate::protocol::redirects::{self, FetchHop, Hop};

/// A transport's way out: reqwest, and the direct path (`DirectOrigin`: HTTP/1.1 or,
/// where TLS agrees on it, HTTP/2) to the transport's own origin where reqwest would
/// connect directly too. Neither follows a redirect on its own.
#[derive(Clone)]
pub struct Fetcher {
  client: Client,
  direct: Option<Arc<DirectOrigin>>,
}

impl Fetcher {
  /// The fetcher of a transport configured with `url`, trusting what `trust` adds.
  ///
  /// # Errors
  /// A `ca` entry that holds no certificate, a proxy URL that is not one, a client reqwest
  /// cannot build.
  pub fn new(url: &Url, trust: &crate::http_client::Trust) -> Result<Self, CoreError> {
    let refused = |what: &str, reason: String| CoreError::Network {
      message: format!("The {what} cannot be used: {reason}"),
      code: None,
    };
    // Worked out once, for both ways out: each `ca` is parsed here only.
    let tls = crate::http_client::tls_settings(trust)
      .map_err(|reason| refused("\"ca\" certificates", reason))?;
    let client = crate::http_client::builder_with(tls.clone(), trust.proxies.as_ref())
      .map_err(|reason| refused("proxy", reason))?
      .redirect(reqwest::redirect::Policy::none())
      .build()
      .map_err(|e| network_error(url, &e))?;
    let direct = DirectOrigin::for_url(url, trust.proxies.as_ref(), tls.as_ref());
    Ok(Fetcher { client, direct })
  }

  async fn fetch(
    &self,
    method: Method,
    url: &Url,
    headers: HeaderMap,
    body: Option<&Bytes>,
  ) -> Result<Response, CoreError> {
    if let Some(direct) = self.direct.as_ref().filter(|direct| direct.serves(url)) {
      return direct
        .send(method, url, headers, body.cloned())
        .await
        .map(|answer| Response::Direct(Box::new(answer)))
        .map_err(|e| failure(url, e.as_ref(), false));
    }
    let mut request = self.client.request(method, url.clone()).headers(headers);
    if let Some(body) = body {
      request = request.body(body.clone());
    }
    request
      .send()
      .await
      .map(Response::Reqwest)
      .map_err(|e| network_error(url, &e))
  }
}

/// One request to `url`. `locked_to` is the configured URL of an origin-locked transport;
/// unlocked, `url`'s origin is the one the headers belong to.
pub async fn send(
  fetcher: &Fetcher,
  locked_to: Option<&Url>,
  method: Method,
  url: &Url,
  headers: HeaderMap,
  body: Option<Bytes>,
) -> Result<Response, CoreError> {
  let configured = locked_to.unwrap_or(url);
  let mut method = method;
  let mut body = body;
  let mut headers = headers;
  let mut current = std::borrow::Cow::Borrowed(url);
  let mut hops = 0;
  loop {
    // Kept for the hops a redirect may add. On the configured origin every header goes: a
    // copy, not a map rebuilt name by name.
    let sent = if destination::carries_credentials(configured, &current) {
      headers.clone()
    } else {
      let mut sent = HeaderMap::new();
      for (name, value) in &headers {
        if destination::may_send(configured, &current, name.as_str()) {
          sent.append(name.clone(), value.clone());
        }
      }
      sent
    };
    let response = fetcher
      .fetch(method.clone(), &current, sent, body.as_ref())
      .await?;
    let location = response
      .headers()
      .get(LOCATION)
      .and_then(|v| v.to_str().ok());
    let status = response.status().as_u16();
    let next = match locked_to {
      Some(_) => {
        match redirects::next_hop(url, &current, method.as_str(), status, location, hops) {
          Hop::Answer => return Ok(response),
          Hop::Follow(next) => next,
          Hop::Refuse(error) => return Err(error.into()),
        }
      }
      None => {
        match redirects::fetch_next_hop(url, &current, method.as_str(), status, location, hops) {
          FetchHop::Answer => return Ok(response),
          FetchHop::Follow { url: next, as_get } => {
            if as_get {
              method = Method::GET;
              body = None;
              headers.remove(CONTENT_TYPE);
            }
            next
          }
          FetchHop::Refuse(error) => return Err(error.into()),
        }
      }
    };
    current = std::borrow::Cow::Owned(next);
    hops += 1;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::transport::test_http::{serve, Answer};
  use reqwest::header::HeaderValue;

  fn headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("x-key", HeaderValue::from_static("secret"));
    headers.insert("authorization", HeaderValue::from_static("Bearer t"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("mcp-session-id", HeaderValue::from_static("s1"));
    headers
  }

  async fn post(url: &str, locked: bool) -> Result<Response, CoreError> {
    let url = Url::parse(url).unwrap();
    let client = Fetcher::new(&url, &Default::default()).unwrap();
    let locked_to = locked.then_some(&url);
    let body = Some(Bytes::from_static(b"{}"));
    send(&client, locked_to, Method::POST, &url, headers(), body).await
  }

  #[test]
  fn h10_a_ca_without_certificates_and_a_bad_proxy_url_are_refused_each_by_its_name() {
    use crate::http_client::{ProxyVars, Trust};
    let url = Url::parse("https://127.0.0.1:9/mcp").unwrap();
    let message = |trust: Trust| match Fetcher::new(&url, &trust) {
      Err(CoreError::Network { message, .. }) => message,
      _ => panic!("expected a refusal"),
    };
    let ca = |pem: &str| Trust {
      ca: vec![pem.to_string()],
      ..Trust::default()
    };
    assert_eq!(
      message(ca("-----BEGIN CERTIFICATE-----\nMIIB\n")),
      "The \"ca\" certificates cannot be used: the PEM text's CERTIFICATE section has no END line"
    );
    assert_eq!(
      message(ca(
        "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
      )),
      "The \"ca\" certificates cannot be used: no certificate in the PEM text"
    );
    let proxies = ProxyVars(vec![("HTTPS_PROXY".into(), "not a url with spaces".into())]);
    assert_eq!(
      message(Trust {
        proxies: Some(proxies),
        ..Trust::default()
      }),
      "The proxy cannot be used: the HTTPS_PROXY proxy URL is not valid"
    );
  }

  #[tokio::test]
  async fn h10_a_urls_user_and_password_go_as_basic_authorization_never_in_host() {
    let a = serve("127.0.0.1", |_| Answer::new("200 OK")).await;
    let url = Url::parse(&format!(
      "{}/mcp",
      a.origin.replace("http://", "http://user:pw@")
    ))
    .unwrap();
    let client = Fetcher::new(&url, &Default::default()).unwrap();
    send(&client, None, Method::POST, &url, HeaderMap::new(), None)
      .await
      .unwrap();
    let sent = &a.requests()[0];
    assert_eq!(sent.header("authorization"), Some("Basic dXNlcjpwdw=="));
    assert_eq!(sent.header("host"), Some(&a.origin["http://".len()..]));
  }

  #[tokio::test]
  async fn a24_another_origin_gets_only_the_generated_headers_locked_or_not() {
    for locked in [false, true] {
      let b = serve("127.0.0.2", |_| Answer::new("200 OK").body("landed")).await;
      let to = format!("{}/landed", b.origin);
      let a = serve("127.0.0.1", move |_| {
        Answer::new("307 Temporary Redirect").header("location", to.clone())
      })
      .await;
      let answer = post(&format!("{}/mcp", a.origin), locked).await.unwrap();
      assert_eq!(answer.text().await.unwrap(), "landed");
      assert_eq!(a.requests()[0].header("x-key"), Some("secret"));
      let [landed] = &b.requests()[..] else {
        panic!("{:?}", b.requests());
      };
      assert_eq!(
        (landed.method.as_str(), landed.body.as_str()),
        ("POST", "{}")
      );
      assert_eq!(landed.header("x-key"), None);
      assert_eq!(landed.header("authorization"), None);
      assert_eq!(landed.header("referer"), None);
      assert_eq!(landed.header("mcp-session-id"), Some("s1"));
      assert_eq!(landed.header("content-type"), Some("application/json"));
    }
  }

  #[tokio::test]
  async fn a24_unlocked_a_302_turns_a_post_into_a_get_locked_refuses_it() {
    let a = serve("127.0.0.1", |r| match r.path.as_str() {
      "/mcp" => Answer::new("302 Found").header("location", "/moved"),
      _ => Answer::new("200 OK").body(r.method.clone()),
    })
    .await;
    let url = format!("{}/mcp", a.origin);
    assert_eq!(
      post(&url, false).await.unwrap().text().await.unwrap(),
      "GET"
    );
    let moved = a.requests()[1].clone();
    assert_eq!(
      (moved.body.as_str(), moved.header("content-type")),
      ("", None)
    );
    // Same origin: the configured headers go along.
    assert_eq!(moved.header("x-key"), Some("secret"));
    assert_eq!(
      post(&url, true).await.unwrap_err().to_string(),
      "HTTP 302: server redirected a POST request; refusing to follow"
    );
  }

  #[tokio::test]
  async fn a24_a_redirect_loop_ends_after_20_hops_or_5_locked() {
    let a = serve("127.0.0.1", |_| {
      Answer::new("307 Temporary Redirect").header("location", "/loop")
    })
    .await;
    let url = format!("{}/loop", a.origin);
    assert_eq!(
      post(&url, false).await.unwrap_err().to_string(),
      format!("Too many redirects (> 20) fetching {url}")
    );
    assert_eq!(a.requests().len(), 21);
    assert_eq!(
      post(&url, true).await.unwrap_err().to_string(),
      format!("Too many redirects (> 5) fetching {url}")
    );
  }
}
