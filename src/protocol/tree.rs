//! A large response parsed off the JS thread into a tree whose strings point into the frame
//! they came from, so building the JS value copies each big string at most once (and not at
//! all where the runtime takes external strings).
use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON string of the frame: a byte range of it when the JSON had no escapes, else the
/// unescaped text.
#[derive(Debug)]
pub enum Text {
  Slice { start: usize, len: usize },
  Owned(String),
}

#[derive(Debug)]
pub enum Node {
  Null,
  Bool(bool),
  Number(f64),
  Text(Text),
  Array(Vec<Node>),
  /// Keys in document order, like `JSON.parse`.
  Object(Vec<(Text, Node)>),
}

/// A response's `result` and the frame its `Text::Slice`s refer to.
#[derive(Debug)]
pub struct ResultTree {
  pub frame: Bytes,
  pub root: Node,
}

impl ResultTree {
  pub fn text<'a>(&'a self, text: &'a Text) -> &'a str {
    match text {
      // The slice was cut from this frame at a char boundary of valid UTF-8.
      Text::Slice { start, len } => {
        std::str::from_utf8(&self.frame[*start..*start + *len]).unwrap_or("")
      }
      Text::Owned(s) => s,
    }
  }
}

/// A successful response with an integer id, parsed into `(id, tree of its result)`.
/// `None` for anything else (notifications, requests, errors, foreign ids, bad JSON).
pub fn parse_response(frame: Bytes) -> Option<(u64, ResultTree)> {
  let text = std::str::from_utf8(&frame).ok()?;
  let base = text.as_ptr() as usize;
  let Borrowed::Object(fields) = serde_json::from_str::<Borrowed>(text).ok()? else {
    return None;
  };
  let mut id = None;
  let mut result = None;
  for (key, value) in fields {
    match key.as_ref() {
      "method" => return None,
      "error" if !matches!(value, Borrowed::Null) => return None,
      "id" => id = Some(value),
      "result" => result = Some(value),
      _ => {}
    }
  }
  let id = match id? {
    Borrowed::Number(n) if n >= 0.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => n as u64,
    _ => return None,
  };
  let root = result?.into_node(base);
  Some((id, ResultTree { frame, root }))
}

/// The borrowing parse; turned into `Node` (offsets instead of lifetimes) right after.
enum Borrowed<'a> {
  Null,
  Bool(bool),
  Number(f64),
  Text(Cow<'a, str>),
  Array(Vec<Borrowed<'a>>),
  Object(Vec<(Cow<'a, str>, Borrowed<'a>)>),
}

fn to_text(text: Cow<'_, str>, base: usize) -> Text {
  match text {
    Cow::Borrowed(s) => Text::Slice {
      start: s.as_ptr() as usize - base,
      len: s.len(),
    },
    Cow::Owned(s) => Text::Owned(s),
  }
}

impl Borrowed<'_> {
  fn into_node(self, base: usize) -> Node {
    match self {
      Borrowed::Null => Node::Null,
      Borrowed::Bool(b) => Node::Bool(b),
      Borrowed::Number(n) => Node::Number(n),
      Borrowed::Text(s) => Node::Text(to_text(s, base)),
      Borrowed::Array(items) => Node::Array(items.into_iter().map(|i| i.into_node(base)).collect()),
      Borrowed::Object(fields) => Node::Object(
        fields
          .into_iter()
          .map(|(k, v)| (to_text(k, base), v.into_node(base)))
          .collect(),
      ),
    }
  }
}

/// A key or string value, borrowed from the input when it has no escapes.
struct CowStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct StrVisitor;
    impl<'de> Visitor<'de> for StrVisitor {
      type Value = CowStr<'de>;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
      }
      fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Borrowed(v)))
      }
      fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v.to_string())))
      }
      fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v)))
      }
    }
    deserializer.deserialize_str(StrVisitor)
  }
}

impl<'de> Deserialize<'de> for Borrowed<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct NodeVisitor;
    impl<'de> Visitor<'de> for NodeVisitor {
      type Value = Borrowed<'de>;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
      }
      fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Borrowed::Null)
      }
      fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Borrowed::Bool(v))
      }
      fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Borrowed::Number(v as f64))
      }
      fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Borrowed::Number(v as f64))
      }
      fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Borrowed::Number(v))
      }
      fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Borrowed::Text(Cow::Borrowed(v)))
      }
      fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Borrowed::Text(Cow::Owned(v.to_string())))
      }
      fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Borrowed::Text(Cow::Owned(v)))
      }
      fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
          items.push(item);
        }
        Ok(Borrowed::Array(items))
      }
      fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::new();
        while let Some((CowStr(key), value)) = map.next_entry::<CowStr, Borrowed>()? {
          fields.push((key, value));
        }
        Ok(Borrowed::Object(fields))
      }
    }
    deserializer.deserialize_any(NodeVisitor)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn parse(text: &str) -> Option<(u64, ResultTree)> {
    parse_response(Bytes::copy_from_slice(text.as_bytes()))
  }

  #[test]
  fn plain_strings_point_into_the_frame_and_escaped_ones_are_unescaped() {
    let (id, tree) = parse(
      r#"{"jsonrpc":"2.0","id":7,"result":{"plain":"abc","esc":"a\nb","n":[1,2.5,true,null]}}"#,
    )
    .unwrap();
    assert_eq!(id, 7);
    let Node::Object(fields) = &tree.root else {
      panic!("object")
    };
    let keys: Vec<&str> = fields.iter().map(|(k, _)| tree.text(k)).collect();
    assert_eq!(keys, ["plain", "esc", "n"]);
    match &fields[0].1 {
      Node::Text(t @ Text::Slice { .. }) => assert_eq!(tree.text(t), "abc"),
      other => panic!("{other:?}"),
    }
    match &fields[1].1 {
      Node::Text(t @ Text::Owned(_)) => assert_eq!(tree.text(t), "a\nb"),
      other => panic!("{other:?}"),
    }
    assert!(matches!(&fields[2].1, Node::Array(items) if items.len() == 4));
  }

  #[test]
  fn only_successful_responses_with_integer_ids_parse() {
    assert!(parse(r#"{"jsonrpc":"2.0","method":"m","params":{}}"#).is_none());
    assert!(parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#).is_none());
    assert!(parse(r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#).is_none());
    assert!(parse(r#"{"jsonrpc":"2.0","id":1}"#).is_none());
    assert!(parse(r#"{"jsonrpc":"2.0","id":1,"result":{"#).is_none());
    assert!(parse(r#"{"jsonrpc":"2.0","id":2,"error":null,"result":"x"}"#).is_some());
  }
}
