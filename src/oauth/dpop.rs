//! O5: DPoP (RFC 9449): a key of the client's own, and the proof JWT that goes with every
//! token request and every request that presents a DPoP-bound token.
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use sha2::{Digest, Sha256};

/// An ES256 key pair; its PKCS#8 form is kept with the credential, as the tokens are bound
/// to it.
pub struct DpopKey {
  pair: EcdsaKeyPair,
  pkcs8: Vec<u8>,
  jwk: serde_json::Value,
}

impl std::fmt::Debug for DpopKey {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    // Never the private key.
    write!(f, "DpopKey({})", self.jwk)
  }
}

impl DpopKey {
  pub fn generate() -> Result<DpopKey, String> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
      .map_err(|e| format!("no DPoP key: {e}"))?;
    DpopKey::from_pkcs8(pkcs8.as_ref())
  }

  pub fn from_pkcs8(pkcs8: &[u8]) -> Result<DpopKey, String> {
    let rng = SystemRandom::new();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
      .map_err(|e| format!("bad DPoP key: {e}"))?;
    // An uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    if point.len() != 65 {
      return Err("bad DPoP key: not a P-256 point".to_string());
    }
    let jwk = serde_json::json!({
      "kty": "EC",
      "crv": "P-256",
      "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
      "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    Ok(DpopKey {
      pair,
      pkcs8: pkcs8.to_vec(),
      jwk,
    })
  }

  pub fn pkcs8_base64(&self) -> String {
    URL_SAFE_NO_PAD.encode(&self.pkcs8)
  }

  pub fn from_base64(text: &str) -> Result<DpopKey, String> {
    let der = URL_SAFE_NO_PAD
      .decode(text)
      .map_err(|_| "bad DPoP key: not base64url".to_string())?;
    DpopKey::from_pkcs8(&der)
  }

  /// RFC 9449 §4.2: the proof for `method` on `url` (its query and fragment left out), with
  /// `ath` when it presents `access_token` and the server's `nonce` when there is one.
  pub fn proof(
    &self,
    method: &str,
    url: &str,
    access_token: Option<&str>,
    nonce: Option<&str>,
    now_secs: u64,
    jti: &str,
  ) -> Result<String, String> {
    let header = serde_json::json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
    let mut claims = serde_json::json!({
      "jti": jti,
      "htm": method,
      "htu": target_uri(url),
      "iat": now_secs,
    });
    if let Some(token) = access_token {
      claims["ath"] = URL_SAFE_NO_PAD
        .encode(Sha256::digest(token.as_bytes()))
        .into();
    }
    if let Some(nonce) = nonce {
      claims["nonce"] = nonce.into();
    }
    let input = format!(
      "{}.{}",
      URL_SAFE_NO_PAD.encode(header.to_string()),
      URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = self
      .pair
      .sign(&SystemRandom::new(), input.as_bytes())
      .map_err(|e| format!("DPoP proof: {e}"))?;
    Ok(format!(
      "{input}.{}",
      URL_SAFE_NO_PAD.encode(signature.as_ref())
    ))
  }
}

/// `htu`: the URL without query and fragment.
fn target_uri(url: &str) -> String {
  match url::Url::parse(url) {
    Ok(mut parsed) => {
      parsed.set_query(None);
      parsed.set_fragment(None);
      parsed.to_string()
    }
    Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_string(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

  fn decode(part: &str) -> serde_json::Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
  }

  #[test]
  fn o5_rfc9449_proof_shape_and_signature() {
    let key = DpopKey::generate().unwrap();
    let proof = key
      .proof(
        "POST",
        "https://rs.example/mcp?x=1#f",
        Some("tok"),
        Some("n1"),
        100,
        "j",
      )
      .unwrap();
    let parts: Vec<&str> = proof.split('.').collect();
    let header = decode(parts[0]);
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    assert!(header["jwk"].get("d").is_none());
    let claims = decode(parts[1]);
    assert_eq!(claims["htu"], "https://rs.example/mcp");
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["nonce"], "n1");
    assert_eq!(
      claims["ath"],
      URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")).as_str()
    );
    let mut point = vec![4u8];
    point.extend(
      URL_SAFE_NO_PAD
        .decode(header["jwk"]["x"].as_str().unwrap())
        .unwrap(),
    );
    point.extend(
      URL_SAFE_NO_PAD
        .decode(header["jwk"]["y"].as_str().unwrap())
        .unwrap(),
    );
    let input = format!("{}.{}", parts[0], parts[1]);
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
      .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
      .unwrap();
  }

  #[test]
  fn o5_the_key_survives_the_store() {
    let key = DpopKey::generate().unwrap();
    let again = DpopKey::from_base64(&key.pkcs8_base64()).unwrap();
    assert_eq!(key.jwk, again.jwk);
    assert!(DpopKey::from_base64("@@").is_err());
    assert!(!format!("{key:?}").contains(&key.pkcs8_base64()));
  }
}
