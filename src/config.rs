//! §1: what a server config object means to the transports: the stdio and HTTP settings
//! read from the caller's object, with the defaults and the TypeError messages of E2.
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::host::Values;
use crate::oauth::{AssertionType, Grant, IdpSettings, OAuthSettings, TokenSource};
use crate::transport::http::HttpConfig;
use crate::transport::legacy_sse::LegacySseConfig;
use crate::transport::stdio::{StdioConfig, DEFAULT_MAX_MESSAGE_BYTES};

pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;

/// A TypeError message naming the field (E2).
pub type ConfigResult<T> = Result<T, String>;

fn field<H: Values>(host: &H, object: &H::Value, name: &str) -> ConfigResult<Option<H::Value>> {
  let value = host
    .field(object, name)
    .map_err(|_| format!("The \"{name}\" field could not be read"))?;
  Ok((!host.is_nullish(&value)).then_some(value))
}

/// A plain object in the `Record<string, unknown>` sense.
pub fn is_record<H: Values>(host: &H, value: &H::Value) -> bool {
  host.is_object(value) && host.items(value).is_none()
}

/// T7/§1: `timeout` in ms, default 30000, `0` disables.
pub fn timeout<H: Values>(host: &H, config: &H::Value) -> ConfigResult<Option<Duration>> {
  let ms = match field(host, config, "timeout")? {
    None => DEFAULT_TIMEOUT_MS,
    Some(v) => host
      .as_number(&v)
      .filter(|n| n.is_finite() && *n >= 0.0)
      .ok_or("The \"timeout\" field must be a non-negative number of milliseconds")?,
  };
  Ok((ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0)))
}

/// A7: `requestIdFormat`: `"string"` → unique 16-character hex ids; `"number"` (default).
pub fn string_ids<H: Values>(host: &H, config: &H::Value) -> ConfigResult<bool> {
  match field(host, config, "requestIdFormat")? {
    None => Ok(false),
    Some(v) => match host.as_string(&v).as_deref() {
      Some("string") => Ok(true),
      Some("number") => Ok(false),
      _ => Err("The \"requestIdFormat\" field must be \"string\" or \"number\"".to_string()),
    },
  }
}

/// E3: `maxMessageBytes`, default 64 MiB.
pub fn max_message_bytes<H: Values>(host: &H, config: &H::Value) -> ConfigResult<usize> {
  match field(host, config, "maxMessageBytes")? {
    None => Ok(DEFAULT_MAX_MESSAGE_BYTES),
    Some(v) => host
      .as_number(&v)
      .filter(|n| n.is_finite() && *n >= 1.0)
      .map(|n| n as usize)
      .ok_or_else(|| "The \"maxMessageBytes\" field must be a positive number".to_string()),
  }
}

/// S1: the stdio config. The child's environment is `environment` (the host's
/// `process.env`, so runtimes that keep it apart from the C environment still agree)
/// overlaid with `env`.
pub fn stdio_config<H: Values>(
  host: &H,
  config: &H::Value,
  environment: Vec<(OsString, OsString)>,
) -> ConfigResult<StdioConfig> {
  if !is_record(host, config) {
    return Err("The \"config\" argument must be an object".to_string());
  }
  let command = field(host, config, "command")?
    .and_then(|v| host.as_string(&v))
    .filter(|c| !c.is_empty())
    .ok_or("The \"command\" field must be a non-empty string")?;
  let args = match field(host, config, "args")? {
    None => Vec::new(),
    Some(v) => host
      .items(&v)
      .and_then(|items| items.iter().map(|a| host.as_string(a)).collect())
      .ok_or("The \"args\" field must be an array of strings")?,
  };
  let mut env = environment;
  for (key, value) in string_record(host, config, "env")? {
    let key = OsString::from(key);
    env.retain(|(k, _)| !crate::sys::same_env_name(k, &key));
    env.push((key, OsString::from(value)));
  }
  let cwd = match field(host, config, "cwd")? {
    None => None,
    Some(v) => Some(PathBuf::from(
      host
        .as_string(&v)
        .ok_or("The \"cwd\" field must be a string")?,
    )),
  };
  Ok(StdioConfig {
    command,
    args,
    env: Some(env),
    cwd,
    timeout: timeout(host, config)?,
    max_message_bytes: max_message_bytes(host, config)?,
    string_ids: string_ids(host, config)?,
  })
}

