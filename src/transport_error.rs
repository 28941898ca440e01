//! A45: the agent's `MCPTransportError` rules — what a failure is (transport, stage, class,
//! whether replaying it is safe), the bounded and credential-redacted texts it carries, and
//! the tool-failure report its tool bridge prints. The JS class and its helpers are the
//! binding's; every rule they follow is here.
use std::sync::LazyLock;

use regex::Regex;

/// The transport a failed operation used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
  Http,
  Stdio,
  Unknown,
}

/// How far the operation got before it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
  Connect,
  Send,
  Receive,
  Decode,
  Protocol,
}

/// The stable failure classes of a tool failure's diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
  Connect,
  Timeout,
  Eof,
  Reset,
  MalformedResponse,
  JsonRpc,
  HttpStatus,
  Closed,
  Unknown,
}

macro_rules! names {
  ($type:ty { $($variant:ident => $name:literal),* $(,)? }) => {
    impl $type {
      /// The agent's name for it.
      pub fn name(self) -> &'static str {
        match self { $(Self::$variant => $name),* }
      }

      /// The value the agent names `name`.
      pub fn from_name(name: &str) -> Option<Self> {
        match name { $($name => Some(Self::$variant),)* _ => None }
      }
    }
  };
}

names!(TransportKind { Http => "http", Stdio => "stdio", Unknown => "unknown" });
names!(Stage {
  Connect => "connect",
  Send => "send",
  Receive => "receive",
  Decode => "decode",
  Protocol => "protocol",
});
names!(Failure {
  Connect => "connect",
  Timeout => "timeout",
  Eof => "eof",
  Reset => "reset",
  MalformedResponse => "malformed_response",
  JsonRpc => "json_rpc",
  HttpStatus => "http_status",
  Closed => "closed",
  Unknown => "unknown",
});

/// A transport, HTTP, subprocess or JSON-RPC error code.
#[derive(Debug, Clone, PartialEq)]
pub enum Code {
  Text(String),
  Number(f64),
}

/// Everything an `MCPTransportError` says besides its cause.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
  pub transport: TransportKind,
  pub stage: Stage,
  pub failure: Failure,
  /// Already sanitized and bounded.
  pub message: String,
  /// Whether reconnecting and replaying is safe (the agent's retry policy).
  pub retryable: bool,
  pub code: Option<Code>,
  /// Bounded, credential-redacted JSON text.
  pub data: Option<String>,
  pub trace_id: Option<String>,
}

impl Diagnostic {
  /// A diagnostic with nothing but its class; `message` is sanitized here.
  pub fn new(
    transport: TransportKind,
    stage: Stage,
    failure: Failure,
    message: &str,
    retryable: bool,
  ) -> Self {
    Diagnostic {
      transport,
      stage,
      failure,
      message: sanitize_message(message),
      retryable,
      code: None,
      data: None,
      trace_id: None,
    }
  }
}

const MAX_MESSAGE_CHARS: usize = 1_000;
const MAX_DATA_CHARS: usize = 2_000;
const MAX_TRACE_ID_CHARS: usize = 128;
const MAX_DATA_STRING_CHARS: usize = 256;
/// How deep `data` is kept; deeper values read `"[truncated]"`.
pub const MAX_DATA_DEPTH: usize = 5;
/// How many items of an array, or entries of an object, `data` keeps.
pub const MAX_DATA_ENTRIES: usize = 30;

fn regex(pattern: &str) -> Regex {
  // The patterns are constants of this module, checked by its tests.
  Regex::new(pattern).unwrap_or_else(|e| panic!("transport_error pattern {pattern}: {e}"))
}

static FETCH_VERBOSE_ADVICE: LazyLock<Regex> = LazyLock::new(|| {
  regex(
    r"(?i)\s*For more information, pass `verbose: true` in the second argument to fetch\(\)\.?\s*$",
  )
});
static SCHEME_CREDENTIAL: LazyLock<Regex> =
  LazyLock::new(|| regex(r"(?i)(?-u:\b)(Bearer|Basic)\s+[^\s,;]+"));
