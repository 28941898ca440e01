//! Property-based fuzzing of every parser that sees server bytes (issue 8): the stdio line
//! framer, JSON-RPC classification (and the large-result tree, which must agree with it),
//! the SSE event parser and J1 `parseSSE`.
//!
//! Each target checks that its parser never panics, holds at most its byte cap plus a
//! constant, and gives the same results however the stream is cut into reads, by comparing
//! it with a plain model that reads the whole stream at once.
//!
//! Bounds: `cargo test` runs each target for `FUZZ_CASES` cases (else `PROPTEST_CASES`, else
//! proptest's 256). With `FUZZ_SECONDS` set (`npm run fuzz` sets 60), each target runs batches
//! of that many cases with fresh seeds until the time is up. A failure prints the shrunk input
//! and the `FUZZ_SEED` that replays its batch. `tests/fuzz-corpus/` holds tricky inputs that
//! `seed_corpus_replays` runs through every parser at every split point.
use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_native::protocol::framing::{Frame, LineFramer};
use mcp_native::protocol::line_scan::LineScan;
use mcp_native::protocol::message::{self, Incoming, RpcError, WireId};
use mcp_native::protocol::parse_sse;
use mcp_native::protocol::sse::{SseEvent, SseItem, SseParser};
use mcp_native::protocol::tree::{self, Node, ResultTree};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{
  Config, RngAlgorithm, TestCaseError, TestCaseResult, TestRng, TestRunner,
};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// The harness: a case count for `cargo test`, a time budget for `npm run fuzz`.

fn env_number(name: &str) -> Option<u64> {
  let text = std::env::var(name).ok()?;
  let number = text.trim().parse();
  Some(number.unwrap_or_else(|_| panic!("{name} must be a whole number, got {text:?}")))
}

fn fuzz<S: Strategy>(target: &str, strategy: S, test: impl Fn(S::Value) -> TestCaseResult) {
  let cases = env_number("FUZZ_CASES").map_or_else(|| Config::default().cases, |n| n as u32);
  let budget = env_number("FUZZ_SECONDS").map(Duration::from_secs);
  let replay = env_number("FUZZ_SEED");
  let started = Instant::now();
  let mut total = 0u64;
  loop {
    let seed = replay.unwrap_or_else(fresh_seed);
    let config = Config {
      cases,
      // Failures are reported with their seed instead of files beside the test.
      failure_persistence: None,
      // Shrinking, too, stays within a bounded time (ms).
      max_shrink_time: 30_000,
      ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed));
    let mut runner = TestRunner::new_with_rng(config, rng);
    if let Err(error) = runner.run(&strategy, &test) {
      panic!("fuzz {target}: {error}\nreplay: FUZZ_SEED={seed} FUZZ_CASES={cases}");
    }
    total += u64::from(cases);
    match budget {
      Some(budget) if replay.is_none() && started.elapsed() < budget => {}
      _ => break,
    }
  }
  if budget.is_some() {
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("fuzz {target}: {total} cases in {seconds:.1} s");
  }
}

fn fresh_seed() -> u64 {
  use std::hash::BuildHasher;
  // RandomState is keyed from the OS and differs per instance: no rand crate needed.
  let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
  std::collections::hash_map::RandomState::new().hash_one(now.unwrap_or_default())
}

/// splitmix64, to stretch a printable seed to ChaCha's 32 bytes.
fn seed_bytes(mut seed: u64) -> [u8; 32] {
  let mut bytes = [0u8; 32];
  for word in bytes.chunks_mut(8) {
    seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
  }
  bytes
}

// ---------------------------------------------------------------------------------------------
// Shared strategies.

/// A byte stream assembled from tokens that matter to the parser, random bytes and long runs.
fn stream(tokens: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
  let corpus = corpus();
  let piece = prop_oneof![
    6 => prop::sample::select(tokens).prop_map(<[u8]>::to_vec),
    2 => prop::collection::vec(any::<u8>(), 0..8),
    1 => (1usize..400, prop::sample::select(b"x:\r\n ".to_vec())).prop_map(|(n, b)| vec![b; n]),
  ];
  let built = prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat());
  let mutated = (
    prop::sample::select(corpus),
    prop::collection::vec((any::<Index>(), any::<u8>()), 0..6),
  )
    .prop_map(|((_, mut bytes), flips)| {
      if !bytes.is_empty() {
        for (at, byte) in flips {
          let at = at.index(bytes.len());
          bytes[at] = byte;
        }
      }
      bytes
    });
  prop_oneof![4 => built, 1 => mutated]
}

/// Where to cut a stream into reads (empty reads included).
fn cuts() -> impl Strategy<Value = Vec<Index>> {
  prop::collection::vec(any::<Index>(), 0..40)
}

fn split<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
  let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
  points.sort_unstable();
  let mut chunks = Vec::with_capacity(points.len() + 1);
  let mut start = 0;
  for point in points {
    chunks.push(&bytes[start..point]);
    start = point;
  }
  chunks.push(&bytes[start..]);
  chunks
}

/// Any JSON value; integers and short strings are where the edge cases are.
fn json_value() -> impl Strategy<Value = Value> {
  json_value_of(prop_oneof![Just(String::new()), any::<String>()].boxed())
}

