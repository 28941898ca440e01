//! J1 `parseSSE`: the agent's one-shot reading of an MCP answer that is either an SSE stream
//! or plain JSON. It lives apart from the binding so it can be tested and fuzzed without
//! Node; the binding supplies V8's `JSON.parse` and JS truthiness.

/// The `data: ` payloads of `text`, trimmed as JS `trim()` trims, `[DONE]` left out.
pub fn data_payloads(text: &str) -> impl Iterator<Item = &str> {
  text
    .split('\n')
    .filter_map(|line| line.strip_prefix("data: "))
    .map(js_trim)
    .filter(|data| *data != "[DONE]")
}

/// J1 (revised by A5): the first truthy value parsed from a `data: ` payload (payloads that
/// are not JSON, keep-alives and the like, are skipped), else `text` parsed whole, else
/// `None` (JS `null`).
pub fn parse_sse<V, E>(
  text: &str,
  mut parse: impl FnMut(&str) -> Result<V, E>,
  truthy: impl Fn(&V) -> bool,
) -> Option<V> {
  data_payloads(text)
    .filter_map(|data| parse(data).ok())
    .find(|value| truthy(value))
    .or_else(|| parse(text).ok())
}

/// `String.prototype.trim`. ECMAScript's WhiteSpace and LineTerminator differ from Unicode's
/// White_Space (`str::trim`) in two characters: U+FEFF is trimmed and U+0085 is not.
pub fn js_trim(text: &str) -> &str {
  text.trim_matches(|c: char| c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}'))
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::Value;

  fn parse(text: &str) -> Option<Value> {
    let truthy = |v: &Value| !matches!(v, Value::Null | Value::Bool(false));
    parse_sse(
      text,
      |data| serde_json::from_str::<Value>(data).map_err(drop),
      truthy,
    )
  }

  #[test]
  fn the_first_truthy_data_value_wins_and_done_is_skipped() {
    let text = "event: message\ndata: [DONE]\ndata: null\ndata:  {\"c\":3}  \r\ndata: 4\n";
    assert_eq!(parse(text), Some(serde_json::json!({"c": 3})));
    assert_eq!(parse("data:{\"a\":1}\n"), None);
    assert_eq!(
      parse("{\"whole\":true}"),
      Some(serde_json::json!({"whole": true}))
    );
    // A5: a payload that is not JSON is skipped, not thrown.
    assert_eq!(
      parse("data: {oops\ndata: keep-alive\ndata: {\"d\":4}\n"),
      Some(serde_json::json!({"d": 4}))
    );
    assert_eq!(parse("data: {oops\n"), None);
  }

  #[test]
  fn payloads_are_trimmed_as_js_trims() {
    // Found by the fuzz target `parse_sse_any_text`: `str::trim` keeps U+FEFF and drops
    // U+0085, where JS `trim()` does the opposite.
    assert_eq!(js_trim("\u{FEFF}\u{A0}\u{2028} x \u{3000}\u{FEFF}"), "x");
    assert_eq!(js_trim("\u{85}x\u{85}"), "\u{85}x\u{85}");
    assert_eq!(parse("data: [DONE]\u{FEFF}\n"), None);
    assert_eq!(
      parse("data: \u{FEFF}{\"a\":1}\n"),
      Some(serde_json::json!({"a": 1}))
    );
    assert_eq!(
      parse("data: 1\u{85}\ndata: 2\n"),
      Some(serde_json::json!(2))
    );
  }
}
