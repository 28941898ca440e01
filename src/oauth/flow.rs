//! O2/O3: one server's authorization, shared by every request of its transport.
//!
//! A request sends `bearer()`'s token. When the answer is a challenge, `authorize()` either
//! sees that another request already replaced the token, refreshes it, or runs the whole
//! flow: discovery, client identity, the user agent's round trip and the token request. One
//! of these runs at a time (the state lock), so concurrent requests share one refresh or
//! one flow.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use url::Url;

use super::assertion;
use super::callback::authorization_code;
use super::challenge::Challenge;
use super::credential::{self, Client, Credential, Tokens};
use super::discovery;
use super::dpop::DpopKey;
use super::metadata::{
  ErrorResponse, RegistrationResponse, ResourceMetadata, ServerMetadata, TokenResponse,
};
use super::pkce;
use super::provider;
use super::store;
use super::{AuthHost, Grant, HostCall, IdpSettings, OAuthSettings, Step, JWT_BEARER_GRANT};
use crate::error::CoreError;
use crate::persist::now_ms;

/// O2: authorization rounds one request may run before it gives up.
pub const MAX_ROUNDS: u32 = 3;
/// How long one metadata, registration or token exchange may take.
const OAUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Metadata, registration and token answers are small; anything larger is refused.
const BODY_LIMIT: usize = 1 << 20;
/// After a refresh that failed for a passing reason, how long the old token is used again
/// before the next refresh attempt.
const REFRESH_RETRY: Duration = Duration::from_secs(5);
/// RFC 8693 §2.1.
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// SEP-990 §4: the token type of an Identity Assertion JWT Authorization Grant.
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

fn oauth(step: Step, message: impl Into<String>) -> CoreError {
  CoreError::OAuth {
    step,
    message: message.into(),
  }
}

/// What one request has spent of its authorization attempts.
#[derive(Debug, Default)]
pub struct Rounds {
  authorizations: u32,
  refreshed: bool,
  /// O5: `use_dpop_nonce` retries.
  nonces: u32,
  /// Retries because another request had replaced the token meanwhile.
  replaced: u32,
}

/// Bounds the retries of one request that are not authorization rounds.
const MAX_QUICK_RETRIES: u32 = 3;

/// The token headers read without waiting: published after every change of state.
#[derive(Default)]
struct Current {
  loaded: bool,
  token: Option<String>,
  /// Milliseconds since the epoch after which `bearer()` refreshes first.
  refresh_at: Option<u64>,
  dpop_bound: bool,
}

#[derive(Default)]
struct State {
  loaded: bool,
  credential: Option<Credential>,
}

/// What discovery found for the server.
struct Context {
  resource: String,
  metadata: ServerMetadata,
  resource_scopes: Option<Vec<String>>,
}

pub struct Authorizer {
  settings: OAuthSettings,
  server: Url,
  /// The store key: the server's canonical URI.
  key: String,
  http: reqwest::Client,
  host: Arc<dyn AuthHost>,
  state: tokio::sync::Mutex<State>,
  current: Mutex<Current>,
  /// Time spent waiting for the user agent, which the request timeouts do not count.
  waited: Mutex<(Duration, Option<Instant>)>,
  /// O1 two-step flow: the authorization the provider's user agent was sent to.
  pending: Mutex<Option<Pending>>,
  /// O1: the provider's `redirectUrl` and `clientMetadata`, read with its credential.
  provider_info: Mutex<(Option<String>, Option<serde_json::Value>)>,
  /// Counts the flows run; with the failure of the last one, so that requests that waited
  /// for a flow which failed get its error rather than each opening the user agent again.
  flows: Mutex<(u64, Option<CoreError>)>,
  /// O5: the DPoP key, and the latest nonces of the authorization and resource servers.
  dpop: Mutex<Option<Arc<DpopKey>>>,
  as_nonce: Mutex<Option<String>>,
  rs_nonce: Mutex<Option<String>>,
}

/// What a request sends for its credential.
pub struct Presented {
  /// The access token (to tell, on a 401, whether it has been replaced meanwhile).
  pub token: String,
  /// The `Authorization` value: `Bearer <token>` or `DPoP <token>`.
  pub authorization: String,
  /// The `DPoP` proof, for a DPoP-bound token.
  pub proof: Option<String>,
}

/// What an authorization code is exchanged with.
struct CodeExchange {
  code: String,
  redirect_uri: String,
  verifier: String,
  resource: String,
}

/// An authorization handed to `redirectToAuthorization`, waiting for `finishAuth`.
struct Pending {
  state: Option<String>,
  redirect_uri: String,
  resource: String,
  metadata: ServerMetadata,
  client: Client,
  scopes: Vec<String>,
}

enum Refresh {
  /// The authorization server refused the refresh token: it is gone, start over.
  Refused,
  Failed(CoreError),
}

impl Authorizer {
  pub fn new(
    settings: OAuthSettings,
    server: Url,
    http: reqwest::Client,
    host: Arc<dyn AuthHost>,
  ) -> Self {
    Authorizer {
      key: discovery::canonical_resource(&server),
      settings,
      server,
      http,
      host,
      state: tokio::sync::Mutex::default(),
      current: Mutex::default(),
      waited: Mutex::default(),
      pending: Mutex::default(),
      provider_info: Mutex::default(),
      flows: Mutex::default(),
      dpop: Mutex::default(),
      as_nonce: Mutex::default(),
      rs_nonce: Mutex::default(),
    }
  }

  /// How long the user agent has kept requests waiting so far (a wait under way included).
  pub fn user_wait(&self) -> Duration {
    let Ok(waited) = self.waited.lock() else {
      return Duration::ZERO;
    };
    waited.0 + waited.1.map_or(Duration::ZERO, |since| since.elapsed())
  }

  /// The access token to send, if there is one: the stored credential is read first, and
  /// a token about to expire is refreshed (O3).
  pub async fn bearer(&self) -> Option<String> {
    if let Some(token) = self.ready_token(now_ms()) {
      return token;
    }
    let mut state = self.state.lock().await;
    self.load(&mut state).await;
    let due = state
      .credential
      .as_ref()
      .and_then(|c| c.tokens.as_ref())
      .is_some_and(|t| t.refresh_token.is_some() && t.due_for_refresh(now_ms()));
    if due {
      match self.refresh(&mut state).await {
        Ok(()) | Err(Refresh::Refused) => self.publish(&state, None),
        Err(Refresh::Failed(_)) => {
          let retry = now_ms() + REFRESH_RETRY.as_millis() as u64;
          self.publish(&state, Some(retry));
        }
      }
    } else {
      self.publish(&state, None);
    }
    token_of(&state)
  }

