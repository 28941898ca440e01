//! Classifies one incoming frame and builds outgoing ones.
//!
//! Only what correlation needs (id, method, error) is parsed; `params` and `result` stay raw
//! JSON text, because handing text to V8's `JSON.parse` beats building JS objects through napi.
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::json_text::JsonText;

/// One incoming JSON-RPC message, as the session needs it.
#[derive(Debug)]
pub enum Incoming {
  /// A response to one of our requests. An id we could not have sent is `None` and
  /// matches nothing (T5).
  Response {
    id: Option<WireId>,
    outcome: Result<JsonText, RpcError>,
  },
  /// T6
  Notification {
    method: String,
    params: Option<Box<RawValue>>,
  },
  /// T11: a server-to-client request. The id is echoed back verbatim.
  Request {
    id: Box<RawValue>,
    method: String,
    params: Option<Box<RawValue>>,
  },
}

/// A7: a response id in a shape we send: an integer, or (`requestIdFormat: "string"`) 16
/// lowercase hex digits. Which one a session expects is its own business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireId {
  Number(u64),
  Hex(u64),
}

impl WireId {
  /// An id as it appears in a frame (raw JSON), if it is one of the two shapes.
  pub fn parse(raw: &str) -> Option<WireId> {
    our_id(raw)
      .map(WireId::Number)
      .or_else(|| hex_id(raw).map(WireId::Hex))
  }
}

/// A7: the JSON text of a `"string"`-format id.
pub fn hex_id_json(value: u64) -> String {
  IdJson::hex(value).as_str().to_owned()
}

/// A request id's JSON text, kept inline: one is made for every request.
#[derive(Clone, Copy)]
pub struct IdJson {
  bytes: [u8; 20],
  start: usize,
  end: usize,
}

impl IdJson {
  /// A plain number: at most 20 digits, written from the right.
  pub fn number(mut value: u64) -> IdJson {
    let mut id = IdJson {
      bytes: [0; 20],
      start: 20,
      end: 20,
    };
    loop {
      id.start -= 1;
      id.bytes[id.start] = b'0' + (value % 10) as u8;
      value /= 10;
      if value == 0 {
        break id;
      }
    }
  }

  /// A7: 16 lowercase hex digits in quotes.
  pub fn hex(value: u64) -> IdJson {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = IdJson {
      bytes: [b'"'; 20],
      start: 0,
      end: 18,
    };
    for (i, byte) in id.bytes[1..17].iter_mut().enumerate() {
      *byte = HEX[((value >> (60 - 4 * i)) & 0xf) as usize];
    }
    id
  }

  pub fn as_str(&self) -> &str {
    // Only ASCII digits and quotes are ever written.
    std::str::from_utf8(&self.bytes[self.start..self.end]).unwrap_or_default()
  }
}

fn hex_id(raw: &str) -> Option<u64> {
  let digits = raw.strip_prefix('"')?.strip_suffix('"')?;
  let lowercase_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
  (digits.len() == 16 && digits.bytes().all(|b| lowercase_hex(&b)))
    .then(|| u64::from_str_radix(digits, 16).ok())
    .flatten()
}

#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
  pub code: i64,
  pub message: String,
  /// Raw JSON text of `error.data`.
  pub data: Option<String>,
}

/// Why a frame was skipped (S3).
#[derive(Debug, PartialEq)]
pub enum Skipped {
  NotJson,
  NotJsonRpc,
}

/// The fields correlation needs. Read key by key, not derived: derive rejects a frame whose
/// key repeats, where `JSON.parse` (the agent, and the large-result tree) keeps the last
/// value; and derive reads a struct from a JSON array too (`[7,"ping"]` as a ping request).
#[derive(Default)]
struct Envelope<'a> {
  /// Kept even when `null`, to be told apart from a missing id.
  id: Option<&'a RawValue>,
  method: Option<String>,
  params: Option<&'a RawValue>,
  /// `Some` for `"result": null` too: that is a result.
  result: Option<&'a RawValue>,
  error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum EnvelopeField {
  Id,
  Method,
  Params,
  Result,
  Error,
  #[serde(other)]
  Other,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct Fields;
    impl<'de> Visitor<'de> for Fields {
      type Value = Envelope<'de>;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
      }
      fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut envelope = Envelope::default();
        // Typed once the last value is known: an earlier one of the wrong type is no error.
        let mut method: Option<&RawValue> = None;
        while let Some(field) = map.next_key()? {
          match field {
            EnvelopeField::Id => envelope.id = Some(map.next_value()?),
            EnvelopeField::Method => method = Some(map.next_value()?),
            // `"params": null` reaches JS as `null`, as in the agent, not as no params.
            EnvelopeField::Params => envelope.params = Some(map.next_value()?),
            EnvelopeField::Result => envelope.result = Some(map.next_value()?),
            EnvelopeField::Error => envelope.error = map.next_value()?,
            EnvelopeField::Other => {
              map.next_value::<IgnoredAny>()?;
            }
          }
        }
        envelope.method = typed(method)?;
        Ok(envelope)
      }
    }
    deserializer.deserialize_map(Fields)
  }
}

/// The last raw value of a field as its type (`null` is `None`).
fn typed<T: serde::de::DeserializeOwned, E: serde::de::Error>(
  raw: Option<&RawValue>,
) -> Result<Option<T>, E> {
  match raw {
    Some(raw) => serde_json::from_str(raw.get()).map_err(E::custom),
    None => Ok(None),
  }
}