/// Any JSON value whose strings come from `strings`.
fn json_value_of(strings: BoxedStrategy<String>) -> impl Strategy<Value = Value> {
  let leaf = prop_oneof![
    Just(Value::Null),
    any::<bool>().prop_map(Value::Bool),
    prop_oneof![Just(0i64), Just(-1), any::<i64>()].prop_map(Value::from),
    prop_oneof![Just(0.0f64), Just(-0.0), -1e9f64..1e9, any::<f64>()].prop_map(Value::from),
    strings.prop_map(Value::String),
  ];
  leaf.prop_recursive(3, 24, 4, |inner| {
    prop_oneof![
      prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
      prop::collection::vec(("[a-z_]{0,6}", inner), 0..4)
        .prop_map(|fields| Value::Object(fields.into_iter().collect())),
    ]
  })
}

/// JS truthiness of a parsed value (what `parseSSE` tests).
fn truthy(value: &Value) -> bool {
  match value {
    Value::Null => false,
    Value::Bool(b) => *b,
    Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
    Value::String(s) => !s.is_empty(),
    Value::Array(_) | Value::Object(_) => true,
  }
}

fn corpus() -> Vec<(String, Vec<u8>)> {
  let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-corpus");
  let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
    .expect("tests/fuzz-corpus")
    .map(|entry| {
      let path = entry.expect("corpus entry").path();
      let name = path.file_name().unwrap().to_string_lossy().into_owned();
      (name, std::fs::read(&path).expect("corpus file"))
    })
    .collect();
  files.sort();
  assert!(!files.is_empty(), "the seed corpus is empty");
  files
}

// ---------------------------------------------------------------------------------------------
// S2/E3: the stdio line framer.

const FRAMER_TOKENS: &[&[u8]] = &[
  b"\n",
  b"\r",
  b"\r\n",
  b"\n\n",
  b"{}",
  b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
  b"\xEF\xBB\xBF",
  b"\xE2\x82",
  b"\xAC",
  b"\xFF",
  b"x",
];

/// S2/E3 read off the whole stream: lines end at `\n` and lose one trailing `\r`; a line
/// over the cap is `TooLarge`; an unterminated last line counts unless it is empty or `\r`.
fn framer_model(bytes: &[u8], max: usize) -> Vec<Frame> {
  let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
  let last = lines.pop().unwrap_or_default();
  if !last.is_empty() && last != b"\r" {
    lines.push(last);
  }
  let frame = |line: &[u8]| {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > max {
      Frame::TooLarge
    } else {
      Frame::Line(Bytes::copy_from_slice(line))
    }
  };
  lines.into_iter().map(frame).collect()
}

/// The quote offsets a `LineScan` of `line` must report, if it reports any.
fn quote_offsets(line: &[u8]) -> Option<Vec<usize>> {
  let printable = line.iter().all(|b| (0x20..0x80).contains(b) && *b != b'\\');
  let quotes: Vec<usize> = (0..line.len()).filter(|&i| line[i] == b'"').collect();
  (printable && quotes.len() <= 1 << 16).then_some(quotes)
}

/// A scan the framer hands out must describe its line exactly (the line plus a cut `\r`).
fn check_line_scan(line: &[u8], scan: &LineScan) -> TestCaseResult {
  let scanned = if scan.len() == line.len() + 1 {
    [line, b"\r"].concat()
  } else {
    line.to_vec()
  };
  prop_assert_eq!(scan.len(), scanned.len(), "scan length of {:?}", line);
  prop_assert_eq!(
    scan.quotes().map(<[usize]>::to_vec),
    quote_offsets(&scanned)
  );
  Ok(())
}

/// Reads `chunks` as the stdio reader does, checking E3's bound after every read, and every
/// line scan against the line it came with.
fn run_framer(chunks: &[&[u8]], max: usize) -> Result<Vec<Frame>, TestCaseError> {
  let mut framer = LineFramer::new(max).long_lines_from(max / 4);
  let mut frames = Vec::new();
  let mut take = |frame: Frame, framer: &mut LineFramer| {
    if let (Frame::Line(line), Some(scan)) = (&frame, framer.take_line_scan()) {
      check_line_scan(line, &scan)?;
    }
    frames.push(frame);
    Ok::<(), TestCaseError>(())
  };
  for chunk in chunks {
    framer.buffer.extend_from_slice(chunk);
    while let Some(frame) = framer.next_frame() {
      take(frame, &mut framer)?;
    }
    prop_assert!(
      framer.buffered_len() <= max + 1,
      "holds {} bytes with a cap of {max}",
      framer.buffered_len()
    );
  }
  while let Some(frame) = framer.finish() {
    take(frame, &mut framer)?;
  }
  prop_assert_eq!(framer.buffered_len(), 0);
  Ok(frames)
}

fn check_framer(bytes: &[u8], chunks: &[&[u8]], max: usize) -> TestCaseResult {
  let expected = framer_model(bytes, max);
  prop_assert_eq!(&run_framer(&[bytes], max)?, &expected, "read whole");
  prop_assert_eq!(&run_framer(chunks, max)?, &expected, "read in {:?}", chunks);
  Ok(())
}

#[test]
fn framer() {
  let strategy = (stream(FRAMER_TOKENS), cuts(), 0usize..64);
  fuzz("framer", strategy, |(bytes, cuts, max)| {
    check_framer(&bytes, &split(&bytes, &cuts), max)
  });
}