  /// What a `method` request to `url` presents: the token, with a fresh DPoP proof when the
  /// token is bound to our key (O5).
  pub async fn present(&self, method: &str, url: &str) -> Option<Presented> {
    let token = self.bearer().await?;
    let bound = self.current.lock().is_ok_and(|c| c.dpop_bound);
    let key = self.dpop.lock().ok().and_then(|k| k.clone());
    match key.filter(|_| bound) {
      Some(key) => {
        let nonce = self.rs_nonce.lock().ok().and_then(|n| n.clone());
        let jti = pkce::random_token().ok()?;
        let proof = key
          .proof(
            method,
            url,
            Some(&token),
            nonce.as_deref(),
            now_ms() / 1000,
            &jti,
          )
          .ok()?;
        Some(Presented {
          authorization: format!("DPoP {token}"),
          token,
          proof: Some(proof),
        })
      }
      None => Some(Presented {
        authorization: format!("Bearer {token}"),
        token,
        proof: None,
      }),
    }
  }

  /// O5: a resource server's `DPoP-Nonce`, for the proofs that follow.
  pub fn note_resource_nonce(&self, nonce: &str) {
    if let Ok(mut stored) = self.rs_nonce.lock() {
      *stored = Some(nonce.to_string());
    }
  }

  /// O2/O3: answers a challenge (`status` 401, or 403 `insufficient_scope`) to a request
  /// that sent `used`. `Ok` means: send the request again.
  ///
  /// # Errors
  /// O4: the step that failed, or the rounds running out.
  pub async fn authorize(
    &self,
    status: u16,
    challenge: Option<&Challenge>,
    used: Option<&str>,
    rounds: &mut Rounds,
  ) -> Result<(), CoreError> {
    // O5 (RFC 9449 §9): a nonce asked for is a retry, not an authorization.
    if status == 401
      && challenge.and_then(|c| c.error.as_deref()) == Some("use_dpop_nonce")
      && self.rs_nonce.lock().is_ok_and(|n| n.is_some())
      && rounds.nonces < 2
    {
      rounds.nonces += 1;
      return Ok(());
    }
    let flows_before = self.flows.lock().map_or(0, |f| f.0);
    let mut state = self.state.lock().await;
    self.load(&mut state).await;
    // A flow ran while this request waited for the lock: its failure is this one's too.
    if let Ok(flows) = self.flows.lock() {
      if flows.0 != flows_before {
        if let Some(error) = &flows.1 {
          return Err(error.clone());
        }
      }
    }
    // Another request replaced the token this one was sent with while it waited.
    let current = token_of(&state);
    if current.is_some() && current.as_deref() != used && rounds.replaced < MAX_QUICK_RETRIES {
      rounds.replaced += 1;
      return Ok(());
    }
    if status == 401 {
      let refreshable = state
        .credential
        .as_ref()
        .and_then(|c| c.tokens.as_ref())
        .is_some_and(|t| t.refresh_token.is_some());
      if refreshable && !rounds.refreshed {
        rounds.refreshed = true;
        match self.refresh(&mut state).await {
          Ok(()) => {
            self.publish(&state, None);
            return Ok(());
          }
          Err(Refresh::Refused) => {}
          Err(Refresh::Failed(error)) => return Err(error),
        }
      }
    }
    if rounds.authorizations >= MAX_ROUNDS {
      return Err(oauth(
        Step::Authorization,
        format!(
          "authorization failed after {MAX_ROUNDS} attempts: {}",
          describe_challenge(status, challenge)
        ),
      ));
    }
    rounds.authorizations += 1;
    let result = self.run_flow(&mut state, challenge).await;
    self.publish(&state, None);
    if let Ok(mut flows) = self.flows.lock() {
      flows.0 += 1;
      flows.1 = result.as_ref().err().cloned();
    }
    result
  }

  fn ready_token(&self, now: u64) -> Option<Option<String>> {
    let current = self.current.lock().ok()?;
    if !current.loaded || current.refresh_at.is_some_and(|at| now >= at) {
      return None;
    }
    Some(current.token.clone())
  }

  fn publish(&self, state: &State, refresh_at: Option<u64>) {
    let tokens = state.credential.as_ref().and_then(|c| c.tokens.as_ref());
    let refresh_at = refresh_at.or_else(|| {
      tokens
        .filter(|t| t.refresh_token.is_some())
        .and_then(Tokens::refresh_at)
    });
    if let Ok(mut current) = self.current.lock() {
      *current = Current {
        loaded: true,
        token: tokens.map(|t| t.access_token.clone()),
        refresh_at,
        dpop_bound: tokens.is_some_and(Tokens::dpop_bound),
      };
    }
  }

  async fn load(&self, state: &mut State) {
    if state.loaded {
      return;
    }
    state.loaded = true;
    if self.settings.provider {
      let tokens = self
        .provider_call("tokens", Vec::new())
        .await
        .ok()
        .flatten();
      let information = self
        .provider_call("clientInformation", Vec::new())
        .await
        .ok()
        .flatten();
      let redirect = self
        .provider_call("redirectUrl", Vec::new())
        .await
        .ok()
        .flatten()
        .and_then(|v| v.as_str().map(str::to_string));
      let metadata = self
        .provider_call("clientMetadata", Vec::new())
        .await
        .ok()
        .flatten();
      if let Ok(mut info) = self.provider_info.lock() {
        *info = (redirect, metadata);
      }
      state.credential = provider::credential_from_sdk(tokens.as_ref(), information.as_ref());
      return;
    }
    let text = if self.settings.host_store {
      self
        .host
        .call(HostCall::StoreGet(self.key.clone()))
        .await
        .ok()
        .flatten()
    } else {
      store::memory_get(&self.memory_key())
    };
    state.credential = text.and_then(|t| serde_json::from_str::<Credential>(&t).ok());
    let stored_key = state
      .credential
      .as_ref()
      .and_then(|c| c.dpop_key.as_deref())
      .and_then(|k| DpopKey::from_base64(k).ok());
    if let (Some(key), Ok(mut slot)) = (stored_key, self.dpop.lock()) {
      *slot = Some(Arc::new(key));
    }
  }

