//! M3/W6/A37 `prepareConfig`: `this.resolveCredentials` first (by default the OAuth
//! credential of M3 injected), then which entries of a config are resolved (`env` for stdio,
//! `headers` for http/sse) and what each resolves to (`options.resolveConfigValue`, else the
//! built-in rules). An entry that resolves to nothing is dropped. `envPolicy: "literal"`,
//! `envLiteralKeys` and `headerPolicy: "origin-locked"` keep values as data.
use serde_json::Value as Json;

use super::host::ManagerHost;
use crate::host::{json_of, Values};

/// What `prepareConfig` does to the copy of a config.
#[derive(Debug, PartialEq)]
pub struct Prepared {
  /// `"env"` or `"headers"`.
  pub field: &'static str,
  /// In order: a new value for the entry, or `None` to delete it.
  pub updates: Vec<(String, Option<String>)>,
}

fn is_stdio(config: &Json) -> bool {
  matches!(config.get("type"), None | Some(Json::Null)) || config["type"] == "stdio"
}

/// The credential id of an `auth: {type: "oauth", credentialId}` config.
fn credential_id(config: &Json) -> Option<&str> {
  let auth = config.get("auth")?;
  (auth.get("type")? == "oauth")
    .then(|| auth.get("credentialId")?.as_str())
    .flatten()
    .filter(|id| !id.is_empty())
}

/// `{type: "oauth", access}` → the access token.
fn oauth_access<H: Values>(host: &H, credential: &H::Value) -> Option<String> {
  if !host.is_object(credential) {
    return None;
  }
  let kind = host.as_string(&host.field(credential, "type").ok()?)?;
  let access = host.as_string(&host.field(credential, "access").ok()?)?;
  (kind == "oauth" && !access.is_empty()).then_some(access)
}

/// M3: the access token of the OAuth credential a config names, when the store has one.
async fn access_token<H: ManagerHost>(host: &H, config: &Json) -> Option<String> {
  let lookup = host.credential(credential_id(config)?)?;
  lookup.await.ok().and_then(|c| oauth_access(host, &c))
}

/// M3: where a credential goes: `OAUTH_ACCESS_TOKEN` for stdio, else `Authorization`.
fn credential_entry(config: &Json, access: String) -> (&'static str, String) {
  if is_stdio(config) {
    ("OAUTH_ACCESS_TOKEN", access)
  } else {
    ("Authorization", format!("Bearer {access}"))
  }
}

/// What `prepareConfig(config, options)` was asked.
#[derive(Debug, Clone, Copy)]
pub struct PrepareOptions {
  /// `oauth: false` skips `resolveCredentials` (a probe that must see the bare 401).
  pub oauth: bool,
  /// A37: the credential is refreshed even when it looks valid (after a 401).
  pub force_refresh: bool,
}

impl Default for PrepareOptions {
  fn default() -> Self {
    PrepareOptions {
      oauth: true,
      force_refresh: false,
    }
  }
}

impl PrepareOptions {
  /// `prepareConfig`'s second argument: only `oauth: false` skips the credentials (A37),
  /// and a truthy `forceRefresh` refreshes them.
  pub fn read<H: Values>(h: &H, options: Option<&H::Value>) -> Self {
    let field = |name: &str| {
      options
        .filter(|o| h.is_object(o))
        .and_then(|o| h.field(o, name).ok())
    };
    let oauth_off = field("oauth").is_some_and(|v| h.as_bool(&v) == Some(false));
    PrepareOptions {
      oauth: !oauth_off,
      force_refresh: field("forceRefresh").is_some_and(|v| h.truthy(&v)),
    }
  }
}

/// E2: the `config` argument of the overridable methods must be a plain object.
fn config_argument<H: Values>(host: &H, config: &H::Value) -> Result<(), H::Value> {
  if crate::config::is_record(host, config) {
    Ok(())
  } else {
    Err(host.type_error("The \"config\" argument must be an object"))
  }
}

/// M3/A37 `prepareConfig(config, options)`: `this.resolveCredentials(config, {forceRefresh})`
/// unless `oauth` is off, then a copy of that config whose entries are a copy of its own
/// with the values resolved; the entries field is set when the config had one or something
/// is left in it.
pub async fn prepare_config<H: ManagerHost>(
  host: &H,
  config: &H::Value,
  options: PrepareOptions,
) -> Result<H::Value, H::Value> {
  config_argument(host, config)?;
  let config = if options.oauth {
    host
      .resolve_credentials(config, options.force_refresh)
      .await?
  } else {
    config.clone()
  };
  let json = json_of(host, &config)?.unwrap_or(Json::Null);
  let prepared = resolve_entries(host, &json, false).await;
  apply(host, &config, prepared)
}