/// H1/H2: the HTTP config (`type` "http" or "sse").
pub fn http_config<H: Values>(host: &H, config: &H::Value) -> ConfigResult<HttpConfig> {
  if !is_record(host, config) {
    return Err("The \"config\" argument must be an object".to_string());
  }
  let kind = field(host, config, "type")?.and_then(|v| host.as_string(&v));
  let allow_legacy = match kind.as_deref() {
    Some("http") => false,
    Some("sse") => true,
    _ => return Err("The \"type\" field must be \"http\" or \"sse\"".to_string()),
  };
  Ok(HttpConfig {
    url: http_url(host, config)?,
    headers: string_record(host, config, "headers")?,
    timeout: timeout(host, config)?,
    max_message_bytes: max_message_bytes(host, config)?,
    string_ids: string_ids(host, config)?,
    allow_legacy,
    max_resumptions: max_resumptions(host, config)?,
    oauth: oauth_settings(host, config)?,
    auth_error_hook: Default::default(),
    origin_locked: origin_locked(host, config)?,
    trust: trust(host, config)?,
  })
}

/// H10: `ca`, a server's own CA certificates: PEM text, or the path of a PEM file (read
/// now), or an array of those. `insecure` is the binding's to set, from the runtime.
fn trust<H: Values>(host: &H, config: &H::Value) -> ConfigResult<crate::http_client::Trust> {
  const MUST: &str = "The \"ca\" field must be PEM text, a PEM file's path, or an array of those";
  let Some(value) = field(host, config, "ca")? else {
    return Ok(Default::default());
  };
  let entries = match host.items(&value) {
    Some(items) => items,
    None => vec![value],
  };
  let ca = entries
    .iter()
    .map(|entry| {
      let text = host.as_string(entry).ok_or_else(|| MUST.to_string())?;
      if crate::http_client::is_pem(&text) {
        return Ok(text);
      }
      std::fs::read_to_string(&text)
        .map_err(|e| format!("The \"ca\" file {text} cannot be read: {e}"))
    })
    .collect::<ConfigResult<Vec<String>>>()?;
  Ok(crate::http_client::Trust {
    ca,
    ..Default::default()
  })
}

/// A2/A24 `headerPolicy`: only `"origin-locked"` is a policy; left out, redirects are
/// followed as `fetch` follows them.
fn origin_locked<H: Values>(host: &H, config: &H::Value) -> ConfigResult<bool> {
  match field(host, config, "headerPolicy")? {
    None => Ok(false),
    Some(v) if host.as_string(&v).as_deref() == Some("origin-locked") => Ok(true),
    Some(_) => Err("The \"headerPolicy\" field must be \"origin-locked\"".to_string()),
  }
}

/// `url`: an http(s) URL.
fn http_url<H: Values>(host: &H, config: &H::Value) -> ConfigResult<reqwest::Url> {
  let url = field(host, config, "url")?
    .and_then(|v| host.as_string(&v))
    .filter(|u| !u.is_empty())
    .ok_or("The \"url\" field must be a non-empty string")?;
  reqwest::Url::parse(&url)
    .ok()
    .filter(|u| matches!(u.scheme(), "http" | "https"))
    .ok_or_else(|| format!("The \"url\" field must be an http(s) URL, got {url:?}"))
}

/// A22: the legacy HTTP+SSE config. `type` may be left out, as the class names the
/// protocol already; any other type than "sse" is a mistake.
pub fn legacy_sse_config<H: Values>(host: &H, config: &H::Value) -> ConfigResult<LegacySseConfig> {
  if !is_record(host, config) {
    return Err("The \"config\" argument must be an object".to_string());
  }
  let kind = field(host, config, "type")?;
  if kind.is_some_and(|k| host.as_string(&k).as_deref() != Some("sse")) {
    return Err("The \"type\" field must be \"sse\"".to_string());
  }
  Ok(LegacySseConfig {
    url: http_url(host, config)?,
    headers: string_record(host, config, "headers")?,
    timeout: timeout(host, config)?,
    max_message_bytes: max_message_bytes(host, config)?,
    string_ids: string_ids(host, config)?,
    auth_error_hook: Default::default(),
    origin_locked: origin_locked(host, config)?,
    trust: trust(host, config)?,
  })
}

/// O1: `config.authProvider`, an object shaped like the TS SDK's `OAuthClientProvider`.
fn provider_settings<H: Values>(host: &H, provider: &H::Value) -> ConfigResult<OAuthSettings> {
  if !host.is_object(provider) {
    return Err("The \"authProvider\" field must be an object".to_string());
  }
  for method in [
    "tokens",
    "saveTokens",
    "redirectToAuthorization",
    "saveCodeVerifier",
    "codeVerifier",
  ] {
    if !host
      .field(provider, method)
      .is_ok_and(|f| host.is_function(&f))
    {
      return Err(format!(
        "The \"authProvider\" field must have a {method} method"
      ));
    }
  }
  Ok(OAuthSettings {
    provider: true,
    host_store: true,
    ..OAuthSettings::default()
  })
}

