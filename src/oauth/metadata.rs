//! The JSON documents of the flow, as far as the client reads them.
use serde::{Deserialize, Serialize};

/// RFC 9728 protected-resource metadata.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceMetadata {
  pub resource: Option<String>,
  #[serde(default)]
  pub authorization_servers: Vec<String>,
  pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization-server metadata (or an OpenID provider configuration).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ServerMetadata {
  pub issuer: String,
  pub authorization_endpoint: Option<String>,
  pub token_endpoint: String,
  pub registration_endpoint: Option<String>,
  pub scopes_supported: Option<Vec<String>>,
  pub code_challenge_methods_supported: Option<Vec<String>>,
  pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
  pub grant_types_supported: Option<Vec<String>>,
  /// RFC 9207: the authorization response carries `iss`.
  pub authorization_response_iss_parameter_supported: Option<bool>,
  /// SEP-991: a URL may be the client id.
  pub client_id_metadata_document_supported: Option<bool>,
}

impl ServerMetadata {
  /// 2025-03-26 servers without metadata: the default endpoints at the issuer.
  pub fn legacy_defaults(issuer: &str) -> ServerMetadata {
    ServerMetadata {
      issuer: issuer.to_string(),
      authorization_endpoint: Some(format!("{issuer}/authorize")),
      token_endpoint: format!("{issuer}/token"),
      registration_endpoint: Some(format!("{issuer}/register")),
      code_challenge_methods_supported: Some(vec!["S256".to_string()]),
      ..ServerMetadata::default()
    }
  }

  pub fn supports_s256(&self) -> bool {
    self
      .code_challenge_methods_supported
      .as_ref()
      .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
  }

  pub fn advertises_scope(&self, scope: &str) -> bool {
    self
      .scopes_supported
      .as_ref()
      .is_some_and(|scopes| scopes.iter().any(|s| s == scope))
  }
}

/// RFC 6749 §5.1.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenResponse {
  pub access_token: String,
  #[serde(default)]
  pub token_type: Option<String>,
  pub expires_in: Option<f64>,
  pub refresh_token: Option<String>,
  pub scope: Option<String>,
  /// RFC 8693 §2.2.1: what a token exchange issued.
  #[serde(default)]
  pub issued_token_type: Option<String>,
}

/// RFC 6749 §5.2 (and RFC 7591 §3.2.2 for registration).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ErrorResponse {
  pub error: Option<String>,
  pub error_description: Option<String>,
}

impl ErrorResponse {
  /// `error: description`, or what there is of it.
  pub fn describe(&self, status: u16) -> String {
    match (&self.error, &self.error_description) {
      (Some(error), Some(description)) => format!("{error}: {description}"),
      (Some(error), None) => error.clone(),
      (None, Some(description)) => format!("HTTP {status}: {description}"),
      (None, None) => format!("HTTP {status}"),
    }
  }
}

/// RFC 7591 §3.2.1.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistrationResponse {
  pub client_id: String,
  pub client_secret: Option<String>,
  pub token_endpoint_auth_method: Option<String>,
}
