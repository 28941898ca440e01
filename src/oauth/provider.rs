//! O1: a caller's `OAuthClientProvider` (the TypeScript SDK's shape) as our credential: its
//! `tokens()` and `clientInformation()` in, `saveTokens()` and `saveClientInformation()`
//! out, in the SDK's snake_case JSON.
use serde_json::{json, Value};

use super::credential::{Client, Credential, Tokens};

/// What the provider holds, as a credential whose issuer, resource and token endpoint are
/// not known until discovery (empty).
pub fn credential_from_sdk(
  tokens: Option<&Value>,
  information: Option<&Value>,
) -> Option<Credential> {
  let text = |value: Option<&Value>, name: &str| {
    value
      .and_then(|v| v.get(name))
      .and_then(Value::as_str)
      .map(str::to_string)
  };
  let client_id = text(information, "client_id")?;
  let client_secret = text(information, "client_secret");
  let auth_method = text(information, "token_endpoint_auth_method").unwrap_or_else(|| {
    if client_secret.is_some() {
      "client_secret_basic".to_string()
    } else {
      "none".to_string()
    }
  });
  let tokens = text(tokens, "access_token").map(|access_token| Tokens {
    access_token,
    refresh_token: text(tokens, "refresh_token"),
    // The SDK's `expires_in` is relative to a moment the provider does not keep: such
    // tokens are refreshed on a 401 only.
    expires_at: None,
    issued_at: None,
    scope: text(tokens, "scope"),
    token_type: text(tokens, "token_type"),
  });
  Some(Credential {
    issuer: String::new(),
    resource: String::new(),
    token_endpoint: String::new(),
    client: Client {
      client_id,
      client_secret,
      auth_method,
      registered: true,
      redirect_uri: None,
    },
    tokens,
    scopes: Vec::new(),
    dpop_key: None,
  })
}

/// `OAuthTokens` for `saveTokens()`.
pub fn sdk_tokens(tokens: &Tokens, now_ms: u64) -> Value {
  let token_type = tokens.token_type.as_deref().unwrap_or("Bearer");
  let mut out = json!({ "access_token": tokens.access_token, "token_type": token_type });
  if let Some(refresh) = &tokens.refresh_token {
    out["refresh_token"] = json!(refresh);
  }
  if let Some(expires_at) = tokens.expires_at {
    out["expires_in"] = json!(expires_at.saturating_sub(now_ms) / 1000);
  }
  if let Some(scope) = &tokens.scope {
    out["scope"] = json!(scope);
  }
  out
}

/// `OAuthClientInformation` for `saveClientInformation()`.
pub fn sdk_client_information(client: &Client) -> Value {
  let mut out = json!({
    "client_id": client.client_id,
    "token_endpoint_auth_method": client.auth_method,
  });
  if let Some(secret) = &client.client_secret {
    out["client_secret"] = json!(secret);
  }
  out
}

/// The registration request: the provider's `clientMetadata` over ours, keys it sets win.
pub fn registration_body(provider_metadata: Option<&Value>, ours: Value) -> Value {
  let mut body = ours;
  if let (Some(Value::Object(theirs)), Value::Object(body)) = (provider_metadata, &mut body) {
    for (key, value) in theirs {
      body.insert(key.clone(), value.clone());
    }
  }
  body
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn o1_sdk_shapes_round_trip() {
    let credential = credential_from_sdk(
      Some(&json!({ "access_token": "a", "token_type": "Bearer", "refresh_token": "r", "expires_in": 3600 })),
      Some(&json!({ "client_id": "c", "client_secret": "s" })),
    )
    .unwrap();
    assert_eq!(credential.client.auth_method, "client_secret_basic");
    let tokens = credential.tokens.as_ref().unwrap();
    assert_eq!(tokens.refresh_token.as_deref(), Some("r"));
    assert_eq!(tokens.expires_at, None);
    assert_eq!(
      sdk_tokens(
        &Tokens {
          expires_at: Some(10_000),
          ..tokens.clone()
        },
        4_000
      ),
      json!({ "access_token": "a", "token_type": "Bearer", "refresh_token": "r", "expires_in": 6 })
    );
    assert_eq!(
      sdk_client_information(&credential.client),
      json!({ "client_id": "c", "client_secret": "s", "token_endpoint_auth_method": "client_secret_basic" })
    );
    // No client yet: nothing to use, whatever the tokens.
    assert_eq!(
      credential_from_sdk(Some(&json!({ "access_token": "a" })), None),
      None
    );
  }

  #[test]
  fn o1_the_providers_client_metadata_wins() {
    let body = registration_body(
      Some(&json!({ "client_name": "theirs", "redirect_uris": ["http://localhost:1/cb"] })),
      json!({ "client_name": "ours", "application_type": "native" }),
    );
    assert_eq!(
      body,
      json!({ "client_name": "theirs", "application_type": "native", "redirect_uris": ["http://localhost:1/cb"] })
    );
  }
}