/// A37's default `resolveCredentials(config)`: M3's OAuth credential in a copy's `env`
/// (`OAUTH_ACCESS_TOKEN`) or `headers` (`Authorization: Bearer …`, replacing any spelling
/// of that header); the config itself when there is none to inject.
pub async fn inject_credential<H: ManagerHost>(
  host: &H,
  config: &H::Value,
) -> Result<H::Value, H::Value> {
  config_argument(host, config)?;
  let json = json_of(host, config)?.unwrap_or(Json::Null);
  let Some(access) = access_token(host, &json).await else {
    return Ok(config.clone());
  };
  let (key, value) = credential_entry(&json, access);
  let field = entries_field(&json);
  let copy = host.shallow_copy(config)?;
  let original = host.field(&copy, field)?;
  let entries = if host.is_object(&original) {
    host.shallow_copy(&original)?
  } else {
    host.object(Vec::new())?
  };
  for other in host.keys(&entries)? {
    if other != key && other.eq_ignore_ascii_case(key) {
      host.delete_field(&entries, &other);
    }
  }
  host.set_field(&entries, key, host.string(&value))?;
  host.set_field(&copy, field, entries)?;
  Ok(copy)
}

/// A37's default `hasRefreshableCredential(config)`: an OAuth credential id, and a storage
/// to look it up in.
pub fn names_a_credential<H: ManagerHost>(host: &H, config: &H::Value) -> bool {
  let json = json_of(host, config).ok().flatten().unwrap_or(Json::Null);
  credential_id(&json).is_some() && host.has_credential_store()
}

fn entries_field(config: &Json) -> &'static str {
  if is_stdio(config) {
    "env"
  } else {
    "headers"
  }
}

fn apply<H: ManagerHost>(
  host: &H,
  config: &H::Value,
  prepared: Prepared,
) -> Result<H::Value, H::Value> {
  let copy = host.shallow_copy(config)?;
  let original = host.field(&copy, prepared.field)?;
  let entries = if host.is_object(&original) {
    host.shallow_copy(&original)?
  } else {
    host.object(Vec::new())?
  };
  for (key, value) in prepared.updates {
    match value {
      Some(value) => host.set_field(&entries, &key, host.string(&value))?,
      None => host.delete_field(&entries, &key),
    }
  }
  if !host.is_nullish(&original) || !host.keys(&entries)?.is_empty() {
    host.set_field(&copy, prepared.field, entries)?;
  }
  Ok(copy)
}

/// The updates for a config given as JSON, M3's credential included (the caller's object
/// is never touched).
pub async fn prepare_entries<H: ManagerHost>(host: &H, config: &Json) -> Prepared {
  resolve_entries(host, config, true).await
}

/// The updates; with `inject`, M3's credential first.
async fn resolve_entries<H: ManagerHost>(host: &H, config: &Json, inject: bool) -> Prepared {
  let stdio = is_stdio(config);
  let field = entries_field(config);
  let literal = if stdio {
    config.get("envPolicy").and_then(Json::as_str) == Some("literal")
  } else {
    config.get("headerPolicy").and_then(Json::as_str) == Some("origin-locked")
  };
  let literal_keys: Vec<&str> = match config.get("envLiteralKeys") {
    Some(Json::Array(keys)) if stdio => keys.iter().filter_map(Json::as_str).collect(),
    _ => Vec::new(),
  };
  // Only string entries are resolved, and literal keys stay as they are.
  let mut entries: Vec<(String, Option<String>)> = match config.get(field) {
    Some(Json::Object(map)) => map
      .iter()
      .filter(|(k, _)| !literal_keys.contains(&k.as_str()))
      .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
      .collect(),
    _ => Vec::new(),
  };
  let access = if inject {
    access_token(host, config).await
  } else {
    None
  };
  if let Some(access) = access {
    let (key, value) = credential_entry(config, access);
    // A literal policy keeps the values as data; the credential still goes in.
    if literal {
      return Prepared {
        field,
        updates: vec![(key.to_string(), Some(value))],
      };
    }
    match entries.iter_mut().find(|(k, _)| k == key) {
      Some(entry) => entry.1 = Some(value),
      None => entries.push((key.to_string(), Some(value))),
    }
  }
  if literal {
    return Prepared {
      field,
      updates: Vec::new(),
    };
  }
  let (keys, values): (Vec<String>, Vec<String>) = entries
    .into_iter()
    .filter_map(|(key, value)| Some((key, value?)))
    .unzip();
  let resolved = if values.is_empty() {
    Vec::new()
  } else if let Some(pending) = host.resolve_values(&values) {
    let outcomes = futures::future::join_all(pending).await;
    outcomes
      .into_iter()
      .map(|outcome| outcome.ok().and_then(|v| host.as_string(&v)))
      .collect()
  } else {
    host.resolve_builtin(values).await
  };
  Prepared {
    field,
    updates: keys
      .into_iter()
      .zip(resolved)
      .map(|(key, value)| (key, value.filter(|v| !v.is_empty())))
      .collect(),
  }
}
