//! O3: what is stored for one server: the client the authorization server knows us by, and
//! the tokens it issued, with the rules for when they are used, refreshed or dropped.
use serde::{Deserialize, Serialize};

/// One server's credential, as a token store holds it (JSON, camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
  /// The authorization server that issued it; a different one means starting over.
  pub issuer: String,
  /// The RFC 8707 resource the tokens are for.
  pub resource: String,
  pub token_endpoint: String,
  pub client: Client,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub tokens: Option<Tokens>,
  /// The scopes asked for so far (step-up accumulates them).
  #[serde(default, skip_serializing_if = "Vec::is_empty")]
  pub scopes: Vec<String>,
  /// O5: the DPoP key the tokens are bound to (PKCS#8, base64url).
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub dpop_key: Option<String>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Client {
  pub client_id: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub client_secret: Option<String>,
  /// `client_secret_basic`, `client_secret_post` or `none`.
  pub auth_method: String,
  /// Made by dynamic registration (so a new issuer cannot use it).
  #[serde(default)]
  pub registered: bool,
  /// The redirect URI it was registered with.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub redirect_uri: Option<String>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
  pub access_token: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub refresh_token: Option<String>,
  /// Milliseconds since the epoch.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub expires_at: Option<u64>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub issued_at: Option<u64>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub scope: Option<String>,
  /// `Bearer` or `DPoP`, as the token endpoint said.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub token_type: Option<String>,
}

impl std::fmt::Debug for Client {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("Client")
      .field("client_id", &self.client_id)
      .field("client_secret", &super::redacted(&self.client_secret))
      .field("auth_method", &self.auth_method)
      .field("registered", &self.registered)
      .field("redirect_uri", &self.redirect_uri)
      .finish()
  }
}

impl std::fmt::Debug for Tokens {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("Tokens")
      .field("access_token", &"[redacted]")
      .field("refresh_token", &super::redacted(&self.refresh_token))
      .field("expires_at", &self.expires_at)
      .field("scope", &self.scope)
      .field("token_type", &self.token_type)
      .finish_non_exhaustive()
  }
}

impl Tokens {
  pub fn dpop_bound(&self) -> bool {
    self
      .token_type
      .as_deref()
      .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
  }
}

/// How long before expiry a token is refreshed: a minute, or a tenth of a short lifetime.
const REFRESH_MARGIN_MS: u64 = 60_000;

impl Tokens {
  /// When a refresh should happen before use; `None` for tokens that do not expire.
  pub fn refresh_at(&self) -> Option<u64> {
    let expires_at = self.expires_at?;
    let lifetime = expires_at.saturating_sub(self.issued_at.unwrap_or(expires_at));
    Some(expires_at.saturating_sub(REFRESH_MARGIN_MS.min(lifetime / 10)))
  }

  pub fn due_for_refresh(&self, now_ms: u64) -> bool {
    self.refresh_at().is_some_and(|at| now_ms >= at)
  }
}

/// O2 scope selection: the challenge's `scope`, else the caller's, else the resource's
/// `scopes_supported`, else none; joined with what was asked before (step-up, SEP-2350),
/// plus `offline_access` when the authorization server advertises it (O3).
pub fn select_scopes(
  previous: &[String],
  challenge: Option<&str>,
  configured: Option<&str>,
  resource_supported: Option<&[String]>,
  offline_access_advertised: bool,
) -> Vec<String> {
  let chosen: Vec<String> = match (challenge, configured, resource_supported) {
    (Some(scope), _, _) | (None, Some(scope), _) => split(scope),
    (None, None, Some(supported)) => supported.to_vec(),
    (None, None, None) => Vec::new(),
  };
  let mut scopes = previous.to_vec();
  for scope in chosen {
    if !scopes.contains(&scope) {
      scopes.push(scope);
    }
  }
  if offline_access_advertised
    && !scopes.is_empty()
    && !scopes.iter().any(|s| s == "offline_access")
  {
    scopes.push("offline_access".to_string());
  }
  scopes
}