/// An error object, read like `Envelope` and for the same reasons.
struct ErrorObject<'a> {
  code: Option<serde_json::Number>,
  message: Option<String>,
  /// T4: `"data": null` reaches JS as `null`, as in the agent, not as no data.
  data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ErrorField {
  Code,
  Message,
  Data,
  #[serde(other)]
  Other,
}

impl<'de> Deserialize<'de> for ErrorObject<'de> {
  fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    struct Fields;
    impl<'de> Visitor<'de> for Fields {
      type Value = ErrorObject<'de>;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC error object")
      }
      fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut code, mut message, mut data) = (None, None, None);
        while let Some(field) = map.next_key()? {
          match field {
            ErrorField::Code => code = Some(map.next_value()?),
            ErrorField::Message => message = Some(map.next_value()?),
            ErrorField::Data => data = Some(map.next_value()?),
            ErrorField::Other => {
              map.next_value::<IgnoredAny>()?;
            }
          }
        }
        Ok(ErrorObject {
          code: typed(code)?,
          message: typed(message)?,
          data,
        })
      }
    }
    deserializer.deserialize_map(Fields)
  }
}

/// T5: JS compares ids as numbers, so `1.0` or `1e0` answer our request 1. Any other id
/// (a string, a fraction, a negative number) is none of ours.
fn our_id(raw: &str) -> Option<u64> {
  const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;
  let plain_digits =
    raw.bytes().all(|byte| byte.is_ascii_digit()) && (raw.len() == 1 || !raw.starts_with('0'));
  if plain_digits {
    // What nearly every answer carries; too many digits fall through to the f64 rule.
    if let Ok(number) = raw.parse::<u64>() {
      return Some(number);
    }
  }
  serde_json::from_str::<u64>(raw).ok().or_else(|| {
    let number = serde_json::from_str::<f64>(raw).ok()?;
    (number.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&number)).then_some(number as u64)
  })
}

/// The `method` of one of our frames (a notification's, for its error message).
pub fn method_of(frame: &[u8]) -> Option<String> {
  let text = std::str::from_utf8(frame).ok()?;
  serde_json::from_str::<Envelope>(text.trim_end())
    .ok()?
    .method
}

/// A8: the messages of a batch (a JSON array), or `None` for a frame that is not one.
pub fn batch(frame: &str) -> Option<Vec<Box<RawValue>>> {
  if !frame.trim_start().starts_with('[') {
    return None;
  }
  serde_json::from_str(frame).ok()
}

/// Classify one frame. A line that is not a JSON object, or an object that is none of the
/// three JSON-RPC shapes, is skipped (S3).
pub fn classify(frame: &str) -> Result<Incoming, Skipped> {
  match plain_answer(frame) {
    Some(answer) => Ok(answer),
    None => classify_fully(frame),
  }
}

/// What nearly every frame is: `"jsonrpc":"2.0"`, `"id":<n>` and `"result":<value>` in
/// any order, written without spaces, read without going key by key; the value is still
/// checked whole. Anything else (a space, a repeated or further member) is left to
/// `classify_fully`, which reads these the same way.
fn plain_answer(frame: &str) -> Option<Incoming> {
  let mut rest = frame.strip_prefix('{')?;
  let mut id = None;
  let mut result = None;
  let mut version = false;
  loop {
    if let Some(after) = rest.strip_prefix(r#""jsonrpc":"2.0""#).filter(|_| !version) {
      version = true;
      rest = after;
    } else if let Some(after) = rest.strip_prefix(r#""id":"#).filter(|_| id.is_none()) {
      let digits = after.bytes().take_while(u8::is_ascii_digit).count();
      let (text, after) = after.split_at(digits);
      // JSON writes no leading zero.
      if text.is_empty() || (text.len() > 1 && text.starts_with('0')) {
        return None;
      }
      id = Some(text);
      rest = after;
    } else if let Some(after) = rest
      .strip_prefix(r#""result":"#)
      .filter(|_| result.is_none())
    {
      let (value, after) = JsonText::leading(after)?;
      result = Some(value);
      rest = after;
    } else {
      return None;
    }
    match rest.as_bytes() {
      [b',', ..] => rest = &rest[1..],
      [b'}'] => break,
      _ => return None,
    }
  }
  Some(Incoming::Response {
    id: WireId::parse(id?),
    outcome: Ok(result?),
  })
}

fn classify_fully(frame: &str) -> Result<Incoming, Skipped> {
  let envelope: Envelope = serde_json::from_str(frame).map_err(|_| Skipped::NotJson)?;
  let id = envelope.id.filter(|raw| raw.get() != "null");
  match (envelope.method, id) {
    (Some(method), Some(id)) => Ok(Incoming::Request {
      id: id.to_owned(),
      method,
      params: envelope.params.map(RawValue::to_owned),
    }),
    (Some(method), None) => Ok(Incoming::Notification {
      method,
      params: envelope.params.map(RawValue::to_owned),
    }),
    (None, Some(id)) => {
      let id = WireId::parse(id.get());
      if let Some(error) = envelope.error.filter(|raw| raw.get() != "null") {
        Ok(Incoming::Response {
          id,
          outcome: Err(parse_error(error)),
        })
      } else if let Some(result) = envelope.result {
        Ok(Incoming::Response {
          id,
          outcome: Ok(JsonText::from(result)),
        })
      } else {
        Err(Skipped::NotJsonRpc)
      }
    }
    (None, None) => Err(Skipped::NotJsonRpc),
  }
}

/// What is wrong with a body that answers one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerProblem {
  /// H5: not JSON at all.
  NotJson,
  /// A50: JSON, but not a well-formed answer (`malformed_answer`'s words).
  Malformed(&'static str),
}

/// H5/A50: a body that answers one request: the plain answer most servers send
/// (`plain_answer`, between JSON whitespace) as read, `None` for any other good answer, or
/// what is wrong with it. The plain answer is read once, for every question and to settle.
pub fn read_answer(body: &str) -> Result<Option<Incoming>, AnswerProblem> {
  const JSON_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];
  if let Some(answer) = plain_answer(body.trim_matches(JSON_SPACE)) {
    return Ok(Some(answer));
  }
  if serde_json::from_str::<serde::de::IgnoredAny>(body).is_err() {
    return Err(AnswerProblem::NotJson);
  }
  match malformed_answer(body) {
    Some(words) => Err(AnswerProblem::Malformed(words)),
    None => Ok(None),
  }
}