/// The fields of the v18 agent's own `oauth` config (A2), which its OAuth flow reads.
const AGENT_OAUTH_FIELDS: [&str; 7] = [
  "clientId",
  "clientSecret",
  "scope",
  "redirectUri",
  "callbackPort",
  "callbackPath",
  "prompt",
];

/// A9: the timeout a resolver's answer gives a config whose `timeout` is `input`: the
/// answer when it is a non-negative number, else the config's, else §1's default; 0 is none.
pub fn resolved_timeout(answer: Option<f64>, input: Option<f64>) -> Option<Duration> {
  let usable = |n: &f64| n.is_finite() && *n >= 0.0;
  let ms = answer
    .filter(usable)
    .or(input.filter(usable))
    .unwrap_or(DEFAULT_TIMEOUT_MS);
  (ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// O1: `options.oauth` applies to a config without its own `oauth`: a copy carries it (the
/// caller's config is never touched).
pub fn with_oauth_option<H: Values>(
  host: &H,
  config: &H::Value,
  options: Option<&H::Value>,
) -> Result<H::Value, H::Value> {
  let oauth = options
    .and_then(|o| host.field(o, "oauth").ok())
    .filter(|o| host.is_object(o));
  let Some(oauth) = oauth else {
    return Ok(config.clone());
  };
  if own_oauth(host, config).is_ok_and(|own| own.is_some()) {
    return Ok(config.clone());
  }
  let copy = host.shallow_copy(config)?;
  host.set_field(&copy, "oauth", oauth)?;
  Ok(copy)
}

/// T8: `options.signal`, if any: anything with `aborted` and `addEventListener` will do.
pub fn signal_option<H: Values>(
  host: &H,
  options: Option<&H::Value>,
) -> ConfigResult<Option<H::Value>> {
  let Some(options) = options.filter(|o| !host.is_nullish(o)) else {
    return Ok(None);
  };
  if !host.is_object(options) {
    return Err("The \"options\" argument must be an object".to_string());
  }
  let signal = host
    .field(options, "signal")
    .map_err(|_| "The \"signal\" field could not be read".to_string())?;
  if host.is_nullish(&signal) {
    return Ok(None);
  }
  let listens = host
    .field(&signal, "addEventListener")
    .is_ok_and(|f| host.is_function(&f));
  if !listens {
    return Err("The \"options.signal\" field must be an AbortSignal".to_string());
  }
  Ok(Some(signal))
}

/// A2/A38: an `oauth` field that holds only the agent's own fields, and no function, is the
/// agent's configuration for its own OAuth flow (its credentials then come through
/// `resolveCredentials` and `onAuthError`), not an ask for ours (O1).
pub fn is_agent_oauth<H: Values>(host: &H, oauth: &H::Value) -> bool {
  if !is_record(host, oauth) {
    return false;
  }
  let Ok(keys) = host.keys(oauth) else {
    return false;
  };
  keys.iter().all(|key| {
    AGENT_OAUTH_FIELDS.contains(&key.as_str())
      && field(host, oauth, key).is_ok_and(|v| v.is_none_or(|v| !host.is_function(&v)))
  })
}

/// `config.oauth` when it asks for our own OAuth flow (O1), not the agent's (A2).
pub fn own_oauth<H: Values>(host: &H, config: &H::Value) -> ConfigResult<Option<H::Value>> {
  Ok(field(host, config, "oauth")?.filter(|oauth| !is_agent_oauth(host, oauth)))
}

/// O1: `config.oauth`, the plain-data part; its functions stay on the JS side.
fn oauth_settings<H: Values>(host: &H, config: &H::Value) -> ConfigResult<Option<OAuthSettings>> {
  let provider = field(host, config, "authProvider")?;
  let Some(oauth) = own_oauth(host, config)? else {
    return provider.map(|p| provider_settings(host, &p)).transpose();
  };
  if provider.is_some() {
    return Err("Give either the \"oauth\" or the \"authProvider\" field, not both".to_string());
  }
  if !host.is_object(&oauth) || host.items(&oauth).is_some() {
    return Err("The \"oauth\" field must be an object".to_string());
  }
  let text = |name: &str| -> ConfigResult<Option<String>> {
    match field(host, &oauth, name)? {
      None => Ok(None),
      Some(v) => host
        .as_string(&v)
        .map(Some)
        .ok_or_else(|| format!("The \"oauth.{name}\" field must be a string")),
    }
  };
  let grant = match text("grantType")?.as_deref() {
    None | Some("authorization_code") => Grant::AuthorizationCode,
    Some("client_credentials") => Grant::ClientCredentials,
    Some("jwt_bearer") => {
      let source = field(host, &oauth, "workloadToken")?
        .ok_or("The \"oauth.workloadToken\" field is required for jwt_bearer")?;
      Grant::JwtBearer(token_source(host, &source, &["workloadToken"])?)
    }
    Some("enterprise_managed") => {
      let idp = field(host, &oauth, "idp")?
        .ok_or("The \"oauth.idp\" field is required for enterprise_managed")?;
      Grant::EnterpriseManaged(Box::new(idp_settings(host, &idp)?))
    }
    Some(other) => {
      return Err(format!(
        "The \"oauth.grantType\" field must be \"authorization_code\", \"client_credentials\", \"jwt_bearer\" or \"enterprise_managed\", got {other:?}"
      ))
    }
  };
  let settings = OAuthSettings {
    client_id: text("clientId")?,
    client_secret: text("clientSecret")?,
    issuer: text("issuer")?,
    client_metadata_url: text("clientMetadataUrl")?,
    client_name: text("clientName")?,
    scope: text("scope")?,
    redirect_uri: text("redirectUri")?,
    private_key: text("privateKey")?,
    signing_algorithm: text("signingAlgorithm")?,
    dpop: match field(host, &oauth, "dpop")? {
      None => false,
      Some(v) => host.truthy(&v),
    },
    grant,
    host_store: field(host, &oauth, "store")?.is_some(),
    provider: false,
  };
  let has_redirect = field(host, &oauth, "redirect")?.is_some_and(|f| host.is_function(&f));
  if settings.grant == Grant::AuthorizationCode && !has_redirect {
    return Err("The \"oauth.redirect\" field must be a function".to_string());
  }
  if settings.grant == Grant::ClientCredentials
    && (settings.client_id.is_none()
      || (settings.client_secret.is_none() && settings.private_key.is_none()))
  {
    return Err(
      "The \"oauth.clientId\" field and \"oauth.clientSecret\" or \"oauth.privateKey\" are required for client_credentials"
        .to_string(),
    );
  }
  if let Some(store) = field(host, &oauth, "store")? {
    let methods = ["get", "set", "delete"];
    let complete = methods
      .iter()
      .all(|m| host.field(&store, m).is_ok_and(|f| host.is_function(&f)));
    if !complete {
      return Err("The \"oauth.store\" field must have get, set and delete methods".to_string());
    }
  }
  Ok(Some(settings))
}

/// SEP-1933/SEP-990: a token given as its text, `{ file }`, `{ env }` or a function.
fn token_source<H: Values>(
  host: &H,
  value: &H::Value,
  path: &'static [&'static str],
) -> ConfigResult<TokenSource> {
  let name = path.join(".");
  if let Some(text) = host.as_string(value) {
    return Ok(TokenSource::Text(text));
  }
  if host.is_function(value) {
    return Ok(TokenSource::Function(path));
  }
  let text_of = |key: &str| -> ConfigResult<Option<String>> {
    match field(host, value, key)? {
      None => Ok(None),
      Some(v) => host
        .as_string(&v)
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or_else(|| format!("The \"oauth.{name}.{key}\" field must be a non-empty string")),
    }
  };
  if is_record(host, value) {
    match (text_of("file")?, text_of("env")?) {
      (Some(file), None) => return Ok(TokenSource::File(PathBuf::from(file))),
      (None, Some(env)) => return Ok(TokenSource::Env(env)),
      _ => {}
    }
  }
  Err(format!(
    "The \"oauth.{name}\" field must be a string, a function, {{ file }} or {{ env }}"
  ))
}

/// SEP-990: `config.oauth.idp`, the enterprise IdP the identity assertion is exchanged at.
fn idp_settings<H: Values>(host: &H, idp: &H::Value) -> ConfigResult<IdpSettings> {
  if !is_record(host, idp) {
    return Err("The \"oauth.idp\" field must be an object".to_string());
  }
  let text = |name: &str| -> ConfigResult<Option<String>> {
    match field(host, idp, name)? {
      None => Ok(None),
      Some(v) => host
        .as_string(&v)
        .map(Some)
        .ok_or_else(|| format!("The \"oauth.idp.{name}\" field must be a string")),
    }
  };
  let (issuer, token_endpoint) = (text("issuer")?, text("tokenEndpoint")?);
  if issuer.is_none() && token_endpoint.is_none() {
    return Err("The \"oauth.idp\" field needs an \"issuer\" or a \"tokenEndpoint\"".to_string());
  }
  let client_id = text("clientId")?.ok_or("The \"oauth.idp.clientId\" field is required")?;
  let assertion =
    field(host, idp, "assertion")?.ok_or("The \"oauth.idp.assertion\" field is required")?;
  let assertion_type = match text("assertionType")?.as_deref() {
    None | Some("id_token") => AssertionType::IdToken,
    Some("saml2") => AssertionType::Saml2,
    Some(other) => {
      return Err(format!(
        "The \"oauth.idp.assertionType\" field must be \"id_token\" or \"saml2\", got {other:?}"
      ))
    }
  };
  Ok(IdpSettings {
    issuer,
    token_endpoint,
    client_id,
    client_secret: text("clientSecret")?,
    assertion: token_source(host, &assertion, &["idp", "assertion"])?,
    assertion_type,
  })
}

/// P2: `config.reconnect?.maxRetries ?? 2`, how often a broken stream is resumed.
fn max_resumptions<H: Values>(host: &H, config: &H::Value) -> ConfigResult<u32> {
  let Some(reconnect) = field(host, config, "reconnect")? else {
    return Ok(DEFAULT_MAX_RESUMPTIONS);
  };
  if !host.is_object(&reconnect) {
    return Ok(DEFAULT_MAX_RESUMPTIONS);
  }
  match field(host, &reconnect, "maxRetries")? {
    None => Ok(DEFAULT_MAX_RESUMPTIONS),
    Some(value) => host
      .as_number(&value)
      .filter(|n| n.is_finite() && *n >= 0.0)
      .map(|n| n.min(f64::from(u32::MAX)) as u32)
      .ok_or_else(|| {
        "The \"reconnect.maxRetries\" field must be a non-negative number".to_string()
      }),
  }
}

/// P2: resumptions of one stream when the config does not say.
pub const DEFAULT_MAX_RESUMPTIONS: u32 = 2;

/// A `Record<string, string>` field; `undefined` entries are skipped, numbers become text.
fn string_record<H: Values>(
  host: &H,
  object: &H::Value,
  name: &str,
) -> ConfigResult<Vec<(String, String)>> {
  let Some(record) = field(host, object, name)? else {
    return Ok(Vec::new());
  };
  if !is_record(host, &record) {
    return Err(format!("The \"{name}\" field must be an object of strings"));
  }
  let keys = host
    .keys(&record)
    .map_err(|_| format!("The \"{name}\" field could not be read"))?;
  let mut entries = Vec::with_capacity(keys.len());
  for key in keys {
    let Some(value) = field(host, &record, &key)? else {
      continue;
    };
    let value = host
      .as_string(&value)
      .or_else(|| host.as_number(&value).map(|n| n.to_string()))
      .ok_or_else(|| format!("The \"{name}.{key}\" field must be a string"))?;
    entries.push((key, value));
  }
  Ok(entries)
}

/// §5: which transport a config's `type` asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum TransportKind {
  Stdio,
  Http,
}

