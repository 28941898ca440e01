//! S2/E3: newline-delimited frames with a byte cap. An oversized line is discarded up to its
//! newline and reported once; the stream goes on. Lines are handed out without copying
//! them again: a short line is a slice of the read buffer; a long one (see `LONG_LINE_BYTES`)
//! moves, as it arrives, into a `LineRegion` of its own that becomes the line, and is
//! scanned on the way (`LineScan`), so once its newline comes little work is left.
//!
//! Written here rather than taken from tokio-util: `LinesCodec` copies every line into a
//! new `String`, and `AnyDelimiterCodec` looks for the delimiter a byte at a time; on a
//! 10 MiB message each cost more than the rest of our reading (measured with the bench).
use bytes::{Buf, Bytes, BytesMut};

use super::line_region::LineRegion;
use super::line_scan::LineScan;

/// A line still incomplete at this length becomes a long line.
pub const LONG_LINE_BYTES: usize = 256 * 1024;

/// What one decode step yields.
#[derive(Debug, PartialEq)]
pub enum Frame {
  /// One line, without its `\n` or a trailing `\r` (S2).
  Line(Bytes),
  /// E3: a line longer than the limit was (or is being) discarded.
  TooLarge,
}

/// Splits a byte stream into lines. Keeps at most `max_bytes` + 1 + one read of buffered
/// data, so a server that never sends a newline cannot grow memory without bound.
pub struct LineFramer {
  max_bytes: usize,
  /// Where reads land. Inside a long line it only holds the latest read.
  pub buffer: BytesMut,
  /// How much of `buffer` is known to hold no newline.
  scanned: usize,
  /// Inside an oversized line: drop bytes up to its newline.
  discarding: bool,
  long_from: usize,
  long: Option<LongLine>,
  /// The scan of the line `next_frame` returned last, if it was a long line.
  finished_scan: Option<LineScan>,
}

struct LongLine {
  region: LineRegion,
  scan: LineScan,
}

impl LongLine {
  fn append(&mut self, bytes: &[u8]) {
    self.region.extend(bytes);
    self.scan.feed(bytes);
  }
}

impl LineFramer {
  pub fn new(max_bytes: usize) -> Self {
    LineFramer {
      max_bytes,
      buffer: BytesMut::with_capacity(64 * 1024),
      scanned: 0,
      discarding: false,
      long_from: LONG_LINE_BYTES,
      long: None,
      finished_scan: None,
    }
  }

  /// Treat incomplete lines as long from this length on, instead of `LONG_LINE_BYTES`.
  pub fn long_lines_from(mut self, bytes: usize) -> Self {
    self.long_from = bytes.max(1);
    self
  }

  /// What was learned of the line just returned while it arrived (see `LineScan`); `None`
  /// for lines that were never long. Covers the line's bytes plus any `\r` cut from it.
  pub fn take_line_scan(&mut self) -> Option<LineScan> {
    self.finished_scan.take()
  }

  /// Whether a long line is being received: the next reads only extend it.
  pub fn in_long_line(&self) -> bool {
    self.long.is_some()
  }

  /// Bytes held between reads (E3: at most `max_bytes` + 1 once `next_frame` returns `None`).
  pub fn buffered_len(&self) -> usize {
    self.buffer.len() + self.long.as_ref().map_or(0, |long| long.region.len())
  }

  /// The next complete frame in the buffer, if any. Call until `None` after each read.
  pub fn next_frame(&mut self) -> Option<Frame> {
    self.finished_scan = None;
    if self.long.is_some() {
      return self.next_long_frame();
    }
    loop {
      match memchr::memchr(b'\n', &self.buffer[self.scanned..]) {
        Some(offset) => {
          let end = self.scanned + offset;
          self.scanned = 0;
          if self.discarding {
            self.buffer.advance(end + 1);
            self.discarding = false;
            continue;
          }
          let mut line = self.buffer.split_to(end + 1);
          line.truncate(end);
          if line.last() == Some(&b'\r') {
            line.truncate(end - 1);
          }
          if line.len() > self.max_bytes {
            return Some(Frame::TooLarge);
          }
          return Some(Frame::Line(line.freeze()));
        }
        None if self.discarding => {
          self.buffer.clear();
          self.scanned = 0;
          return None;
        }
        None if self.over_cap(self.buffer.len(), self.buffer.last() == Some(&b'\r')) => {
          self.buffer.clear();
          self.scanned = 0;
          self.discarding = true;
          return Some(Frame::TooLarge);
        }
        None if self.buffer.len() >= self.long_from => {
          let mut long = LongLine {
            region: LineRegion::new(self.max_bytes.saturating_add(1)),
            scan: LineScan::default(),
          };
          long.append(&self.buffer);
          self.buffer.clear();
          self.scanned = 0;
          self.long = Some(long);
          return None;
        }
        None => {
          self.scanned = self.buffer.len();
          return None;
        }
      }
    }
  }

  /// A line without its newline yet is over the cap. A trailing CR may start the CRLF that
  /// ends a line of exactly `max_bytes`.
  fn over_cap(&self, len: usize, ends_in_cr: bool) -> bool {
    len - usize::from(ends_in_cr) > self.max_bytes
  }