  /// The process-wide memory store is shared by every caller: its key names the client as
  /// well, so two callers with their own clients never see each other's tokens.
  fn memory_key(&self) -> String {
    let client = self
      .settings
      .client_id
      .as_deref()
      .or(self.settings.client_metadata_url.as_deref())
      .unwrap_or("");
    format!(
      "{} {client} {:?} {}",
      self.key,
      self.settings.grant,
      self.redirect_uri()
    )
  }

  /// O5: the DPoP key (made on first use), when `oauth.dpop` asks for DPoP.
  fn dpop_key(&self) -> Option<Arc<DpopKey>> {
    if !self.settings.dpop {
      return None;
    }
    let mut slot = self.dpop.lock().ok()?;
    if slot.is_none() {
      *slot = DpopKey::generate().ok().map(Arc::new);
    }
    slot.clone()
  }

  fn dpop_key_text(&self) -> Option<String> {
    self.dpop_key().map(|k| k.pkcs8_base64())
  }

  async fn save(&self, state: &mut State, credential: Option<Credential>) {
    state.credential = credential;
    // Published before the store is awaited: a request given up meanwhile must not leave
    // the token headers read behind the state.
    self.publish(state, None);
    if self.settings.provider {
      return self.save_to_provider(state).await;
    }
    let text = state
      .credential
      .as_ref()
      .and_then(|c| serde_json::to_string(c).ok());
    // A store that cannot keep the credential costs a new flow next time, not this request.
    match (self.settings.host_store, text) {
      (true, Some(text)) => {
        let _ = self
          .host
          .call(HostCall::StoreSet(self.key.clone(), text))
          .await;
      }
      (true, None) => {
        let _ = self
          .host
          .call(HostCall::StoreDelete(self.key.clone()))
          .await;
      }
      (false, Some(text)) => store::memory_set(&self.memory_key(), text),
      (false, None) => store::memory_delete(&self.memory_key()),
    }
  }

  /// O1: the provider keeps the tokens and the registered client.
  async fn save_to_provider(&self, state: &State) {
    let Some(credential) = &state.credential else {
      let _ = self
        .provider_call("invalidateCredentials", vec!["\"all\"".into()])
        .await;
      return;
    };
    if credential.client.registered {
      let information = provider::sdk_client_information(&credential.client).to_string();
      let _ = self
        .provider_call("saveClientInformation", vec![information])
        .await;
    }
    match &credential.tokens {
      Some(tokens) => {
        let tokens = provider::sdk_tokens(tokens, now_ms()).to_string();
        let _ = self.provider_call("saveTokens", vec![tokens]).await;
      }
      None => {
        let _ = self
          .provider_call("invalidateCredentials", vec!["\"tokens\"".into()])
          .await;
      }
    }
  }

  /// `authProvider[method](...args)`: what it settled with, as JSON.
  async fn provider_call(
    &self,
    method: &'static str,
    args: Vec<String>,
  ) -> Result<Option<serde_json::Value>, String> {
    let answer = self.host.call(HostCall::Provider { method, args }).await?;
    Ok(answer.and_then(|text| serde_json::from_str(&text).ok()))
  }

  /// O1 two-step flow: completes the authorization `redirectToAuthorization` started, with
  /// the callback URL the user agent reached (or just its code).
  ///
  /// # Errors
  /// O4, as the one-shot flow's.
  pub async fn finish(&self, callback: &str) -> Result<(), CoreError> {
    let failed = |why: String| oauth(Step::Authorization, format!("authorization failed: {why}"));
    if !self.settings.provider {
      return Err(failed(
        "finishAuth() is for config.authProvider; config.oauth completes its flow itself"
          .to_string(),
      ));
    }
    let mut state = self.state.lock().await;
    self.load(&mut state).await;
    let pending = self.pending.lock().ok().and_then(|mut p| p.take());
    let pending = match pending {
      Some(pending) => pending,
      // Another transport (or process) sent the user agent: start from what the provider has.
      None => {
        let context = self.discover(None).await?;
        let client = state
          .credential
          .as_ref()
          .map(|c| c.client.clone())
          .ok_or_else(|| failed("the provider has no client information".to_string()))?;
        Pending {
          state: None,
          redirect_uri: self.redirect_uri(),
          resource: context.resource,
          metadata: context.metadata,
          client,
          scopes: Vec::new(),
        }
      }
    };
    let metadata = &pending.metadata;
    let code = if Url::parse(callback).is_ok() {
      let advertised = metadata.authorization_response_iss_parameter_supported == Some(true);
      authorization_code(
        callback,
        pending.state.as_deref(),
        &metadata.issuer,
        advertised,
      )
      .map_err(|e| failed(e.to_string()))?
    } else {
      callback.to_string()
    };
    let verifier = self
      .provider_call("codeVerifier", Vec::new())
      .await
      .map_err(|why| failed(format!("codeVerifier() failed: {why}")))?
      .and_then(|v| v.as_str().map(str::to_string))
      .ok_or_else(|| failed("codeVerifier() gave no verifier".to_string()))?;
    let exchange = CodeExchange {
      code,
      redirect_uri: pending.redirect_uri.clone(),
      verifier,
      resource: pending.resource.clone(),
    };
    let tokens = self
      .exchange_code(metadata, &pending.client, exchange)
      .await?;
    let credential = Credential {
      issuer: metadata.issuer.clone(),
      resource: pending.resource,
      token_endpoint: metadata.token_endpoint.clone(),
      client: pending.client,
      tokens: Some(tokens),
      scopes: pending.scopes,
      dpop_key: self.dpop_key_text(),
    };
    self.save(&mut state, Some(credential)).await;
    self.publish(&state, None);
    Ok(())
  }

