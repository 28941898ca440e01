//! What a long line's bytes hold, learned chunk by chunk while the line is still arriving.
//! The scan of each chunk runs while the server is writing the next one, so once the newline
//! comes, a large result needs no more passes over its megabytes: no UTF-8 check, no count
//! of its structure, no search for the end of its strings (see `tree::parse_plain_response`).

/// More quotes than this and the line is not the few-huge-strings kind the scan is for.
const MAX_QUOTES: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct LineScan {
  len: usize,
  min: u8,
  max: u8,
  /// `{`, `[` and `,`: how much structure the line has per byte.
  structure: usize,
  /// Offsets of every `"`; `None` once there was a backslash (strings need unescaping) or
  /// more than `MAX_QUOTES` quotes.
  quotes: Option<Vec<usize>>,
}

impl Default for LineScan {
  fn default() -> Self {
    LineScan {
      len: 0,
      min: u8::MAX,
      max: 0,
      structure: 0,
      quotes: Some(Vec::new()),
    }
  }
}

impl LineScan {
  /// Takes in the next bytes of the line.
  pub fn feed(&mut self, chunk: &[u8]) {
    // Separate reductions vectorise; a fused loop over the bytes would not.
    self.min = self.min.min(chunk.iter().copied().min().unwrap_or(u8::MAX));
    self.max = self.max.max(chunk.iter().copied().max().unwrap_or(0));
    self.structure += memchr::memchr3_iter(b'{', b'[', b',', chunk).count();
    if let Some(quotes) = &mut self.quotes {
      let mut keep = true;
      for at in memchr::memchr2_iter(b'"', b'\\', chunk) {
        if chunk[at] == b'\\' || quotes.len() == MAX_QUOTES {
          keep = false;
          break;
        }
        quotes.push(self.len + at);
      }
      if !keep {
        self.quotes = None;
      }
    }
    self.len += chunk.len();
  }

  /// Bytes scanned so far.
  pub fn len(&self) -> usize {
    self.len
  }

  pub fn is_empty(&self) -> bool {
    self.len == 0
  }

  pub fn is_ascii(&self) -> bool {
    self.max < 0x80
  }

  /// The offsets of the line's quotes, when it is printable ASCII without a backslash (so
  /// every string is the bytes between two quotes) and they were few enough to keep.
  pub fn quotes(&self) -> Option<&[usize]> {
    let printable = self.min >= 0x20 && self.max < 0x80;
    self.quotes.as_deref().filter(|_| printable)
  }

  /// `message::prefers_tree` from the counts, without another pass.
  pub fn prefers_tree(&self) -> bool {
    self.len >= super::message::LARGE_RESULT_BYTES && self.structure.saturating_mul(4096) < self.len
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn scan_in_pieces(text: &[u8], piece: usize) -> LineScan {
    let mut scan = LineScan::default();
    for chunk in text.chunks(piece.max(1)) {
      scan.feed(chunk);
    }
    scan
  }

  #[test]
  fn quotes_are_found_across_chunk_boundaries() {
    let text = br#"{"a":"xyz","b":[1,2]}"#;
    for piece in 1..text.len() {
      let scan = scan_in_pieces(text, piece);
      assert_eq!(scan.len(), text.len());
      assert_eq!(
        scan.quotes(),
        Some(&[1, 3, 5, 9, 11, 13][..]),
        "piece {piece}"
      );
    }
  }

  #[test]
  fn escapes_control_bytes_and_non_ascii_leave_no_quote_index() {
    assert_eq!(scan_in_pieces(br#"{"a":"x\"y"}"#, 4).quotes(), None);
    assert_eq!(scan_in_pieces(b"{\"a\":\t1}", 4).quotes(), None);
    let accented = scan_in_pieces("{\"a\":\"é\"}".as_bytes(), 4);
    assert!(!accented.is_ascii());
    assert_eq!(accented.quotes(), None);
    assert!(scan_in_pieces(b"{}", 1).is_ascii());
  }

  #[test]
  fn too_many_quotes_stop_being_recorded() {
    let text = "\"\"".repeat(MAX_QUOTES);
    let mut scan = scan_in_pieces(text.as_bytes(), 4096);
    assert_eq!(scan.quotes(), None);
    assert!(scan_in_pieces(&text.as_bytes()[..MAX_QUOTES], 4096)
      .quotes()
      .is_some());
    scan.feed(b"x");
    assert_eq!(scan.quotes(), None);
  }

  #[test]
  fn structure_per_byte_decides_like_prefers_tree() {
    let mut big = String::from(r#"{"jsonrpc":"2.0","id":1,"result":{"text":""#);
    big.push_str(&"x".repeat(super::super::message::LARGE_RESULT_BYTES));
    big.push_str(r#""}}"#);
    let scan = scan_in_pieces(big.as_bytes(), 65536);
    assert_eq!(
      scan.prefers_tree(),
      super::super::message::prefers_tree(&big)
    );
    assert!(scan.prefers_tree());
    let objects = "{},".repeat(super::super::message::LARGE_RESULT_BYTES / 3 + 1);
    let scan = scan_in_pieces(objects.as_bytes(), 65536);
    assert!(!scan.prefers_tree());
  }
}
