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
  /// The whole frame is known to be ASCII, so no string of it needs checking.
  pub ascii: bool,
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
  let root = serde_json::from_str::<Borrowed>(text).ok()?.into_node(base);
  response_of(frame, root, false)
}

/// `parse_response` for a line that `LineScan` found to be printable ASCII without a
/// backslash, given the offsets of its quotes: strings are read off the quote index instead
/// of being scanned for, so a 10 MiB text costs no pass over its bytes. `None` where the
/// line is anything but plain valid JSON; the caller then takes the general path, which
/// decides what the frame is.
pub fn parse_plain_response(frame: Bytes, quotes: &[usize]) -> Option<(u64, ResultTree)> {
  let mut parser = PlainParser {
    text: &frame,
    at: 0,
    quotes,
    next_quote: 0,
  };
  parser.skip_spaces();
  let root = parser.value(0)?;
  parser.skip_spaces();
  if parser.at != frame.len() || parser.next_quote != quotes.len() {
    return None;
  }
  response_of(frame, root, true)
}

/// The envelope rules both parses share: last `id`/`result` wins, a `method` or a non-null
/// `error` means this is not a result.
fn response_of(frame: Bytes, root: Node, ascii: bool) -> Option<(u64, ResultTree)> {
  let Node::Object(fields) = root else {
    return None;
  };
  let mut id = None;
  let mut result = None;
  for (key, value) in fields {
    let key = match &key {
      Text::Slice { start, len } => frame.get(*start..*start + *len)?,
      Text::Owned(s) => s.as_bytes(),
    };
    match key {
      b"method" => return None,
      b"error" if !matches!(value, Node::Null) => return None,
      b"id" => id = Some(value),
      b"result" => result = Some(value),
      _ => {}
    }
  }
  let id = match id? {
    Node::Number(n) if n >= 0.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => n as u64,
    _ => return None,
  };
  Some((
    id,
    ResultTree {
      frame,
      root: result?,
      ascii,
    },
  ))
}

/// Nesting beyond this goes to serde (whose own limit is 128), so the plain parser never
/// accepts what the general path would refuse.
const PLAIN_MAX_DEPTH: usize = 64;

/// A JSON parser for plain lines (see `parse_plain_response`): whitespace can only be
/// spaces, and each string ends at the next quote of the index.
struct PlainParser<'a> {
  text: &'a [u8],
  at: usize,
  quotes: &'a [usize],
  next_quote: usize,
}