  /// O3: the refresh grant. A refusal clears the credential's tokens (the client
  /// registration stays).
  async fn refresh(&self, state: &mut State) -> Result<(), Refresh> {
    let Some(mut credential) = state.credential.clone() else {
      return Err(Refresh::Refused);
    };
    // A provider's credential says nothing of where it came from: discovery tells.
    if credential.token_endpoint.is_empty() {
      let context = self.discover(None).await.map_err(Refresh::Failed)?;
      credential.issuer = context.metadata.issuer;
      credential.resource = context.resource;
      credential.token_endpoint = context.metadata.token_endpoint;
    }
    let Some(refresh_token) = credential
      .tokens
      .as_ref()
      .and_then(|t| t.refresh_token.clone())
    else {
      return Err(Refresh::Refused);
    };
    let form = vec![
      ("grant_type", "refresh_token".to_string()),
      ("refresh_token", refresh_token.clone()),
      ("resource", credential.resource.clone()),
    ];
    match self
      .token_request(
        &credential.token_endpoint,
        &credential.issuer,
        &credential.client,
        form,
      )
      .await
    {
      Ok(mut tokens) => {
        // RFC 6749 §6: a new refresh token is optional; the old one stays valid then.
        tokens.refresh_token.get_or_insert(refresh_token);
        credential.tokens = Some(tokens);
        self.save(state, Some(credential)).await;
        Ok(())
      }
      Err(TokenFailure::Refused(_)) => {
        // Another process sharing the store may have refreshed (and rotated) it meanwhile.
        state.loaded = false;
        self.load(state).await;
        let stored = state
          .credential
          .as_ref()
          .and_then(|c| c.tokens.as_ref())
          .and_then(|t| t.refresh_token.clone());
        if stored.is_some_and(|stored| stored != refresh_token) {
          self.publish(state, None);
          return Ok(());
        }
        credential.tokens = None;
        self.save(state, Some(credential)).await;
        Err(Refresh::Refused)
      }
      Err(TokenFailure::Failed(why)) => Err(Refresh::Failed(oauth(
        Step::Refresh,
        format!("token refresh failed: {why}"),
      ))),
    }
  }

  /// O2: discovery, client identity, then the grant; the credential is stored.
  async fn run_flow(
    &self,
    state: &mut State,
    challenge: Option<&Challenge>,
  ) -> Result<(), CoreError> {
    let context = self.discover(challenge).await?;
    let issuer = context.metadata.issuer.clone();
    // O3: never reused with another authorization server.
    // Cloned, not taken: a flow that fails or is given up leaves what there was.
    let previous = state.credential.clone().filter(|c| {
      // A provider's credential has no issuer or resource yet: it is the provider's call.
      (c.issuer.is_empty() || c.issuer == issuer)
        && (c.resource.is_empty() || c.resource == context.resource)
    });
    self.check_secret_owner(state.credential.as_ref(), &issuer)?;
    let client = self.client(previous.as_ref(), &context).await?;
    if self.settings.provider && client.registered {
      // Kept at once: a two-step flow stops at the user agent, before any token.
      let information = provider::sdk_client_information(&client).to_string();
      let _ = self
        .provider_call("saveClientInformation", vec![information])
        .await;
    }
    let previous_scopes = previous.map(|c| c.scopes).unwrap_or_default();
    let scopes = credential::select_scopes(
      &previous_scopes,
      challenge.and_then(|c| c.scope.as_deref()),
      self.settings.scope.as_deref(),
      context.resource_scopes.as_deref(),
      context.metadata.advertises_scope("offline_access"),
    );
    let tokens = match &self.settings.grant {
      Grant::AuthorizationCode => self.authorization_code(&context, &client, &scopes).await?,
      Grant::ClientCredentials => {
        let mut form = vec![
          ("grant_type", "client_credentials".to_string()),
          ("resource", context.resource.clone()),
        ];
        if !scopes.is_empty() {
          form.push(("scope", scopes.join(" ")));
        }
        self
          .grant(
            &context.metadata.token_endpoint,
            &context.metadata.issuer,
            &client,
            form,
          )
          .await?
      }
      Grant::JwtBearer(source) => {
        // SEP-1933: read afresh for every token request (projected tokens rotate).
        let token = source
          .read("the workload token", self.host.as_ref(), now_ms() / 1000)
          .await
          .map_err(|why| oauth(Step::Token, why))?;
        self.jwt_bearer(&context, &client, &scopes, token).await?
      }
      Grant::EnterpriseManaged(idp) => {
        let id_jag = self
          .identity_assertion_grant(idp.as_ref(), &context, &scopes)
          .await?;
        self.jwt_bearer(&context, &client, &scopes, id_jag).await?
      }
    };
    let credential = Credential {
      issuer,
      resource: context.resource,
      token_endpoint: context.metadata.token_endpoint,
      client,
      tokens: Some(tokens),
      scopes,
      dpop_key: self.dpop_key_text(),
    };
    self.save(state, Some(credential)).await;
    Ok(())
  }

  /// RFC 9728 then RFC 8414 / OpenID discovery, in the spec's order.
  async fn discover(&self, challenge: Option<&Challenge>) -> Result<Context, CoreError> {
    let hint = challenge.and_then(|c| c.resource_metadata.as_deref());
    let mut found: Option<ResourceMetadata> = None;
    for url in discovery::resource_metadata_urls(&self.server, hint) {
      if let Ok(Some(metadata)) = self.get_json::<ResourceMetadata>(&url).await {
        found = Some(metadata);
        break;
      }
    }
    let (resource, issuer, resource_scopes, legacy) = match found {
      Some(metadata) => {
        let resource = match metadata.resource {
          Some(resource) if !discovery::resource_covers(&resource, &self.server) => {
            return Err(oauth(
              Step::Discovery,
              format!(
                "protected resource metadata discovery failed: the metadata is for {resource}, not for {}",
                self.key
              ),
            ));
          }
          Some(resource) => resource,
          // RFC 9728 §3.3: the client checks `resource` against what it asked about.
          None => {
            return Err(oauth(
              Step::Discovery,
              "protected resource metadata discovery failed: the metadata names no resource",
            ))
          }
        };
        let issuer = metadata
          .authorization_servers
          .into_iter()
          .next()
          .ok_or_else(|| {
            oauth(
              Step::Discovery,
              "protected resource metadata discovery failed: it names no authorization server",
            )
          })?;
        (resource, issuer, metadata.scopes_supported, false)
      }
      // 2025-03-26 servers: no resource metadata, the server's origin authorizes.
      None => (
        self.key.clone(),
        discovery::origin_issuer(&self.server),
        None,
        true,
      ),
    };
    let metadata = self.server_metadata(&issuer, legacy).await?;
    let endpoints = [
      Some(metadata.token_endpoint.as_str()),
      metadata.authorization_endpoint.as_deref(),
      metadata.registration_endpoint.as_deref(),
    ];
    if let Some(insecure) = endpoints
      .into_iter()
      .flatten()
      .find(|e| !discovery::secure_endpoint(e))
    {
      return Err(oauth(
        Step::Metadata,
        format!("authorization server metadata discovery failed: {insecure} is not an https URL"),
      ));
    }
    if self.settings.grant == Grant::AuthorizationCode && !metadata.supports_s256() {
      return Err(oauth(
        Step::Metadata,
        format!(
          "authorization server metadata discovery failed: {issuer} does not offer PKCE with S256"
        ),
      ));
    }
    // RFC 8414 §2: a server that lists its grants and leaves this one out refuses it.
    let offers_jwt_bearer = metadata
      .grant_types_supported
      .as_ref()
      .is_none_or(|grants| grants.iter().any(|g| g == JWT_BEARER_GRANT));
    if self.settings.grant.is_jwt_bearer() && !offers_jwt_bearer {
      return Err(oauth(
        Step::Metadata,
        format!(
          "authorization server metadata discovery failed: {issuer} does not offer the JWT-bearer grant ({JWT_BEARER_GRANT})"
        ),
      ));
    }
    Ok(Context {
      resource,
      metadata,
      resource_scopes,
    })
  }

