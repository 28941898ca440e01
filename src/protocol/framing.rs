//! S2/E3: newline-delimited frames with a byte cap. An oversized line is discarded up to its
//! newline and reported once; the stream goes on.
use bytes::BytesMut;
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

/// What one decode step yields.
#[derive(Debug, PartialEq)]
pub enum Frame {
  Line(String),
  /// E3: a line longer than the limit was (or is being) discarded.
  TooLarge,
  /// A line that is not UTF-8 (skipped, as non-JSON is under S3).
  NotUtf8,
}

/// Splits a byte stream into lines. Keeps at most `max_bytes` + one read of buffered data,
/// so a server that never sends a newline cannot grow memory without bound.
pub struct LineFramer {
  codec: LinesCodec,
  pub buffer: BytesMut,
}

impl LineFramer {
  pub fn new(max_bytes: usize) -> Self {
    LineFramer {
      codec: LinesCodec::new_with_max_length(max_bytes),
      buffer: BytesMut::with_capacity(64 * 1024),
    }
  }

  /// The next complete frame in the buffer, if any. Call until `None` after each read.
  pub fn next_frame(&mut self) -> Option<Frame> {
    // Decoding directly (not through `FramedRead`) keeps going after an oversize error:
    // `FramedRead` would end the stream there.
    to_frame(self.codec.decode(&mut self.buffer))
  }

  /// At end of input: a last line without a trailing newline still counts.
  pub fn finish(&mut self) -> Option<Frame> {
    to_frame(self.codec.decode_eof(&mut self.buffer))
  }
}

fn to_frame(decoded: Result<Option<String>, LinesCodecError>) -> Option<Frame> {
  match decoded {
    Ok(line) => line.map(Frame::Line),
    Err(LinesCodecError::MaxLineLengthExceeded) => Some(Frame::TooLarge),
    Err(LinesCodecError::Io(_)) => Some(Frame::NotUtf8),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

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
      vec![
        Frame::Line("{\"a\":1}".into()),
        Frame::Line("{\"b\":2}".into())
      ]
    );
    assert_eq!(f.finish(), Some(Frame::Line("{\"c\"".into())));
  }

  #[test]
  fn an_oversized_line_is_discarded_and_the_stream_goes_on() {
    let mut f = LineFramer::new(8);
    let mut out = feed(&mut f, b"0123456789");
    out.extend(feed(&mut f, b"abcdef\n{\"ok\":1}\n"));
    assert_eq!(out, vec![Frame::TooLarge, Frame::Line("{\"ok\":1}".into())]);
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
  fn invalid_utf8_is_reported_and_skipped() {
    let mut f = LineFramer::new(100);
    assert_eq!(
      feed(&mut f, b"\xff\xfe\n{}\n"),
      vec![Frame::NotUtf8, Frame::Line("{}".into())]
    );
  }
}