// ---------------------------------------------------------------------------------------------
// T5/T6/T11: classification, over stdio as the reader sees it.

/// What a classified message says, in comparable form.
#[derive(Debug, PartialEq)]
enum Seen {
  Request {
    id: String,
    method: String,
    params: Option<Value>,
  },
  Notification {
    method: String,
    params: Option<Value>,
  },
  Response {
    id: Option<u64>,
    outcome: Result<Value, (i64, String, Option<Value>)>,
  },
  TooLarge,
}

fn parsed(raw: &str) -> Value {
  serde_json::from_str(raw).expect("raw JSON from classify")
}

fn seen(message: Incoming) -> Seen {
  match message {
    Incoming::Request { id, method, params } => Seen::Request {
      id: id.get().to_string(),
      method,
      params: params.map(|p| parsed(p.get())),
    },
    Incoming::Notification { method, params } => Seen::Notification {
      method,
      params: params.map(|p| parsed(p.get())),
    },
    Incoming::Response { id, outcome } => Seen::Response {
      id: id.and_then(|id| match id {
        WireId::Number(n) => Some(n),
        WireId::Hex(_) => None,
      }),
      outcome: match outcome {
        Ok(result) => Ok(parsed(result.get())),
        Err(e) => Err((e.code, e.message, e.data.as_deref().map(parsed))),
      },
    },
  }
}

/// A response id as JS compares it: any number equal to a safe integer matches that id.
fn expected_response_id(id: &Value) -> Option<u64> {
  const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;
  id.as_u64().or_else(|| {
    let f = id.as_f64()?;
    (f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&f)).then_some(f as u64)
  })
}

/// How a number id may be spelled: all of these are the same JS number.
fn id_spelling(n: u64, how: u8) -> String {
  match how % 5 {
    0 => format!("{n}.0"),
    1 => format!("{n}e0"),
    2 => format!("{}e-1", n * 10),
    3 => format!("{n}.000E+0"),
    _ => n.to_string(),
  }
}

#[derive(Debug, Clone)]
enum Kind {
  Request,
  Notification,
  Result(Value),
  Error(i64, String, Option<Value>),
}

/// A valid JSON-RPC message with everything a server may vary: id spelling, key order, key
/// escapes, whitespace and unknown fields.
#[derive(Debug, Clone)]
struct Envelope {
  kind: Kind,
  id: String,
  method: String,
  params: Option<Value>,
  extra: Vec<(String, Value)>,
  order: Vec<u8>,
  spaces: Vec<&'static str>,
  escape_keys: bool,
}

fn envelope() -> impl Strategy<Value = Envelope> {
  let number_id = (0u64..1 << 53, any::<u8>()).prop_map(|(n, how)| id_spelling(n, how));
  let small_id = (0u64..10, any::<u8>()).prop_map(|(n, how)| id_spelling(n, how));
  let other_id = prop_oneof![
    any::<String>().prop_map(|s| Value::String(s).to_string()),
    Just("-1".to_string()),
    Just("1.5".to_string()),
    Just("1e300".to_string()),
    Just("18446744073709551616".to_string()),
  ];
  let id = prop_oneof![number_id, small_id, other_id];
  let kind = prop_oneof![
    Just(Kind::Request),
    Just(Kind::Notification),
    json_value().prop_map(Kind::Result),
    (
      any::<i64>(),
      any::<String>(),
      prop::option::of(json_value())
    )
      .prop_map(|(code, message, data)| Kind::Error(code, message, data)),
  ];
  let params = prop::option::of(json_value());
  let extra = prop::collection::vec(("_[a-z]{0,4}", json_value()), 0..2);
  let spaces = prop::collection::vec(prop::sample::select(vec!["", " ", "\t", "\r"]), 1..8);
  (
    kind,
    id,
    any::<String>(),
    params,
    extra,
    any::<[u8; 8]>(),
    spaces,
    any::<bool>(),
  )
    .prop_map(
      |(kind, id, method, params, extra, order, spaces, escape_keys)| Envelope {
        kind,
        id,
        method,
        params,
        extra,
        order: order.to_vec(),
        spaces,
        escape_keys,
      },
    )
}