/// A50: what is wrong with a JSON body that answers one request, in the agent's words: an
/// object with neither `result` nor `error`, or whose `error` is not `{code: number,
/// message: string}`. `None` for a good answer, and for anything else (a batch, a server
/// message), which is handled as any frame is.
pub fn malformed_answer(frame: &str) -> Option<&'static str> {
  let envelope: Envelope = serde_json::from_str(frame).ok()?;
  if envelope.method.is_some() {
    return None;
  }
  match (envelope.result, envelope.error) {
    (_, Some(error)) => {
      let parsed: Option<ErrorObject> = serde_json::from_str(error.get()).ok();
      let good = parsed.is_some_and(|e| e.code.is_some() && e.message.is_some());
      (!good).then_some("Malformed JSON-RPC error response")
    }
    (Some(_), None) => None,
    (None, None) => Some("Malformed JSON-RPC response"),
  }
}

fn parse_error(raw: &RawValue) -> RpcError {
  // A malformed error object still rejects the request; it never resolves it.
  let parsed: Option<ErrorObject> = serde_json::from_str(raw.get()).ok();
  let (code, message, data) = match parsed {
    Some(e) => (e.code, e.message, e.data),
    None => (None, None, None),
  };
  RpcError {
    code: code
      .and_then(|n| n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)))
      .unwrap_or(INTERNAL_ERROR),
    message: message.unwrap_or_else(|| "Unknown error".to_string()),
    data: data.map(|d| d.get().to_string()),
  }
}

pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INTERNAL_ERROR: i64 = -32603;

/// T2: a request frame, without the trailing newline. `params` is JSON object text.
pub fn request_frame(id: u64, method: &str, params: Option<&str>) -> String {
  request_frame_with_id(&id.to_string(), method, params)
}

/// `request_frame` with the id as JSON text (A7: a string id).
pub fn request_frame_with_id(id: &str, method: &str, params: Option<&str>) -> String {
  method_frame(Some(id), method, &[params.unwrap_or("{}")])
}

/// `request_frame_with_id` with params written from `pieces`, one after another.
pub fn request_frame_from_pieces(id: &str, method: &str, pieces: &[&str]) -> String {
  method_frame(Some(id), method, pieces)
}

