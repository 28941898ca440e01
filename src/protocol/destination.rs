//! Where a request may go, and with which headers. Every URL the client derives from what a
//! server says (a legacy `endpoint` event, a redirect's `Location`) is checked here: the
//! configured headers and credentials go only to the origin they were configured for.
use reqwest::Url;

/// Headers the client generates (the protocol's own): the only ones another origin gets.
/// N4's routing and parameter headers say what the body, which goes there too, says.
const GENERATED: [&str; 7] = [
  "content-type",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  super::headers::METHOD_HEADER,
  super::headers::NAME_HEADER,
];

/// Why an `endpoint` event's URL is not used; `Display` is the contract's text (A22).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
  #[error("Legacy SSE endpoint origin mismatch: expected {expected}, received {received}")]
  OriginMismatch { expected: String, received: String },
  /// The event's data is not a URL, even relative to the configured one.
  #[error("Legacy SSE endpoint is not a valid URL: {0}")]
  Invalid(String),
}

/// Whether credentials configured for `configured` (its headers, an OAuth token) may go to
/// `url`: only on the same origin (scheme, host and port).
pub fn carries_credentials(configured: &Url, url: &Url) -> bool {
  // `Url::origin` allocates its parts: called for each header of each request, that was
  // 12 allocations per POST. For http(s) the origin is exactly these three parts.
  let web = |u: &Url| matches!(u.scheme(), "http" | "https");
  if web(configured) && web(url) {
    return configured.scheme() == url.scheme()
      && configured.port_or_known_default() == url.port_or_known_default()
      && configured.host() == url.host();
  }
  configured.origin() == url.origin()
}

/// Whether header `name` may go to `url` when the configured server is `configured`.
pub fn may_send(configured: &Url, url: &Url, name: &str) -> bool {
  carries_credentials(configured, url)
    || GENERATED.iter().any(|ours| name.eq_ignore_ascii_case(ours))
    || name
      .get(..10)
      .is_some_and(|prefix| prefix.eq_ignore_ascii_case("mcp-param-"))
}

/// H11/A22: the POST URL a legacy server's `endpoint` event names, resolved against the
/// configured URL. Every later POST carries the configured headers and the session, so an
/// endpoint on another origin is refused, not followed.
pub fn legacy_endpoint(configured: &Url, data: &str) -> Result<Url, EndpointError> {
  let endpoint = configured
    .join(data.trim())
    .map_err(|_| EndpointError::Invalid(data.to_string()))?;
  if !carries_credentials(configured, &endpoint) {
    return Err(EndpointError::OriginMismatch {
      expected: configured.origin().ascii_serialization(),
      received: endpoint.origin().ascii_serialization(),
    });
  }
  Ok(endpoint)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
  }

  #[test]
  fn a24_only_generated_headers_cross_origins() {
    let configured = url("http://127.0.0.1:1/mcp");
    let same = url("http://127.0.0.1:1/other");
    let other = url("http://localhost:1/mcp");
    assert!(may_send(&configured, &same, "X-Key"));
    assert!(!may_send(&configured, &other, "X-Key"));
    assert!(!may_send(&configured, &other, "authorization"));
    assert!(may_send(&configured, &other, "Mcp-Session-Id"));
    assert!(may_send(&configured, &other, "Accept"));
    assert!(may_send(&configured, &other, "Mcp-Param-Region"));
  }

  #[test]
  fn a24_same_origin_is_what_url_origin_says() {
    let urls = [
      "http://127.0.0.1:1/mcp",
      "http://127.0.0.1:1/other?q=1",
      "http://127.0.0.1/mcp",
      "http://127.0.0.1:80/mcp",
      "https://127.0.0.1/mcp",
      "https://127.0.0.1:443/x",
      "https://127.0.0.1:80/x",
      "http://LOCALHOST:1/mcp",
      "http://localhost:1/mcp",
      "http://user:pw@localhost:1/mcp",
      "http://[::1]:1/mcp",
      "http://0x7f.0.0.1:1/mcp",
      "http://xn--caf-dma.example/",
      "http://café.example/",
      "ws://127.0.0.1:1/mcp",
      "ftp://127.0.0.1/x",
      "file:///tmp/x",
      "data:text/plain,x",
      "blob:http://127.0.0.1:1/id",
    ];
    for a in urls {
      for b in urls {
        let (a, b) = (url(a), url(b));
        assert_eq!(
          carries_credentials(&a, &b),
          a.origin() == b.origin(),
          "{a} {b}"
        );
      }
    }
  }

  #[test]
  fn a22_h11_the_endpoint_resolves_against_the_url_and_keeps_its_origin() {
    let base = url("http://127.0.0.1:8080/sse?x=1");
    assert_eq!(
      legacy_endpoint(&base, "/messages?sessionId=a\n")
        .unwrap()
        .as_str(),
      "http://127.0.0.1:8080/messages?sessionId=a"
    );
    assert_eq!(
      legacy_endpoint(&base, "http://127.0.0.1:8080/m")
        .unwrap()
        .as_str(),
      "http://127.0.0.1:8080/m"
    );
    for other in [
      "http://evil.example:8080/m",
      "//evil.example:8080/m",
      "https://127.0.0.1:8080/m",
      "http://127.0.0.1:8081/m",
      "http://127.0.0.2:8080/m",
    ] {
      assert!(
        matches!(
          legacy_endpoint(&base, other),
          Err(EndpointError::OriginMismatch { .. })
        ),
        "{other}"
      );
    }
    assert_eq!(
      legacy_endpoint(&base, "http://evil.example:8080/m")
        .unwrap_err()
        .to_string(),
      "Legacy SSE endpoint origin mismatch: expected http://127.0.0.1:8080, received http://evil.example:8080"
    );
    assert!(matches!(
      legacy_endpoint(&base, "http://[::1"),
      Err(EndpointError::Invalid(_))
    ));
  }
}