impl Envelope {
  fn text(&self) -> String {
    let mut fields: Vec<(String, String)> = vec![("jsonrpc".into(), "\"2.0\"".into())];
    let method = Value::String(self.method.clone()).to_string();
    match &self.kind {
      Kind::Request | Kind::Notification => {
        if let Kind::Request = self.kind {
          fields.push(("id".into(), self.id.clone()));
        }
        fields.push(("method".into(), method));
        if let Some(params) = &self.params {
          fields.push(("params".into(), params.to_string()));
        }
      }
      Kind::Result(result) => {
        fields.push(("id".into(), self.id.clone()));
        fields.push(("result".into(), result.to_string()));
      }
      Kind::Error(code, message, data) => {
        let mut error = serde_json::json!({ "code": code, "message": message });
        if let Some(data) = data {
          error["data"] = data.clone();
        }
        fields.push(("id".into(), self.id.clone()));
        fields.push(("error".into(), error.to_string()));
      }
    }
    fields.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.to_string())));
    let mut keyed: Vec<(u8, (String, String))> = self.order.iter().copied().zip(fields).collect();
    keyed.sort_by_key(|(k, _)| *k);
    let mut space = self.spaces.iter().cycle();
    let mut text = String::from(*space.next().unwrap());
    text.push('{');
    for (i, (_, (key, value))) in keyed.into_iter().enumerate() {
      if i > 0 {
        text.push(',');
      }
      text.push_str(space.next().unwrap());
      let key = match (self.escape_keys, key.chars().next()) {
        // `\u0069d` is `id`: a server may escape any character of a key.
        (true, Some(first)) => format!("\"\\u{:04x}{}\"", first as u32, &key[1..]),
        _ => format!("\"{key}\""),
      };
      text.push_str(&key);
      text.push_str(space.next().unwrap());
      text.push(':');
      text.push_str(space.next().unwrap());
      text.push_str(&value);
      text.push_str(space.next().unwrap());
    }
    text.push('}');
    text.push_str(space.next().unwrap());
    text
  }

  fn expected(&self) -> Seen {
    // `"params": null` stays `null` (the agent passes it on), apart from absent params.
    let params = self.params.clone();
    let response_id = serde_json::from_str(&self.id)
      .ok()
      .and_then(|id| expected_response_id(&id));
    match &self.kind {
      Kind::Request => Seen::Request {
        id: self.id.clone(),
        method: self.method.clone(),
        params,
      },
      Kind::Notification => Seen::Notification {
        method: self.method.clone(),
        params,
      },
      Kind::Result(result) => Seen::Response {
        id: response_id,
        outcome: Ok(result.clone()),
      },
      Kind::Error(code, message, data) => Seen::Response {
        id: response_id,
        outcome: Err((*code, message.clone(), data.clone())),
      },
    }
  }
}

const JUNK_LINES: &[&[u8]] = &[
  b"",
  b"Server starting...",
  b"[1,2,3]",
  b"[7,\"ping\"]",
  b"[null,\"notifications/tools/list_changed\"]",
  b"[5,null,null,{\"x\":1}]",
  b"{\"hello\":\"world\"}",
  b"{\"id\":3}",
  b"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}",
  b"{\"jsonrpc\":\"2.0\",\"method\":5}",
  b"{\"jsonrpc\":",
  b"null",
  b"\xFF\xFE{}",
];

#[derive(Debug, Clone)]
enum Line {
  Message(Box<Envelope>),
  Junk(&'static [u8]),
}

/// The stdio reader's path: framer, UTF-8 check, classify.
fn read_messages(chunks: &[&[u8]], max: usize) -> Vec<Seen> {
  let mut framer = LineFramer::new(max);
  let mut frames = Vec::new();
  for chunk in chunks {
    framer.buffer.extend_from_slice(chunk);
    frames.extend(std::iter::from_fn(|| framer.next_frame()));
  }
  frames.extend(std::iter::from_fn(|| framer.finish()));
  let classify = |frame| match frame {
    Frame::TooLarge => Some(Seen::TooLarge),
    Frame::Line(line) => {
      let text = std::str::from_utf8(&line).ok()?;
      message::classify(text).ok().map(seen)
    }
  };
  frames.into_iter().filter_map(classify).collect()
}

#[test]
fn stdio_messages() {
  let line = prop_oneof![
    3 => envelope().prop_map(|e| Line::Message(Box::new(e))),
    1 => prop::sample::select(JUNK_LINES).prop_map(Line::Junk),
  ];
  let lines = prop::collection::vec((line, any::<bool>()), 0..12);
  let strategy = (lines, any::<bool>(), cuts());
  fuzz("stdio_messages", strategy, |(lines, last_ends, cuts)| {
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    let count = lines.len();
    for (i, (line, crlf)) in lines.into_iter().enumerate() {
      match line {
        Line::Message(envelope) => {
          bytes.extend_from_slice(envelope.text().as_bytes());
          expected.push(envelope.expected());
        }
        Line::Junk(junk) => bytes.extend_from_slice(junk),
      }
      if i + 1 < count || last_ends {
        bytes.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
      }
    }
    let seen = read_messages(&split(&bytes, &cuts), 1 << 20);
    prop_assert_eq!(
      seen,
      expected,
      "stream {:?}",
      String::from_utf8_lossy(&bytes)
    );
    Ok(())
  });
}

/// What `classify` returns must agree with the same text read as a plain JSON value (the
/// last of a repeated key wins, as in `JSON.parse`).
fn check_classified(text: &str) -> TestCaseResult {
  let Ok(message) = message::classify(text) else {
    return check_skipped(text);
  };
  let value: Result<Value, _> = serde_json::from_str(text);
  let Ok(Value::Object(object)) = value else {
    return Err(TestCaseError::fail(format!(
      "{text:?} is no JSON object but classifies as {message:?}"
    )));
  };
  let field = |name: &str| object.get(name).filter(|v| !v.is_null()).cloned();
  match seen(message) {
    Seen::Request { id, method, params } => {
      prop_assert_eq!(Some(parsed(&id)), field("id"));
      prop_assert_eq!(Some(Value::String(method)), field("method"));
      prop_assert_eq!(params, object.get("params").cloned());
    }
    Seen::Notification { method, params } => {
      prop_assert_eq!(None, field("id"));
      prop_assert_eq!(Some(Value::String(method)), field("method"));
      prop_assert_eq!(params, object.get("params").cloned());
    }
    Seen::Response { id, outcome } => {
      prop_assert_eq!(None, field("method"));
      let sent_id = field("id").ok_or_else(|| TestCaseError::fail("a response without id"))?;
      prop_assert_eq!(id, expected_response_id(&sent_id));
      match (outcome, field("error")) {
        (Ok(result), None) => prop_assert_eq!(Some(&result), object.get("result")),
        (Err((code, message, data)), Some(error)) => {
          let number = error.get("code").and_then(|c| {
            // A code that is no integer is cut to one, saturating.
            c.as_i64().or_else(|| c.as_f64().map(|f| f as i64))
          });
          let text = error.get("message").and_then(Value::as_str);
          if let (Some(number), Some(text)) = (number, text) {
            prop_assert_eq!(code, number);
            prop_assert_eq!(message, text);
            prop_assert_eq!(data.as_ref(), error.get("data"));
          }
        }
        (outcome, error) => {
          return Err(TestCaseError::fail(format!(
            "outcome {outcome:?} for error {error:?}"
          )))
        }
      }
    }
    Seen::TooLarge => unreachable!(),
  }
  Ok(())
}

/// A frame that `classify` skipped must be no JSON-RPC message.
fn check_skipped(text: &str) -> TestCaseResult {
  let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) else {
    return Ok(());
  };
  let field = |name: &str| object.get(name).filter(|v| !v.is_null());
  let method = match field("method") {
    None => false,
    Some(Value::String(_)) => true,
    // A method that is no string makes no message.
    Some(_) => return Ok(()),
  };
  let answer = field("error").is_some() || object.contains_key("result");
  let is_message = method || (field("id").is_some() && answer);
  prop_assert!(!is_message, "{:?} was skipped", text);
  Ok(())
}

