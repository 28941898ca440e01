//! A24 `mcpFetch`: the runtime's `fetch` with the generated headers over the configured
//! ones. Origin-locked, redirects are followed here, by `protocol::redirects`' rules (at most
//! five, 301/302/303 of anything but a GET refused), and the configured headers only go to
//! the first URL's origin.
use reqwest::Url;

use super::header_objects::{is_record, string_entries};
use crate::host::Callbacks;
use crate::protocol::header_policy::merge;
use crate::protocol::redirects::{next_hop, Hop};

/// A checked `mcpFetch(url, init, sources, originLocked)`, ready to run.
pub struct McpFetch<V> {
  start: Url,
  method: String,
  generated: Vec<(String, String)>,
  merged: Vec<(String, String)>,
  locked: bool,
  fetch: V,
  body: V,
  signal: V,
}

impl<V: Clone> McpFetch<V> {
  /// Checks the arguments in the order the agent's function reads them; a getter's throw is
  /// thrown on. `fetch` is the runtime's global `fetch`.
  pub fn new<H: Callbacks<Value = V>>(
    h: &H,
    url: &V,
    init: &V,
    sources: &V,
    locked: bool,
    fetch: V,
  ) -> Result<Self, V> {
    let start = h
      .as_string(url)
      .and_then(|text| Url::parse(&text).ok())
      .ok_or_else(|| h.type_error("The \"url\" argument must be an absolute URL"))?;
    if !is_record(h, init) {
      return Err(h.type_error("The \"init\" argument must be an object"));
    }
    let method = h.field(init, "method")?;
    let method = if h.is_nullish(&method) {
      "GET".to_string()
    } else {
      h.as_string(&method)
        .ok_or_else(|| h.type_error("The \"init.method\" field must be a string"))?
        .to_ascii_uppercase()
    };
    let (generated, configured) = if is_record(h, sources) {
      let generated = string_entries(h, &h.field(sources, "generated")?)?;
      (
        generated,
        string_entries(h, &h.field(sources, "configured")?)?,
      )
    } else {
      (Vec::new(), Vec::new())
    };
    if !h.is_function(&fetch) {
      return Err(h.type_error("This runtime has no global fetch"));
    }
    Ok(McpFetch {
      merged: merge(&generated, &configured),
      body: h.field(init, "body")?,
      signal: h.field(init, "signal")?,
      start,
      method,
      generated,
      locked,
      fetch,
    })
  }

  /// The response `fetch` settles with (the last hop's, locked), or why there is none.
  pub async fn run<H: Callbacks<Value = V>>(self, h: &H) -> Result<V, V> {
    let mut current = self.start.clone();
    let mut hops = 0;
    loop {
      let headers = if current.origin() == self.start.origin() {
        &self.merged
      } else {
        &self.generated
      };
      let options = self.options(h, headers)?;
      let response = h
        .call(&self.fetch, vec![h.string(current.as_str()), options])
        .await?;
      if !self.locked {
        return Ok(response);
      }
      let (status, location) = status_and_location(h, &response).await;
      match next_hop(
        &self.start,
        &current,
        &self.method,
        status,
        location.as_deref(),
        hops,
      ) {
        Hop::Answer => return Ok(response),
        Hop::Follow(next) => {
          discard_body(h, &response);
          current = next;
          hops += 1;
        }
        Hop::Refuse(error) => {
          discard_body(h, &response);
          return Err(h.error(&crate::redaction::redact_secrets(&error.to_string())));
        }
      }
    }
  }

  /// `fetch`'s init: the method, these headers, a manual redirect when locked, and the
  /// caller's body and signal when given.
  fn options<H: Callbacks<Value = V>>(&self, h: &H, headers: &[(String, String)]) -> Result<V, V> {
    let sent = headers
      .iter()
      .map(|(name, value)| (name.as_str(), h.string(value)))
      .collect();
    let mut fields = vec![
      ("method", h.string(&self.method)),
      ("headers", h.object(sent)?),
    ];
    if self.locked {
      fields.push(("redirect", h.string("manual")));
    }
    for (name, value) in [("body", &self.body), ("signal", &self.signal)] {
      if !h.is_nullish(value) {
        fields.push((name, value.clone()));
      }
    }
    h.object(fields)
  }
}

/// A response's status and `Location` header, as `fetch` gives them.
async fn status_and_location<H: Callbacks>(h: &H, response: &H::Value) -> (u16, Option<String>) {
  let status = h
    .field(response, "status")
    .ok()
    .and_then(|s| h.as_number(&s))
    .map_or(0, |n| n as u16);
  let location = match h.field(response, "headers") {
    Ok(headers) if h.is_object(&headers) => h
      .call_method(&headers, "get", vec![h.string("location")])
      .await
      .ok()
      .and_then(|value| h.as_string(&value)),
    _ => None,
  };
  (status, location)
}

/// A redirect's body is not read: cancelling it frees the connection. Its rejection (a body
/// already taken) is nobody's business.
fn discard_body<H: Callbacks>(h: &H, response: &H::Value) {
  if let Ok(body) = h.field(response, "body") {
    if h.is_object(&body) {
      drop(h.call_method(&body, "cancel", Vec::new()));
    }
  }
}

#[cfg(test)]
mod tests {
  use std::cell::RefCell;
  use std::rc::Rc;

  use serde_json::json;

