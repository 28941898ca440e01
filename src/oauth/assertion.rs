//! O5: `private_key_jwt` client authentication (RFC 7523 §2.2): a short-lived JWT naming the
//! client as issuer and subject, signed with the client's key (PKCS#8 PEM, ES256 or RS256).
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{
  EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256,
};

pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

#[derive(Debug, Clone, PartialEq)]
pub enum AssertionError {
  NotPem,
  UnsupportedAlgorithm(String),
  BadKey(String),
}

impl std::fmt::Display for AssertionError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      AssertionError::NotPem => write!(f, "the private key is not a PKCS#8 PEM"),
      AssertionError::UnsupportedAlgorithm(alg) => {
        write!(
          f,
          "signing algorithm {alg:?} is not supported (ES256, RS256)"
        )
      }
      AssertionError::BadKey(why) => write!(f, "the private key cannot sign {why}"),
    }
  }
}

/// The signed assertion for `client_id` at the authorization server `audience`.
pub fn client_assertion(
  private_key_pem: &str,
  algorithm: &str,
  client_id: &str,
  audience: &str,
  now_secs: u64,
  jti: &str,
) -> Result<String, AssertionError> {
  let der = pem_der(private_key_pem)?;
  let header = serde_json::json!({ "alg": algorithm, "typ": "JWT" });
  let claims = serde_json::json!({
    "iss": client_id,
    "sub": client_id,
    "aud": audience,
    "iat": now_secs,
    "exp": now_secs + LIFETIME_SECS,
    "jti": jti,
  });
  let signing_input = format!(
    "{}.{}",
    URL_SAFE_NO_PAD.encode(header.to_string()),
    URL_SAFE_NO_PAD.encode(claims.to_string())
  );
  let rng = SystemRandom::new();
  let signature = match algorithm {
    "ES256" => {
      let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(|e| AssertionError::BadKey(format!("ES256: {e}")))?;
      key
        .sign(&rng, signing_input.as_bytes())
        .map_err(|e| AssertionError::BadKey(format!("ES256: {e}")))?
        .as_ref()
        .to_vec()
    }
    "RS256" => {
      let key =
        RsaKeyPair::from_pkcs8(&der).map_err(|e| AssertionError::BadKey(format!("RS256: {e}")))?;
      let mut signature = vec![0; key.public().modulus_len()];
      key
        .sign(
          &RSA_PKCS1_SHA256,
          &rng,
          signing_input.as_bytes(),
          &mut signature,
        )
        .map_err(|e| AssertionError::BadKey(format!("RS256: {e}")))?;
      signature
    }
    other => return Err(AssertionError::UnsupportedAlgorithm(other.to_string())),
  };
  Ok(format!(
    "{signing_input}.{}",
    URL_SAFE_NO_PAD.encode(signature)
  ))
}

/// The DER inside `-----BEGIN PRIVATE KEY-----` … `-----END PRIVATE KEY-----`.
fn pem_der(pem: &str) -> Result<Vec<u8>, AssertionError> {
  let body = pem
    .split("-----BEGIN PRIVATE KEY-----")
    .nth(1)
    .and_then(|rest| rest.split("-----END PRIVATE KEY-----").next())
    .ok_or(AssertionError::NotPem)?;
  let text: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
  STANDARD.decode(text).map_err(|_| AssertionError::NotPem)
}

#[cfg(test)]
mod tests {
  use super::*;
  use ring::signature::{KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

  fn es256_pem() -> (String, Vec<u8>) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
      EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let body = STANDARD.encode(pkcs8.as_ref());
    let lines: Vec<&str> = body
      .as_bytes()
      .chunks(64)
      .map(|c| std::str::from_utf8(c).unwrap())
      .collect();
    let pem = format!(
      "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
      lines.join("\n")
    );
    (pem, pair.public_key().as_ref().to_vec())
  }

  #[test]
  fn o5_es256_assertion_verifies_and_names_the_client() {
    let (pem, public) = es256_pem();
    let jwt =
      client_assertion(&pem, "ES256", "cc-client", "http://as.example", 1_000, "j1").unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let claims: serde_json::Value =
      serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(
      claims,
      serde_json::json!({"iss":"cc-client","sub":"cc-client","aud":"http://as.example","iat":1000,"exp":1300,"jti":"j1"})
    );
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    let input = format!("{}.{}", parts[0], parts[1]);
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
      .verify(input.as_bytes(), &signature)
      .unwrap();
  }

  #[test]
  fn o5_bad_keys_and_algorithms_are_named() {
    assert_eq!(
      client_assertion("nope", "ES256", "c", "a", 0, "j"),
      Err(AssertionError::NotPem)
    );
    let (pem, _) = es256_pem();
    assert!(matches!(
      client_assertion(&pem, "HS256", "c", "a", 0, "j"),
      Err(AssertionError::UnsupportedAlgorithm(_))
    ));
    assert!(matches!(
      client_assertion(&pem, "RS256", "c", "a", 0, "j"),
      Err(AssertionError::BadKey(_))
    ));
  }
}