/// Objects of JSON-RPC's keys with values of any type; keys may repeat, as a server may send.
fn rpc_like_text() -> impl Strategy<Value = String> {
  fn object(fields: Vec<(&'static str, String)>) -> String {
    let fields: Vec<String> = fields
      .iter()
      .map(|(key, value)| format!("\"{key}\":{value}"))
      .collect();
    format!("{{{}}}", fields.join(","))
  }
  let any_json = || json_value().prop_map(|v| v.to_string());
  let scalar = prop_oneof![
    any::<i64>().prop_map(|n| n.to_string()),
    any::<String>().prop_map(|s| Value::String(s).to_string()),
    any_json(),
  ];
  let error_keys = vec!["code", "message", "data"];
  let error = prop::collection::vec((prop::sample::select(error_keys), scalar), 0..4);
  let value = prop_oneof![
    any_json(),
    error.prop_map(object),
    (0u64..5).prop_map(|n| n.to_string()),
    Just("\"ping\"".to_string()),
  ];
  let keys = vec!["jsonrpc", "id", "method", "params", "result", "error"];
  let message = prop::collection::vec((prop::sample::select(keys), value), 0..7).prop_map(object);
  let array = prop::collection::vec(json_value(), 0..6).prop_map(|a| Value::Array(a).to_string());
  prop_oneof![3 => message, 1 => array]
}

/// Every number as an f64, as JS holds it (the tree has no integers).
fn as_js_numbers(value: Value) -> Value {
  match value {
    Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
    Value::Array(items) => Value::Array(items.into_iter().map(as_js_numbers).collect()),
    Value::Object(fields) => Value::Object(
      fields
        .into_iter()
        .map(|(k, v)| (k, as_js_numbers(v)))
        .collect(),
    ),
    other => other,
  }
}

fn tree_value(tree: &ResultTree, node: &Node) -> Value {
  match node {
    Node::Null => Value::Null,
    Node::Bool(b) => Value::Bool(*b),
    Node::Number(n) => Value::from(*n),
    Node::Text(text) => Value::String(tree.text(text).to_string()),
    Node::Array(items) => Value::Array(items.iter().map(|i| tree_value(tree, i)).collect()),
    Node::Object(fields) => Value::Object(
      fields
        .iter()
        .map(|(k, v)| (tree.text(k).to_string(), tree_value(tree, v)))
        .collect(),
    ),
  }
}

/// The large-result path (`protocol::tree`) must read a response as `classify` does.
fn check_tree(text: &str) -> TestCaseResult {
  let Some((id, tree)) = tree::parse_response(Bytes::copy_from_slice(text.as_bytes())) else {
    return Ok(());
  };
  // Past 2^53 the tree's f64 ids and classify's exact ones part; our ids never get there.
  if id > 1 << 53 {
    return Ok(());
  }
  match message::classify(text).map(seen) {
    Ok(Seen::Response {
      id: Some(got),
      outcome: Ok(result),
    }) => {
      prop_assert_eq!(got, id);
      prop_assert_eq!(as_js_numbers(result), tree_value(&tree, &tree.root));
      Ok(())
    }
    other => Err(TestCaseError::fail(format!(
      "the tree reads {text:?} as the answer to {id}, classify as {other:?}"
    ))),
  }
}

/// The plain parser (strings read off the scan's quote index) never accepts what serde
/// refuses, and reads what it accepts as the general tree path does.
fn check_plain_tree(text: &str, chunks: &[&[u8]]) -> TestCaseResult {
  let mut scan = LineScan::default();
  for chunk in chunks {
    scan.feed(chunk);
  }
  check_line_scan(text.as_bytes(), &scan)?;
  let Some(quotes) = scan.quotes() else {
    return Ok(());
  };
  let frame = Bytes::copy_from_slice(text.as_bytes());
  let Some((id, plain)) = tree::parse_plain_response(frame.clone(), quotes) else {
    return Ok(());
  };
  let Some((general_id, general)) = tree::parse_response(frame) else {
    return Err(TestCaseError::fail(format!(
      "the plain parser read {text:?}, serde refused it"
    )));
  };
  prop_assert_eq!(id, general_id);
  prop_assert_eq!(
    tree_value(&plain, &plain.root),
    tree_value(&general, &general.root)
  );
  Ok(())
}

/// Printable-ASCII JSON: the plain parser's input, whole or with a few bytes changed.
fn plain_text() -> impl Strategy<Value = String> {
  let string = "[ !#-\\[\\]-~]{0,8}";
  let value = json_value_of(string.boxed());
  let envelope = (any::<u16>(), value)
    .prop_map(|(id, result)| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#));
  let edits = prop::collection::vec((any::<Index>(), prop::sample::select(PLAIN_TOKENS)), 0..3);
  (envelope, edits).prop_map(|(mut text, edits)| {
    for (at, token) in edits {
      let at = at.index(text.len() + 1);
      text.insert_str(at, token);
    }
    text
  })
}

const PLAIN_TOKENS: &[&str] = &[
  " ",
  "\"",
  ",",
  ":",
  "{",
  "}",
  "[",
  "]",
  "-",
  "0",
  "1",
  ".",
  "e",
  "E+",
  "true",
  "nul",
  r#""id":"#,
  r#""result":"#,
  r#""method":"m","#,
  r#""error":null,"#,
  "1e999",
];

#[test]
fn plain_tree() {
  fuzz("plain_tree", (plain_text(), cuts()), |(text, cuts)| {
    check_plain_tree(&text, &split(text.as_bytes(), &cuts))
  });
}

#[test]
fn classify() {
  let text = prop_oneof![
    any::<String>(),
    prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| String::from_utf8_lossy(&b).into()),
    rpc_like_text(),
    envelope().prop_map(|e| e.text()),
  ];
  let frames = (
    any::<u64>(),
    any::<String>(),
    prop::option::of(prop::collection::vec(("[a-z]{0,4}", json_value()), 0..3)),
    json_value(),
    (
      any::<i64>(),
      any::<String>(),
      prop::option::of(json_value()),
    ),
  );
  fuzz("classify", (text, frames), |(text, frames)| {
    check_classified(&text)?;
    check_tree(&text)?;
    // Our own frames, read back, say what was sent.
    let (id, method, params, result, (code, error_message, data)) = frames;
    let params = params.map(|p| Value::Object(p.into_iter().collect()).to_string());
    let request = message::request_frame(id, &method, params.as_deref());
    let expected = Seen::Request {
      id: id.to_string(),
      method: method.clone(),
      params: Some(parsed(params.as_deref().unwrap_or("{}"))),
    };
    prop_assert_eq!(seen(message::classify(&request).unwrap()), expected);
    let notification = message::notification_frame(&method, params.as_deref());
    let is_ours = matches!(
      seen(message::classify(&notification).unwrap()),
      Seen::Notification { method: m, .. } if m == method
    );
    prop_assert!(is_ours, "{} classified otherwise", notification);
    let answer = message::result_frame(&id.to_string(), &result.to_string());
    let expected = Seen::Response {
      id: Some(id),
      outcome: Ok(result),
    };
    prop_assert_eq!(seen(message::classify(&answer).unwrap()), expected);
    let error = RpcError {
      code,
      message: error_message,
      data: data.map(|d| d.to_string()),
    };
    let answer = message::error_frame(&id.to_string(), &error);
    match message::classify(&answer) {
      Ok(Incoming::Response {
        id: Some(got),
        outcome: Err(e),
      }) if got == WireId::Number(id) => prop_assert_eq!(e, error),
      other => {
        return Err(TestCaseError::fail(format!(
          "{answer} classified as {other:?}"
        )))
      }
    }
    Ok(())
  });
}

// ---------------------------------------------------------------------------------------------
// H6/E3: the SSE event parser.

const SSE_TOKENS: &[&[u8]] = &[
  b"\n",
  b"\r",
  b"\r\n",
  b"\n\n",
  b"\xEF\xBB\xBF",
  b"data: ",
  b"data:",
  b"data",
  b"event: message",
  b"event:",
  b"id: 7",
  b"id: a\0b",
  b"id",
  b"retry: 1500",
  b"retry: 18446744073709551616",
  b"retry: 1x",
  b"retry:",
  b": keep-alive",
  b":",
  b" ",
  b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
  b"[DONE]",
  b"\xE2\x82",
  b"\xAC",
  b"\xFF",
];

const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Default)]
struct ModelEvent<'a> {
  event: Option<&'a [u8]>,
  data: Vec<&'a [u8]>,
  id: Option<&'a [u8]>,
  retry: Option<u64>,
  bytes: usize,
  discarding: bool,
}