static SECRET_PARAMETER: LazyLock<Regex> = LazyLock::new(|| {
  regex(r"(?i)([?&](?:access[-_]?token|api[-_]?key|key|token|secret|password)=)[^&#\s]+")
});
static SECRET_FIELD: LazyLock<Regex> = LazyLock::new(|| {
  regex(
    r"(?i)((?:authorization|api[-_]?key|private[-_]?key|access[-_]?key|token|secret|passw(?:or)?d|pwd|credential)\s*[:=]\s*)[^\s,;}]+",
  )
});
/// A substring match: compound names (`client_secret`, `accessToken`) are secrets too.
static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| {
  regex(
    r"(?i)(?:authorization|bearer|cookie|secret|passw(?:or)?d|pwd|token|credential|api[-_]?key|private[-_]?key|access[-_]?key|signature)",
  )
});
static TRACE_KEY: LazyLock<Regex> =
  LazyLock::new(|| regex(r"(?i)^(?:trace[-_]?id|request[-_]?id|correlation[-_]?id|traceparent)$"));
static TRACE_ID: LazyLock<Regex> = LazyLock::new(|| regex(r"^[A-Za-z0-9._:/-]+$"));
static CONNECT_WORDS: LazyLock<Regex> = LazyLock::new(|| {
  regex(r"(?i)(?-u:\b)(?:ECONNREFUSED|ConnectionRefused|ENETUNREACH|EHOSTUNREACH)(?-u:\b)")
});
static RESET_WORDS: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)(?-u:\b)ECONNRESET(?-u:\b)"));
static EOF_WORDS: LazyLock<Regex> =
  LazyLock::new(|| regex(r"(?i)(?-u:\b)(?:EPIPE|eof|transport closed|socket closed)(?-u:\b)"));
static TIMEOUT_WORDS: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)timeout|timed out"));
static MALFORMED_WORDS: LazyLock<Regex> = LazyLock::new(|| {
  regex(r"(?i)(?:invalid|unexpected end).*(?:json|jsonl)|jsonl? (?:parse|parser) error|malformed")
});
static HTTP_STATUS: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^HTTP (\d{3}):"));
static CONNECT_PROSE: LazyLock<Regex> =
  LazyLock::new(|| regex(r"(?i)not connected|connection failed|fetch failed"));

/// The first `max` UTF-16 units of `text` (JS `slice`), never splitting a character.
fn js_slice(text: &str, max: usize) -> &str {
  let mut units = 0;
  for (at, c) in text.char_indices() {
    units += c.len_utf16();
    if units > max {
      return &text[..at];
    }
  }
  text
}

/// The length of `text` in UTF-16 units (JS `length`).
fn js_length(text: &str) -> usize {
  text.chars().map(char::len_utf16).sum()
}

/// JS `String.prototype.trim`: white space and line terminators, BOM included.
fn js_trim(text: &str) -> &str {
  text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// The agent's `sanitizeDiagnosticText`: the fetch's "verbose" advice dropped, credentials
/// redacted, then bounded to `max` UTF-16 units and trimmed.
pub fn sanitize_text(value: &str, max: usize) -> String {
  let text = FETCH_VERBOSE_ADVICE.replace(value, "");
  let text = SCHEME_CREDENTIAL.replace_all(&text, "${1} [redacted]");
  let text = SECRET_PARAMETER.replace_all(&text, "${1}[redacted]");
  let text = SECRET_FIELD.replace_all(&text, "${1}[redacted]");
  js_trim(js_slice(&text, max)).to_string()
}

/// A message as an `MCPTransportError` carries it.
pub fn sanitize_message(message: &str) -> String {
  sanitize_text(message, MAX_MESSAGE_CHARS)
}

/// A value of JSON-RPC error `data`, as the binding reads it from JS (bounded already:
/// `MAX_DATA_DEPTH + 1` levels, `MAX_DATA_ENTRIES` entries).
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
  Null,
  Bool(bool),
  Number(f64),
  Text(String),
  Array(Vec<Data>),
  Object(Vec<(String, Data)>),
  /// Neither JSON nor an object: JS `String(value)`.
  Other(String),
  /// An object met a second time (the agent's `seen` set).
  Seen,
  /// Deeper than the binding read.
  Deep,
}

