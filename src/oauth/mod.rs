//! O1–O4: OAuth 2.1 for HTTP servers, as the 2025-11-25 authorization spec asks of a client.
//!
//! `flow` answers a 401 (or a 403 asking for more scopes) with discovery, client identity,
//! PKCE, the user agent's round trip and the token request; the other modules are the pure
//! rules it follows. The host is reached only through `AuthHost` (the redirect, a caller's
//! token store), so everything here runs and is tested without Node.
pub mod assertion;
pub mod callback;
pub mod challenge;
pub mod credential;
pub mod discovery;
pub mod dpop;
pub mod flow;
pub mod metadata;
pub mod pkce;
pub mod provider;
pub mod store;
pub mod token_source;

use futures::future::BoxFuture;

pub use token_source::TokenSource;

pub use crate::error::OAuthStep as Step;

/// How tokens are obtained.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Grant {
  /// The user authorizes in a user agent (`redirect`).
  #[default]
  AuthorizationCode,
  /// O5: machine-to-machine, with the client's own credentials.
  ClientCredentials,
  /// SEP-1933 workload identity federation: the workload's own JWT, presented with the
  /// RFC 7523 JWT-bearer grant; no user, no secret.
  JwtBearer(TokenSource),
  /// SEP-990 enterprise-managed authorization: the user's identity assertion is exchanged
  /// at the enterprise IdP (RFC 8693) for an ID-JAG, presented with the JWT-bearer grant.
  EnterpriseManaged(Box<IdpSettings>),
}

impl Grant {
  /// A grant that needs no user agent.
  pub fn is_machine(&self) -> bool {
    !matches!(self, Grant::AuthorizationCode)
  }

  /// Presents an assertion with the RFC 7523 JWT-bearer grant.
  pub fn is_jwt_bearer(&self) -> bool {
    matches!(self, Grant::JwtBearer(_) | Grant::EnterpriseManaged(_))
  }
}

/// RFC 7523 §2.1.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// SEP-990: `config.oauth.idp`, the enterprise identity provider the user signed in with.
#[derive(Clone, PartialEq)]
pub struct IdpSettings {
  /// Its issuer, for RFC 8414 / OpenID discovery of the token endpoint.
  pub issuer: Option<String>,
  /// Its token endpoint, when given (no discovery then).
  pub token_endpoint: Option<String>,
  /// The client's registration at the IdP.
  pub client_id: String,
  pub client_secret: Option<String>,
  /// The identity assertion from single sign-on: an ID token or a SAML 2.0 assertion.
  pub assertion: TokenSource,
  pub assertion_type: AssertionType,
}

impl std::fmt::Debug for IdpSettings {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("IdpSettings")
      .field("issuer", &self.issuer)
      .field("token_endpoint", &self.token_endpoint)
      .field("client_id", &self.client_id)
      .field("client_secret", &redacted(&self.client_secret))
      .field("assertion", &self.assertion)
      .field("assertion_type", &self.assertion_type)
      .finish()
  }
}

/// RFC 8693 §3: what kind of token the identity assertion is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AssertionType {
  #[default]
  IdToken,
  Saml2,
}

impl AssertionType {
  pub fn urn(self) -> &'static str {
    match self {
      AssertionType::IdToken => "urn:ietf:params:oauth:token-type:id_token",
      AssertionType::Saml2 => "urn:ietf:params:oauth:token-type:saml2",
    }
  }
}

/// `config.oauth`, the parts that are plain data (O1).
#[derive(Clone, Default, PartialEq)]
pub struct OAuthSettings {
  pub client_id: Option<String>,
  pub client_secret: Option<String>,
  /// The authorization server `client_secret` was issued by; unset, the first one the
  /// secret is used with.
  pub issuer: Option<String>,
  pub client_metadata_url: Option<String>,
  pub client_name: Option<String>,
  pub scope: Option<String>,
  pub redirect_uri: Option<String>,
  /// O5: `private_key_jwt`: the client's PKCS#8 PEM key and its algorithm (default ES256).
  pub private_key: Option<String>,
  pub signing_algorithm: Option<String>,
  /// O5: DPoP-bound tokens (RFC 9449) instead of bearer tokens.
  pub dpop: bool,
  pub grant: Grant,
  /// The caller gave a `store`; otherwise the process-wide in-memory one is used.
  pub host_store: bool,
  /// `config.authProvider`: the caller's `OAuthClientProvider` keeps the credential and
  /// sends the user agent; `finishAuth` completes the flow.
  pub provider: bool,
}

/// Secrets stay out of any `{:?}` (O3: none in errors or logs).
pub(crate) fn redacted(secret: &Option<String>) -> &'static str {
  if secret.is_some() {
    "Some([redacted])"
  } else {
    "None"
  }
}

impl std::fmt::Debug for OAuthSettings {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("OAuthSettings")
      .field("client_id", &self.client_id)
      .field("client_secret", &redacted(&self.client_secret))
      .field("issuer", &self.issuer)
      .field("client_metadata_url", &self.client_metadata_url)
      .field("scope", &self.scope)
      .field("redirect_uri", &self.redirect_uri)
      .field("private_key", &redacted(&self.private_key))
      .field("dpop", &self.dpop)
      .field("grant", &self.grant)
      .field("host_store", &self.host_store)
      .field("provider", &self.provider)
      .finish_non_exhaustive()
  }
}

/// Where the redirect goes when the caller does not say (RFC 8252 loopback).
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1/oauth/callback";
pub const DEFAULT_CLIENT_NAME: &str = "mcp-native";

pub use crate::host::{HostAnswer, HostCall};

pub trait AuthHost: Send + Sync + 'static {
  fn call(&self, call: HostCall) -> BoxFuture<'static, HostAnswer>;
}