/// H6/E3 read off the whole stream, after the WHATWG rules: lines end at CRLF, CR or LF; a
/// BOM opens the stream; fields are decoded one line at a time. An event's lines count their
/// length plus one; past the cap the event is `TooLarge` once and dropped. The unterminated
/// rest counts too, as soon as it alone breaks the cap.
fn sse_model(bytes: &[u8], max: usize) -> Vec<SseItem> {
  let mut lines = Vec::new();
  let mut start = 0;
  let mut i = 0;
  while i < bytes.len() {
    if bytes[i] == b'\r' || bytes[i] == b'\n' {
      lines.push(&bytes[start..i]);
      if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
        i += 1;
      }
      start = i + 1;
    }
    i += 1;
  }
  let mut rest = &bytes[start..];
  if let Some(first) = lines.first_mut() {
    *first = first.strip_prefix(BOM).unwrap_or(first);
  } else if BOM.starts_with(rest) {
    rest = b"";
  } else {
    rest = rest.strip_prefix(BOM).unwrap_or(rest);
  }
  let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
  let mut out = Vec::new();
  let mut e = ModelEvent::default();
  for line in lines {
    if line.is_empty() {
      let event = std::mem::take(&mut e);
      if !event.discarding
        && (!event.data.is_empty() || event.id.is_some() || event.retry.is_some())
      {
        out.push(SseItem::Event(SseEvent {
          event: event.event.map(lossy),
          data: event
            .data
            .iter()
            .map(|d| lossy(d))
            .collect::<Vec<_>>()
            .join("\n"),
          id: event.id.map(lossy),
          retry: event.retry,
        }));
      }
      continue;
    }
    if e.discarding {
      continue;
    }
    e.bytes += line.len() + 1;
    if e.bytes > max {
      e.discarding = true;
      out.push(SseItem::TooLarge);
      continue;
    }
    if line[0] == b':' {
      continue;
    }
    let (field, value) = match line.iter().position(|&b| b == b':') {
      Some(colon) => {
        let value = &line[colon + 1..];
        (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
      }
      None => (line, &b""[..]),
    };
    match field {
      b"data" => e.data.push(value),
      b"event" => e.event = Some(value),
      b"id" if !value.contains(&0) => e.id = Some(value),
      b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
        // WHATWG sets the integer; one too large to hold is ignored like any bad value.
        if let Ok(ms) = std::str::from_utf8(value).unwrap().parse() {
          e.retry = Some(ms);
        }
      }
      _ => {}
    }
  }
  if !rest.is_empty() && !e.discarding && e.bytes + rest.len() > max {
    out.push(SseItem::TooLarge);
  }
  out
}

