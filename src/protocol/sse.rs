//! H6/E3: a `text/event-stream` parser after the WHATWG rules (`data` lines joined with
//! `\n`, `event`, `id`, `retry`, comments, CRLF / CR / LF line ends, a leading BOM), with a
//! byte cap per event: an oversized event is skipped up to its end and reported once.
//!
//! Hand-written because the maintained crates (`sse-stream`, `eventsource-stream`) keep an
//! unbounded buffer for a pending event, which E3 forbids.
use bytes::{Buf, BytesMut};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SseEvent {
  /// The `event` field; `None` means the default type, "message".
  pub event: Option<String>,
  pub data: String,
  /// The `id` field of this event, if it had one.
  pub id: Option<String>,
  pub retry: Option<u64>,
}

#[derive(Debug, PartialEq)]
pub enum SseItem {
  Event(SseEvent),
  /// E3: an event larger than the limit was discarded.
  TooLarge,
}

/// The event being read, kept as bytes until it is dispatched: decoding each line at once
/// would turn every invalid byte into a 3-byte U+FFFD and hold up to three times the cap.
#[derive(Default)]
struct PendingEvent {
  event: Option<Vec<u8>>,
  data: Vec<u8>,
  has_data: bool,
  id: Option<Vec<u8>>,
  retry: Option<u64>,
}

pub struct SseParser {
  max_event_bytes: usize,
  /// Bytes not yet split into lines.
  buffer: BytesMut,
  /// How far `buffer` has been searched for a line end.
  scanned: usize,
  /// The previous chunk ended in CR: a leading LF in the next one belongs to it.
  skip_lf: bool,
  at_stream_start: bool,
  event: PendingEvent,
  event_bytes: usize,
  discarding: bool,
  /// The start of the current line was dropped (E3): its end is not an empty line.
  dropping_line: bool,
}

impl SseParser {
  pub fn new(max_event_bytes: usize) -> Self {
    SseParser {
      max_event_bytes,
      buffer: BytesMut::new(),
      scanned: 0,
      skip_lf: false,
      at_stream_start: true,
      event: PendingEvent::default(),
      event_bytes: 0,
      discarding: false,
      dropping_line: false,
    }
  }

  /// Bytes held for the line and the event in progress (E3: at most `max_event_bytes` plus
  /// a BOM's 3 bytes between pushes).
  pub fn buffered_len(&self) -> usize {
    let field = |f: &Option<Vec<u8>>| f.as_ref().map_or(0, Vec::len);
    self.buffer.len() + self.event.data.len() + field(&self.event.event) + field(&self.event.id)
  }