  async fn server_metadata(&self, issuer: &str, legacy: bool) -> Result<ServerMetadata, CoreError> {
    let failed = |why: String| {
      oauth(
        Step::Metadata,
        format!("authorization server metadata discovery failed: {why}"),
      )
    };
    let issuer_url = Url::parse(issuer).map_err(|_| failed(format!("{issuer:?} is not a URL")))?;
    for url in discovery::authorization_server_metadata_urls(&issuer_url) {
      match self.get_json::<ServerMetadata>(&url).await {
        Ok(Some(metadata)) => {
          // RFC 8414 §3.3: compared as strings, no normalisation.
          if metadata.issuer != issuer {
            return Err(failed(format!(
              "the metadata at {url} names issuer {}, not {issuer}",
              metadata.issuer
            )));
          }
          return Ok(metadata);
        }
        Ok(None) | Err(_) => continue,
      }
    }
    if legacy {
      return Ok(ServerMetadata::legacy_defaults(issuer));
    }
    Err(failed(format!("no metadata found for {issuer}")))
  }

  /// A pre-registered `clientSecret` is presented only to the authorization server it
  /// belongs to (`oauth.issuer`, else the first one it was used with).
  fn check_secret_owner(&self, stored: Option<&Credential>, issuer: &str) -> Result<(), CoreError> {
    let (Some(client_id), Some(_)) = (&self.settings.client_id, &self.settings.client_secret)
    else {
      return Ok(());
    };
    let configured = self.settings.issuer.as_deref();
    credential::secret_owner_mismatch(configured, stored, client_id, issuer).map_err(|owner| {
      oauth(
        Step::Discovery,
        format!(
          "the server names authorization server {issuer}, but the client secret of {client_id} is for {owner}; it is not presented elsewhere"
        ),
      )
    })
  }

  /// O2 client identity: pre-registered, else a Client ID Metadata Document where the server
  /// accepts one, else the registration made before with this server, else a new one.
  async fn client(
    &self,
    previous: Option<&Credential>,
    context: &Context,
  ) -> Result<Client, CoreError> {
    let supported = context
      .metadata
      .token_endpoint_auth_methods_supported
      .as_deref();
    if matches!(self.settings.grant, Grant::JwtBearer(_)) && self.settings.client_id.is_none() {
      // SEP-1933: the workload's JWT is its identity: no client id, no registration.
      return Ok(Client {
        client_id: String::new(),
        client_secret: None,
        auth_method: "none".to_string(),
        registered: false,
        redirect_uri: None,
      });
    }
    if let Some(client_id) = &self.settings.client_id {
      let secret = self.settings.client_secret.clone();
      // O5: a client key means private_key_jwt.
      let auth_method = if self.settings.private_key.is_some() {
        "private_key_jwt".to_string()
      } else {
        credential::auth_method(None, secret.is_some(), supported)
      };
      return Ok(Client {
        client_id: client_id.clone(),
        auth_method,
        client_secret: secret,
        registered: false,
        redirect_uri: None,
      });
    }
    if let Some(url) = &self.settings.client_metadata_url {
      if context.metadata.client_id_metadata_document_supported == Some(true) {
        return Ok(Client {
          client_id: url.clone(),
          client_secret: None,
          auth_method: "none".to_string(),
          registered: false,
          redirect_uri: None,
        });
      }
    }
    // Registered for another redirect URI, the client would be refused at authorization.
    let redirect_uri = self.redirect_uri();
    let same_redirect = |c: &&Client| c.redirect_uri.as_ref().is_none_or(|r| *r == redirect_uri);
    if let Some(client) = previous
      .map(|c| &c.client)
      .filter(|c| c.registered)
      .filter(same_redirect)
    {
      return Ok(client.clone());
    }
    self.register(context).await
  }

  /// RFC 7591 dynamic registration, with SEP-837's `application_type`.
  async fn register(&self, context: &Context) -> Result<Client, CoreError> {
    let failed = |why: String| {
      oauth(
        Step::Registration,
        format!("client registration failed: {why}"),
      )
    };
    let Some(endpoint) = &context.metadata.registration_endpoint else {
      return Err(failed(format!(
        "{} offers no dynamic client registration; configure a clientId",
        context.metadata.issuer
      )));
    };
    let redirect_uri = self.redirect_uri();
    let supported = context
      .metadata
      .token_endpoint_auth_methods_supported
      .as_deref();
    let method = credential::registration_auth_method(supported);
    let grant_types: &[&str] = match self.settings.grant {
      Grant::AuthorizationCode => &["authorization_code", "refresh_token"],
      Grant::ClientCredentials => &["client_credentials"],
      Grant::JwtBearer(_) | Grant::EnterpriseManaged(_) => &[JWT_BEARER_GRANT],
    };
    let ours = serde_json::json!({
      "client_name": self.settings.client_name.as_deref().unwrap_or(super::DEFAULT_CLIENT_NAME),
      "redirect_uris": [redirect_uri],
      "grant_types": grant_types,
      "response_types": ["code"],
      "token_endpoint_auth_method": method,
      "application_type": application_type(&redirect_uri),
    });
    let theirs = self.provider_info.lock().ok().and_then(|i| i.1.clone());
    let body = provider::registration_body(theirs.as_ref(), ours);
    let response = self
      .http
      .post(endpoint)
      .header(ACCEPT, "application/json")
      .header(CONTENT_TYPE, "application/json")
      .body(body.to_string())
      .send()
      .await
      .map_err(|e| failed(request_failure(&e)))?;
    let status = response.status().as_u16();
    let bytes = read_limited(response).await.map_err(failed)?;
    if !(200..300).contains(&status) {
      let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
      return Err(failed(error.describe(status)));
    }
    let registered: RegistrationResponse = serde_json::from_slice(&bytes)
      .map_err(|_| failed("the answer is not a client information response".to_string()))?;
    Ok(Client {
      auth_method: credential::auth_method(
        registered.token_endpoint_auth_method.as_deref(),
        registered.client_secret.is_some(),
        supported,
      ),
      client_id: registered.client_id,
      client_secret: registered.client_secret,
      registered: true,
      redirect_uri: Some(redirect_uri),
    })
  }