fn run_sse(chunks: &[&[u8]], max: usize) -> Result<Vec<SseItem>, TestCaseError> {
  let mut parser = SseParser::new(max);
  let mut out = Vec::new();
  for chunk in chunks {
    parser.push(chunk, &mut out);
    prop_assert!(
      parser.buffered_len() <= max + BOM.len(),
      "holds {} bytes with a cap of {max}",
      parser.buffered_len()
    );
  }
  Ok(out)
}

fn check_sse(bytes: &[u8], chunks: &[&[u8]], max: usize) -> TestCaseResult {
  let expected = sse_model(bytes, max);
  prop_assert_eq!(&run_sse(&[bytes], max)?, &expected, "read whole");
  prop_assert_eq!(&run_sse(chunks, max)?, &expected, "read in {:?}", chunks);
  Ok(())
}

#[test]
fn sse() {
  let strategy = (stream(SSE_TOKENS), cuts(), 0usize..96);
  fuzz("sse", strategy, |(bytes, cuts, max)| {
    check_sse(&bytes, &split(&bytes, &cuts), max)
  });
}

/// A well-formed event as a server writes it.
#[derive(Debug, Clone)]
struct WrittenEvent {
  event: Option<String>,
  data: Vec<String>,
  id: Option<String>,
  retry: Option<u64>,
  comment: bool,
  /// `data:value` instead of `data: value` where the value allows it.
  tight: bool,
}

#[test]
fn sse_events() {
  let text = "[^\r\n]{0,24}";
  let event = (
    prop::option::of(text),
    prop::collection::vec(text, 0..4),
    prop::option::of("[^\r\n\0]{0,12}"),
    prop::option::of(any::<u64>()),
    any::<bool>(),
    any::<bool>(),
  )
    .prop_map(|(event, data, id, retry, comment, tight)| WrittenEvent {
      event,
      data,
      id,
      retry,
      comment,
      tight,
    });
  let ending = prop::sample::select(vec!["\n", "\r", "\r\n"]);
  let strategy = (
    prop::collection::vec((event, ending), 0..8),
    any::<bool>(),
    cuts(),
  );
  fuzz("sse_events", strategy, |(events, bom, cuts)| {
    let mut text = String::from(if bom { "\u{FEFF}" } else { "" });
    let mut expected = Vec::new();
    for (e, end) in &events {
      let mut field = |name: &str, value: &str| {
        let space = if e.tight && !value.starts_with(' ') {
          ""
        } else {
          " "
        };
        text.push_str(&format!("{name}:{space}{value}{end}"));
      };
      if e.comment {
        field("", "keep-alive");
      }
      if let Some(event) = &e.event {
        field("event", event);
      }
      if let Some(id) = &e.id {
        field("id", id);
      }
      for data in &e.data {
        field("data", data);
      }
      if let Some(retry) = e.retry {
        field("retry", &retry.to_string());
      }
      text.push_str(end);
      if !e.data.is_empty() || e.id.is_some() || e.retry.is_some() {
        expected.push(SseItem::Event(SseEvent {
          event: e.event.clone(),
          data: e.data.join("\n"),
          id: e.id.clone(),
          retry: e.retry,
        }));
      }
    }
    let chunks = split(text.as_bytes(), &cuts);
    prop_assert_eq!(run_sse(&chunks, 1 << 20)?, expected, "stream {:?}", text);
    Ok(())
  });
}

