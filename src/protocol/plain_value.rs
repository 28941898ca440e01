//! Checks a JSON value written the way servers write results (no whitespace, no escapes or
//! control characters in strings, nesting at most `MAX_DEPTH` deep) in one pass over its
//! bytes, several times faster than serde_json's general check on such a value. A value
//! outside that subset is not judged here: `None` means "ask serde_json", never "invalid".

/// Deeper values go to serde_json, whose own limit is 128.
const MAX_DEPTH: u32 = 64;

/// The length of the JSON value `text` starts with, if it is in the plain subset. Whatever
/// follows the value is not looked at.
pub fn plain_value_len(text: &[u8]) -> Option<usize> {
  let mut at = 0;
  // Bit `i` of `objects`: whether the container `i + 1` levels up is an object.
  let mut objects: u64 = 0;
  let mut depth = 0;
  loop {
    // A value starts at `at`.
    match *text.get(at)? {
      open @ (b'{' | b'[') => {
        let object = open == b'{';
        let close = if object { b'}' } else { b']' };
        at += 1;
        if text.get(at) == Some(&close) {
          at += 1;
        } else {
          if depth == MAX_DEPTH {
            return None;
          }
          depth += 1;
          objects = (objects << 1) | u64::from(object);
          if object {
            at = key_end(text, at)?;
          }
          continue;
        }
      }
      b'"' => at = string_end(text, at)?,
      b't' => at = literal_end(text, at, b"true")?,
      b'f' => at = literal_end(text, at, b"false")?,
      b'n' => at = literal_end(text, at, b"null")?,
      b'-' | b'0'..=b'9' => at = number_end(text, at)?,
      _ => return None,
    }
    // A value ended at `at`: close what it completes, or go on to the next member.
    loop {
      if depth == 0 {
        return Some(at);
      }
      let object = objects & 1 == 1;
      match *text.get(at)? {
        b',' => {
          at += 1;
          if object {
            at = key_end(text, at)?;
          }
          break;
        }
        b'}' if object => {}
        b']' if !object => {}
        _ => return None,
      }
      at += 1;
      depth -= 1;
      objects >>= 1;
    }
  }
}

/// After a member's key and its colon.
fn key_end(text: &[u8], at: usize) -> Option<usize> {
  if text.get(at) != Some(&b'"') {
    return None;
  }
  let at = string_end(text, at)?;
  (text.get(at) == Some(&b':')).then_some(at + 1)
}

/// After the string opening at `at`, if it has no escape and no control character.
fn string_end(text: &[u8], at: usize) -> Option<usize> {
  let mut from = at + 1;
  // Eight bytes at a time while eight are left, wherever the string ends among them.
  while let Some(word) = text.get(from..from + 8) {
    let word = u64::from_le_bytes(word.try_into().ok()?);
    let stops = zero_bytes(word ^ (ONES * u64::from(b'"')))
      | zero_bytes(word ^ (ONES * u64::from(b'\\')))
      | (word.wrapping_sub(ONES * 0x20) & !word & HIGH_BITS);
    if stops != 0 {
      // The lowest flagged byte is exact; only bytes above it can be flagged wrongly.
      let stop = from + (stops.trailing_zeros() / 8) as usize;
      return (text[stop] == b'"').then_some(stop + 1);
    }
    from += 8;
  }
  let len = text[from..]
    .iter()
    .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
  (text[from + len] == b'"').then_some(from + len + 1)
}

const ONES: u64 = u64::from_le_bytes([1; 8]);
const HIGH_BITS: u64 = ONES * 0x80;

/// The high bit of each zero byte of `word` set (and maybe of bytes above the lowest one).
fn zero_bytes(word: u64) -> u64 {
  word.wrapping_sub(ONES) & !word & HIGH_BITS
}

fn literal_end(text: &[u8], at: usize, literal: &[u8]) -> Option<usize> {
  text[at..]
    .starts_with(literal)
    .then_some(at + literal.len())
}