impl Data {
  /// `data` from JSON text (what our own JSON-RPC errors carry).
  pub fn from_json(value: &serde_json::Value) -> Data {
    Self::from_json_at(value, 0)
  }

  fn from_json_at(value: &serde_json::Value, depth: usize) -> Data {
    use serde_json::Value;
    if depth > MAX_DATA_DEPTH {
      return Data::Deep;
    }
    match value {
      Value::Null => Data::Null,
      Value::Bool(b) => Data::Bool(*b),
      Value::Number(n) => Data::Number(n.as_f64().unwrap_or(f64::NAN)),
      Value::String(s) => Data::Text(s.clone()),
      Value::Array(items) => Data::Array(
        items
          .iter()
          .take(MAX_DATA_ENTRIES)
          .map(|item| Self::from_json_at(item, depth + 1))
          .collect(),
      ),
      Value::Object(map) => Data::Object(
        map
          .iter()
          .take(MAX_DATA_ENTRIES)
          .map(|(k, v)| (k.clone(), Self::from_json_at(v, depth + 1)))
          .collect(),
      ),
    }
  }
}

/// The agent's `sanitizeData`, written as JSON text: secret-named keys redacted, strings
/// sanitized and bounded, depth and breadth bounded.
fn write_sanitized(value: &Data, depth: usize, out: &mut String) {
  if depth > MAX_DATA_DEPTH {
    return write_string("[truncated]", out);
  }
  match value {
    Data::Null => out.push_str("null"),
    Data::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    Data::Number(n) => out.push_str(&js_number(*n)),
    Data::Text(text) => write_string(&sanitize_text(text, MAX_DATA_STRING_CHARS), out),
    Data::Other(text) => write_string(text, out),
    Data::Seen => write_string("[circular]", out),
    Data::Deep => write_string("[truncated]", out),
    Data::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().take(MAX_DATA_ENTRIES).enumerate() {
        if i > 0 {
          out.push(',');
        }
        write_sanitized(item, depth + 1, out);
      }
      out.push(']');
    }
    Data::Object(entries) => {
      out.push('{');
      for (i, (key, item)) in entries.iter().take(MAX_DATA_ENTRIES).enumerate() {
        if i > 0 {
          out.push(',');
        }
        write_string(key, out);
        out.push(':');
        if is_secret_key(key) {
          write_string("[redacted]", out);
        } else {
          write_sanitized(item, depth + 1, out);
        }
      }
      out.push('}');
    }
  }
}

fn write_string(text: &str, out: &mut String) {
  out.push_str(&serde_json::Value::from(text).to_string());
}

/// A number as `JSON.stringify` writes it.
fn js_number(n: f64) -> String {
  if !n.is_finite() {
    return "null".to_string();
  }
  if n.fract() == 0.0 && n.abs() < 1e21 {
    // -0 is written "0", as JS does.
    return format!("{}", n as i128);
  }
  let text = serde_json::Number::from_f64(n).map_or_else(|| "null".to_string(), |n| n.to_string());
  // JS writes a positive exponent with its sign: 1e+21.
  match text.split_once('e') {
    Some((mantissa, exponent)) if !exponent.starts_with(['-', '+']) => {
      format!("{mantissa}e+{exponent}")
    }
    _ => text,
  }
}

