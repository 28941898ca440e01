//! A30/A33: the manager's tools are kept sorted by name in JS string order (UTF-16 code
//! units, as `Array.prototype.sort` compares), so the order never depends on which server
//! answered first.
use std::cmp::Ordering;

pub fn js_string_order(a: &str, b: &str) -> Ordering {
  a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a30_names_compare_as_utf16() {
    let mut names = vec!["b", "B", "a_z", "a", "\u{1F600}", "\u{FF5E}"];
    names.sort_by(|a, b| js_string_order(a, b));
    // An astral character (a surrogate pair, 0xD83D…) sorts before U+FF5E in UTF-16,
    // where code point order would put it after.
    assert_eq!(names, ["B", "a", "a_z", "b", "\u{1F600}", "\u{FF5E}"]);
  }
}
