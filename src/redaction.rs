//! A4: URLs as they may appear in logs: the values of query parameters whose name speaks of
//! a key, a token, a secret or auth are replaced.
pub const REDACTED: &str = "[redacted]";

/// `url` with each such value replaced by `[redacted]` (the query then written as
/// `URLSearchParams` writes it); text that is not a URL keeps only what precedes its `?`.
pub fn redact_url_for_log(text: &str) -> String {
  let Ok(mut url) = url::Url::parse(text) else {
    return text.split('?').next().unwrap_or_default().to_string();
  };
  let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
  if !pairs.iter().any(|(name, _)| is_sensitive(name)) {
    return url.to_string();
  }
  url.query_pairs_mut().clear().extend_pairs(
    pairs
      .iter()
      .map(|(name, value)| (name, if is_sensitive(name) { REDACTED } else { value })),
  );
  url.to_string()
}

/// `/key|token|secret|auth/i`.
fn is_sensitive(name: &str) -> bool {
  let name = name.to_ascii_lowercase();
  ["key", "token", "secret", "auth"]
    .iter()
    .any(|word| name.contains(word))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a4_secret_query_values_are_redacted() {
    assert_eq!(
      redact_url_for_log("https://x.example/mcp?apiKey=abc&q=hello world&AUTH_code=1&key=2&key=3"),
      "https://x.example/mcp?apiKey=%5Bredacted%5D&q=hello+world&AUTH_code=%5Bredacted%5D&key=%5Bredacted%5D&key=%5Bredacted%5D"
    );
    assert_eq!(
      redact_url_for_log("https://x.example/mcp?page=2"),
      "https://x.example/mcp?page=2"
    );
    assert_eq!(
      redact_url_for_log("https://x.example/mcp"),
      "https://x.example/mcp"
    );
    assert_eq!(redact_url_for_log("not a url?token=1"), "not a url");
    assert_eq!(redact_url_for_log("relative/path"), "relative/path");
  }
}