  /// O2: PKCE, `state`, `resource` and the scopes, through the user agent and back.
  async fn authorization_code(
    &self,
    context: &Context,
    client: &Client,
    scopes: &[String],
  ) -> Result<Tokens, CoreError> {
    let failed = |why: String| oauth(Step::Authorization, format!("authorization failed: {why}"));
    let metadata = &context.metadata;
    let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
      failed(format!(
        "{} names no authorization endpoint",
        metadata.issuer
      ))
    })?;
    let mut url = Url::parse(endpoint).map_err(|_| {
      failed(format!(
        "the authorization endpoint {endpoint:?} is not a URL"
      ))
    })?;
    let random = |_| failed("no randomness for PKCE".to_string());
    let verifier = pkce::random_token().map_err(random)?;
    let mut state = pkce::random_token().map_err(random)?;
    if self.settings.provider {
      // The SDK's optional `state()`: the app may check the callback against it.
      if let Ok(Some(serde_json::Value::String(theirs))) =
        self.provider_call("state", Vec::new()).await
      {
        state = theirs;
      }
    }
    let redirect_uri = self.redirect_uri();
    {
      let mut query = url.query_pairs_mut();
      query
        .append_pair("response_type", "code")
        .append_pair("client_id", &client.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("code_challenge", &pkce::s256_challenge(&verifier))
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("resource", &context.resource);
      if !scopes.is_empty() {
        query.append_pair("scope", &scopes.join(" "));
      }
    }
    if self.settings.provider {
      // O1 two-step flow: the provider sends the user agent; `finishAuth` comes back.
      self
        .provider_call(
          "saveCodeVerifier",
          vec![serde_json::json!(verifier).to_string()],
        )
        .await
        .map_err(|why| failed(format!("saveCodeVerifier() failed: {why}")))?;
      if let Ok(mut pending) = self.pending.lock() {
        *pending = Some(Pending {
          state: Some(state),
          redirect_uri,
          resource: context.resource.clone(),
          metadata: metadata.clone(),
          client: client.clone(),
          scopes: scopes.to_vec(),
        });
      }
      self
        .provider_call(
          "redirectToAuthorization",
          vec![serde_json::json!(url.as_str()).to_string()],
        )
        .await
        .map_err(|why| failed(format!("redirectToAuthorization() failed: {why}")))?;
      return Err(CoreError::Unauthorized);
    }
    let callback = self.redirect(url.to_string()).await.map_err(failed)?;
    let issuer_advertised = metadata.authorization_response_iss_parameter_supported == Some(true);
    let code = authorization_code(&callback, Some(&state), &metadata.issuer, issuer_advertised)
      .map_err(|e| failed(e.to_string()))?;
    let exchange = CodeExchange {
      code,
      redirect_uri,
      verifier,
      resource: context.resource.clone(),
    };
    self.exchange_code(metadata, client, exchange).await
  }

  /// RFC 6749 §4.1.3 with PKCE and `resource`: the code for tokens (both flows' last step).
  async fn exchange_code(
    &self,
    metadata: &ServerMetadata,
    client: &Client,
    exchange: CodeExchange,
  ) -> Result<Tokens, CoreError> {
    let form = vec![
      ("grant_type", "authorization_code".to_string()),
      ("code", exchange.code),
      ("redirect_uri", exchange.redirect_uri),
      ("code_verifier", exchange.verifier),
      ("resource", exchange.resource),
    ];
    self
      .grant(&metadata.token_endpoint, &metadata.issuer, client, form)
      .await
  }

  /// The host's `redirect(url)`, timed apart from the requests waiting on it.
  async fn redirect(&self, url: String) -> Result<String, String> {
    let waiting = UserWait::start(&self.waited);
    let answer = self.host.call(HostCall::Redirect(url)).await;
    drop(waiting);
    let text = answer.map_err(|why| format!("redirect() failed: {why}"))?;
    text
      .and_then(|t| serde_json::from_str::<String>(&t).ok())
      .ok_or_else(|| "redirect() did not resolve with the callback URL".to_string())
  }

  fn redirect_uri(&self) -> String {
    let provider = self.provider_info.lock().ok().and_then(|i| i.0.clone());
    provider
      .or_else(|| self.settings.redirect_uri.clone())
      .unwrap_or_else(|| super::DEFAULT_REDIRECT_URI.to_string())
  }

  /// A token request of the flow (not a refresh): its failure is O4's `OAUTH_TOKEN`.
  async fn grant(
    &self,
    endpoint: &str,
    issuer: &str,
    client: &Client,
    form: Vec<(&'static str, String)>,
  ) -> Result<Tokens, CoreError> {
    self
      .token_request(endpoint, issuer, client, form)
      .await
      .map_err(|f| {
        oauth(
          Step::Token,
          format!("token request failed: {}", f.describe()),
        )
      })
  }

  /// RFC 6749 §3.2 with the client's authentication method, and a DPoP proof when tokens
  /// are bound to our key.
  async fn token_request(
    &self,
    endpoint: &str,
    issuer: &str,
    client: &Client,
    form: Vec<(&'static str, String)>,
  ) -> Result<Tokens, TokenFailure> {
    let answer = self
      .post_token(endpoint, issuer, client, form, self.dpop_key())
      .await?;
    let now = now_ms();
    Ok(Tokens {
      access_token: answer.access_token,
      refresh_token: answer.refresh_token,
      expires_at: answer
        .expires_in
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| now.saturating_add((s * 1000.0) as u64)),
      issued_at: Some(now),
      scope: answer.scope,
      token_type: answer.token_type,
    })
  }

  /// One token endpoint exchange: the client authenticated, `key`'s proof attached (with
  /// the one nonce retry of RFC 9449 §8).
  async fn post_token(
    &self,
    endpoint: &str,
    issuer: &str,
    client: &Client,
    mut form: Vec<(&'static str, String)>,
    key: Option<Arc<DpopKey>>,
  ) -> Result<TokenResponse, TokenFailure> {
    let mut request = self.http.post(endpoint).header(ACCEPT, "application/json");
    match (client.auth_method.as_str(), &client.client_secret) {
      ("private_key_jwt", _) => {
        let key = self.settings.private_key.as_deref().unwrap_or_default();
        let algorithm = self
          .settings
          .signing_algorithm
          .as_deref()
          .unwrap_or("ES256");
        let jti = pkce::random_token().map_err(|e| TokenFailure::Failed(e.to_string()))?;
        let now = now_ms() / 1000;
        let jwt = assertion::client_assertion(key, algorithm, &client.client_id, issuer, now, &jti)
          .map_err(|e| TokenFailure::Failed(e.to_string()))?;
        form.push(("client_id", client.client_id.clone()));
        form.push((
          "client_assertion_type",
          assertion::ASSERTION_TYPE.to_string(),
        ));
        form.push(("client_assertion", jwt));
      }
      ("client_secret_basic", Some(secret)) => {
        // RFC 6749 §2.3.1: both parts form-encoded before base64.
        let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
        request = request.header(AUTHORIZATION, format!("Basic {}", STANDARD.encode(pair)));
      }
      ("client_secret_post", Some(secret)) => {
        form.push(("client_id", client.client_id.clone()));
        form.push(("client_secret", secret.clone()));
      }
      // SEP-1933: a workload without a client id sends none.
      _ if client.client_id.is_empty() => {}
      _ => form.push(("client_id", client.client_id.clone())),
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
      .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
      .finish();
    let request = request
      .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
      .body(body);
    // O5 (RFC 9449 §8): at most one retry with the nonce the server asks for.
    let mut attempts = 0;
    let (status, bytes) = loop {
      attempts += 1;
      let mut attempt = request
        .try_clone()
        .ok_or_else(|| TokenFailure::Failed("the token request cannot be repeated".to_string()))?;
      if let Some(key) = &key {
        let nonce = self.as_nonce.lock().ok().and_then(|n| n.clone());
        let jti = pkce::random_token().map_err(|e| TokenFailure::Failed(e.to_string()))?;
        let proof = key
          .proof(
            "POST",
            endpoint,
            None,
            nonce.as_deref(),
            now_ms() / 1000,
            &jti,
          )
          .map_err(TokenFailure::Failed)?;
        attempt = attempt.header("DPoP", proof);
      }
      let response = attempt
        .send()
        .await
        .map_err(|e| TokenFailure::Failed(request_failure(&e)))?;
      let status = response.status().as_u16();
      let nonce = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
      let bytes = read_limited(response).await.map_err(TokenFailure::Failed)?;
      if let (Some(nonce), Some(_)) = (nonce, &key) {
        if let Ok(mut stored) = self.as_nonce.lock() {
          *stored = Some(nonce);
        }
        let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
        if status == 400 && error.error.as_deref() == Some("use_dpop_nonce") && attempts < 2 {
          continue;
        }
      }
      break (status, bytes);
    };
    if !(200..300).contains(&status) {
      let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
      // A 4xx is the server's verdict on the grant (RFC 6749 §5.2 uses 400 and 401; a
      // token endpoint that is gone answers 404); a 5xx may pass.
      return Err(if (400..500).contains(&status) {
        TokenFailure::Refused(error.describe(status))
      } else {
        TokenFailure::Failed(error.describe(status))
      });
    }
    serde_json::from_slice(&bytes)
      .map_err(|_| TokenFailure::Failed("the answer is not a token response".to_string()))
  }

  /// RFC 7523 §2.1: an assertion for tokens at the MCP server's authorization server.
  async fn jwt_bearer(
    &self,
    context: &Context,
    client: &Client,
    scopes: &[String],
    assertion: String,
  ) -> Result<Tokens, CoreError> {
    let mut form = vec![
      ("grant_type", JWT_BEARER_GRANT.to_string()),
      ("assertion", assertion),
      ("resource", context.resource.clone()),
    ];
    if !scopes.is_empty() {
      form.push(("scope", scopes.join(" ")));
    }
    let metadata = &context.metadata;
    self
      .grant(&metadata.token_endpoint, &metadata.issuer, client, form)
      .await
  }

  /// SEP-990 §4: the user's identity assertion for an ID-JAG, by token exchange (RFC 8693)
  /// at the enterprise IdP; audience the MCP server's authorization server.
  async fn identity_assertion_grant(
    &self,
    idp: &IdpSettings,
    context: &Context,
    scopes: &[String],
  ) -> Result<String, CoreError> {
    let failed = |why: String| {
      oauth(
        Step::Token,
        format!("token exchange at the identity provider failed: {why}"),
      )
    };
    let (endpoint, issuer, supported) = self.idp_token_endpoint(idp).await?;
    let subject = idp
      .assertion
      .read(
        "the identity assertion",
        self.host.as_ref(),
        now_ms() / 1000,
      )
      .await
      .map_err(|why| oauth(Step::Token, why))?;
    let mut form = vec![
      ("grant_type", TOKEN_EXCHANGE_GRANT.to_string()),
      ("requested_token_type", ID_JAG_TOKEN_TYPE.to_string()),
      ("audience", context.metadata.issuer.clone()),
      ("resource", context.resource.clone()),
      ("subject_token", subject),
      ("subject_token_type", idp.assertion_type.urn().to_string()),
    ];
    if !scopes.is_empty() {
      form.push(("scope", scopes.join(" ")));
    }
    let client = Client {
      client_id: idp.client_id.clone(),
      auth_method: credential::auth_method(None, idp.client_secret.is_some(), supported.as_deref()),
      client_secret: idp.client_secret.clone(),
      registered: false,
      redirect_uri: None,
    };
    let answer = self
      .post_token(&endpoint, &issuer, &client, form, None)
      .await
      .map_err(|f| failed(f.describe()))?;
    match answer.issued_token_type.as_deref() {
      Some(ID_JAG_TOKEN_TYPE) => Ok(answer.access_token),
      Some(other) => Err(failed(format!("it issued a {other}, not an ID-JAG"))),
      None => Err(failed("the answer names no issued_token_type".to_string())),
    }
  }

  /// The IdP's token endpoint (with its issuer and client authentication methods): as
  /// configured, else from its RFC 8414 / OpenID metadata.
  async fn idp_token_endpoint(
    &self,
    idp: &IdpSettings,
  ) -> Result<(String, String, Option<Vec<String>>), CoreError> {
    let failed = |why: String| {
      oauth(
        Step::Metadata,
        format!("identity provider metadata discovery failed: {why}"),
      )
    };
    let (endpoint, issuer, supported) = match (&idp.token_endpoint, &idp.issuer) {
      (Some(endpoint), issuer) => (
        endpoint.clone(),
        issuer.clone().unwrap_or_else(|| endpoint.clone()),
        None,
      ),
      (None, Some(issuer)) => {
        let url = Url::parse(issuer).map_err(|_| failed(format!("{issuer:?} is not a URL")))?;
        let mut found = None;
        for url in discovery::authorization_server_metadata_urls(&url) {
          if let Ok(Some(metadata)) = self.get_json::<ServerMetadata>(&url).await {
            found = Some((url, metadata));
            break;
          }
        }
        let Some((url, metadata)) = found else {
          return Err(failed(format!("no metadata found for {issuer}")));
        };
        if metadata.issuer != *issuer {
          return Err(failed(format!(
            "the metadata at {url} names issuer {}, not {issuer}",
            metadata.issuer
          )));
        }
        (
          metadata.token_endpoint,
          issuer.clone(),
          metadata.token_endpoint_auth_methods_supported,
        )
      }
      (None, None) => {
        return Err(failed(
          "oauth.idp names no issuer or tokenEndpoint".to_string(),
        ))
      }
    };
    if !discovery::secure_endpoint(&endpoint) {
      return Err(failed(format!("{endpoint} is not an https URL")));
    }
    Ok((endpoint, issuer, supported))
  }

  /// A metadata document: `Ok(None)` when the server has none there.
  async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<Option<T>, String> {
    let response = self
      .http
      .get(url.clone())
      .header(ACCEPT, "application/json")
      .send()
      .await
      .map_err(|e| request_failure(&e))?;
    if !response.status().is_success() {
      return Ok(None);
    }
    let bytes = read_limited(response).await?;
    Ok(serde_json::from_slice(&bytes).ok())
  }
}

/// The HTTP client of the flow: its own timeout, and redirects followed only within the
/// origin asked (a token request's body must never be re-sent elsewhere).
///
/// It trusts what the server's transport trusts (`trust`: its `ca`, H10), so discovery at
/// a server with a private CA works as the transport does.
///
/// # Errors
/// When the client cannot be built (a `ca` without a certificate, TLS roots, a bad proxy
/// variable).
pub fn http_client(trust: &crate::http_client::Trust) -> Result<reqwest::Client, String> {
  const MAX_REDIRECTS: usize = 5;
  let policy = reqwest::redirect::Policy::custom(|attempt| {
    let same_origin = attempt
      .previous()
      .first()
      .is_some_and(|first| crate::protocol::destination::carries_credentials(first, attempt.url()));
    if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
      attempt.follow()
    } else {
      attempt.stop()
    }
  });
  crate::http_client::builder_trusting(trust)?
    .redirect(policy)
    .timeout(OAUTH_HTTP_TIMEOUT)
    .build()
    .map_err(|e| e.to_string())
}

/// Counts the time until dropped (the answer, or the request given up) as time the user
/// agent took.
struct UserWait<'a>(&'a Mutex<(Duration, Option<Instant>)>);

