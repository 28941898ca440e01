//! What a long line's bytes hold, learned chunk by chunk while the line is still arriving.
//! The scan of each chunk runs while the server is writing the next one, so once the newline
//! comes, a large result needs no more passes over its megabytes: no UTF-8 check, no count
//! of its structure, no search for the end of its strings (see `tree::parse_plain_response`).

/// More quotes than this and the line is not the few-huge-strings kind the scan is for.
const MAX_QUOTES: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct LineScan {
  len: usize,
  /// `{`, `[` and `,`: how much structure the line has per byte.
  structure: usize,
  /// Offsets of every `"`, while the line is plain: printable ASCII without a backslash (so
  /// every string is the bytes between two quotes), with at most `MAX_QUOTES` quotes. Once
  /// it is not, nothing more is scanned.
  quotes: Option<Vec<usize>>,
}

impl Default for LineScan {
  fn default() -> Self {
    LineScan {
      len: 0,
      structure: 0,
      quotes: Some(Vec::new()),
    }
  }
}

impl LineScan {
  /// Takes in the next bytes of the line, which hold no newline.
  pub fn feed(&mut self, bytes: &[u8]) {
    let newline = self.feed_to_newline(bytes);
    debug_assert!(newline.is_none());
  }

  /// Takes in `bytes` up to the first newline and says where that is: the framer's search
  /// for the end of the line and the scan are one pass.
  pub fn feed_to_newline(&mut self, bytes: &[u8]) -> Option<usize> {
    let newline = match self.quotes.is_some() {
      true => self.scan_plain(bytes),
      false => memchr::memchr(b'\n', bytes),
    };
    self.len += newline.unwrap_or(bytes.len());
    newline
  }

  /// The plain scan: stops at the newline, or goes on as a newline search once the line
  /// turns out not to be plain.
  fn scan_plain(&mut self, bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
      at = next_notable(bytes, at);
      let byte = *bytes.get(at)?;
      match byte {
        b'\n' => return Some(at),
        b'{' | b'[' | b',' => self.structure += 1,
        b'"' => match &mut self.quotes {
          Some(quotes) if quotes.len() < MAX_QUOTES => quotes.push(self.len + at),
          _ => self.quotes = None,
        },
        // A backslash, a control byte or a non-ASCII one.
        _ => self.quotes = None,
      }
      if self.quotes.is_none() {
        return memchr::memchr(b'\n', &bytes[at..]).map(|offset| at + offset);
      }
      at += 1;
    }
  }

  /// Bytes scanned so far.
  pub fn len(&self) -> usize {
    self.len
  }

  pub fn is_empty(&self) -> bool {
    self.len == 0
  }

  /// The offsets of the line's quotes, if it is plain (see `quotes`).
  pub fn quotes(&self) -> Option<&[usize]> {
    self.quotes.as_deref()
  }

  /// The quotes of a plain line that `message::prefers_tree` would send down the tree path,
  /// decided from the counts, without another pass.
  pub fn plain_tree_quotes(&self) -> Option<&[usize]> {
    let tree = self.len >= super::message::LARGE_RESULT_BYTES
      && self.structure.saturating_mul(4096) < self.len;
    self.quotes().filter(|_| tree)
  }
}

/// A byte the scan must look at: structure, a quote, a backslash, or anything outside
/// printable ASCII (the newline among them).
fn is_notable(byte: u8) -> bool {
  matches!(byte, b'"' | b'\\' | b'{' | b'[' | b',') || !(0x20..0x80).contains(&byte)
}

/// The offset of the first notable byte at or after `from`, or `bytes.len()`.
fn next_notable(bytes: &[u8], from: usize) -> usize {
  let from = from.min(bytes.len());
  let rest = &bytes[from..];
  let clear = notable_free_prefix(rest);
  let found = rest[clear..].iter().position(|&b| is_notable(b));
  from + found.map_or(rest.len(), |offset| clear + offset)
}

/// How many leading bytes are certainly not notable, sixteen at a time: up to the first
/// block that holds a notable byte.
#[cfg(target_arch = "x86_64")]
fn notable_free_prefix(bytes: &[u8]) -> usize {
  crate::sys::simd::notable_free_prefix(bytes)
}

#[cfg(not(target_arch = "x86_64"))]
fn notable_free_prefix(_bytes: &[u8]) -> usize {
  0
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
    assert_eq!(scan_in_pieces("{\"a\":\"é\"}".as_bytes(), 4).quotes(), None);
    assert!(scan_in_pieces(b"{} ~\x7f", 1).quotes().is_some());
  }

  #[test]
  fn every_byte_at_every_position_is_classified_as_a_byte_by_byte_scan_would() {
    for byte in 0..=255u8 {
      for at in 0..200 {
        let mut bytes = vec![b'a'; 200];
        bytes[at] = byte;
        let mut scan = LineScan::default();
        let newline = scan.feed_to_newline(&bytes);
        assert_eq!(newline, (byte == b'\n').then_some(at), "{byte:#x} at {at}");
        assert_eq!(scan.len(), newline.unwrap_or(200));
        let plain = (0x20..0x80).contains(&byte) && byte != b'\\';
        let expected = match byte {
          b'"' => Some(vec![at]),
          b'\n' => Some(vec![]),
          _ => plain.then(Vec::new),
        };
        assert_eq!(
          scan.quotes().map(<[usize]>::to_vec),
          expected,
          "{byte:#x} at {at}"
        );
        assert_eq!(scan.structure, usize::from(b"{[,".contains(&byte)));
      }
    }
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
    assert!(super::super::message::prefers_tree(&big));
    assert!(scan.plain_tree_quotes().is_some());
    let objects = "{},".repeat(super::super::message::LARGE_RESULT_BYTES / 3 + 1);
    assert!(!super::super::message::prefers_tree(&objects));
    let scan = scan_in_pieces(objects.as_bytes(), 65536);
    assert!(scan.quotes().is_some() && scan.plain_tree_quotes().is_none());
    assert!(scan_in_pieces(b"{}", 1).plain_tree_quotes().is_none());
  }
}
