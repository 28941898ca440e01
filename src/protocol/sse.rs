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

pub struct SseParser {
  max_event_bytes: usize,
  /// Bytes not yet split into lines.
  buffer: BytesMut,
  /// How far `buffer` has been searched for a line end.
  scanned: usize,
  /// The previous chunk ended in CR: a leading LF in the next one belongs to it.
  skip_lf: bool,
  at_stream_start: bool,
  event: SseEvent,
  has_data: bool,
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
      event: SseEvent::default(),
      has_data: false,
      event_bytes: 0,
      discarding: false,
      dropping_line: false,
    }
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
    if self.event_bytes + self.buffer.len() > self.max_event_bytes {
      if !self.discarding {
        self.discarding = true;
        out.push(SseItem::TooLarge);
      }
      // Keep nothing of the line; the rest of it is dropped as it arrives.
      self.buffer.clear();
      self.scanned = 0;
      self.dropping_line = true;
    }
  }

  fn line(&mut self, mut line: &[u8], out: &mut Vec<SseItem>) {
    if self.at_stream_start {
      self.at_stream_start = false;
      line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
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
    let value = String::from_utf8_lossy(value);
    match field {
      b"data" => {
        if self.has_data {
          self.event.data.push('\n');
        }
        self.event.data.push_str(&value);
        self.has_data = true;
      }
      b"event" => self.event.event = Some(value.into_owned()),
      b"id" if !value.contains('\0') => self.event.id = Some(value.into_owned()),
      b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
        self.event.retry = value.parse().ok();
      }
      _ => {}
    }
  }

  fn dispatch(&mut self, out: &mut Vec<SseItem>) {
    let event = std::mem::take(&mut self.event);
    let has_data = std::mem::replace(&mut self.has_data, false);
    let discarded = std::mem::replace(&mut self.discarding, false);
    self.event_bytes = 0;
    if discarded {
      return;
    }
    // Events without data are still reported: their id and retry matter to resumption.
    if has_data || event.id.is_some() || event.retry.is_some() {
      out.push(SseItem::Event(event));
    }
  }
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