impl<'a> UserWait<'a> {
  fn start(waited: &'a Mutex<(Duration, Option<Instant>)>) -> Self {
    if let Ok(mut waited) = waited.lock() {
      waited.1 = Some(Instant::now());
    }
    UserWait(waited)
  }
}

impl Drop for UserWait<'_> {
  fn drop(&mut self) {
    if let Ok(mut waited) = self.0.lock() {
      if let Some(since) = waited.1.take() {
        waited.0 += since.elapsed();
      }
    }
  }
}

enum TokenFailure {
  Refused(String),
  Failed(String),
}

impl TokenFailure {
  fn describe(self) -> String {
    match self {
      TokenFailure::Refused(why) | TokenFailure::Failed(why) => why,
    }
  }
}

fn token_of(state: &State) -> Option<String> {
  state
    .credential
    .as_ref()
    .and_then(|c| c.tokens.as_ref())
    .map(|t| t.access_token.clone())
}

/// SEP-837: loopback and custom-scheme redirects are native apps (RFC 8252).
fn application_type(redirect_uri: &str) -> &'static str {
  match Url::parse(redirect_uri) {
    Ok(url) if url.scheme() == "https" || url.scheme() == "http" => match url.host_str() {
      Some("localhost" | "127.0.0.1" | "[::1]") => "native",
      _ => "web",
    },
    _ => "native",
  }
}

