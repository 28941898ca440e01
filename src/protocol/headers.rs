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

/// A frame's routing header values (N4), ready to send: what the session knew as it wrote
/// the frame, so the transport need not read it back out of the frame on each POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
  /// `Mcp-Method`: static text for the methods a client sends.
  pub method: Cow<'static, str>,
  /// `Mcp-Name`: `name` of `tools/call` and `prompts/get`, `uri` of `resources/read`.
  pub name: Option<String>,
}

/// The routing headers of a request or notification with `method` and `params` (JSON text).
/// Only the params of the three named methods are read.
pub fn route(method: &str, params: Option<&str>) -> Route {
  #[derive(serde::Deserialize)]
  struct Params<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
  }
  let read = || serde_json::from_str::<Params>(params?).ok();
  let name = match method {
    "tools/call" | "prompts/get" => leading_string(params, "name")
      .map(Cow::Borrowed)
      .or_else(|| read().and_then(|p| p.name)),
    "resources/read" => leading_string(params, "uri")
      .map(Cow::Borrowed)
      .or_else(|| read().and_then(|p| p.uri)),
    _ => None,
  };
  let method = match KNOWN_METHODS.into_iter().find(|known| *known == method) {
    Some(known) => Cow::Borrowed(known),
    None => Cow::Owned(header_value(method).into_owned()),
  };
  Route {
    method,
    name: name.map(|name| header_value(&name).into_owned()),
  }
}

/// The value of `key` when `params` begins with it as `JSON.stringify` writes it (no space,
/// a string without escapes): the name of `{ name, arguments }`, read without parsing the
/// arguments (this runs on the JS thread for every call). `None`: parse the params.
fn leading_string<'a>(params: Option<&'a str>, key: &str) -> Option<&'a str> {
  let rest = params?
    .strip_prefix("{\"")?
    .strip_prefix(key)?
    .strip_prefix("\":\"")?;
  let end = rest
    .bytes()
    .position(|b| b == b'"' || b == b'\\' || b < b' ')?;
  (rest.as_bytes()[end] == b'"').then(|| &rest[..end])
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
    let pairs = |method, params| {
      let route = route(method, params);
      let mut pairs = vec![(METHOD_HEADER, route.method.to_string())];
      pairs.extend(route.name.map(|name| (NAME_HEADER, name)));
      pairs
    };
    assert_eq!(
      pairs(
        "tools/call",
        Some(r#"{"name":"add","arguments":{"name":"inner"}}"#)
      ),
      [
        (METHOD_HEADER, "tools/call".to_string()),
        (NAME_HEADER, "add".to_string())
      ]
    );
    let read = pairs("resources/read", Some(r#"{"uri":"file:///a b"}"#));
    assert_eq!(read[1], (NAME_HEADER, "file:///a b".to_string()));
    let list = pairs("tools/list", Some(r#"{"name":"ignored"}"#));
    assert_eq!(list, [(METHOD_HEADER, "tools/list".to_string())]);
    // Params that are no object, or a name that is no string: the method alone.
    for params in [None, Some("[1]"), Some(r#"{"name":3}"#), Some("{}")] {
      assert_eq!(pairs("tools/call", params).len(), 1);
    }
    // Escaped or unprintable values are decoded, then sent as base64 sentinels.
    let escaped = pairs("tools/call", Some(r#"{"name":"caf\u00e9"}"#));
    assert_eq!(escaped[1], (NAME_HEADER, "=?base64?Y2Fmw6k=?=".to_string()));
    let quoted = pairs("prompts/get", Some(r#"{"name":"a\"b"}"#));
    assert_eq!(quoted[1], (NAME_HEADER, "a\"b".to_string()));
    // Whatever the shape, the leading shortcut reads what a full parse reads.
    for params in [
      r#"{"name":"add","arguments":{}}"#,
      r#"{"name":"add"}"#,
      r#"{"name":"","x":1}"#,
      r#"{"name":"a\\b"}"#,
      r#"{"name":"a\tb"}"#,
      r#"{"names":"x","name":"y"}"#,
      r#"{"arguments":{"name":"inner"},"name":"outer"}"#,
      r#"{ "name" : "spaced" }"#,
      r#"{"name":3}"#,
      r#"{"name":"caf\u00e9"}"#,
      r#"{"name":"é"}"#,
    ] {
      let full = serde_json::from_str::<serde_json::Value>(params).unwrap();
      let expected = full["name"]
        .as_str()
        .map(|name| header_value(name).into_owned());
      assert_eq!(route("tools/call", Some(params)).name, expected, "{params}");
    }
    // Only the methods a client sends are static; any other is its own text, encoded too.
    assert!(matches!(
      route("tools/call", None).method,
      Cow::Borrowed("tools/call")
    ));
    assert!(matches!(route("x/y", None).method, Cow::Owned(_)));
    assert_eq!(
      pairs("x/y", Some("{}")),
      [(METHOD_HEADER, "x/y".to_string())]
    );
    assert_eq!(route("x/é", None).method, "=?base64?eC/DqQ==?=");
  }
}
