//! M3/W6 `prepareConfig`: which entries of a config are resolved (`env` for stdio, `headers`
//! for http/sse), the OAuth credential injected into them, and what each resolves to
//! (`options.resolveConfigValue`, else the built-in rules). An entry that resolves to
//! nothing is dropped.
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

/// M3 `prepareConfig(config)`: a copy of the caller's config whose entries are a copy of
/// its own with the updates applied; the entries field is set when the config had one or
/// something is left in it.
pub async fn prepare_config<H: ManagerHost>(
  host: &H,
  config: &H::Value,
) -> Result<H::Value, H::Value> {
  let copy = host.shallow_copy(config)?;
  let json = json_of(host, config)?.unwrap_or(Json::Null);
  let prepared = prepare_entries(host, &json).await;
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

/// The updates for a config given as JSON (the caller's object is never touched).
pub async fn prepare_entries<H: ManagerHost>(host: &H, config: &Json) -> Prepared {
  let stdio = is_stdio(config);
  let field = if stdio { "env" } else { "headers" };
  // Only string entries are resolved; others stay as they are.
  let mut entries: Vec<(String, Option<String>)> = match config.get(field) {
    Some(Json::Object(map)) => map
      .iter()
      .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
      .collect(),
    _ => Vec::new(),
  };
  if let Some(lookup) = credential_id(config).and_then(|id| host.credential(id)) {
    if let Some(access) = lookup.await.ok().and_then(|c| oauth_access(host, &c)) {
      let (key, value) = if stdio {
        ("OAUTH_ACCESS_TOKEN", access)
      } else {
        ("Authorization", format!("Bearer {access}"))
      };
      match entries.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = Some(value),
        None => entries.push((key.to_string(), Some(value))),
      }
    }
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