  /// `next_frame` inside a long line: the latest read joins the line's region.
  fn next_long_frame(&mut self) -> Option<Frame> {
    let long = self.long.as_mut()?;
    let newline = long.scan.feed_to_newline(&self.buffer);
    let take = newline.unwrap_or(self.buffer.len());
    let region = &long.region;
    let held = region.len() + take;
    let last = match take {
      0 => region.as_ref().last(),
      _ => self.buffer.get(take - 1),
    };
    let ends_in_cr = last == Some(&b'\r');
    if self.over_cap(held, ends_in_cr) {
      self.long = None;
      match newline {
        Some(end) => self.buffer.advance(end + 1),
        None => {
          self.buffer.clear();
          self.discarding = true;
        }
      }
      return Some(Frame::TooLarge);
    }
    let mut long = self.long.take()?;
    long.region.extend(&self.buffer[..take]);
    let Some(end) = newline else {
      self.buffer.clear();
      self.long = Some(long);
      return None;
    };
    self.buffer.advance(end + 1);
    self.finished_scan = Some(long.scan);
    let line = Bytes::from_owner(long.region);
    Some(Frame::Line(line.slice(..held - usize::from(ends_in_cr))))
  }

  /// At end of input: a last line without a trailing newline still counts.
  pub fn finish(&mut self) -> Option<Frame> {
    if let Some(frame) = self.next_frame() {
      return Some(frame);
    }
    let pending = match &self.long {
      Some(long) => long.region.as_ref(),
      None => &self.buffer[..],
    };
    if self.discarding || pending.is_empty() || pending == b"\r" {
      self.buffer.clear();
      self.long = None;
      return None;
    }
    self.buffer.extend_from_slice(b"\n");
    self.next_frame()
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn line(text: &'static str) -> Frame {
    Frame::Line(Bytes::from_static(text.as_bytes()))
  }

  fn feed(f: &mut LineFramer, bytes: &[u8]) -> Vec<Frame> {
    f.buffer.extend_from_slice(bytes);
    std::iter::from_fn(|| f.next_frame()).collect()
  }

  #[test]
  fn lines_split_across_reads_are_joined() {
    let mut f = LineFramer::new(1024);
    assert_eq!(feed(&mut f, b"{\"a\":"), vec![]);
    assert_eq!(
      feed(&mut f, b"1}\r\n{\"b\":2}\n{\"c\""),
      vec![line("{\"a\":1}"), line("{\"b\":2}")]
    );
    assert_eq!(f.finish(), Some(line("{\"c\"")));
  }

  #[test]
  fn an_oversized_line_is_discarded_and_the_stream_goes_on() {
    let mut f = LineFramer::new(8);
    let mut out = feed(&mut f, b"0123456789");
    out.extend(feed(&mut f, b"abcdef\n{\"ok\":1}\n"));
    assert_eq!(out, vec![Frame::TooLarge, line("{\"ok\":1}")]);
  }

  #[test]
  fn memory_stays_bounded_without_newlines() {
    let mut f = LineFramer::new(1000);
    let mut reports = 0;
    for _ in 0..1000 {
      reports += feed(&mut f, &[b'x'; 4096]).len();
      assert!(f.buffer.len() <= 4096 + 1001);
    }
    assert_eq!(reports, 1);
  }

  #[test]
  fn a_line_at_the_cap_whose_crlf_is_split_across_reads_still_counts() {
    // Found by the fuzz target `framer`: the CR alone pushed the buffer over the cap.
    let mut f = LineFramer::new(8);
    let mut out = feed(&mut f, b"01234567\r");
    assert!(f.buffered_len() <= 9);
    out.extend(feed(&mut f, b"\n"));
    assert_eq!(out, vec![line("01234567")]);
    let mut f = LineFramer::new(8);
    assert_eq!(feed(&mut f, b"01234567\r"), vec![]);
    assert_eq!(f.finish(), Some(line("01234567")));
    let mut f = LineFramer::new(8);
    assert_eq!(feed(&mut f, b"012345678\r"), vec![Frame::TooLarge]);
  }

  #[test]
  fn a_long_line_is_scanned_as_it_arrives_and_a_short_one_is_not() {
    let mut f = LineFramer::new(1 << 24);
    let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(LONG_LINE_BYTES * 3));
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(100_000) {
      out.extend(feed(&mut f, chunk));
    }
    assert!(out.is_empty() && f.take_line_scan().is_none());
    assert_eq!(feed(&mut f, b"\r\n{}\n").len(), 2);
    assert_eq!(feed(&mut f, b""), vec![]);
    let mut f2 = LineFramer::new(1 << 24);
    f2.buffer.extend_from_slice(text.as_bytes());
    f2.buffer.extend_from_slice(b"\r\n{}\n");
    assert!(f2.next_frame().is_some() && f2.take_line_scan().is_none());

    for chunk in text.as_bytes().chunks(100_000) {
      assert_eq!(feed(&mut f, chunk), vec![]);
    }
    f.buffer.extend_from_slice(b"\n{}\n");
    assert!(matches!(f.next_frame(), Some(Frame::Line(l)) if l.len() == text.len()));
    let scan = f.take_line_scan().expect("a scan of the long line");
    assert_eq!(scan.len(), text.len());
    assert_eq!(scan.quotes(), Some(&[1, 6, 8, text.len() - 2][..]));
    assert_eq!(f.next_frame(), Some(line("{}")));
    assert!(f.take_line_scan().is_none());
  }

  #[test]
  fn a_long_line_under_an_unbounded_cap_still_frames() {
    // No mapping can reserve usize::MAX bytes: the region falls back to a growing Vec.
    let mut f = LineFramer::new(usize::MAX).long_lines_from(4);
    assert_eq!(feed(&mut f, b"0123456789"), vec![]);
    assert_eq!(feed(&mut f, b"abc\n"), vec![line("0123456789abc")]);
  }

  #[test]
  fn bytes_pass_through_unchanged_for_the_reader_to_check() {
    let mut f = LineFramer::new(100);
    assert_eq!(
      feed(&mut f, b"\xff\xfe\n{}\n"),
      vec![Frame::Line(Bytes::from_static(b"\xff\xfe")), line("{}")]
    );
  }
}
