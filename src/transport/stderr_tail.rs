//! S5: the last 8 KiB of a server's stderr, and chunk decoding that never splits a character.
use std::collections::VecDeque;

pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

#[derive(Default)]
pub struct StderrTail {
  bytes: VecDeque<u8>,
}

impl StderrTail {
  pub fn push(&mut self, chunk: &[u8]) {
    let chunk = &chunk[chunk.len().saturating_sub(STDERR_TAIL_BYTES)..];
    let overflow = (self.bytes.len() + chunk.len()).saturating_sub(STDERR_TAIL_BYTES);
    self.bytes.drain(..overflow);
    self.bytes.extend(chunk);
  }

  pub fn text(&self) -> String {
    let (a, b) = self.bytes.as_slices();
    let mut all = Vec::with_capacity(a.len() + b.len());
    all.extend_from_slice(a);
    all.extend_from_slice(b);
    String::from_utf8_lossy(&all).into_owned()
  }
}

/// Turns byte chunks into text, carrying an incomplete UTF-8 sequence over to the next chunk.
#[derive(Default)]
pub struct Utf8Chunks {
  carry: Vec<u8>,
}

impl Utf8Chunks {
  pub fn decode(&mut self, chunk: &[u8]) -> String {
    self.carry.extend_from_slice(chunk);
    let valid_up_to = match std::str::from_utf8(&self.carry) {
      Ok(_) => self.carry.len(),
      // An error with no length is a sequence cut off by the chunk end: keep it for later.
      Err(e) if e.error_len().is_none() => e.valid_up_to(),
      Err(_) => self.carry.len(),
    };
    let rest = self.carry.split_off(valid_up_to);
    let text = String::from_utf8_lossy(&self.carry).into_owned();
    self.carry = rest;
    text
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn keeps_only_the_last_8_kib() {
    let mut tail = StderrTail::default();
    tail.push(&[b'a'; 6000]);
    tail.push(&[b'b'; 6000]);
    let text = tail.text();
    assert_eq!(text.len(), STDERR_TAIL_BYTES);
    assert!(text.ends_with(&"b".repeat(6000)));
    assert!(text.starts_with("aaa"));
    tail.push(&[b'c'; 20000]);
    assert_eq!(tail.text(), "c".repeat(STDERR_TAIL_BYTES));
  }

  #[test]
  fn characters_split_across_chunks_stay_whole() {
    let mut d = Utf8Chunks::default();
    let bytes = "héllo".as_bytes();
    assert_eq!(d.decode(&bytes[..2]), "h");
    assert_eq!(d.decode(&bytes[2..]), "éllo");
  }
}
