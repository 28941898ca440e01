//! `JsonText`: the text of one JSON value, checked when it was made. A result travels as
//! one from the frame it came in to the host's `JSON.parse`, which reads it again anyway;
//! checking it here is what keeps a malformed answer from settling its call (S3).
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::plain_value::plain_value_len;

#[derive(Clone, PartialEq, Eq)]
pub struct JsonText(Box<str>);

impl JsonText {
  /// `text` if it is one JSON value and nothing else; whitespace around it is allowed and
  /// not kept.
  pub fn parse(text: &str) -> Option<JsonText> {
    if plain_value_len(text.as_bytes()) == Some(text.len()) {
      return Some(JsonText(text.into()));
    }
    serde_json::from_str::<Box<RawValue>>(text)
      .ok()
      .map(JsonText::from)
  }

  /// The JSON value `text` starts with (no whitespace before it), checked whole, and the
  /// text after it.
  pub fn leading(text: &str) -> Option<(JsonText, &str)> {
    // The value ends on an ASCII byte, so this is a char boundary of `text`.
    let len = match plain_value_len(text.as_bytes()) {
      Some(len) => len,
      None => {
        let mut reader = serde_json::Deserializer::from_str(text);
        let value = <&RawValue>::deserialize(&mut reader).ok()?;
        if value.get().as_ptr() != text.as_ptr() {
          return None;
        }
        value.get().len()
      }
    };
    let (value, rest) = (text.get(..len)?, text.get(len..)?);
    Some((JsonText(value.into()), rest))
  }

  pub fn get(&self) -> &str {
    &self.0
  }
}

impl From<Box<RawValue>> for JsonText {
  fn from(raw: Box<RawValue>) -> JsonText {
    JsonText(raw.into())
  }
}

impl From<&RawValue> for JsonText {
  fn from(raw: &RawValue) -> JsonText {
    JsonText(raw.get().into())
  }
}

impl fmt::Debug for JsonText {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "JsonText({})", &self.0)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn parse_takes_one_value_only() {
    for good in [r#"{"a":[1,"x"]}"#, r#""é""#, "[1, 2]", r#"{"a":"\n"}"#] {
      assert_eq!(
        JsonText::parse(good).map(|t| t.get().to_owned()).as_deref(),
        Some(good)
      );
    }
    assert_eq!(
      JsonText::parse(" 1 ")
        .map(|t| t.get().to_owned())
        .as_deref(),
      Some("1")
    );
    for bad in ["", "1 2", "{", r#"{"a":1}x"#, "01", "[1,]"] {
      assert!(JsonText::parse(bad).is_none(), "{bad:?}");
    }
  }

  #[test]
  fn leading_stops_where_the_value_does() {
    let leading = |text| JsonText::leading(text).map(|(value, rest)| (value.0, rest));
    assert_eq!(
      leading(r#"{"a":1},"id":2}"#),
      Some((r#"{"a":1}"#.into(), r#","id":2}"#))
    );
    assert_eq!(
      leading(r#"{"a":"\u00e9"}}"#),
      Some((r#"{"a":"\u00e9"}"#.into(), "}"))
    );
    assert_eq!(leading("[1, 2]}"), Some(("[1, 2]".into(), "}")));
    assert_eq!(leading(" 1"), None);
    assert_eq!(leading(r#"{"a":}"#), None);
  }
}
