//! N4 (SEP-2243): the routing headers of a stateless-era POST, `Mcp-Method` and `Mcp-Name`,
//! and how a value that cannot travel in a header as it is gets there.
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// `text` as a header value: itself when it is printable ASCII without surrounding spaces,
/// else (or when it looks like the sentinel itself) `=?base64?<base64 of its UTF-8>?=`.
pub fn header_value(text: &str) -> String {
  let printable = text.bytes().all(|b| (0x20..0x7f).contains(&b));
  let trimmed = text.trim_matches(' ') == text;
  let sentinel_like = text.starts_with(SENTINEL_START) && text.ends_with(SENTINEL_END);
  if printable && trimmed && !sentinel_like {
    text.to_string()
  } else {
    format!(
      "{SENTINEL_START}{}{SENTINEL_END}",
      STANDARD.encode(text.as_bytes())
    )
  }
}

/// The routing headers of a request frame: its method, and for `tools/call` and
/// `prompts/get` the `name`, for `resources/read` the `uri`.
pub fn routing_headers(frame: &str) -> Vec<(&'static str, String)> {
  #[derive(serde::Deserialize)]
  struct Params {
    name: Option<String>,
    uri: Option<String>,
  }
  #[derive(serde::Deserialize)]
  struct Frame {
    method: Option<String>,
    params: Option<Params>,
  }
  let Ok(frame) = serde_json::from_str::<Frame>(frame) else {
    return Vec::new();
  };
  let Some(method) = frame.method else {
    return Vec::new();
  };
  let name = match (method.as_str(), frame.params) {
    ("tools/call" | "prompts/get", Some(params)) => params.name,
    ("resources/read", Some(params)) => params.uri,
    _ => None,
  };
  let mut headers = vec![(METHOD_HEADER, header_value(&method))];
  if let Some(name) = name {
    headers.push((NAME_HEADER, header_value(&name)));
  }
  headers
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
    assert_eq!(
      routing_headers(call),
      [
        (METHOD_HEADER, "tools/call".to_string()),
        (NAME_HEADER, "add".to_string())
      ]
    );
    let read =
      r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a b"}}"#;
    assert_eq!(
      routing_headers(read)[1],
      (NAME_HEADER, "file:///a b".to_string())
    );
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"name":"ignored"}}"#;
    assert_eq!(
      routing_headers(list),
      [(METHOD_HEADER, "tools/list".to_string())]
    );
    assert!(routing_headers(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#).is_empty());
  }
}