/// The agent's `serializeData`: sanitized JSON text of at most 2 000 UTF-16 units; longer
/// text becomes `{"truncated":true,"preview":…}` of that size.
pub fn serialize_data(value: &Data) -> String {
  let mut serialized = String::new();
  write_sanitized(value, 0, &mut serialized);
  if js_length(&serialized) <= MAX_DATA_CHARS {
    return serialized;
  }
  let mut preview_chars = MAX_DATA_CHARS - 64;
  loop {
    let mut bounded = String::from("{\"truncated\":true,\"preview\":");
    write_string(js_slice(&serialized, preview_chars), &mut bounded);
    bounded.push('}');
    let length = js_length(&bounded);
    if length <= MAX_DATA_CHARS {
      return bounded;
    }
    preview_chars -= (length - MAX_DATA_CHARS).min(preview_chars);
  }
}

/// The agent's `safeTraceId`: a short identifier of safe characters, trimmed.
pub fn safe_trace_id(value: &str) -> Option<String> {
  let trimmed = js_trim(value);
  (!trimmed.is_empty() && js_length(trimmed) <= MAX_TRACE_ID_CHARS && TRACE_ID.is_match(trimmed))
    .then(|| trimmed.to_string())
}

/// Whether `data` under this key is a secret (its value is never written).
pub fn is_secret_key(key: &str) -> bool {
  SECRET_KEY.is_match(key)
}

/// The agent's `findTraceId`: the first safe value of a trace-named key, depth first.
pub fn find_trace_id(value: &Data) -> Option<String> {
  find_trace_id_at(value, 0)
}

fn find_trace_id_at(value: &Data, depth: usize) -> Option<String> {
  let Data::Object(entries) = value else {
    return None;
  };
  if depth > MAX_DATA_DEPTH {
    return None;
  }
  entries.iter().find_map(|(key, item)| {
    let own = match item {
      Data::Text(text) if TRACE_KEY.is_match(key) => safe_trace_id(text),
      _ => None,
    };
    own.or_else(|| find_trace_id_at(item, depth + 1))
  })
}

/// The headers `mcpTraceIdFromHeaders` reads, in order.
pub const TRACE_HEADERS: [&str; 5] = [
  "traceparent",
  "x-request-id",
  "x-trace-id",
  "x-correlation-id",
  "cf-ray",
];

/// The agent's `mcpTraceIdFromHeaders` over a header lookup.
pub fn trace_id_from_headers(mut get: impl FnMut(&str) -> Option<String>) -> Option<String> {
  TRACE_HEADERS
    .iter()
    .find_map(|name| get(name).and_then(|value| safe_trace_id(&value)))
}

/// The agent's `createMCPJsonRpcError`: a server's JSON-RPC error, never retryable.
pub fn json_rpc(
  transport: TransportKind,
  code: Option<&Code>,
  message: &str,
  data: Option<&Data>,
  trace_id: Option<&str>,
) -> Diagnostic {
  let code_text = match code {
    Some(Code::Number(n)) => js_number(*n),
    Some(Code::Text(text)) => text.clone(),
    None => "undefined".to_string(),
  };
  let mut diagnostic = Diagnostic::new(
    transport,
    Stage::Protocol,
    Failure::JsonRpc,
    &format!("MCP error {code_text}: {message}"),
    false,
  );
  diagnostic.code = code.cloned();
  diagnostic.data = data.map(serialize_data);
  diagnostic.trace_id = trace_id
    .and_then(safe_trace_id)
    .or_else(|| data.and_then(find_trace_id));
  diagnostic
}

/// What `normalizeMCPTransportError` reads of an arbitrary thrown value.
#[derive(Debug, Clone, Default)]
pub struct Thrown {
  /// An `Error`'s message, else `String(value)`.
  pub message: String,
  /// The first string or number `code` along the value and its `cause`s.
  pub code: Option<Code>,
  /// Whether it is a `SyntaxError`.
  pub syntax_error: bool,
}

