//! SEP-1933 / SEP-990: where a token the client presents, but does not issue, comes from —
//! a workload's JWT, or the user's identity assertion from single sign-on. It is read afresh
//! for every token request: projected service-account tokens rotate on disk, and a
//! function may hand out a new ID token each time.
use std::path::PathBuf;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::{AuthHost, HostCall};

/// One configured source.
#[derive(Clone, PartialEq)]
pub enum TokenSource {
  /// The token itself.
  Text(String),
  /// `{ file }`: a path read on every use.
  File(PathBuf),
  /// `{ env }`: a variable of the calling runtime's `process.env`, read on every use.
  Env(String),
  /// A function on the config, called on every use; the path of its field below `oauth`.
  Function(&'static [&'static str]),
}

impl std::fmt::Debug for TokenSource {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      TokenSource::Text(_) => write!(f, "Text([redacted])"),
      TokenSource::File(path) => write!(f, "File({path:?})"),
      TokenSource::Env(name) => write!(f, "Env({name:?})"),
      TokenSource::Function(path) => write!(f, "Function(oauth.{})", path.join(".")),
    }
  }
}

impl TokenSource {
  /// The token, trimmed; `what` names it in errors ("the workload token"). A JWT whose
  /// `exp` has passed is refused here, so an expired token is never sent.
  ///
  /// # Errors
  /// Why there is no usable token: the file, variable or function, never the token.
  pub async fn read(&self, what: &str, host: &dyn AuthHost, now_s: u64) -> Result<String, String> {
    let (text, from) = match self {
      TokenSource::Text(text) => (text.clone(), "the configuration".to_string()),
      TokenSource::File(path) => {
        let from = format!("the file {}", path.display());
        let text = tokio::fs::read_to_string(path)
          .await
          .map_err(|e| format!("{what} cannot be read from {from}: {}", io_reason(&e)))?;
        (text, from)
      }
      TokenSource::Env(name) => {
        let from = format!("the environment variable {name}");
        match host.call(HostCall::Env(name.clone())).await {
          Ok(Some(json)) => match serde_json::from_str::<String>(&json) {
            Ok(text) => (text, from),
            Err(_) => return Err(format!("{what} is not set: {from} is not a string")),
          },
          Ok(None) => return Err(format!("{what} is not set: {from} is not set")),
          Err(why) => return Err(format!("{what} cannot be read from {from}: {why}")),
        }
      }
      TokenSource::Function(path) => {
        let from = format!("oauth.{}()", path.join("."));
        let answer = host
          .call(HostCall::ConfigFunction(path))
          .await
          .map_err(|why| format!("{what} could not be obtained: {from} failed: {why}"))?;
        match answer.and_then(|json| serde_json::from_str::<String>(&json).ok()) {
          Some(text) => (text, from),
          None => {
            return Err(format!(
              "{what} could not be obtained: {from} did not resolve with a string"
            ))
          }
        }
      }
    };
    let token = text.trim();
    if token.is_empty() {
      return Err(format!("{what} is empty: {from} holds no token"));
    }
    if let Some(exp) = jwt_expiry(token).filter(|exp| *exp <= now_s) {
      return Err(format!(
        "{what} from {from} has expired ({} s ago); it was not sent",
        now_s - exp
      ));
    }
    Ok(token.to_string())
  }
}

/// The `exp` claim of a JWT, when the token is one (an opaque or SAML token has none).
pub fn jwt_expiry(token: &str) -> Option<u64> {
  let mut parts = token.split('.');
  let (_, claims, _) = (parts.next()?, parts.next()?, parts.next()?);
  let bytes = URL_SAFE_NO_PAD.decode(claims.trim_end_matches('=')).ok()?;
  let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
  claims
    .get("exp")?
    .as_f64()
    .filter(|e| *e >= 0.0)
    .map(|e| e as u64)
}

fn io_reason(error: &std::io::Error) -> String {
  let text = error.to_string();
  text
    .split(" (os error")
    .next()
    .unwrap_or_default()
    .to_string()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::oauth::HostAnswer;
  use futures::future::BoxFuture;

  /// Answers `Env("SET")` with a token and nothing else.
  struct Host;
  impl AuthHost for Host {
    fn call(&self, call: HostCall) -> BoxFuture<'static, HostAnswer> {
      let answer = match call {
        HostCall::Env(name) if name == "SET" => Ok(Some("\"env-token\"".to_string())),
        HostCall::ConfigFunction(_) => Ok(Some("42".to_string())),
        _ => Ok(None),
      };
      Box::pin(async move { answer })
    }
  }

  fn jwt(exp: u64) -> String {
    let claims = URL_SAFE_NO_PAD.encode(format!("{{\"exp\":{exp},\"sub\":\"w\"}}"));
    format!("eyJhbGciOiJFUzI1NiJ9.{claims}.c2ln")
  }

  #[tokio::test]
  async fn sources_are_read_and_checked_without_naming_the_token() {
    let what = "the workload token";
    let text = TokenSource::Text("  opaque \n".to_string());
    assert_eq!(text.read(what, &Host, 0).await.unwrap(), "opaque");
    let env = TokenSource::Env("SET".to_string());
    assert_eq!(env.read(what, &Host, 0).await.unwrap(), "env-token");
    let unset = TokenSource::Env("UNSET".to_string());
    assert_eq!(
      unset.read(what, &Host, 0).await.unwrap_err(),
      "the workload token is not set: the environment variable UNSET is not set"
    );
    let function = TokenSource::Function(&["workloadToken"]);
    assert_eq!(
      function.read(what, &Host, 0).await.unwrap_err(),
      "the workload token could not be obtained: oauth.workloadToken() did not resolve with a string"
    );
    let missing = TokenSource::File(PathBuf::from("/nonexistent/token"));
    assert_eq!(
      missing.read(what, &Host, 0).await.unwrap_err(),
      "the workload token cannot be read from the file /nonexistent/token: No such file or directory"
    );
    let expired = TokenSource::Text(jwt(100));
    let error = expired.read(what, &Host, 160).await.unwrap_err();
    assert_eq!(
      error,
      "the workload token from the configuration has expired (60 s ago); it was not sent"
    );
    assert_eq!(
      TokenSource::Text(jwt(200))
        .read(what, &Host, 160)
        .await
        .unwrap(),
      jwt(200)
    );
    assert!(!format!("{text:?}").contains("opaque"));
  }

  #[test]
  fn only_a_jwt_has_an_expiry() {
    assert_eq!(jwt_expiry(&jwt(7)), Some(7));
    assert_eq!(jwt_expiry("opaque"), None);
    assert_eq!(jwt_expiry("a.b.c"), None);
  }
}