impl PlainParser<'_> {
  fn peek(&self) -> Option<u8> {
    self.text.get(self.at).copied()
  }

  fn skip_spaces(&mut self) {
    while self.peek() == Some(b' ') {
      self.at += 1;
    }
  }

  fn eat(&mut self, byte: u8) -> Option<()> {
    (self.peek() == Some(byte)).then(|| self.at += 1)
  }

  fn literal(&mut self, word: &[u8], node: Node) -> Option<Node> {
    let end = self.at + word.len();
    (self.text.get(self.at..end) == Some(word)).then(|| {
      self.at = end;
      node
    })
  }

  fn value(&mut self, depth: usize) -> Option<Node> {
    match self.peek()? {
      b'{' => self.object(depth + 1),
      b'[' => self.array(depth + 1),
      b'"' => self.string().map(Node::Text),
      b't' => self.literal(b"true", Node::Bool(true)),
      b'f' => self.literal(b"false", Node::Bool(false)),
      b'n' => self.literal(b"null", Node::Null),
      b'-' | b'0'..=b'9' => self.number(),
      _ => None,
    }
  }

  fn string(&mut self) -> Option<Text> {
    let open = *self.quotes.get(self.next_quote)?;
    let close = *self.quotes.get(self.next_quote + 1)?;
    if open != self.at {
      return None;
    }
    self.next_quote += 2;
    self.at = close + 1;
    Some(Text::Slice {
      start: open + 1,
      len: close - open - 1,
    })
  }

  /// RFC 8259 number grammar, then the correctly rounded `f64` (as serde's float_roundtrip).
  fn number(&mut self) -> Option<Node> {
    let start = self.at;
    let digits = |p: &mut Self| {
      let from = p.at;
      while matches!(p.peek(), Some(b'0'..=b'9')) {
        p.at += 1;
      }
      p.at > from
    };
    let _ = self.eat(b'-');
    if self.eat(b'0').is_none() && !digits(self) {
      return None;
    }
    if self.eat(b'.').is_some() && !digits(self) {
      return None;
    }
    if matches!(self.peek(), Some(b'e' | b'E')) {
      self.at += 1;
      if matches!(self.peek(), Some(b'+' | b'-')) {
        self.at += 1;
      }
      if !digits(self) {
        return None;
      }
    }
    let text = std::str::from_utf8(&self.text[start..self.at]).ok()?;
    // serde refuses what overflows to infinity; so must we.
    let n = text.parse::<f64>().ok().filter(|n| n.is_finite())?;
    Some(Node::Number(n))
  }

  fn array(&mut self, depth: usize) -> Option<Node> {
    if depth > PLAIN_MAX_DEPTH {
      return None;
    }
    self.eat(b'[')?;
    let mut items = Vec::new();
    self.skip_spaces();
    if self.eat(b']').is_some() {
      return Some(Node::Array(items));
    }
    loop {
      self.skip_spaces();
      items.push(self.value(depth)?);
      self.skip_spaces();
      if self.eat(b']').is_some() {
        return Some(Node::Array(items));
      }
      self.eat(b',')?;
    }
  }

  fn object(&mut self, depth: usize) -> Option<Node> {
    if depth > PLAIN_MAX_DEPTH {
      return None;
    }
    self.eat(b'{')?;
    let mut fields = Vec::new();
    self.skip_spaces();
    if self.eat(b'}').is_some() {
      return Some(Node::Object(fields));
    }
    loop {
      self.skip_spaces();
      let key = self.string()?;
      self.skip_spaces();
      self.eat(b':')?;
      self.skip_spaces();
      fields.push((key, self.value(depth)?));
      self.skip_spaces();
      if self.eat(b'}').is_some() {
        return Some(Node::Object(fields));
      }
      self.eat(b',')?;
    }
  }
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

  fn plain(text: &str) -> Option<(u64, ResultTree)> {
    let mut scan = crate::protocol::line_scan::LineScan::default();
    scan.feed(text.as_bytes());
    parse_plain_response(Bytes::copy_from_slice(text.as_bytes()), scan.quotes()?)
  }

  /// A tree as comparable text: the general path's and the plain path's must agree.
  fn render(tree: &ResultTree, node: &Node) -> String {
    match node {
      Node::Null => "null".into(),
      Node::Bool(b) => b.to_string(),
      Node::Number(n) => format!("{:?}", n.to_bits()),
      Node::Text(t) => format!("{:?}", tree.text(t)),
      Node::Array(items) => {
        let items: Vec<String> = items.iter().map(|i| render(tree, i)).collect();
        format!("[{}]", items.join(","))
      }
      Node::Object(fields) => {
        let fields: Vec<String> = fields
          .iter()
          .map(|(k, v)| format!("{:?}:{}", tree.text(k), render(tree, v)))
          .collect();
        format!("{{{}}}", fields.join(","))
      }
    }
  }

  #[test]
  fn the_plain_parser_reads_what_serde_reads_and_refuses_the_rest() {
    let results = [
      r#"{"a":"xyz","b":[1,-2,3.5e2,0.25,-0,1E+2,18446744073709551617,1e-400],"c":{}}"#,
      r#" { "k" : [ true , false , null , [ ] , { } ] , "" : "" } "#,
      r#"["dup",{"x":1,"x":2}]"#,
      r#""just a string""#,
      r#"123456789012345678901234567890"#,
    ];
    for result in results {
      for text in [
        format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result}}}"#),
        format!(r#"{{"result":{result},"id":3,"error":null,"id":4}}"#),
      ] {
        let (id, general) = parse(&text).unwrap();
        let (plain_id, fast) = plain(&text).unwrap_or_else(|| panic!("plain refused {text}"));
        assert_eq!(id, plain_id);
        assert_eq!(
          render(&general, &general.root),
          render(&fast, &fast.root),
          "{text}"
        );
        assert!(fast.ascii && !general.ascii);
      }
    }
    let refused = [
      r#"{"jsonrpc":"2.0","id":1,"result":01}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":1.}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":.5}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":1e}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":-}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":1e400}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":[1,]}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,}}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{"a" 1}}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":tru}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{}} x"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{}}{}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":"a"b"}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{"a":"}"#,
      r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{},"method":"m"}"#,
      r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
    ];
    for text in refused {
      assert!(plain(text).is_none(), "plain accepted {text}");
      assert!(parse(text).is_none(), "serde accepted {text}");
    }
    let deep = format!(
      r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
      "[".repeat(100),
      "]".repeat(100)
    );
    assert!(plain(&deep).is_none() && parse(&deep).is_some());
  }
}
