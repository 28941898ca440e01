//! RFC 7636 PKCE with S256, and the random values of the flow.
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

/// 32 random bytes as base64url: a verifier, a `state`, a DPoP `jti`.
///
/// # Errors
/// When the OS has no randomness to give (then no flow can be safe).
pub fn random_token() -> Result<String, getrandom::Error> {
  let mut bytes = [0u8; 32];
  getrandom::fill(&mut bytes)?;
  Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// `BASE64URL(SHA256(verifier))`.
pub fn s256_challenge(verifier: &str) -> String {
  URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn rfc7636_appendix_b_vector() {
    assert_eq!(
      s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
  }

  #[test]
  fn verifiers_are_43_unreserved_chars_and_differ() {
    let a = random_token().unwrap();
    let b = random_token().unwrap();
    assert_eq!(a.len(), 43);
    assert!(a
      .chars()
      .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    assert_ne!(a, b);
  }
}