// ---------------------------------------------------------------------------------------------
// J1: `parseSSE`, with serde_json standing in for V8's `JSON.parse`.

fn parse_sse(text: &str) -> Option<Value> {
  parse_sse::parse_sse(
    text,
    |data| serde_json::from_str::<Value>(data).map_err(drop),
    truthy,
  )
}

/// ECMAScript's WhiteSpace and LineTerminator code points, which `trim()` removes.
fn is_js_space(c: char) -> bool {
  matches!(
    c,
    '\u{9}' | '\u{A}' | '\u{B}' | '\u{C}' | '\u{D}' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
      ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
  )
}

/// J1 as the agent's TypeScript reads: `text.split("\n")`, `line.startsWith("data: ")`,
/// `line.slice(6).trim()`, skip `[DONE]`, `JSON.parse` (a line that fails is skipped, A5),
/// first truthy; else the whole text.
fn j1_model(text: &str) -> Option<Value> {
  for line in text.split('\n') {
    if !line.starts_with("data: ") {
      continue;
    }
    let data = line[6..].trim_matches(is_js_space);
    if data == "[DONE]" {
      continue;
    }
    let Ok(value) = serde_json::from_str::<Value>(data) else {
      continue;
    };
    if truthy(&value) {
      return Some(value);
    }
  }
  serde_json::from_str(text).ok()
}

const J1_TOKENS: &[&str] = &[
  "\n",
  "\r\n",
  "\r",
  "data: ",
  "data:",
  "data:  ",
  "event: message",
  ": comment",
  "[DONE]",
  " [DONE] ",
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
  "{}",
  "[]",
  "0",
  "1",
  "-0",
  "null",
  "false",
  "true",
  "\"\"",
  "\"x\"",
  " ",
  "\t",
  "\u{A0}",
  "\u{FEFF}",
  "\u{85}",
  "\u{2028}",
  "\u{3000}",
  "\u{180E}",
];

#[test]
fn parse_sse_any_text() {
  let piece = prop_oneof![
    4 => prop::sample::select(J1_TOKENS).prop_map(str::to_string),
    1 => any::<String>(),
  ];
  let text = prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat());
  fuzz("parse_sse_any_text", text, |text| {
    prop_assert_eq!(parse_sse(&text), j1_model(&text), "text {:?}", text);
    Ok(())
  });
}

#[test]
fn parse_sse_streams() {
  let line = prop_oneof![
    6 => json_value().prop_map(Some),
    1 => Just(None),
  ];
  let noise = prop::sample::select(vec![
    "",
    "event: message",
    "id: 3",
    ": ping",
    "data: [DONE]",
  ]);
  let strategy = prop::collection::vec((line, noise, any::<bool>()), 0..8);
  fuzz("parse_sse_streams", strategy, |lines| {
    let mut text = String::new();
    let mut first_truthy = None;
    for (value, noise, crlf) in &lines {
      let end = if *crlf { "\r\n" } else { "\n" };
      text.push_str(&format!("{noise}{end}"));
      if let Some(value) = value {
        text.push_str(&format!("data: {value}{end}{end}"));
        if first_truthy.is_none() && truthy(value) {
          first_truthy = Some(value.clone());
        }
      }
    }
    prop_assert_eq!(parse_sse(&text), first_truthy, "text {:?}", text);
    Ok(())
  });
}

// ---------------------------------------------------------------------------------------------
// The seed corpus, replayed at every split point.

#[test]
fn seed_corpus_replays() {
  for (name, bytes) in corpus() {
    let text = String::from_utf8_lossy(&bytes);
    let mut splits: Vec<Vec<&[u8]>> = vec![bytes.chunks(1).collect()];
    let step = bytes.len() / 256 + 1;
    splits.extend((0..=bytes.len()).step_by(step).map(|at| {
      let (a, b) = bytes.split_at(at);
      vec![a, b]
    }));
    for max in [0, 1, 7, 16, 64, 256, 1 << 20] {
      for chunks in &splits {
        let failed = |e: TestCaseError| panic!("{name}, cap {max}, read in {chunks:?}: {e}");
        check_framer(&bytes, chunks, max).unwrap_or_else(failed);
        check_sse(&bytes, chunks, max).unwrap_or_else(failed);
      }
    }
    for line in text.split(['\n', '\r']) {
      check_classified(line).unwrap_or_else(|e| panic!("{name}: {e}"));
      check_tree(line).unwrap_or_else(|e| panic!("{name}: {e}"));
      check_plain_tree(line, &[line.as_bytes()]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(parse_sse(&text), j1_model(&text), "{name}");
  }
}
