//! The protocol versions we speak, for the client's handshake and the transports' headers.

/// C1/P1: the version offered unless the caller's `client.protocolVersion` says otherwise.
pub const DEFAULT_PROTOCOL_VERSION: &str = "2025-11-25";

/// P1: the handshake versions we speak; the server may answer any of them.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
  ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// N1: the stateless eras we speak (no `initialize`, a `_meta` envelope per request).
pub const STATELESS_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// `version` as a `'static` string when it is one we speak: a header can then carry it
/// without a copy per request.
pub fn known(version: &str) -> Option<&'static str> {
  SUPPORTED_PROTOCOL_VERSIONS
    .into_iter()
    .chain(STATELESS_PROTOCOL_VERSIONS)
    .find(|known| *known == version)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn known_versions_are_the_spoken_ones() {
    for version in SUPPORTED_PROTOCOL_VERSIONS
      .into_iter()
      .chain(STATELESS_PROTOCOL_VERSIONS)
    {
      assert_eq!(known(version), Some(version));
    }
    assert!(SUPPORTED_PROTOCOL_VERSIONS.contains(&DEFAULT_PROTOCOL_VERSION));
    assert_eq!(known("2099-01-01"), None);
    assert_eq!(known(""), None);
  }
}
