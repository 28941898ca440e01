//! H3: the `Mcp-Session-Id` a server assigns. The spec allows only visible ASCII
//! (0x21–0x7E); anything else (empty, a space, a tab, a control or non-ASCII byte) is refused
//! and never sent back.

/// The server's session id as text, or `None` when it is not one the spec allows.
pub fn parse(value: &[u8]) -> Option<&str> {
  if value.is_empty() || !value.iter().all(|b| (0x21..=0x7e).contains(b)) {
    return None;
  }
  std::str::from_utf8(value).ok()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn h3_only_visible_ascii_is_a_session_id() {
    assert_eq!(parse(b"a1-B2.c3_~!"), Some("a1-B2.c3_~!"));
    for refused in [
      &b""[..],
      b" ",
      b"a b",
      b"a\tb",
      b"a\x7f",
      b"\xc3\xa9",
      b"a\x01",
    ] {
      assert_eq!(parse(refused), None, "{refused:?}");
    }
  }
}