/// `type` omitted or "stdio" → stdio; "http"/"sse" → HTTP; else the error's message.
pub fn transport_kind(kind: Option<&str>) -> Result<TransportKind, String> {
  match kind {
    None | Some("stdio") => Ok(TransportKind::Stdio),
    Some("http") | Some("sse") => Ok(TransportKind::Http),
    Some(other) => Err(format!("Unknown server type: {other}")),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a9_the_resolver_answer_then_the_config_then_the_default() {
    let secs = |s: f64| Some(Duration::from_secs_f64(s));
    assert_eq!(resolved_timeout(Some(500.0), Some(9000.0)), secs(0.5));
    assert_eq!(resolved_timeout(Some(0.0), Some(9000.0)), None);
    assert_eq!(resolved_timeout(Some(-1.0), Some(9000.0)), secs(9.0));
    assert_eq!(resolved_timeout(Some(f64::NAN), None), secs(30.0));
    assert_eq!(resolved_timeout(None, Some(0.0)), None);
  }

  #[test]
  fn transport_kinds() {
    assert_eq!(transport_kind(None), Ok(TransportKind::Stdio));
    assert_eq!(transport_kind(Some("stdio")), Ok(TransportKind::Stdio));
    assert_eq!(transport_kind(Some("sse")), Ok(TransportKind::Http));
    assert_eq!(
      transport_kind(Some("ws")),
      Err("Unknown server type: ws".to_string())
    );
  }
}