  use super::McpFetch;
  use crate::fake_host::{v, FakeHost, V};
  use crate::host::Values;

  /// Each `fetch` call's URL and init.
  type Calls = Rc<RefCell<Vec<(String, serde_json::Value)>>>;

  /// A `fetch` that answers from `responses` in turn and records each call's URL and init.
  fn fetch(responses: Vec<(u16, Option<&'static str>)>) -> (V, Calls) {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let seen = calls.clone();
    let answers = Rc::new(RefCell::new(responses.into_iter()));
    let function = V::Callable(Rc::new(move |args: Vec<V>| {
      seen
        .borrow_mut()
        .push((args[0].text().unwrap_or_default(), args[1].to_json()));
      let (status, location) = answers.borrow_mut().next().unwrap_or((500, None));
      let get = V::Callable(Rc::new(move |_| {
        let value = location.map_or(V::Null, |l| V::Str(l.into()));
        Box::pin(std::future::ready(Ok(value)))
      }));
      let response = V::object(vec![
        ("status", V::Number(f64::from(status))),
        ("headers", V::object(vec![("get", get)])),
      ]);
      Box::pin(std::future::ready(Ok(response)))
    }));
    (function, calls)
  }

  fn sources() -> V {
    v(json!({
      "generated": { "mcp-session-id": "s1" },
      "configured": { "Authorization": "Bearer secret", "MCP-Session-Id": "old" }
    }))
  }

  async fn run(
    url: &str,
    init: serde_json::Value,
    locked: bool,
    responses: Vec<(u16, Option<&'static str>)>,
  ) -> (Result<V, V>, Vec<(String, serde_json::Value)>) {
    let host = FakeHost::new();
    let (function, calls) = fetch(responses);
    let outcome = match McpFetch::new(
      &host,
      &V::Str(url.into()),
      &v(init),
      &sources(),
      locked,
      function,
    ) {
      Ok(request) => request.run(&host).await,
      Err(error) => Err(error),
    };
    let calls = calls.borrow().clone();
    (outcome, calls)
  }

  #[tokio::test]
  async fn a24_credentials_stay_on_the_first_origin_across_redirects() {
    let (outcome, calls) = run(
      "http://127.0.0.1:1/mcp",
      json!({ "method": "get" }),
      true,
      vec![
        (307, Some("/moved")),
        (302, Some("http://127.0.0.2:1/elsewhere")),
        (200, None),
      ],
    )
    .await;
    assert_eq!(
      outcome
        .ok()
        .and_then(|r| r.get("status").to_json().as_u64()),
      Some(200)
    );
    let urls: Vec<&str> = calls.iter().map(|(url, _)| url.as_str()).collect();
    assert_eq!(
      urls,
      [
        "http://127.0.0.1:1/mcp",
        "http://127.0.0.1:1/moved",
        "http://127.0.0.2:1/elsewhere"
      ]
    );
    assert_eq!(calls[0].1["method"], "GET");
    assert_eq!(calls[0].1["redirect"], "manual");
    assert_eq!(
      calls[1].1["headers"],
      json!({ "Authorization": "Bearer secret", "mcp-session-id": "s1" })
    );
    assert_eq!(calls[2].1["headers"], json!({ "mcp-session-id": "s1" }));
  }

  #[tokio::test]
  async fn a24_a_post_redirected_by_302_is_refused_without_secrets() {
    let (outcome, calls) = run(
      "http://user:pw@127.0.0.1:1/mcp?token=abc",
      json!({ "method": "POST", "body": "{}" }),
      true,
      vec![(302, Some("/next?api_key=xyz"))],
    )
    .await;
    let host = FakeHost::new();
    let message = host.message(&outcome.err().unwrap_or(V::Undefined));
    assert!(message.contains("redirect"), "{message}");
    for secret in ["pw", "abc", "xyz"] {
      assert!(!message.contains(secret), "{message}");
    }
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1["body"], "{}");
  }

  #[tokio::test]
  async fn a24_unlocked_hands_the_first_response_back() {
    let (outcome, calls) = run(
      "http://127.0.0.1:1/",
      json!({}),
      false,
      vec![(301, Some("/x"))],
    )
    .await;
    assert_eq!(
      outcome
        .ok()
        .and_then(|r| r.get("status").to_json().as_u64()),
      Some(301)
    );
    assert_eq!(calls.len(), 1);
    assert!(calls[0].1.get("redirect").is_none());
  }

  #[tokio::test]
  async fn a24_arguments_are_checked_in_order() {
    let host = FakeHost::new();
    let check = |url: V, init: serde_json::Value, fetch: V| {
      McpFetch::new(&host, &url, &v(init), &sources(), true, fetch)
        .err()
        .map(|e| host.message(&e))
    };
    let (function, _) = fetch(Vec::new());
    assert_eq!(
      check(V::Str("relative".into()), json!({}), function.clone()).as_deref(),
      Some("The \"url\" argument must be an absolute URL")
    );
    assert_eq!(
      check(V::Str("http://h/".into()), json!([]), function.clone()).as_deref(),
      Some("The \"init\" argument must be an object")
    );
    assert_eq!(
      check(V::Str("http://h/".into()), json!({ "method": 1 }), function).as_deref(),
      Some("The \"init.method\" field must be a string")
    );
    assert_eq!(
      check(V::Str("http://h/".into()), json!({}), V::Undefined).as_deref(),
      Some("This runtime has no global fetch")
    );
  }
}
