//! A24 `headerPolicy: "origin-locked"`: redirects are followed by hand, at most five, and
//! only what the client generates goes to an origin other than the configured one.
use reqwest::Url;

/// More hops than this and the fetch fails.
pub const MAX_HOPS: usize = 5;

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

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
  #[error("Too many redirects (> {MAX_HOPS}) fetching {0}")]
  TooMany(String),
  /// Following would turn the request into a GET (or resend a body it should not).
  #[error("HTTP {status}: server redirected a {method} request; refusing to follow")]
  MethodChange { status: u16, method: String },
}

/// What to do with one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hop {
  /// Not a redirect we follow: the answer is the caller's.
  Answer,
  /// Fetch `url` next, with the same method and body.
  Follow(Url),
  Refuse(RedirectError),
}

/// The next step after `status` (with `location`) answered `method` on `current`, `hops`
/// redirects into the fetch of `fetching`.
pub fn next_hop(
  fetching: &Url,
  current: &Url,
  method: &str,
  status: u16,
  location: Option<&str>,
  hops: usize,
) -> Hop {
  if !matches!(status, 301 | 302 | 303 | 307 | 308) {
    return Hop::Answer;
  }
  let Some(next) = location.and_then(|l| current.join(l).ok()) else {
    return Hop::Answer;
  };
  if matches!(status, 301..=303) && !method.eq_ignore_ascii_case("GET") {
    return Hop::Refuse(RedirectError::MethodChange {
      status,
      method: method.to_ascii_uppercase(),
    });
  }
  if hops >= MAX_HOPS {
    return Hop::Refuse(RedirectError::TooMany(fetching.to_string()));
  }
  Hop::Follow(next)
}

/// Whether header `name` may go to `url` when the configured server is `configured`.
pub fn may_send(configured: &Url, url: &Url, name: &str) -> bool {
  configured.origin() == url.origin()
    || GENERATED.iter().any(|ours| name.eq_ignore_ascii_case(ours))
    || name
      .get(..10)
      .is_some_and(|prefix| prefix.eq_ignore_ascii_case("mcp-param-"))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
  }

  #[test]
  fn a24_follows_307_and_308_with_the_method_and_a_relative_location() {
    let start = url("http://127.0.0.1:1/mcp");
    let hop = next_hop(&start, &start, "POST", 307, Some("/elsewhere?x=1"), 0);
    assert_eq!(hop, Hop::Follow(url("http://127.0.0.1:1/elsewhere?x=1")));
    let hop = next_hop(&start, &start, "DELETE", 308, Some("http://b.test/m"), 4);
    assert_eq!(hop, Hop::Follow(url("http://b.test/m")));
  }

  #[test]
  fn a24_refuses_a_method_change_and_a_sixth_hop() {
    let start = url("http://127.0.0.1:1/mcp");
    for status in [301, 302, 303] {
      let Hop::Refuse(error) = next_hop(&start, &start, "post", status, Some("/x"), 0) else {
        panic!("{status} followed");
      };
      assert_eq!(
        error.to_string(),
        format!("HTTP {status}: server redirected a POST request; refusing to follow")
      );
      assert_eq!(
        next_hop(&start, &start, "GET", status, Some("/x"), 0),
        Hop::Follow(url("http://127.0.0.1:1/x"))
      );
    }
    let Hop::Refuse(error) = next_hop(&start, &start, "GET", 302, Some("/x"), 5) else {
      panic!("a sixth hop followed");
    };
    assert_eq!(
      error.to_string(),
      "Too many redirects (> 5) fetching http://127.0.0.1:1/mcp"
    );
  }

  #[test]
  fn a24_other_answers_are_the_callers() {
    let start = url("http://127.0.0.1:1/mcp");
    assert_eq!(next_hop(&start, &start, "GET", 200, None, 0), Hop::Answer);
    assert_eq!(
      next_hop(&start, &start, "GET", 304, Some("/x"), 0),
      Hop::Answer
    );
    assert_eq!(next_hop(&start, &start, "GET", 302, None, 0), Hop::Answer);
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
}
