//! O2: the authorization response the user agent came back with (RFC 6749 §4.1.2), checked
//! for our `state` and, RFC 9207, the issuer.
use url::Url;

#[derive(Debug, Clone, PartialEq)]
pub enum CallbackError {
  NotAUrl,
  /// The server refused: its `error` and `error_description`.
  Denied(String),
  StateMismatch,
  MissingCode,
  /// RFC 9207: `iss` absent although the server said it sends one.
  MissingIssuer,
  /// RFC 9207: `iss` is not the issuer we recorded (compared as plain strings).
  WrongIssuer(String),
}

impl std::fmt::Display for CallbackError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      CallbackError::NotAUrl => write!(f, "the redirect did not resolve with a callback URL"),
      CallbackError::Denied(why) => write!(f, "{why}"),
      CallbackError::StateMismatch => {
        write!(f, "the callback's state does not match the request's")
      }
      CallbackError::MissingCode => write!(f, "the callback carries no authorization code"),
      CallbackError::MissingIssuer => write!(
        f,
        "the callback carries no iss, which the authorization server said it sends"
      ),
      CallbackError::WrongIssuer(iss) => write!(
        f,
        "the callback's iss {iss:?} is not the authorization server's issuer"
      ),
    }
  }
}

/// The authorization code, once `callback` passes every check.
/// `state`: the one we sent, when we know it.
pub fn authorization_code(
  callback: &str,
  state: Option<&str>,
  issuer: &str,
  issuer_advertised: bool,
) -> Result<String, CallbackError> {
  let url = Url::parse(callback).map_err(|_| CallbackError::NotAUrl)?;
  let param = |name: &str| {
    url
      .query_pairs()
      .find(|(key, _)| key == name)
      .map(|(_, value)| value.into_owned())
  };
  if let Some(error) = param("error") {
    return Err(CallbackError::Denied(match param("error_description") {
      Some(description) => format!("{error}: {description}"),
      None => error,
    }));
  }
  if state.is_some_and(|state| param("state").as_deref() != Some(state)) {
    return Err(CallbackError::StateMismatch);
  }
  match param("iss") {
    Some(iss) if iss != issuer => return Err(CallbackError::WrongIssuer(iss)),
    None if issuer_advertised => return Err(CallbackError::MissingIssuer),
    _ => {}
  }
  param("code")
    .filter(|code| !code.is_empty())
    .ok_or(CallbackError::MissingCode)
}

#[cfg(test)]
mod tests {
  use super::*;

  const ISSUER: &str = "http://localhost:4000";

  #[test]
  fn o2_code_after_state_and_issuer_checks() {
    let ok = "http://127.0.0.1/cb?code=abc&state=s1&iss=http%3A%2F%2Flocalhost%3A4000";
    assert_eq!(
      authorization_code(ok, Some("s1"), ISSUER, true),
      Ok("abc".to_string())
    );
    assert_eq!(
      authorization_code(ok, Some("s2"), ISSUER, true),
      Err(CallbackError::StateMismatch)
    );
    assert_eq!(
      authorization_code("http://127.0.0.1/cb?state=s1", Some("s1"), ISSUER, false),
      Err(CallbackError::MissingCode)
    );
  }

  #[test]
  fn rfc9207_iss_rules() {
    let without = "http://127.0.0.1/cb?code=abc&state=s";
    assert_eq!(
      authorization_code(without, Some("s"), ISSUER, false),
      Ok("abc".into())
    );
    assert_eq!(
      authorization_code(without, Some("s"), ISSUER, true),
      Err(CallbackError::MissingIssuer)
    );
    let wrong = "http://127.0.0.1/cb?code=abc&state=s&iss=https%3A%2F%2Fevil.example.com";
    // Compared even when not advertised.
    assert!(matches!(
      authorization_code(wrong, Some("s"), ISSUER, false),
      Err(CallbackError::WrongIssuer(_))
    ));
    // No normalisation: a trailing slash is another issuer.
    let slash = "http://127.0.0.1/cb?code=abc&state=s&iss=http%3A%2F%2Flocalhost%3A4000%2F";
    assert!(matches!(
      authorization_code(slash, Some("s"), ISSUER, true),
      Err(CallbackError::WrongIssuer(_))
    ));
  }

  #[test]
  fn a_refusal_names_the_servers_error() {
    let denied = "http://127.0.0.1/cb?error=access_denied&error_description=User+said+no&state=s";
    assert_eq!(
      authorization_code(denied, Some("s"), ISSUER, true),
      Err(CallbackError::Denied("access_denied: User said no".into()))
    );
    assert_eq!(
      authorization_code("not a url", Some("s"), ISSUER, true),
      Err(CallbackError::NotAUrl)
    );
  }
}
