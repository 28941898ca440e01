//! Recognises a notification from its envelope alone, without checking its params: most of
//! a flood is notifications nothing in Rust acts on (logging, resource updates), and the
//! host's `JSON.parse` reads each one's params anyway. That parse is also what rejects
//! params that are not JSON, which skips the message as before (S3).
//!
//! Only a plain envelope qualifies, and everything in it but the params is checked here:
//! an object whose keys are strings without escapes or control characters, a `method`
//! string of the same kind, no id (or a `null` one), params that are an object or an array,
//! and other members whose values are plain strings (`"jsonrpc": "2.0"`). Anything else
//! takes the full parse (`message::classify`).

/// A plain notification: its method, and the text of its params (not checked).
#[derive(Debug, PartialEq)]
pub struct PlainNotification<'a> {
  pub method: &'a str,
  pub params: Option<&'a str>,
}

/// `frame` as a plain notification, if it is one (see the module's docs).
pub fn plain_notification(frame: &str) -> Option<PlainNotification<'_>> {
  let bytes = frame.as_bytes();
  let mut at = skip_space(bytes, 0);
  if bytes.get(at) != Some(&b'{') {
    return None;
  }
  let mut method = None;
  let mut params = None;
  loop {
    at = skip_space(bytes, at + 1);
    let (key, after_key) = plain_string(bytes, at)?;
    at = skip_space(bytes, after_key);
    if bytes.get(at) != Some(&b':') {
      return None;
    }
    at = skip_space(bytes, at + 1);
    // A repeated method or params is left to the full parse.
    at = match key {
      b"method" if method.is_none() => {
        let (name, after) = plain_string(bytes, at)?;
        // The quotes sit on ASCII bytes, so these are char boundaries of `frame`.
        method = Some(&frame[at + 1..at + 1 + name.len()]);
        after
      }
      b"params" if params.is_none() => {
        let end = skip_container(bytes, at)?;
        params = Some(&frame[at..end]);
        end
      }
      b"id" if bytes[at..].starts_with(b"null") => at + 4,
      b"method" | b"params" | b"id" => return None,
      _ => plain_string(bytes, at)?.1,
    };
    at = skip_space(bytes, at);
    match bytes.get(at) {
      Some(b',') => {}
      Some(b'}') => break,
      _ => return None,
    }
  }
  if skip_space(bytes, at + 1) != bytes.len() {
    return None;
  }
  Some(PlainNotification {
    method: method?,
    params,
  })
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
  while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
    at += 1;
  }
  at
}

/// The contents of the string at `at` and the index after it, if it has neither escapes
/// nor control characters (which JSON does not allow unescaped).
fn plain_string(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
  if bytes.get(at) != Some(&b'"') {
    return None;
  }
  let rest = bytes.get(at + 1..)?;
  let end = memchr::memchr2(b'"', b'\\', rest)?;
  let contents = &rest[..end];
  let plain = rest[end] == b'"' && contents.iter().all(|&b| b >= 0x20);
  plain.then_some((contents, at + 1 + end + 1))
}

/// The index after the object or array that opens at `at`: its matching bracket, with
/// strings and their escapes skipped. Its contents are not checked.
fn skip_container(bytes: &[u8], at: usize) -> Option<usize> {
  if !matches!(bytes.get(at), Some(b'{' | b'[')) {
    return None;
  }
  let mut depth = 0usize;
  let mut i = at;
  while let Some(&byte) = bytes.get(i) {
    match byte {
      b'"' => {
        i = skip_string(bytes, i)?;
        continue;
      }
      b'{' | b'[' => depth += 1,
      b'}' | b']' => {
        depth -= 1;
        if depth == 0 {
          return Some(i + 1);
        }
      }
      _ => {}
    }
    i += 1;
  }
  None
}

/// The index after the string that opens at `at`, its escapes skipped.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
  let mut i = at + 1;
  loop {
    i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
    if bytes[i] == b'"' {
      return Some(i + 1);
    }
    i += 2;
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn method_of(frame: &str) -> Option<&str> {
    plain_notification(frame).map(|plain| plain.method)
  }

  #[test]
  fn plain_notifications_are_recognised_with_their_params_text() {
    let line = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a}\"b"}}"#;
    assert_eq!(
      plain_notification(line),
      Some(PlainNotification {
        method: "notifications/message",
        params: Some(r#"{"level":"info","data":"a}\"b"}"#),
      })
    );
    let spaced = r#" { "method" : "a/b" , "id" : null , "params" : [ 1, "x\"]}", {"k":[]} ] } "#;
    assert_eq!(
      plain_notification(spaced).and_then(|p| p.params),
      Some(r#"[ 1, "x\"]}", {"k":[]} ]"#)
    );
    assert_eq!(
      plain_notification(r#"{"method":"x"}"#),
      Some(PlainNotification {
        method: "x",
        params: None
      })
    );
    // Params are only skipped: the host's parse rejects them, and the message with them (S3).
    assert_eq!(method_of(r#"{"method":"x","params":{"a":tru}}"#), Some("x"));
  }

  #[test]
  fn anything_else_takes_the_full_parse() {
    for frame in [
      r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
      r#"{"id":"1","method":"ping"}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
      r#"{"params":{}}"#,
      r#"{"method":1}"#,
      r#"{"method":"a\u0062"}"#,
      r#"{"meth\u006fd":"a"}"#,
      "{\"method\":\"a\tb\"}",
      "{\"jsonrpc\":\"2.\n0\",\"method\":\"a\"}",
      r#"{"method":"a","jsonrpc":2}"#,
      r#"{"method":"a","jsonrpc":tru}"#,
      r#"{"method":"a","_meta":{}}"#,
      r#"{"method":"a","params":"text"}"#,
      r#"{"method":"a","params":null}"#,
      r#"{"method":"a","method":"b"}"#,
      r#"{"method":"a","params":{},"params":{}}"#,
      r#"{"method":"a"} x"#,
      r#"{"method":"a","params":{"open":[1,2}"#,
      r#"{"method":"a","params":{"a":1}},"x":{}}"#,
      r#"{"method":"a","params":{"unterminated}"#,
      r#"{"method":"a",}"#,
      r#"{"method":"a""params":1}"#,
      r#"[{"method":"a"}]"#,
      r#"{}"#,
      "",
      "{",
      r#"{"method""#,
      r#"{"method":"a","id":nul}"#,
      r#"{"method":"a","id":nullx}"#,
    ] {
      assert_eq!(plain_notification(frame), None, "{frame}");
    }
  }

  #[test]
  fn never_disagrees_with_the_full_parse_on_valid_json() {
    use crate::protocol::message::{classify, Incoming};
    for frame in [
      r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a,b}c"}}"#,
      r#"{"jsonrpc":"2.0","method":"x","id":null,"params":[]}"#,
      r#"{"jsonrpc":"2.0","method":"x","params":[true,false,null,-1.5e3,"\\",{"]":"["}]}"#,
      r#"{"method":"é/ü","params":{"ключ":"значение"}}"#,
    ] {
      let Ok(Incoming::Notification { method, params }) = classify(frame) else {
        panic!("{frame} is a notification");
      };
      let plain = plain_notification(frame).expect(frame);
      assert_eq!(plain.method, method, "{frame}");
      assert_eq!(plain.params, params.as_deref().map(|p| p.get()), "{frame}");
    }
  }
}
