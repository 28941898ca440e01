//! A53 `readMcpJsonRpcResponse`: the answer to one request, picked out of a JSON or SSE
//! body. Notifications and server requests are passed over, answers to other ids noted; a
//! message that is not JSON-RPC fails the whole body, as the agent's reader has it.
use serde_json::{Map, Value as Json};

use super::sse::{SseItem, SseParser};

/// The largest SSE event kept: as large as one message may be on any transport (64 MiB).
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectError {
  /// A `SyntaxError` with this message.
  Malformed(&'static str),
  /// An event-stream answer without a body.
  NoBody,
  /// The body ended; it answered other requests only.
  Unmatched,
  /// The body ended without any answer.
  NoAnswer,
}

impl SelectError {
  pub fn message(self) -> &'static str {
    match self {
      SelectError::Malformed(message) => message,
      SelectError::NoBody => "MCP SSE response did not include a body",
      SelectError::Unmatched => "MCP response ID did not match request ID",
      SelectError::NoAnswer => "MCP response did not include a result or error",
    }
  }

  /// Whether JS sees a `SyntaxError` (else a plain `Error`).
  pub fn is_syntax(self) -> bool {
    matches!(self, SelectError::Malformed(_))
  }
}

const MESSAGE: SelectError = SelectError::Malformed("Malformed JSON-RPC message");
const REQUEST: SelectError = SelectError::Malformed("Malformed JSON-RPC request");
const RESPONSE: SelectError = SelectError::Malformed("Malformed JSON-RPC response");
const ERROR_RESPONSE: SelectError = SelectError::Malformed("Malformed JSON-RPC error response");

fn is_id(value: &Json) -> bool {
  value.is_string() || value.is_number()
}

/// One message: `None` for a request or notification, else the answer reduced to
/// `{jsonrpc, id, result}` or `{jsonrpc, id, error: {code, message, data?}}`.
pub fn decode(message: &Json) -> Result<Option<Map<String, Json>>, SelectError> {
  let Some(fields) = message.as_object() else {
    return Err(MESSAGE);
  };
  if fields.get("jsonrpc") != Some(&Json::from("2.0")) {
    return Err(MESSAGE);
  }
  let result = fields.get("result");
  let error = fields.get("error");
  if let Some(method) = fields.get("method") {
    let bad_id = fields.get("id").is_some_and(|id| !is_id(id));
    let bad_params = fields
      .get("params")
      .is_some_and(|p| !p.is_object() && !p.is_array());
    if !method.is_string() || result.is_some() || error.is_some() || bad_id || bad_params {
      return Err(REQUEST);
    }
    return Ok(None);
  }
  let id = fields.get("id").filter(|id| is_id(id)).ok_or(RESPONSE)?;
  let mut answer = Map::new();
  answer.insert("jsonrpc".into(), Json::from("2.0"));
  answer.insert("id".into(), id.clone());
  match (result, error) {
    (Some(result), None) => {
      answer.insert("result".into(), result.clone());
    }
    (None, Some(error)) => {
      let error = error.as_object().ok_or(ERROR_RESPONSE)?;
      let code = error.get("code").filter(|c| c.is_number());
      let message = error.get("message").filter(|m| m.is_string());
      let (Some(code), Some(message)) = (code, message) else {
        return Err(ERROR_RESPONSE);
      };
      let mut reduced = Map::new();
      reduced.insert("code".into(), code.clone());
      reduced.insert("message".into(), message.clone());
      if let Some(data) = error.get("data") {
        reduced.insert("data".into(), data.clone());
      }
      answer.insert("error".into(), Json::Object(reduced));
    }
    _ => return Err(RESPONSE),
  }
  Ok(Some(answer))
}