/// After the number at `at`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn number_end(text: &[u8], mut at: usize) -> Option<usize> {
  let digits = |from: usize| {
    text[from..]
      .iter()
      .take_while(|b| b.is_ascii_digit())
      .count()
  };
  if text[at] == b'-' {
    at += 1;
  }
  match text.get(at)? {
    // JSON writes no leading zero.
    b'0' if text.get(at + 1).is_some_and(u8::is_ascii_digit) => return None,
    b'0' => at += 1,
    b'1'..=b'9' => at += digits(at),
    _ => return None,
  }
  if text.get(at) == Some(&b'.') {
    let fraction = digits(at + 1);
    if fraction == 0 {
      return None;
    }
    at += 1 + fraction;
  }
  if matches!(text.get(at), Some(b'e' | b'E')) {
    at += 1;
    if matches!(text.get(at), Some(b'+' | b'-')) {
      at += 1;
    }
    let exponent = digits(at);
    if exponent == 0 {
      return None;
    }
    at += exponent;
  }
  Some(at)
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde::Deserialize;
  use serde_json::value::RawValue;

  /// serde_json's verdict: the length of the value `text` starts with.
  fn serde_len(text: &str) -> Option<usize> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = <&RawValue>::deserialize(&mut reader).ok()?;
    (value.get().as_ptr() == text.as_ptr()).then_some(value.get().len())
  }

  fn check(text: &str) {
    if let Some(len) = plain_value_len(text.as_bytes()) {
      assert_eq!(Some(len), serde_len(text), "{text:?}");
    }
  }

  #[test]
  fn reads_what_servers_write() {
    for (text, len) in [
      (r#"{"content":[{"text":"hello","type":"text"}]}"#, 44),
      (r#"{"content":[],"isError":false}"#, 30),
      (
        r#"{"a":{},"b":[],"c":null,"d":true,"e":-0.5e+10,"f":"é ☃ 😀"}"#,
        64,
      ),
      ("0", 1),
      ("-12.25E-3,", 9),
      (r#""x"}"#, 3),
      ("[[[1,2],[3]],{}]", 16),
    ] {
      assert_eq!(plain_value_len(text.as_bytes()), Some(len), "{text:?}");
      check(text);
    }
  }

  #[test]
  fn leaves_the_rest_to_serde() {
    for text in [
      r#"{"a":"\n"}"#,
      "{\"a\":\"\u{1}\"}",
      r#"{ "a":1}"#,
      "[1 ]",
      r#"{"a"}"#,
      r#"{"a":}"#,
      "[1,]",
      r#"{"a":1,}"#,
      "01",
      "-",
      "1.",
      "1e",
      "1e+",
      ".5",
      "tru",
      "nul",
      "[",
      "{",
      r#""open"#,
      "[1}",
      r#"{"a":1]"#,
      "",
      "+1",
      "NaN",
    ] {
      assert_eq!(plain_value_len(text.as_bytes()), None, "{text:?}");
      check(text);
    }
  }

  /// Strings around the eight-byte steps, a stop at each place, bytes above 0x7f too.
  #[test]
  fn strings_end_where_their_quote_is() {
    for len in 0..40 {
      for tail in ["", "}", ",\"id\":12345678901}"] {
        let body: String = (0..len)
          .map(|i| if i % 5 == 4 { 'é' } else { 'a' })
          .collect();
        let text = format!("\"{body}\"{tail}");
        assert_eq!(
          plain_value_len(text.as_bytes()),
          Some(body.len() + 2),
          "{text:?}"
        );
        check(&text);
        for at in 0..body.len() {
          if !body.is_char_boundary(at) {
            continue;
          }
          for stop in ['\\', '\u{0}', '\u{1f}', '"'] {
            let mut cut = body.clone();
            cut.insert(at, stop);
            let text = format!("\"{cut}\"{tail}");
            let expected = (stop == '"').then_some(at + 2);
            assert_eq!(plain_value_len(text.as_bytes()), expected, "{text:?}");
            check(&text);
          }
        }
      }
    }
  }

  #[test]
  fn depth_stops_below_serdes_limit() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    // The innermost `[]` is empty: 65 brackets nest 64 containers.
    assert_eq!(plain_value_len(nested(65).as_bytes()), Some(130));
    assert_eq!(plain_value_len(nested(66).as_bytes()), None);
    assert_eq!(serde_len(&nested(66)), Some(132));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(64), "}".repeat(64));
    assert_eq!(plain_value_len(objects.as_bytes()), Some(objects.len()));
  }

  /// Random texts from JSON's tokens and some that break it: whatever the scanner accepts,
  /// serde_json accepts with the same length.
  #[test]
  fn never_accepts_what_serde_refuses() {
    const PIECES: [&str; 24] = [
      "{", "}", "[", "]", ",", ":", "\"", "\"k\"", "\"v\":", "1", "0", "-", ".", "e", "+", "23",
      "true", "false", "null", " ", "\\", "\u{1f}", "é", "x",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      state
    };
    let mut accepted = 0;
    for _ in 0..200_000 {
      let len = 1 + next() % 12;
      let text: String = (0..len)
        .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
        .collect();
      if plain_value_len(text.as_bytes()).is_some() {
        accepted += 1;
      }
      check(&text);
    }
    // The generator reaches the accepting paths, not only the refusals.
    assert!(accepted > 5_000, "{accepted}");
  }

  /// Compact values serde_json writes without escapes are all plain.
  #[test]
  fn accepts_what_serde_writes() {
    let values = serde_json::json!([
      {"content": [{"type": "text", "text": "hello"}], "isError": false},
      {"tools": [{"name": "a", "inputSchema": {"type": "object", "properties": {}}}]},
      [1, -2, 3.5, 1e300, -0.0, null, true, false, "", [], {}],
    ]);
    for value in values.as_array().into_iter().flatten() {
      let text = value.to_string();
      assert_eq!(plain_value_len(text.as_bytes()), Some(text.len()), "{text}");
    }
  }
}