/// The agent's `normalizeMCPTransportError` for a value that is not an `MCPTransportError`
/// yet: its class read from its code and its words.
pub fn classify(
  thrown: &Thrown,
  transport: TransportKind,
  stage: Stage,
  trace_id: Option<&str>,
) -> Diagnostic {
  let message = sanitize_message(&thrown.message);
  let mut code = thrown.code.clone();
  let upper = match &code {
    Some(Code::Text(text)) => text.to_uppercase(),
    _ => String::new(),
  };
  let (failure, retryable) = if matches!(
    upper.as_str(),
    "ECONNREFUSED" | "CONNECTIONREFUSED" | "ENETUNREACH" | "EHOSTUNREACH"
  ) || CONNECT_WORDS.is_match(&message)
  {
    (Failure::Connect, true)
  } else if upper == "ECONNRESET" || RESET_WORDS.is_match(&message) {
    (Failure::Reset, true)
  } else if upper == "EPIPE" || EOF_WORDS.is_match(&message) {
    (Failure::Eof, true)
  } else if TIMEOUT_WORDS.is_match(&message) {
    (Failure::Timeout, false)
  } else if thrown.syntax_error || MALFORMED_WORDS.is_match(&message) {
    (Failure::MalformedResponse, false)
  } else if let Some(status) = HTTP_STATUS
    .captures(&message)
    .and_then(|c| c[1].parse::<u16>().ok())
  {
    code = Some(Code::Number(f64::from(status)));
    (Failure::HttpStatus, matches!(status, 404 | 502 | 503))
  } else if CONNECT_PROSE.is_match(&message) {
    (Failure::Connect, true)
  } else {
    (Failure::Unknown, false)
  };
  let stage = match failure {
    Failure::Connect => Stage::Connect,
    Failure::MalformedResponse => Stage::Decode,
    _ => stage,
  };
  let message = if message.is_empty() {
    "Unknown MCP transport failure".to_string()
  } else {
    message
  };
  Diagnostic {
    transport,
    stage,
    failure,
    message: sanitize_message(&message),
    retryable,
    code,
    data: None,
    trace_id: trace_id.and_then(safe_trace_id),
  }
}

fn next_step(diagnostic: &Diagnostic) -> &'static str {
  match diagnostic.failure {
    Failure::Connect => "Check that the MCP server is running and reachable, then retry.",
    Failure::Timeout => {
      "Check server health or increase the MCP timeout; the request outcome is unknown."
    }
    Failure::Eof | Failure::Reset if diagnostic.transport == TransportKind::Stdio => {
      "Inspect the MCP subprocess logs, restart the server, then retry."
    }
    Failure::Eof | Failure::Reset => "Check the MCP server logs and availability, then retry.",
    Failure::MalformedResponse => "Inspect the MCP server logs for an invalid JSON-RPC response.",
    Failure::JsonRpc => "Address the server-reported MCP error before retrying.",
    Failure::HttpStatus if diagnostic.retryable => "Check the MCP server status, then retry.",
    Failure::HttpStatus => "Check the MCP endpoint and authentication configuration.",
    Failure::Closed => "Reconnect the MCP server, then retry.",
    Failure::Unknown => "Inspect the MCP server logs and transport configuration.",
  }
}

/// The agent's `formatMCPToolFailure`: the report its tool bridge returns to the model.
pub fn format_tool_failure(diagnostic: &Diagnostic, server: &str, tool: &str) -> String {
  let mut lines = vec![
    "MCP failure".to_string(),
    format!("server: {}", sanitize_message(server)),
    format!("tool: {}", sanitize_message(tool)),
    format!("transport: {}", diagnostic.transport.name()),
    format!("stage: {}", diagnostic.stage.name()),
    format!("failure: {}", diagnostic.failure.name()),
    format!(
      "retryable: {}",
      if diagnostic.retryable { "yes" } else { "no" }
    ),
    format!("message: {}", diagnostic.message),
  ];
  match &diagnostic.code {
    Some(Code::Text(text)) => lines.push(format!("code: {text}")),
    Some(Code::Number(n)) => lines.push(format!("code: {}", js_number(*n))),
    None => {}
  }
  if let Some(trace_id) = &diagnostic.trace_id {
    lines.push(format!("trace_id: {trace_id}"));
  }
  if let Some(data) = &diagnostic.data {
    lines.push(format!("data: {data}"));
  }
  lines.push(format!("next: {}", next_step(diagnostic)));
  lines.join("\n")
}

