//! Redirects, followed by hand so that every hop passes `destination`'s rule (configured
//! headers only to the configured origin). Unlocked, as `fetch` follows them (A24); with
//! `headerPolicy: "origin-locked"`, at most five and never by changing the method.
use reqwest::Url;

/// More hops than this and an origin-locked fetch fails.
pub const MAX_HOPS: usize = 5;
/// More hops than this and an unlocked fetch fails (the Fetch standard's limit).
pub const FETCH_MAX_HOPS: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
  #[error("Too many redirects (> {MAX_HOPS}) fetching {0}")]
  TooMany(String),
  #[error("Too many redirects (> {FETCH_MAX_HOPS}) fetching {0}")]
  TooManyForFetch(String),
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

/// What `fetch` does with one answer (unlocked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchHop {
  Answer,
  /// Fetch `url` next; `as_get`: as a GET without the body (a 303 answering anything but a
  /// GET or HEAD, a 301 or 302 answering a POST).
  Follow {
    url: Url,
    as_get: bool,
  },
  Refuse(RedirectError),
}

/// The next step of an unlocked fetch of `fetching`, as the Fetch standard takes it.
pub fn fetch_next_hop(
  fetching: &Url,
  current: &Url,
  method: &str,
  status: u16,
  location: Option<&str>,
  hops: usize,
) -> FetchHop {
  if !matches!(status, 301 | 302 | 303 | 307 | 308) {
    return FetchHop::Answer;
  }
  let Some(url) = location.and_then(|l| current.join(l).ok()) else {
    return FetchHop::Answer;
  };
  if hops >= FETCH_MAX_HOPS {
    return FetchHop::Refuse(RedirectError::TooManyForFetch(fetching.to_string()));
  }
  let as_get = match status {
    303 => !method.eq_ignore_ascii_case("GET") && !method.eq_ignore_ascii_case("HEAD"),
    301 | 302 => method.eq_ignore_ascii_case("POST"),
    _ => false,
  };
  FetchHop::Follow { url, as_get }
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
  fn a24_unlocked_follows_as_fetch_does() {
    let start = url("http://127.0.0.1:1/mcp");
    let follow =
      |status, method| fetch_next_hop(&start, &start, method, status, Some("http://b.test/x"), 0);
    let to = url("http://b.test/x");
    assert_eq!(
      follow(307, "POST"),
      FetchHop::Follow {
        url: to.clone(),
        as_get: false
      }
    );
    assert_eq!(
      follow(308, "DELETE"),
      FetchHop::Follow {
        url: to.clone(),
        as_get: false
      }
    );
    assert_eq!(
      follow(302, "POST"),
      FetchHop::Follow {
        url: to.clone(),
        as_get: true
      }
    );
    assert_eq!(
      follow(301, "DELETE"),
      FetchHop::Follow {
        url: to.clone(),
        as_get: false
      }
    );
    assert_eq!(
      follow(303, "DELETE"),
      FetchHop::Follow {
        url: to.clone(),
        as_get: true
      }
    );
    assert_eq!(
      follow(303, "GET"),
      FetchHop::Follow {
        url: to,
        as_get: false
      }
    );
    assert_eq!(follow(200, "GET"), FetchHop::Answer);
    assert_eq!(
      fetch_next_hop(&start, &start, "GET", 302, Some("/x"), FETCH_MAX_HOPS),
      FetchHop::Refuse(RedirectError::TooManyForFetch(start.to_string()))
    );
    assert_eq!(
      RedirectError::TooManyForFetch(start.to_string()).to_string(),
      "Too many redirects (> 20) fetching http://127.0.0.1:1/mcp"
    );
  }
}