fn form_encode(text: &str) -> String {
  url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Why an HTTP exchange of the flow got no answer; no URL query (it may hold a code).
fn request_failure(error: &reqwest::Error) -> String {
  let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
  let mut root = error.to_string();
  while let Some(current) = source {
    root = current.to_string();
    source = current.source();
  }
  format!(
    "fetch failed: {}",
    root.split(" (os error").next().unwrap_or_default()
  )
}

async fn read_limited(response: reqwest::Response) -> Result<Vec<u8>, String> {
  use futures::StreamExt;
  let mut body = Vec::new();
  let mut chunks = response.bytes_stream();
  while let Some(chunk) = chunks.next().await {
    let chunk = chunk.map_err(|e| request_failure(&e))?;
    if body.len() + chunk.len() > BODY_LIMIT {
      return Err(format!("the answer is larger than {BODY_LIMIT} bytes"));
    }
    body.extend_from_slice(&chunk);
  }
  Ok(body)
}

fn describe_challenge(status: u16, challenge: Option<&Challenge>) -> String {
  let Some(challenge) = challenge else {
    return format!("HTTP {status}");
  };
  match (&challenge.error, &challenge.error_description) {
    (Some(error), Some(description)) => format!("HTTP {status} {error}: {description}"),
    (Some(error), None) => format!("HTTP {status} {error}"),
    _ => format!("HTTP {status}"),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn sep837_application_type() {
    assert_eq!(application_type("http://127.0.0.1:5555/callback"), "native");
    assert_eq!(application_type("http://localhost/cb"), "native");
    assert_eq!(application_type("com.example.app:/cb"), "native");
    assert_eq!(application_type("https://app.example.com/cb"), "web");
  }

  #[test]
  fn the_last_error_names_the_servers_words() {
    let challenge = Challenge {
      error: Some("insufficient_scope".into()),
      error_description: Some("Scope upgrade will never succeed".into()),
      ..Challenge::default()
    };
    assert_eq!(
      describe_challenge(403, Some(&challenge)),
      "HTTP 403 insufficient_scope: Scope upgrade will never succeed"
    );
    assert_eq!(describe_challenge(401, None), "HTTP 401");
  }

  #[test]
  fn basic_credentials_are_form_encoded_first() {
    assert_eq!(form_encode("a b:c"), "a+b%3Ac");
  }
}