fn split(scope: &str) -> Vec<String> {
  scope.split_ascii_whitespace().map(str::to_string).collect()
}

/// A pre-registered client's secret belongs to the authorization server it was registered
/// with: the configured `issuer`, else the one the stored credential of that same client
/// was first obtained from. `Err` names that server when `issuer` is another one.
pub fn secret_owner_mismatch<'a>(
  configured: Option<&'a str>,
  stored: Option<&'a Credential>,
  client_id: &str,
  issuer: &str,
) -> Result<(), &'a str> {
  let first_used = stored
    .filter(|c| !c.client.registered && c.client.client_id == client_id && !c.issuer.is_empty())
    .map(|c| c.issuer.as_str());
  match configured.or(first_used) {
    Some(owner) if owner != issuer => Err(owner),
    _ => Ok(()),
  }
}

/// The token endpoint's client authentication: what registration said, else the best the
/// server advertises for a client with (or without) a secret. RFC 8414 makes
/// `client_secret_basic` the default when nothing is advertised.
pub fn auth_method(
  registered: Option<&str>,
  has_secret: bool,
  supported: Option<&[String]>,
) -> String {
  if let Some(method) = registered {
    return method.to_string();
  }
  if !has_secret {
    return "none".to_string();
  }
  let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
  if !offers("client_secret_basic") && offers("client_secret_post") {
    "client_secret_post".to_string()
  } else {
    "client_secret_basic".to_string()
  }
}

/// What dynamic registration asks for: a public client when the server allows one.
pub fn registration_auth_method(supported: Option<&[String]>) -> &'static str {
  match supported {
    None => "client_secret_basic",
    Some(s) if s.iter().any(|m| m == "none") => "none",
    Some(s) if s.iter().any(|m| m == "client_secret_basic") => "client_secret_basic",
    Some(s) if s.iter().any(|m| m == "client_secret_post") => "client_secret_post",
    Some(_) => "none",
  }
}

#[cfg(test)]
mod tests {
  #[test]
  fn a_client_secret_stays_with_its_authorization_server() {
    let stored = |issuer: &str, client_id: &str, registered: bool| Credential {
      issuer: issuer.to_string(),
      resource: "http://127.0.0.1:1/mcp".to_string(),
      token_endpoint: format!("{issuer}/token"),
      client: Client {
        client_id: client_id.to_string(),
        client_secret: Some("s".to_string()),
        auth_method: "client_secret_basic".to_string(),
        registered,
        redirect_uri: None,
      },
      tokens: None,
      scopes: Vec::new(),
      dpop_key: None,
    };
    let (a, b) = ("http://a.test", "http://b.test");
    // Nothing configured or stored: the first use records the owner.
    assert_eq!(secret_owner_mismatch(None, None, "c", b), Ok(()));
    assert_eq!(secret_owner_mismatch(Some(a), None, "c", a), Ok(()));
    assert_eq!(secret_owner_mismatch(Some(a), None, "c", b), Err(a));
    let first = stored(a, "c", false);
    assert_eq!(secret_owner_mismatch(None, Some(&first), "c", b), Err(a));
    assert_eq!(secret_owner_mismatch(None, Some(&first), "c", a), Ok(()));
    // The configured owner wins over the stored one.
    assert_eq!(secret_owner_mismatch(Some(b), Some(&first), "c", b), Ok(()));
    // A dynamically registered client, or another client id, says nothing of this secret.
    let registered = stored(a, "c", true);
    assert_eq!(
      secret_owner_mismatch(None, Some(&registered), "c", b),
      Ok(())
    );
    let other = stored(a, "d", false);
    assert_eq!(secret_owner_mismatch(None, Some(&other), "c", b), Ok(()));
  }

  use super::*;

  fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
  }

  #[test]
  fn o2_scope_order_and_step_up_union() {
    let supported = strings(&["mcp:basic", "mcp:read"]);
    assert_eq!(
      select_scopes(&[], Some("mcp:basic"), Some("x"), Some(&supported), false),
      ["mcp:basic"]
    );
    assert_eq!(
      select_scopes(&[], None, Some("x y"), Some(&supported), false),
      ["x", "y"]
    );
    assert_eq!(
      select_scopes(&[], None, None, Some(&supported), false),
      supported
    );
    assert!(select_scopes(&[], None, None, None, false).is_empty());
    assert_eq!(
      select_scopes(
        &strings(&["mcp:basic"]),
        Some("mcp:write mcp:basic"),
        None,
        None,
        false
      ),
      ["mcp:basic", "mcp:write"]
    );
  }

  #[test]
  fn o3_offline_access_only_when_advertised() {
    assert_eq!(
      select_scopes(&[], Some("a"), None, None, true),
      ["a", "offline_access"]
    );
    assert_eq!(
      select_scopes(&[], Some("a offline_access"), None, None, true),
      ["a", "offline_access"]
    );
    assert!(select_scopes(&[], None, None, None, true).is_empty());
  }

  #[test]
  fn o2_token_endpoint_auth_method() {
    let only = |m: &str| vec![m.to_string()];
    assert_eq!(
      auth_method(Some("client_secret_post"), true, None),
      "client_secret_post"
    );
    assert_eq!(
      auth_method(None, false, Some(&only("client_secret_basic"))),
      "none"
    );
    assert_eq!(auth_method(None, true, None), "client_secret_basic");
    assert_eq!(
      auth_method(None, true, Some(&only("client_secret_post"))),
      "client_secret_post"
    );
    assert_eq!(
      auth_method(None, true, Some(&only("client_secret_basic"))),
      "client_secret_basic"
    );
    assert_eq!(registration_auth_method(Some(&only("none"))), "none");
    assert_eq!(
      registration_auth_method(Some(&only("client_secret_post"))),
      "client_secret_post"
    );
    assert_eq!(registration_auth_method(None), "client_secret_basic");
  }

  #[test]
  fn o3_refresh_a_minute_early_or_a_tenth_of_a_short_life() {
    let tokens = |issued: u64, expires: u64| Tokens {
      access_token: "a".into(),
      refresh_token: None,
      expires_at: Some(expires),
      issued_at: Some(issued),
      scope: None,
      token_type: None,
    };
    assert_eq!(tokens(0, 3_600_000).refresh_at(), Some(3_540_000));
    assert_eq!(tokens(0, 10_000).refresh_at(), Some(9_000));
    assert!(!tokens(0, 10_000).due_for_refresh(8_999));
    assert!(tokens(0, 10_000).due_for_refresh(9_000));
    let forever = Tokens {
      expires_at: None,
      ..tokens(0, 0)
    };
    assert!(!forever.due_for_refresh(u64::MAX));
  }

  #[test]
  fn o3_debug_output_holds_no_secret() {
    let client = Client {
      client_id: "c".into(),
      client_secret: Some("s3cret".into()),
      auth_method: "client_secret_basic".into(),
      registered: true,
      redirect_uri: None,
    };
    let tokens = Tokens {
      access_token: "at-secret".into(),
      refresh_token: Some("rt-secret".into()),
      expires_at: None,
      issued_at: None,
      scope: None,
      token_type: None,
    };
    let text = format!("{client:?} {tokens:?}");
    assert!(!text.contains("s3cret") && !text.contains("at-secret") && !text.contains("rt-secret"));
  }

  #[test]
  fn stored_form_is_camel_case_json() {
    let credential = Credential {
      issuer: "http://as".into(),
      resource: "http://rs/mcp".into(),
      token_endpoint: "http://as/token".into(),
      client: Client {
        client_id: "c".into(),
        client_secret: None,
        auth_method: "none".into(),
        registered: true,
        redirect_uri: None,
      },
      tokens: None,
      scopes: vec![],
      dpop_key: None,
    };
    let text = serde_json::to_string(&credential).unwrap();
    assert_eq!(
      text,
      r#"{"issuer":"http://as","resource":"http://rs/mcp","tokenEndpoint":"http://as/token","client":{"clientId":"c","authMethod":"none","registered":true}}"#
    );
    assert_eq!(
      serde_json::from_str::<Credential>(&text).unwrap(),
      credential
    );
  }
}