/// A request frame (with `id`) or a notification frame, sized once: every call and every
/// notification is framed on the caller's thread.
fn method_frame(id: Option<&str>, method: &str, params: &[&str]) -> String {
  let params_len: usize = params.iter().map(|piece| piece.len()).sum();
  let id_len = id.map_or(0, str::len);
  let mut frame = String::with_capacity(48 + id_len + method.len() + params_len);
  frame.push_str(r#"{"jsonrpc":"2.0","#);
  if let Some(id) = id {
    frame.push_str(r#""id":"#);
    frame.push_str(id);
    frame.push(',');
  }
  frame.push_str(r#""method":"#);
  push_json_string(&mut frame, method);
  frame.push_str(r#","params":"#);
  for piece in params {
    frame.push_str(piece);
  }
  frame.push('}');
  frame
}

/// `text` as a JSON string onto `out`. Most texts need no escape, and then none is made.
fn push_json_string(out: &mut String, text: &str) {
  // What serde_json escapes: the quote, the backslash and the control characters.
  if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
    out.push_str(&serde_json::Value::from(text).to_string());
  } else {
    out.push('"');
    out.push_str(text);
    out.push('"');
  }
}

/// N5: one of our request frames under a new id, its method and params byte-exact; `None`
/// when `frame` is not one (then it is not re-sent).
pub fn with_request_id(frame: &str, id: &str) -> Option<String> {
  let envelope: Envelope = serde_json::from_str(frame).ok()?;
  envelope.id?;
  let method = envelope.method?;
  Some(request_frame_with_id(
    id,
    &method,
    envelope.params.map(RawValue::get),
  ))
}

/// P4: `params` (an object, or none) with `_meta.progressToken` set to `token`, the rest of
/// `_meta` and of the params kept. `None` when `params` is not an object.
pub fn with_progress_token(params: Option<&str>, token: u64) -> Option<String> {
  with_meta_entries(params, [("progressToken".to_string(), token.into())])
}

/// N3: the `_meta` entries every request of a stateless-era connection carries, with their
/// JSON text made once, so a request without a `_meta` of its own gets them spliced in.
#[derive(Debug, Clone)]
pub struct MetaEnvelope {
  entries: serde_json::Map<String, serde_json::Value>,
  /// The members of `entries` as object text, without the braces.
  members: String,
}

impl MetaEnvelope {
  pub fn new(entries: serde_json::Map<String, serde_json::Value>) -> Self {
    let text = serde_json::Value::Object(entries.clone()).to_string();
    let members = text[1..text.len() - 1].to_string();
    MetaEnvelope { entries, members }
  }

  pub fn insert(&mut self, key: String, value: serde_json::Value) {
    self.entries.insert(key, value);
    *self = MetaEnvelope::new(std::mem::take(&mut self.entries));
  }

  /// `params` (an object, or none) carrying the entries, the spliced text left in pieces
  /// for the frame to be written from; `None` when they are not an object.
  pub fn applied<'a>(&'a self, params: Option<&'a str>) -> Option<Applied<'a>> {
    let text = params.unwrap_or("{}").trim_start();
    // Splicing is safe where `params` cannot hold a `_meta` key: none spelled plainly (the
    // JSON.stringify texts we get) and no escapes that could spell one.
    if !text.contains("\"_meta\"") && !text.contains("\\u") {
      if let Some(rest) = text.strip_prefix('{') {
        let separator = if rest.trim_start().starts_with('}') {
          ""
        } else {
          ","
        };
        return Some(Applied::Spliced([
          "{\"_meta\":{",
          &self.members,
          "}",
          separator,
          rest,
        ]));
      }
    }
    with_meta_entries(params, self.entries.clone()).map(Applied::Rebuilt)
  }
}

/// Params carrying the stateless envelope: the pieces of the caller's text around the
/// envelope (the usual case: no copy made before the frame is), or a new text.
pub enum Applied<'a> {
  Spliced([&'a str; 5]),
  Rebuilt(String),
}

/// `params` with `entries` set in its `_meta` (made when missing); the rest of `_meta` is
/// kept. `None` when the params are not an object.
pub fn with_meta_entries(
  params: Option<&str>,
  entries: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> Option<String> {
  let mut params: serde_json::Map<String, serde_json::Value> = match params {
    None => serde_json::Map::new(),
    Some(text) => serde_json::from_str(text).ok()?,
  };
  let meta = params
    .entry("_meta")
    .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
  if !meta.is_object() {
    *meta = serde_json::Value::Object(serde_json::Map::new());
  }
  if let Some(meta) = meta.as_object_mut() {
    meta.extend(entries);
  }
  serde_json::to_string(&params).ok()
}

/// A JSON-RPC error response (`error` and an `id`, no `method`).
pub fn is_error_response(text: &str) -> bool {
  #[derive(serde::Deserialize)]
  struct Shape<'a> {
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<serde::de::IgnoredAny>,
  }
  serde_json::from_str::<Shape>(text)
    .is_ok_and(|s| s.error.is_some() && s.id.is_some() && s.method.is_none())
}

/// P4: the request a `notifications/progress` is about, when its token is one of ours.
pub fn progress_token(params: Option<&RawValue>) -> Option<u64> {
  #[derive(serde::Deserialize)]
  struct Progress {
    #[serde(rename = "progressToken")]
    progress_token: serde_json::Value,
  }
  let progress: Progress = serde_json::from_str(params?.get()).ok()?;
  progress.progress_token.as_u64()
}

/// P4: progress params as the caller sees them: without `progressToken`.
pub fn without_progress_token(params: &RawValue) -> Option<Box<RawValue>> {
  let mut params: serde_json::Map<String, serde_json::Value> =
    serde_json::from_str(params.get()).ok()?;
  // shift_remove keeps the order of the other fields.
  params.shift_remove("progressToken");
  RawValue::from_string(serde_json::to_string(&params).ok()?).ok()
}

/// P6: the `requestId` of `notifications/cancelled` params, as compact JSON (the form a
/// server request's raw id is kept in).
pub fn cancelled_request_id(params: Option<&RawValue>) -> Option<String> {
  #[derive(serde::Deserialize)]
  struct Cancelled {
    #[serde(rename = "requestId")]
    request_id: serde_json::Value,
  }
  let cancelled: Cancelled = serde_json::from_str(params?.get()).ok()?;
  match cancelled.request_id {
    id @ (serde_json::Value::String(_) | serde_json::Value::Number(_)) => Some(id.to_string()),
    _ => None,
  }
}

/// T2: a notification frame.
pub fn notification_frame(method: &str, params: Option<&str>) -> String {
  method_frame(None, method, &[params.unwrap_or("{}")])
}

/// T11: the answer to a server request; `id` is the server's id as raw JSON.
pub fn result_frame(id: &str, result: &str) -> String {
  format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

/// T11: an error answer to a server request.
pub fn error_frame(id: &str, error: &RpcError) -> String {
  let message = json_string(&error.message);
  let code = error.code;
  match &error.data {
    Some(data) => format!(
      r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message},"data":{data}}}}}"#
    ),
    None => {
      format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#)
    }
  }
}

/// The `protocolVersion` of an `initialize` result.
pub fn protocol_version(result: &JsonText) -> Option<String> {
  #[derive(Deserialize)]
  struct Initialized {
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
  }
  serde_json::from_str::<Initialized>(result.get())
    .ok()?
    .protocol_version
}

/// Results at least this large are candidates for the tree path.
pub const LARGE_RESULT_BYTES: usize = 1 << 20;

