//! A24: how configured and generated HTTP headers combine: header names compare without
//! regard to ASCII case, and a header the client generates always wins.

/// Whether two header names are the same header.
pub fn same_name(a: &str, b: &str) -> bool {
  a.eq_ignore_ascii_case(b)
}

/// `mergeMCPHeaders`: the configured headers without those the client generates (whatever
/// their case), then the generated ones.
pub fn merge<V: Clone>(generated: &[(String, V)], configured: &[(String, V)]) -> Vec<(String, V)> {
  configured
    .iter()
    .filter(|(name, _)| !generated.iter().any(|(ours, _)| same_name(ours, name)))
    .chain(generated)
    .cloned()
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
      .iter()
      .map(|(k, v)| (k.to_string(), v.to_string()))
      .collect()
  }

  #[test]
  fn a24_generated_headers_win_whatever_their_case() {
    let generated = pairs(&[
      ("Content-Type", "application/json"),
      ("Mcp-Session-Id", "s1"),
    ]);
    let configured = pairs(&[
      ("content-type", "text/plain"),
      ("X-Team", "a"),
      ("MCP-SESSION-ID", "x"),
    ]);
    let merged: Vec<_> = merge(&generated, &configured)
      .into_iter()
      .map(|(k, v)| format!("{k}: {v}"))
      .collect();
    assert_eq!(
      merged,
      [
        "X-Team: a",
        "Content-Type: application/json",
        "Mcp-Session-Id: s1"
      ]
    );
    assert!(same_name("accept", "ACCEPT") && !same_name("accept", "accepts"));
  }
}
