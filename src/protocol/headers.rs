//! N4 (SEP-2243): the routing headers of a stateless-era POST, `Mcp-Method` and `Mcp-Name`,
//! and how a value that cannot travel in a header as it is gets there.
use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// `text` as a header value: itself when it is printable ASCII without surrounding spaces,
/// else (or when it looks like the sentinel itself) `=?base64?<base64 of its UTF-8>?=`.
pub fn header_value(text: &str) -> Cow<'_, str> {
  let printable = text.bytes().all(|b| (0x20..0x7f).contains(&b));
  let trimmed = text.trim_matches(' ') == text;
  let sentinel_like = text.starts_with(SENTINEL_START) && text.ends_with(SENTINEL_END);
  if printable && trimmed && !sentinel_like {
    Cow::Borrowed(text)
  } else {
    Cow::Owned(format!(
      "{SENTINEL_START}{}{SENTINEL_END}",
      STANDARD.encode(text.as_bytes())
    ))
  }
}

/// The methods a client sends whose routing header is their name as it is: as static text,
/// a header value needs no copy of its own on each request.
const KNOWN_METHODS: [&str; 14] = [
  "tools/call",
  "tools/list",
  "resources/read",
  "resources/list",
  "resources/templates/list",
  "resources/subscribe",
  "resources/unsubscribe",
  "prompts/get",
  "prompts/list",
  "completion/complete",
  "ping",
  "server/discover",
  "subscriptions/listen",
  "logging/setLevel",
];

/// A request's routing header values (N4), borrowed from its frame where they can be.
#[derive(Debug)]
pub struct Routing<'a> {
  /// `Mcp-Method`.
  pub method: Cow<'a, str>,
  /// `Mcp-Name`: `name` of `tools/call` and `prompts/get`, `uri` of `resources/read`.
  pub name: Option<Cow<'a, str>>,
}

impl Routing<'_> {
  /// The method as static text, when it is one of `KNOWN_METHODS`.
  pub fn known_method(&self) -> Option<&'static str> {
    KNOWN_METHODS
      .into_iter()
      .find(|known| *known == self.method)
  }
}

/// The routing headers of a request frame: its method, and for `tools/call` and
/// `prompts/get` the `name`, for `resources/read` the `uri`. Read on every stateless POST,
/// so nothing is copied that the frame spells as it goes out.
pub fn routing_headers(frame: &str) -> Option<Routing<'_>> {
  #[derive(serde::Deserialize)]
  struct Params<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
  }
  #[derive(serde::Deserialize)]
  struct Frame<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
  }
  let frame = serde_json::from_str::<Frame>(frame).ok()?;
  let method = frame.method?;
  let name = match (&*method, frame.params) {
    ("tools/call" | "prompts/get", Some(params)) => params.name,
    ("resources/read", Some(params)) => params.uri,
    _ => None,
  };
  fn value(text: Cow<'_, str>) -> Cow<'_, str> {
    match header_value(&text) {
      Cow::Borrowed(_) => text,
      Cow::Owned(encoded) => Cow::Owned(encoded),
    }
  }
  Some(Routing {
    method: value(method),
    name: name.map(value),
  })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn n4_plain_values_pass_and_others_are_base64_sentinels() {
    assert_eq!(header_value("tools/call"), "tools/call");
    assert_eq!(header_value("get weather"), "get weather");
    assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
    assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
    assert_eq!(header_value("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
    // A value that would read as a sentinel is encoded too.
    assert_eq!(
      header_value("=?base64?eA==?="),
      "=?base64?PT9iYXNlNjQ/ZUE9PT89?="
    );
  }

  #[test]
  fn n4_method_and_name_by_method() {
    let call =
      r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{}}}"#;
    let pairs = |frame| {
      let routing = routing_headers(frame).unwrap();
      let mut pairs = vec![(METHOD_HEADER, routing.method.to_string())];
      pairs.extend(routing.name.map(|name| (NAME_HEADER, name.to_string())));
      pairs
    };
    assert_eq!(
      pairs(call),
      [
        (METHOD_HEADER, "tools/call".to_string()),
        (NAME_HEADER, "add".to_string())
      ]
    );
    let read =
      r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a b"}}"#;
    assert_eq!(pairs(read)[1], (NAME_HEADER, "file:///a b".to_string()));
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"ignored"}}"#;
    assert_eq!(pairs(list), [(METHOD_HEADER, "tools/list".to_string())]);
    assert!(routing_headers(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#).is_none());
    // Escaped or unprintable values are decoded, then sent as base64 sentinels.
    let escaped = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"caf\u00e9"}}"#;
    assert_eq!(
      pairs(escaped)[1],
      (NAME_HEADER, "=?base64?Y2Fmw6k=?=".to_string())
    );
    let quoted = r#"{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"a\"b"}}"#;
    assert_eq!(pairs(quoted)[1], (NAME_HEADER, "a\"b".to_string()));
    // Only the methods a client sends are static; any other is its own text.
    assert_eq!(
      routing_headers(call).unwrap().known_method(),
      Some("tools/call")
    );
    let custom = r#"{"jsonrpc":"2.0","id":7,"method":"x/y","params":{}}"#;
    assert_eq!(routing_headers(custom).unwrap().known_method(), None);
    assert_eq!(pairs(custom), [(METHOD_HEADER, "x/y".to_string())]);
  }
}
