//! The SSE2 kernel of `protocol::line_scan`: how many leading bytes of a line hold nothing
//! the scan must look at (structure, quotes, backslashes, anything outside printable ASCII).

/// Sixteen bytes at a time, up to the first block that holds a notable byte.
pub fn notable_free_prefix(bytes: &[u8]) -> usize {
  // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
  unsafe { sse2_notable_free_prefix(bytes) }
}

#[target_feature(enable = "sse2")]
fn sse2_notable_free_prefix(bytes: &[u8]) -> usize {
  use std::arch::x86_64::*;
  let splat = |byte: u8| _mm_set1_epi8(byte as i8);
  let (quote, backslash, brace, bracket, comma, space) = (
    splat(b'"'),
    splat(b'\\'),
    splat(b'{'),
    splat(b'['),
    splat(b','),
    splat(0x20),
  );
  let hits = |block: &[u8]| {
    // SAFETY: an unaligned 16-byte load from a slice of at least 16 bytes.
    let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
    // A signed compare catches bytes below 0x20 and, negative as i8, those from 0x80 up.
    let outside = _mm_cmplt_epi8(v, space);
    _mm_or_si128(
      _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
      _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, brace), _mm_cmpeq_epi8(v, bracket)),
        _mm_or_si128(_mm_cmpeq_epi8(v, comma), outside),
      ),
    )
  };
  let mut clear = 0;
  // Four blocks per test: notable bytes are rare in the long strings this is for.
  for group in bytes.chunks_exact(64) {
    let any = _mm_or_si128(
      _mm_or_si128(hits(&group[..16]), hits(&group[16..32])),
      _mm_or_si128(hits(&group[32..48]), hits(&group[48..])),
    );
    if _mm_movemask_epi8(any) != 0 {
      break;
    }
    clear += 64;
  }
  for block in bytes[clear..].chunks_exact(16) {
    if _mm_movemask_epi8(hits(block)) != 0 {
      break;
    }
    clear += 16;
  }
  clear
}