  /// Feeds bytes; complete events are appended to `out`.
  pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseItem>) {
    if self.skip_lf && !bytes.is_empty() {
      self.skip_lf = false;
      if bytes[0] == b'\n' {
        bytes = &bytes[1..];
      }
    }
    self.buffer.extend_from_slice(bytes);
    loop {
      let Some(offset) = memchr::memchr2(b'\n', b'\r', &self.buffer[self.scanned..]) else {
        self.scanned = self.buffer.len();
        self.guard_line_length(out);
        return;
      };
      let end = self.scanned + offset;
      let is_cr = self.buffer[end] == b'\r';
      let line = self.buffer.split_to(end);
      self.buffer.advance(1);
      self.scanned = 0;
      if is_cr {
        match self.buffer.first() {
          Some(b'\n') => self.buffer.advance(1),
          None => self.skip_lf = true,
          Some(_) => {}
        }
      }
      if std::mem::replace(&mut self.dropping_line, false) {
        continue;
      }
      self.line(&line, out);
    }
  }

  /// A line that grows past the cap without ending is dropped now, not buffered.
  fn guard_line_length(&mut self, out: &mut Vec<SseItem>) {
    // `line` strips a BOM before counting, so a BOM (or what may yet become one) is free.
    let bom = match self.at_stream_start {
      true if self.buffer.starts_with(BOM) => BOM.len(),
      true if BOM.starts_with(&self.buffer) => self.buffer.len(),
      _ => 0,
    };
    let held = self.buffer.len() - bom;
    // With nothing of a line held, what comes next may be the blank line that ends even a
    // discarded event: it must not be dropped as the rest of a long line.
    if held > 0 && self.event_bytes + held > self.max_event_bytes {
      if !self.discarding {
        self.discarding = true;
        out.push(SseItem::TooLarge);
      }
      // Keep nothing of the line; the rest of it is dropped as it arrives.
      self.buffer.clear();
      self.scanned = 0;
      self.dropping_line = true;
      // The dropped line was the first: a BOM that opens the next one is no BOM, and a line
      // of only a BOM must not pass for the blank line that ends the event.
      self.at_stream_start = false;
    }
  }

  fn line(&mut self, mut line: &[u8], out: &mut Vec<SseItem>) {
    if self.at_stream_start {
      self.at_stream_start = false;
      line = line.strip_prefix(BOM).unwrap_or(line);
    }
    if line.is_empty() {
      self.dispatch(out);
      return;
    }
    if self.discarding {
      return;
    }
    self.event_bytes += line.len() + 1;
    if self.event_bytes > self.max_event_bytes {
      self.discarding = true;
      out.push(SseItem::TooLarge);
      return;
    }
    if line[0] == b':' {
      return;
    }
    let (field, value) = match memchr::memchr(b':', line) {
      Some(colon) => {
        let value = &line[colon + 1..];
        (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
      }
      None => (line, &b""[..]),
    };
    let event = &mut self.event;
    match field {
      b"data" => {
        if event.has_data {
          event.data.push(b'\n');
        }
        event.data.extend_from_slice(value);
        event.has_data = true;
      }
      b"event" => event.event = Some(value.to_vec()),
      b"id" if !value.contains(&0) => event.id = Some(value.to_vec()),
      b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
        // Too large for a u64: ignored like any other bad value, not erasing a good one.
        if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
          event.retry = Some(ms);
        }
      }
      _ => {}
    }
  }

  fn dispatch(&mut self, out: &mut Vec<SseItem>) {
    let event = std::mem::take(&mut self.event);
    let discarded = std::mem::replace(&mut self.discarding, false);
    self.event_bytes = 0;
    if discarded {
      return;
    }
    // Events without data are still reported: their id and retry matter to resumption.
    if event.has_data || event.id.is_some() || event.retry.is_some() {
      // Lines end in ASCII, so decoding the joined data equals decoding line by line.
      out.push(SseItem::Event(SseEvent {
        event: event.event.map(text),
        data: text(event.data),
        id: event.id.map(text),
        retry: event.retry,
      }));
    }
  }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn text(bytes: Vec<u8>) -> String {
  String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
  use super::*;

  fn parse(chunks: &[&[u8]], max: usize) -> Vec<SseItem> {
    let mut parser = SseParser::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
      parser.push(chunk, &mut out);
    }
    out
  }

  fn data(d: &str) -> SseItem {
    SseItem::Event(SseEvent {
      data: d.into(),
      ..Default::default()
    })
  }

  #[test]
  fn multi_line_data_is_joined_with_newlines() {
    assert_eq!(
      parse(&[b"data: a\ndata:b\ndata:  c\n\n"], 1 << 20),
      vec![data("a\nb\n c")]
    );
  }

  #[test]
  fn all_three_line_endings_work_even_split_across_chunks() {
    assert_eq!(
      parse(
        &[
          b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\ndata: 4\r",
          b"\n\r",
          b"\n"
        ],
        1 << 20
      ),
      vec![data("1"), data("2"), data("3"), data("4")]
    );
  }

  #[test]
  fn fields_comments_and_unknown_fields() {
    let out = parse(
      &[b"\xEF\xBB\xBF: comment\nevent: message\nid: 42\nretry: 1500\nfoo: bar\ndata\n\n"],
      1 << 20,
    );
    assert_eq!(
      out,
      vec![SseItem::Event(SseEvent {
        event: Some("message".into()),
        data: "".into(),
        id: Some("42".into()),
        retry: Some(1500)
      })]
    );
  }

  #[test]
  fn a_priming_event_has_an_id_and_no_data() {
    assert_eq!(
      parse(&[b"id: p1\nretry: 10\n\n"], 1 << 20),
      vec![SseItem::Event(SseEvent {
        id: Some("p1".into()),
        retry: Some(10),
        ..Default::default()
      })]
    );
    assert_eq!(parse(&[b": keep-alive\n\n"], 1 << 20), vec![]);
  }

  #[test]
  fn an_incomplete_event_at_the_end_is_not_dispatched() {
    assert_eq!(parse(&[b"data: x\n"], 1 << 20), vec![]);
  }

  #[test]
  fn an_oversized_event_is_discarded_and_the_next_one_arrives() {
    let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(100));
    assert_eq!(
      parse(&[big.as_bytes()], 50),
      vec![SseItem::TooLarge, data("ok")]
    );
    // Split into small chunks and across many data lines, too.
    let lines = "data: 0123456789\n".repeat(10) + "\ndata: ok\n\n";
    let chunks: Vec<&[u8]> = lines.as_bytes().chunks(7).collect();
    assert_eq!(parse(&chunks, 50), vec![SseItem::TooLarge, data("ok")]);
  }

  // The next five were found by the fuzz target `sse` (tests/fuzz_parsers.rs).

  #[test]
  fn the_blank_line_after_a_discarded_event_ends_it_when_it_starts_a_read() {
    assert_eq!(
      parse(&[b"data: 0123456789\n", b"\ndata: ok\n\n"], 16),
      vec![SseItem::TooLarge, data("ok")]
    );
  }

  #[test]
  fn a_bom_does_not_count_against_the_cap() {
    let event = |chunks: &[&[u8]]| parse(chunks, 9);
    assert_eq!(event(&[b"\xEF\xBB\xBFdata: ab", b"\n\n"]), vec![data("ab")]);
    assert_eq!(event(&[b"\xEF\xBB", b"\xBFdata: ab\n\n"]), vec![data("ab")]);
  }

  #[test]
  fn after_a_dropped_first_line_a_bom_is_no_longer_stripped() {
    let out = parse(&[b"data: 0123456789", b"\n\xEF\xBB\xBF\ndata: x\n\n"], 8);
    assert_eq!(out, vec![SseItem::TooLarge]);
  }

  #[test]
  fn invalid_utf8_is_held_as_bytes_and_decoded_once() {
    let mut parser = SseParser::new(64);
    let mut out = Vec::new();
    parser.push(
      b"event: \xFF\ndata: \xE2\x82\ndata: \xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF",
      &mut out,
    );
    parser.push(b"\xFF\xFF\n", &mut out);
    // Decoded now, the ten 0xFF bytes would hold 30.
    assert!(parser.buffered_len() <= 1 + 2 + 1 + 10);
    parser.push(b"\n", &mut out);
    let expected = SseEvent {
      event: Some("\u{FFFD}".into()),
      data: format!("\u{FFFD}\n{}", "\u{FFFD}".repeat(10)),
      ..Default::default()
    };
    assert_eq!(out, vec![SseItem::Event(expected)]);
  }

  #[test]
  fn a_retry_too_large_to_hold_is_ignored() {
    let out = parse(&[b"retry: 1500\nretry: 18446744073709551616\n\n"], 1 << 20);
    let expected = SseEvent {
      retry: Some(1500),
      ..Default::default()
    };
    assert_eq!(out, vec![SseItem::Event(expected)]);
  }

  #[test]
  fn a_line_that_never_ends_keeps_memory_bounded() {
    let mut parser = SseParser::new(1000);
    let mut out = Vec::new();
    parser.push(b"data: ", &mut out);
    for _ in 0..1000 {
      parser.push(&[b'x'; 4096], &mut out);
      assert!(parser.buffer.len() <= 4096 + 1000);
    }
    parser.push(b"\n\ndata: after\n\n", &mut out);
    // The end of the dropped line is not mistaken for the blank line that ends the event.
    let mut parser = SseParser::new(20);
    let mut split = Vec::new();
    parser.push(b"data: 0123456789abcdef", &mut split);
    parser.push(b"\ndata: still the big event\n\ndata: next\n\n", &mut split);
    assert_eq!(split, vec![SseItem::TooLarge, data("next")]);
    assert_eq!(out, vec![SseItem::TooLarge, data("after")]);
  }
}