#[cfg(test)]
mod tests {
  use super::*;

  fn thrown(message: &str, code: Option<Code>) -> Thrown {
    Thrown {
      message: message.into(),
      code,
      syntax_error: false,
    }
  }

  #[test]
  fn a45_sanitizing_drops_fetch_advice_and_redacts_credentials() {
    assert_eq!(
      sanitize_message("fetch failed. For more information, pass `verbose: true` in the second argument to fetch()."),
      "fetch failed."
    );
    assert_eq!(
      sanitize_message("sent Authorization: Bearer abc.def, then basic Zm9v;"),
      "sent Authorization: [redacted] [redacted], then basic [redacted];"
    );
    assert_eq!(
      sanitize_message("GET /x?a=1&access_token=s3cr3t&api-key=k#f failed"),
      // The field rule then takes `token=` to the next space, as the agent's does.
      "GET /x?a=1&access_token=[redacted] failed"
    );
    assert_eq!(
      sanitize_message("{password = hunter2} private_key:abc}"),
      "{password = [redacted]} private_key:[redacted]}"
    );
    assert_eq!(sanitize_text("  ab  cd  ", 6), "ab");
    assert_eq!(sanitize_text(" ab  cd  ", 6), "ab  c");
    assert_eq!(sanitize_text("é😀x", 2), "é");
  }

  #[test]
  fn a45_every_pattern_compiles() {
    for pattern in [
      &FETCH_VERBOSE_ADVICE,
      &SCHEME_CREDENTIAL,
      &SECRET_PARAMETER,
      &SECRET_FIELD,
      &SECRET_KEY,
      &TRACE_KEY,
      &TRACE_ID,
      &CONNECT_WORDS,
      &RESET_WORDS,
      &EOF_WORDS,
      &TIMEOUT_WORDS,
      &MALFORMED_WORDS,
      &HTTP_STATUS,
      &CONNECT_PROSE,
    ] {
      LazyLock::force(pattern);
    }
  }

  #[test]
  fn a45_classification_follows_the_agents_order() {
    let cases: [(&str, Option<Code>, Failure, Stage, bool); 14] = [
      (
        "x",
        Some(Code::Text("econnrefused".into())),
        Failure::Connect,
        Stage::Connect,
        true,
      ),
      (
        "connect ECONNREFUSED 127.0.0.1:9",
        None,
        Failure::Connect,
        Stage::Connect,
        true,
      ),
      ("read ECONNRESET", None, Failure::Reset, Stage::Send, true),
      ("write EPIPE", None, Failure::Eof, Stage::Send, true),
      ("Transport closed", None, Failure::Eof, Stage::Send, true),
      (
        "Request timeout after 200ms",
        None,
        Failure::Timeout,
        Stage::Send,
        false,
      ),
      (
        "Invalid JSON in response",
        None,
        Failure::MalformedResponse,
        Stage::Decode,
        false,
      ),
      (
        "Malformed JSON-RPC response",
        None,
        Failure::MalformedResponse,
        Stage::Decode,
        false,
      ),
      (
        "HTTP 503: busy",
        None,
        Failure::HttpStatus,
        Stage::Send,
        true,
      ),
      (
        "HTTP 401: no",
        None,
        Failure::HttpStatus,
        Stage::Send,
        false,
      ),
      (
        "Transport not connected",
        None,
        Failure::Connect,
        Stage::Connect,
        true,
      ),
      (
        "fetch failed: http://h/",
        None,
        Failure::Connect,
        Stage::Connect,
        true,
      ),
      ("", None, Failure::Unknown, Stage::Send, false),
      // "eof" only as a word: "geoff" is not an end of file.
      ("geoff said no", None, Failure::Unknown, Stage::Send, false),
    ];
    for (message, code, failure, stage, retryable) in cases {
      let d = classify(
        &thrown(message, code),
        TransportKind::Http,
        Stage::Send,
        None,
      );
      assert_eq!(
        (d.failure, d.stage, d.retryable),
        (failure, stage, retryable),
        "{message}"
      );
    }
    let d = classify(
      &thrown("HTTP 404: gone", None),
      TransportKind::Http,
      Stage::Send,
      Some(" t-1 "),
    );
    assert_eq!(d.code, Some(Code::Number(404.0)));
    assert_eq!(d.trace_id.as_deref(), Some("t-1"));
    let d = classify(
      &thrown("", None),
      TransportKind::Stdio,
      Stage::Receive,
      Some("bad id!"),
    );
    assert_eq!(d.message, "Unknown MCP transport failure");
    assert_eq!(d.trace_id, None);
    let syntax = Thrown {
      syntax_error: true,
      ..thrown("Unexpected token", None)
    };
    assert_eq!(
      classify(&syntax, TransportKind::Http, Stage::Receive, None).failure,
      Failure::MalformedResponse
    );
  }