/// Whether a frame is better handed to JS as a parsed tree (built through napi, mostly one
/// big string copy) than as text for `JSON.parse`: true for large frames with little
/// structure per byte (a file, an image, a long text), where V8 would spend its time
/// scanning one huge string on the JS thread. Object-heavy frames stay text: there
/// `JSON.parse` beats building objects one napi call at a time.
pub fn prefers_tree(frame: &str) -> bool {
  let text = frame.as_bytes();
  if text.len() < LARGE_RESULT_BYTES {
    return false;
  }
  let structure = memchr::memchr3_iter(b'{', b'[', b',', text).count();
  structure.saturating_mul(4096) < text.len()
}

/// T9: `notifications/cancelled` params for one of our request ids.
pub fn cancelled_params(request_id: &str, reason: &str) -> String {
  let reason = json_string(reason);
  format!(r#"{{"requestId":{request_id},"reason":{reason}}}"#)
}

fn json_string(s: &str) -> String {
  let mut quoted = String::with_capacity(s.len() + 2);
  push_json_string(&mut quoted, s);
  quoted
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_plain_answer_is_read_as_the_full_parse_reads_it() {
    let ids = [
      "0",
      "7",
      "01",
      "00",
      "123456789",
      "9007199254740991",
      "9007199254740993",
      "99999999999999999999",
      "",
      "-1",
      "1.0",
      "1e2",
      "\"7\"",
    ];
    let values = [
      "null",
      "1",
      "{}",
      "[]",
      r#"{"a":[1,2,{"b":"c\"d"}]}"#,
      r#""text""#,
      "true",
      " 5",
      "5 ",
      "{",
      r#"{"a":1},"result":2"#,
      r#"{"a":1},"error":{"code":1,"message":"m"}"#,
      "1,2",
      "",
      r#"{"a":"\u00e9"}"#,
      "[1,]",
      "nul",
      r#"{"a":1}}"#,
      "\"unterminated",
    ];
    let ends = ["}", "} ", "}}", "", ",\"x\":1}", ",}"];
    let orders = [
      [0, 1, 2],
      [1, 0, 2],
      [1, 2, 0],
      [2, 1, 0],
      [0, 2, 1],
      [2, 0, 1],
    ];
    let mut fast = 0;
    for id in ids {
      for value in values {
        let members = [
          r#""jsonrpc":"2.0""#.to_string(),
          format!(r#""id":{id}"#),
          format!(r#""result":{value}"#),
        ];
        let mut frames: Vec<String> = orders
          .iter()
          .flat_map(|order| {
            let body = order.map(|i| members[i].as_str()).join(",");
            ends.iter().map(move |end| format!("{{{body}{end}"))
          })
          .collect();
        // Without the version, twice the version, twice the id.
        frames.push(format!("{{{},{}}}", members[1], members[2]));
        frames.push(format!(
          "{{{0},{0},{1},{2}}}",
          members[0], members[1], members[2]
        ));
        frames.push(format!(r#"{{{},"id":8,{}}}"#, members[1], members[2]));
        for frame in frames {
          // `Incoming` holds raw JSON, compared as its debug text.
          let full = format!("{:?}", classify_fully(&frame));
          if let Some(answer) = plain_answer(&frame) {
            fast += 1;
            assert_eq!(format!("{:?}", Ok::<_, Skipped>(answer)), full, "{frame}");
          }
          assert_eq!(format!("{:?}", classify(&frame)), full, "{frame}");
        }
      }
    }
    assert!(fast >= 300, "only {fast} frames took the fast path");
  }

  #[test]
  fn a8_a_batch_is_its_messages_and_anything_else_is_not_a_batch() {
    let messages =
      batch(r#" [{"jsonrpc":"2.0","method":"a"}, {"jsonrpc":"2.0","id":1,"result":{}}]"#).unwrap();
    let texts: Vec<&str> = messages.iter().map(|m| m.get()).collect();
    assert_eq!(
      texts,
      [
        r#"{"jsonrpc":"2.0","method":"a"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
      ]
    );
    assert!(batch(r#"{"jsonrpc":"2.0","method":"a"}"#).is_none());
    assert!(batch("[1, 2").is_none());
  }

  #[test]
  fn n3_the_envelope_is_spliced_into_params_without_one_and_merged_into_a_meta() {
    let mut entries = serde_json::Map::new();
    entries.insert("v".into(), "2026-07-28".into());
    let mut envelope = MetaEnvelope::new(entries);
    let parse =
      |text: Option<String>| -> serde_json::Value { serde_json::from_str(&text.unwrap()).unwrap() };
    let applied_to = |envelope: &MetaEnvelope, params| {
      envelope.applied(params).map(|applied| match applied {
        Applied::Spliced(pieces) => pieces.concat(),
        Applied::Rebuilt(text) => text,
      })
    };
    assert_eq!(
      applied_to(&envelope, None).as_deref(),
      Some(r#"{"_meta":{"v":"2026-07-28"}}"#)
    );
    assert_eq!(
      applied_to(&envelope, Some(" {} ")).as_deref(),
      Some(r#"{"_meta":{"v":"2026-07-28"}} "#)
    );
    assert_eq!(
      applied_to(&envelope, Some(r#"{"name":"x"}"#)).as_deref(),
      Some(r#"{"_meta":{"v":"2026-07-28"},"name":"x"}"#)
    );
    // A _meta of the caller's keeps its entries.
    assert_eq!(
      parse(applied_to(
        &envelope,
        Some(r#"{"_meta":{"progressToken":3},"a":1}"#)
      )),
      serde_json::json!({ "_meta": { "progressToken": 3, "v": "2026-07-28" }, "a": 1 })
    );
    // An escape that could spell the key takes the parsing path.
    assert_eq!(
      parse(applied_to(&envelope, Some(r#"{"\u005fmeta":{"p":1}}"#))),
      serde_json::json!({ "_meta": { "p": 1, "v": "2026-07-28" } })
    );
    assert_eq!(applied_to(&envelope, Some("[1]")), None);
    envelope.insert("level".into(), "debug".into());
    assert_eq!(
      applied_to(&envelope, None).as_deref(),
      Some(r#"{"_meta":{"v":"2026-07-28","level":"debug"}}"#)
    );
  }

  #[test]
  fn n5_a_request_under_a_new_id_keeps_its_params_byte_exact() {
    let frame = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"b": 1,"a" :[2]}}"#;
    assert_eq!(
      with_request_id(frame, "9").as_deref(),
      Some(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"b": 1,"a" :[2]}}"#)
    );
    assert_eq!(
      with_request_id(r#"{"jsonrpc":"2.0","method":"n"}"#, "9"),
      None
    );
  }

  #[test]
  fn p4_the_progress_token_goes_into_meta_and_keeps_the_rest() {
    assert_eq!(
      with_progress_token(None, 7).as_deref(),
      Some(r#"{"_meta":{"progressToken":7}}"#)
    );
    assert_eq!(
      with_progress_token(
        Some(r#"{"name":"x","_meta":{"a":1,"progressToken":"old"}}"#),
        8
      )
      .as_deref(),
      Some(r#"{"name":"x","_meta":{"a":1,"progressToken":8}}"#)
    );
    assert_eq!(
      with_progress_token(Some(r#"{"_meta":5}"#), 9).as_deref(),
      Some(r#"{"_meta":{"progressToken":9}}"#)
    );
    assert_eq!(with_progress_token(Some("[1]"), 1), None);
  }

  #[test]
  fn p4_progress_params_are_read_and_shown_without_the_token() {
    let raw =
      RawValue::from_string(r#"{"progressToken":3,"progress":1,"total":2}"#.into()).unwrap();
    assert_eq!(progress_token(Some(&raw)), Some(3));
    assert_eq!(
      without_progress_token(&raw).unwrap().get(),
      r#"{"progress":1,"total":2}"#
    );
    let theirs = RawValue::from_string(r#"{"progressToken":"abc","progress":1}"#.into()).unwrap();
    assert_eq!(progress_token(Some(&theirs)), None);
    assert_eq!(progress_token(None), None);
  }

  // RawValue has no PartialEq; compare the raw texts.
  impl PartialEq for Incoming {
    fn eq(&self, other: &Self) -> bool {
      format!("{self:?}") == format!("{other:?}")
    }
  }

  fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_string()).unwrap()
  }

  fn text(s: &str) -> JsonText {
    JsonText::parse(s).unwrap()
  }

  #[test]
  fn a_result_response_keeps_its_raw_result() {
    let m = classify(r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,2]}}"#).unwrap();
    assert_eq!(
      m,
      Incoming::Response {
        id: Some(WireId::Number(7)),
        outcome: Ok(text(r#"{"a":[1,2]}"#))
      }
    );
  }

  #[test]
  fn a_null_result_is_a_result() {
    let m = classify(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
    assert_eq!(
      m,
      Incoming::Response {
        id: Some(WireId::Number(1)),
        outcome: Ok(text("null"))
      }
    );
  }

  #[test]
  fn an_error_response_carries_code_message_and_data() {
    let m = classify(
      r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad","data":{"x":1}}}"#,
    )
    .unwrap();
    assert_eq!(
      m,
      Incoming::Response {
        id: Some(WireId::Number(2)),
        outcome: Err(RpcError {
          code: -32602,
          message: "bad".into(),
          data: Some(r#"{"x":1}"#.into())
        })
      }
    );
  }

  #[test]
  fn string_ids_match_none_of_ours() {
    let m = classify(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#).unwrap();
    assert!(matches!(m, Incoming::Response { id: None, .. }));
  }

  #[test]
  fn notifications_and_requests_are_told_apart_by_id() {
    let n =
      classify(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"x":1}}"#).unwrap();
    assert_eq!(
      n,
      Incoming::Notification {
        method: "notifications/message".into(),
        params: Some(raw(r#"{"x":1}"#))
      }
    );
    let r = classify(r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#).unwrap();
    assert_eq!(
      r,
      Incoming::Request {
        id: raw(r#""abc""#),
        method: "ping".into(),
        params: None
      }
    );
  }

  #[test]
  fn banners_and_foreign_json_are_skipped() {
    assert_eq!(classify("Server starting..."), Err(Skipped::NotJson));
    assert_eq!(classify("[1,2,3]"), Err(Skipped::NotJson));
    assert_eq!(classify(r#"{"hello":"world"}"#), Err(Skipped::NotJsonRpc));
    assert_eq!(classify(r#"{"id":3}"#), Err(Skipped::NotJsonRpc));
  }

  // The next four were found by the fuzz targets `classify` and `stdio_messages`
  // (tests/fuzz_parsers.rs).

  #[test]
  fn arrays_are_not_messages_even_when_serde_could_read_them_as_one() {
    assert_eq!(classify(r#"[7,"ping"]"#), Err(Skipped::NotJson));
    assert_eq!(
      classify(r#" [null,"notifications/tools/list_changed"]"#),
      Err(Skipped::NotJson)
    );
    assert_eq!(classify(r#"[5,null,null,{"x":1}]"#), Err(Skipped::NotJson));
    // An error that is an array still rejects, as a malformed error.
    let m = classify(r#"{"jsonrpc":"2.0","id":4,"error":[1,"m"]}"#).unwrap();
    let malformed = RpcError {
      code: INTERNAL_ERROR,
      message: "Unknown error".into(),
      data: None,
    };
    assert!(
      matches!(m, Incoming::Response { id: Some(WireId::Number(4)), outcome: Err(e) } if e == malformed)
    );
  }

  #[test]
  fn a_number_id_matches_ours_however_it_is_spelled() {
    for (spelled, id) in [("1.0", 1), ("2e0", 2), ("30E-1", 3), ("-0", 0), ("7", 7)] {
      let m = classify(&format!(
        r#"{{"jsonrpc":"2.0","id":{spelled},"result":{{}}}}"#
      ))
      .unwrap();
      assert!(
        matches!(m, Incoming::Response { id: Some(WireId::Number(i)), .. } if i == id),
        "{spelled}"
      );
    }
    for spelled in ["1.5", "-1", "1e300", r#""7""#] {
      let m = classify(&format!(
        r#"{{"jsonrpc":"2.0","id":{spelled},"result":{{}}}}"#
      ))
      .unwrap();
      assert!(
        matches!(m, Incoming::Response { id: None, .. }),
        "{spelled}"
      );
    }
  }

  #[test]
  fn h5_a50_an_answer_s_problem_is_found_as_the_two_parses_find_it() {
    let by_parsing = |body: &str| {
      if serde_json::from_str::<serde::de::IgnoredAny>(body).is_err() {
        Some(AnswerProblem::NotJson)
      } else {
        malformed_answer(body).map(AnswerProblem::Malformed)
      }
    };
    let mut fast = 0;
    for body in [
      r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
      r#"{"result":{},"id":7,"jsonrpc":"2.0"}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
      r#"{"jsonrpc":"2.0","id":1,"result":[1,2}"#,
      r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1}}"#,
      r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
      r#"{"jsonrpc":"2.0","id":1}"#,
      r#"[{"jsonrpc":"2.0","id":1,"result":1}]"#,
      r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
      "not json",
      "",
    ] {
      for (before, after) in [
        ("", ""),
        ("", "\n"),
        (" \r\n", "\t "),
        ("", "\u{a0}"),
        ("\u{a0}", ""),
      ] {
        let body = format!("{before}{body}{after}");
        fast += usize::from(plain_answer(body.trim_matches([' ', '\t', '\n', '\r'])).is_some());
        assert_eq!(read_answer(&body).err(), by_parsing(&body), "{body:?}");
        if let Ok(Some(read)) = read_answer(&body) {
          let classified = classify(body.trim_matches([' ', '\t', '\n', '\r']));
          let (read, classified) = (Some(read), classified.ok());
          assert_eq!(format!("{read:?}"), format!("{classified:?}"), "{body:?}");
        }
      }
    }
    assert_eq!(fast, 6);
  }

  #[test]
  fn t5_plain_digit_ids_are_read_as_serde_json_reads_them() {
    let cases = [
      ("0", Some(0)),
      ("7", Some(7)),
      ("9007199254740993", Some(9_007_199_254_740_993)),
      ("18446744073709551615", Some(u64::MAX)),
      // Past u64 the f64 rule applies, and it stops at 2^53.
      ("18446744073709551616", None),
      ("00", None),
      ("01", None),
      ("", None),
    ];
    for (raw, expected) in cases {
      assert_eq!(our_id(raw), expected, "{raw}");
      assert_eq!(serde_json::from_str::<u64>(raw).ok(), expected, "{raw}");
    }
  }

  #[test]
  fn a_repeated_key_keeps_its_last_value_as_in_json_parse() {
    let m = classify(r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{"a":1},"result":{"a":2}}"#);
    assert_eq!(
      m.unwrap(),
      Incoming::Response {
        id: Some(WireId::Number(2)),
        outcome: Ok(text(r#"{"a":2}"#))
      }
    );
    let m = classify(r#"{"method":null,"method":"ping","id":"s"}"#).unwrap();
    assert!(matches!(m, Incoming::Request { method, .. } if method == "ping"));
    let m = classify(r#"{"method":false,"method":"n"}"#).unwrap();
    assert!(matches!(m, Incoming::Notification { method, .. } if method == "n"));
    assert_eq!(
      classify(r#"{"method":"n","method":false}"#),
      Err(Skipped::NotJson)
    );
    let m = classify(r#"{"id":4,"error":{"code":1,"code":-32000,"message":"a","message":"b"}}"#);
    let Ok(Incoming::Response {
      outcome: Err(e), ..
    }) = m
    else {
      panic!("{m:?}")
    };
    assert_eq!((e.code, e.message.as_str()), (-32000, "b"));
  }

  #[test]
  fn params_null_is_kept_apart_from_no_params() {
    let params = |frame: &str| match classify(frame).unwrap() {
      Incoming::Notification { params, .. } | Incoming::Request { params, .. } => {
        params.map(|p| p.get().to_string())
      }
      other => panic!("{other:?}"),
    };
    assert_eq!(
      params(r#"{"jsonrpc":"2.0","method":"n","params":null}"#),
      Some("null".into())
    );
    assert_eq!(params(r#"{"jsonrpc":"2.0","method":"n"}"#), None);
    assert_eq!(
      params(r#"{"jsonrpc":"2.0","id":1,"method":"r","params":null}"#),
      Some("null".into())
    );
  }

  #[test]
  fn error_data_null_is_kept_apart_from_no_data() {
    let error = |frame: &str| match classify(frame) {
      Ok(Incoming::Response {
        outcome: Err(e), ..
      }) => e.data,
      other => panic!("{other:?}"),
    };
    let null = r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","data":null}}"#;
    assert_eq!(error(null), Some("null".into()));
    let none = r#"{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}"#;
    assert_eq!(error(none), None);
  }

  #[test]
  fn only_large_frames_with_little_structure_take_the_tree_path() {
    let big = format!(
      r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
      "x".repeat(2 << 20)
    );
    assert!(prefers_tree(&big));
    assert!(!prefers_tree(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
    let many_objects = format!("[{}]", vec![r#"{"a":1,"b":[2,3]}"#; 100_000].join(","));
    assert!(many_objects.len() >= LARGE_RESULT_BYTES);
    assert!(!prefers_tree(&many_objects));
  }

  #[test]
  fn outgoing_frames_are_exact() {
    assert_eq!(
      request_frame(3, "tools/list", None),
      r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#
    );
    assert_eq!(
      notification_frame("notifications/initialized", Some(r#"{"a":1}"#)),
      r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"a":1}}"#
    );
    assert_eq!(
      result_frame(r#""s1""#, "{}"),
      r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#
    );
    let e = RpcError {
      code: METHOD_NOT_FOUND,
      message: "Method not found".into(),
      data: None,
    };
    assert_eq!(
      error_frame("4", &e),
      r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}"#
    );
    assert_eq!(
      cancelled_params("9", "Request timeout after 5ms"),
      r#"{"requestId":9,"reason":"Request timeout after 5ms"}"#
    );
  }
}

#[cfg(test)]
mod a7_tests {
  use super::*;

  #[test]
  fn a7_string_ids_are_16_lowercase_hex_digits_and_told_apart_from_numbers() {
    assert_eq!(hex_id_json(0x1f), r#""000000000000001f""#);
    for value in [0, 0x1f, 0xfedc_ba98_7654_3210, u64::MAX] {
      assert_eq!(hex_id_json(value), format!("\"{value:016x}\""));
    }
    for value in [0, 7, 10, 99, 1_000_000, u64::MAX - 1, u64::MAX] {
      assert_eq!(IdJson::number(value).as_str(), value.to_string());
    }
    assert_eq!(
      WireId::parse(r#""000000000000001f""#),
      Some(WireId::Hex(0x1f))
    );
    assert_eq!(WireId::parse("31"), Some(WireId::Number(31)));
    for other in [
      r#""000000000000001F""#,
      r#""1f""#,
      r#""0000000000000001f""#,
      r#""zzzzzzzzzzzzzzzz""#,
      "\"31\"",
    ] {
      assert_eq!(WireId::parse(other), None, "{other}");
    }
    let frame = request_frame_with_id(&hex_id_json(2), "ping", None);
    assert_eq!(
      frame,
      r#"{"jsonrpc":"2.0","id":"0000000000000002","method":"ping","params":{}}"#
    );
  }

  #[test]
  fn t2_request_and_notification_frames_quote_their_method_as_serde_does() {
    for method in [
      "tools/call",
      "a\"b",
      "back\\slash",
      "line\nfeed",
      "\u{1}",
      "é/😀",
      "\u{7f}",
    ] {
      let framed = request_frame_with_id("7", method, Some("[1]"));
      let parsed: serde_json::Value = serde_json::from_str(&framed).unwrap();
      assert_eq!(parsed["method"], method);
      let quoted = serde_json::Value::from(method).to_string();
      assert_eq!(json_string(method), quoted);
      assert_eq!(
        framed,
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":{quoted},"params":[1]}}"#)
      );
      assert_eq!(
        notification_frame(method, None),
        format!(r#"{{"jsonrpc":"2.0","method":{quoted},"params":{{}}}}"#)
      );
    }
  }
}

#[cfg(test)]
mod answer_tests {
  use super::malformed_answer;

  #[test]
  fn a50_a_json_answer_needs_a_result_or_a_well_formed_error() {
    assert_eq!(
      malformed_answer(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
      None
    );
    assert_eq!(
      malformed_answer(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#),
      None
    );
    assert_eq!(
      malformed_answer(r#"{"jsonrpc":"2.0","id":1}"#),
      Some("Malformed JSON-RPC response")
    );
    for error in [
      r#""boom""#,
      r#"{"code":"x","message":"m"}"#,
      r#"{"code":1}"#,
    ] {
      let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
      assert_eq!(
        malformed_answer(&frame),
        Some("Malformed JSON-RPC error response"),
        "{frame}"
      );
    }
    // Batches and server messages are handled as any frame is.
    assert_eq!(
      malformed_answer(r#"[{"jsonrpc":"2.0","id":1,"result":1}]"#),
      None
    );
    assert_eq!(
      malformed_answer(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
      None
    );
  }
}