/// Ids compared as JS's `===` compares a string or a number.
fn same_id(a: &Json, b: &Json) -> bool {
  match (a, b) {
    (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
    (Json::String(x), Json::String(y)) => x == y,
    _ => false,
  }
}

enum Body {
  Events(SseParser),
  Json(Vec<u8>),
}

/// Reads one body, chunk by chunk, until the answer to `expected` is in it.
pub struct ResponseSelector {
  /// The request's id; one that is neither a string nor a number matches nothing.
  expected: Json,
  saw_unmatched: bool,
  body: Body,
  /// An SSE `[DONE]` was read: nothing after it counts.
  done: bool,
}

impl ResponseSelector {
  /// `content_type` decides how the body is read: events when it names
  /// `text/event-stream`, one JSON value otherwise.
  pub fn new(expected: Json, content_type: Option<&str>) -> Self {
    let events = content_type.is_some_and(|t| t.to_ascii_lowercase().contains("text/event-stream"));
    let body = if events {
      Body::Events(SseParser::new(MAX_EVENT_BYTES))
    } else {
      Body::Json(Vec::new())
    };
    ResponseSelector {
      expected,
      saw_unmatched: false,
      body,
      done: false,
    }
  }

  pub fn is_event_stream(&self) -> bool {
    matches!(self.body, Body::Events(_))
  }

  /// The answer as JSON text once `chunk` completes it (reading may stop then).
  pub fn push(&mut self, chunk: &[u8]) -> Result<Option<String>, SelectError> {
    if self.done {
      return Ok(None);
    }
    let parser = match &mut self.body {
      Body::Json(bytes) => {
        bytes.extend_from_slice(chunk);
        return Ok(None);
      }
      Body::Events(parser) => parser,
    };
    let mut items = Vec::new();
    parser.push(chunk, &mut items);
    for item in items {
      let SseItem::Event(event) = item else {
        continue;
      };
      if event.data.is_empty() {
        continue;
      }
      if event.data == "[DONE]" {
        self.done = true;
        return Ok(None);
      }
      let payload: Json = serde_json::from_str(&event.data).map_err(|_| MESSAGE)?;
      if let Some(answer) = self.select(&payload)? {
        return Ok(Some(answer));
      }
    }
    Ok(None)
  }

  /// The body ended: the answer a JSON body holds, else why there is none.
  pub fn finish(&mut self) -> Result<String, SelectError> {
    if let Body::Json(bytes) = &self.body {
      let payload: Json = serde_json::from_slice(bytes).map_err(|_| MESSAGE)?;
      if let Some(answer) = self.select(&payload)? {
        return Ok(answer);
      }
    }
    Err(if self.saw_unmatched {
      SelectError::Unmatched
    } else {
      SelectError::NoAnswer
    })
  }

  /// A message or a batch: the first answer to the expected id.
  fn select(&mut self, payload: &Json) -> Result<Option<String>, SelectError> {
    let messages = match payload {
      Json::Array(messages) => messages.as_slice(),
      single => std::slice::from_ref(single),
    };
    for message in messages {
      let Some(answer) = decode(message)? else {
        continue;
      };
      if answer
        .get("id")
        .is_some_and(|id| same_id(id, &self.expected))
      {
        return Ok(Some(Json::Object(answer).to_string()));
      }
      self.saw_unmatched = true;
    }
    Ok(None)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn events(expected: Json) -> ResponseSelector {
    ResponseSelector::new(expected, Some("Text/Event-Stream; charset=utf-8"))
  }

  fn answer(text: Option<String>) -> Json {
    serde_json::from_str(&text.expect("an answer")).expect("JSON")
  }

  #[test]
  fn a53_json_body_answer_is_reduced_to_the_envelope() {
    let mut s = ResponseSelector::new(json!(7), Some("application/json"));
    assert!(!s.is_event_stream());
    let body = br#"{"jsonrpc":"2.0","id":7,"result":{"b":1,"a":2},"extra":true}"#;
    assert_eq!(s.push(&body[..10]), Ok(None));
    assert_eq!(s.push(&body[10..]), Ok(None));
    let text = s.finish().expect("answer");
    assert_eq!(text, r#"{"jsonrpc":"2.0","id":7,"result":{"b":1,"a":2}}"#);
  }

  #[test]
  fn a53_sse_skips_notifications_requests_and_other_ids_then_stops_at_the_match() {
    let mut s = events(json!("abc"));
    let stream = concat!(
      ": comment\n\n",
      "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
      "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n\n",
      "data: {\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{}}\n\n",
      "data:\n\n",
      "data: {\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"error\":{\"code\":-32000,\"message\":\"no\",\"data\":null,\"x\":1}}\n\n",
    );
    let (head, tail) = stream.split_at(40);
    assert_eq!(s.push(head.as_bytes()), Ok(None));
    let got = answer(s.push(tail.as_bytes()).expect("no failure"));
    assert_eq!(
      got,
      json!({"jsonrpc":"2.0","id":"abc","error":{"code":-32000,"message":"no","data":null}})
    );
  }

  #[test]
  fn a53_an_id_matches_only_as_js_strict_equality_does() {
    let mut s = events(json!(1));
    let frame = b"data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":0}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1.0,\"result\":1}\n\n";
    assert_eq!(answer(s.push(frame).expect("ok"))["result"], json!(1));
  }

  #[test]
  fn a53_a_batch_answers_with_its_first_match() {
    let mut s = ResponseSelector::new(json!(2), None);
    s.push(br#"[{"jsonrpc":"2.0","id":1,"result":"one"},{"jsonrpc":"2.0","id":2,"result":"two"}]"#)
      .expect("ok");
    assert_eq!(
      answer(Some(s.finish().expect("ok")))["result"],
      json!("two")
    );
  }

  #[test]
  fn a53_the_end_says_whether_other_requests_were_answered() {
    let mut other = events(json!(1));
    other
      .push(b"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n")
      .expect("ok");
    assert_eq!(other.finish(), Err(SelectError::Unmatched));
    assert_eq!(
      other.finish().unwrap_err().message(),
      "MCP response ID did not match request ID"
    );
    let mut none = events(json!(1));
    none
      .push(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n")
      .expect("ok");
    assert_eq!(
      none.finish().unwrap_err().message(),
      "MCP response did not include a result or error"
    );
  }

  #[test]
  fn a53_done_ends_the_stream() {
    let mut s = events(json!(1));
    let stream = b"data: [DONE]\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
    assert_eq!(s.push(stream), Ok(None));
    assert_eq!(s.finish(), Err(SelectError::NoAnswer));
  }

  #[test]
  fn a53_malformed_messages_fail_the_body_with_the_agents_words() {
    let cases: [(&str, &str); 9] = [
      ("not json", "Malformed JSON-RPC message"),
      ("[1]", "Malformed JSON-RPC message"),
      (r#"{"id":1,"result":{}}"#, "Malformed JSON-RPC message"),
      (
        r#"{"jsonrpc":"2.0","method":3}"#,
        "Malformed JSON-RPC request",
      ),
      (
        r#"{"jsonrpc":"2.0","method":"m","params":1}"#,
        "Malformed JSON-RPC request",
      ),
      (
        r#"{"jsonrpc":"2.0","method":"m","id":{}}"#,
        "Malformed JSON-RPC request",
      ),
      (r#"{"jsonrpc":"2.0","id":1}"#, "Malformed JSON-RPC response"),
      (
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
        "Malformed JSON-RPC response",
      ),
      (
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
        "Malformed JSON-RPC error response",
      ),
    ];
    for (data, message) in cases {
      let mut s = events(json!(1));
      let frame = format!("data: {data}\n\n");
      let error = s.push(frame.as_bytes()).expect_err(data);
      assert_eq!(
        (error.message(), error.is_syntax()),
        (message, true),
        "{data}"
      );
      let mut j = ResponseSelector::new(json!(1), Some("application/json"));
      j.push(data.as_bytes()).expect("buffered");
      assert_eq!(j.finish().expect_err(data).message(), message, "{data}");
    }
    let mut empty = ResponseSelector::new(json!(1), None);
    assert_eq!(empty.finish(), Err(MESSAGE));
    assert!(!SelectError::NoBody.is_syntax());
    assert_eq!(
      SelectError::NoBody.message(),
      "MCP SSE response did not include a body"
    );
  }
}