  #[test]
  fn a45_data_is_redacted_bounded_and_trace_ids_found() {
    let data = Data::from_json(&serde_json::json!({
      "clientSecret": "s",
      "detail": "token=abc ok",
      "n": [1, 2.5, -0.0, 1e21, 1.5e-7],
      "meta": { "requestId": "req-7" },
      "deep": { "a": { "b": { "c": { "d": { "e": 1 } } } } },
    }));
    assert_eq!(
      serialize_data(&data),
      r#"{"clientSecret":"[redacted]","detail":"token=[redacted] ok","n":[1,2.5,0,1e+21,1.5e-7],"meta":{"requestId":"req-7"},"deep":{"a":{"b":{"c":{"d":{"e":"[truncated]"}}}}}}"#
    );
    assert_eq!(find_trace_id(&data).as_deref(), Some("req-7"));
    let long = Data::Text("x".repeat(300));
    assert_eq!(serialize_data(&long).len(), 258);
    let wide = Data::Array((0..30).map(|i| Data::Text(format!("{i:0>200}"))).collect());
    let bounded = serialize_data(&wide);
    assert!(bounded.starts_with(r#"{"truncated":true,"preview":"["#));
    assert!(js_length(&bounded) <= MAX_DATA_CHARS && js_length(&bounded) > MAX_DATA_CHARS - 70);
  }

  #[test]
  fn a45_json_rpc_errors_and_the_tool_failure_report() {
    let d = json_rpc(
      TransportKind::Stdio,
      Some(&Code::Number(-32602.0)),
      "bad params",
      Some(&Data::from_json(&serde_json::json!({ "traceId": "abc" }))),
      None,
    );
    assert_eq!(d.message, "MCP error -32602: bad params");
    assert_eq!(d.trace_id.as_deref(), Some("abc"));
    assert_eq!(
      format_tool_failure(&d, "srv", "do"),
      "MCP failure\nserver: srv\ntool: do\ntransport: stdio\nstage: protocol\nfailure: json_rpc\nretryable: no\nmessage: MCP error -32602: bad params\ncode: -32602\ntrace_id: abc\ndata: {\"traceId\":\"abc\"}\nnext: Address the server-reported MCP error before retrying."
    );
    let eof = Diagnostic::new(
      TransportKind::Http,
      Stage::Receive,
      Failure::Eof,
      "gone",
      true,
    );
    assert!(format_tool_failure(&eof, "s", "t")
      .ends_with("next: Check the MCP server logs and availability, then retry."));
  }
}
