//! The MCP handshake's pure parts (C1): what `initialize` offers by default, how a caller's
//! `client` option overrides it, and the connect-timeout text.
use crate::transport_error::{Diagnostic, Failure, Stage, TransportKind};
use serde_json::{json, Map, Value};

pub use crate::protocol::versions::{
  DEFAULT_PROTOCOL_VERSION, STATELESS_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS,
};

/// N3: the `_meta` keys of the stateless envelope.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

pub fn is_stateless(version: &str) -> bool {
  STATELESS_PROTOCOL_VERSIONS.contains(&version)
}

/// N3: the envelope every stateless request of this connection carries, as JSON text.
pub fn stateless_meta(
  options: &ClientOptions,
  capabilities: Map<String, Value>,
  version: &str,
) -> String {
  let initialize: Value =
    serde_json::from_str(&initialize_params(options, capabilities)).unwrap_or_default();
  json!({
    META_PROTOCOL_VERSION: version,
    META_CLIENT_CAPABILITIES: initialize["capabilities"],
    META_CLIENT_INFO: initialize["clientInfo"],
  })
  .to_string()
}

/// N3: on -32022, the version to try instead: the newest of the server's `supported` we
/// speak, stateless first.
pub fn fallback_version(supported: &[String]) -> Option<&'static str> {
  STATELESS_PROTOCOL_VERSIONS
    .iter()
    .chain(SUPPORTED_PROTOCOL_VERSIONS.iter().rev())
    .find(|ours| supported.iter().any(|theirs| theirs == *ours))
    .copied()
}

/// P1: the error of an answer naming a version we do not speak.
pub fn unsupported_version_message(name: &str, version: &str) -> String {
  format!("MCP server \"{name}\" answered unsupported protocol version {version}")
}

/// The `client` option of `connectToServer`, already parsed from JSON.
#[derive(Debug, Default, Clone)]
pub struct ClientOptions {
  pub client_info: Option<Value>,
  pub protocol_version: Option<String>,
  /// Merged over the defaults key by key at the top level.
  pub capabilities: Option<Map<String, Value>>,
}

impl ClientOptions {
  /// `options.client` of `connectToServer`, or the TypeError message (E2).
  pub fn read<H: crate::host::Values>(
    host: &H,
    options: Option<&H::Value>,
  ) -> Result<Self, String> {
    let Some(options) = options.filter(|o| !host.is_nullish(o)) else {
      return Ok(ClientOptions::default());
    };
    if !host.is_object(options) {
      return Err("The \"options\" argument must be an object".into());
    }
    let client = host
      .field(options, "client")
      .map_err(|_| "The \"options.client\" field could not be read")?;
    if host.is_nullish(&client) {
      return Ok(ClientOptions::default());
    }
    let invalid = "The \"options.client\" field must be an object";
    let text = host.to_json(&client).ok().flatten().ok_or(invalid)?;
    let value: Value = serde_json::from_str(&text).map_err(|_| invalid)?;
    let object = value.as_object().ok_or(invalid)?;
    Ok(ClientOptions {
      client_info: object.get("clientInfo").cloned(),
      protocol_version: object
        .get("protocolVersion")
        .and_then(|v| v.as_str())
        .map(str::to_string),
      capabilities: object
        .get("capabilities")
        .and_then(|c| c.as_object())
        .cloned(),
    })
  }
}

/// C1: `initialize` params as JSON text; `capabilities` are the handlers' (P5), under the
/// caller's own.
pub fn initialize_params(options: &ClientOptions, mut capabilities: Map<String, Value>) -> String {
  if let Some(extra) = &options.capabilities {
    for (key, value) in extra {
      capabilities.insert(key.clone(), value.clone());
    }
  }
  let client_info = options
    .client_info
    .clone()
    .unwrap_or_else(|| json!({ "name": "mcp-native", "version": env!("CARGO_PKG_VERSION") }));
  json!({
    "protocolVersion": options
      .protocol_version
      .as_deref()
      .unwrap_or(DEFAULT_PROTOCOL_VERSION),
    "capabilities": capabilities,
    "clientInfo": client_info,
  })
  .to_string()
}

/// C1: the connect timeout's message; it wins over the request timeout.
pub fn connect_timeout_message(name: &str, timeout_ms: f64) -> String {
  format!("Connection to MCP server \"{name}\" timed out after {timeout_ms}ms")
}

/// A47: the `name` of the connect timeout's error (ours and the agent's).
pub const CONNECT_TIMEOUT_ERROR: &str = "MCPConnectionTimeoutError";

/// A47: what `MCPConnectionTimeoutError` says: a timeout of the connect, never retried as
/// is (A46; the agent's manager reconnects on it instead, A57).
pub fn connect_timeout_diagnostic(name: &str, timeout_ms: f64) -> Diagnostic {
  Diagnostic::new(
    TransportKind::Unknown,
    Stage::Connect,
    Failure::Timeout,
    &connect_timeout_message(name, timeout_ms),
    false,
  )
}

#[cfg(test)]
mod tests {
  use super::*;

  fn default_capabilities() -> Map<String, Value> {
    crate::client::features::ClientFeatures::<()>::default().capabilities()
  }

  #[test]
  fn defaults_offer_2025_11_25_and_roots_without_list_changed() {
    let params: Value = serde_json::from_str(&initialize_params(
      &ClientOptions::default(),
      default_capabilities(),
    ))
    .unwrap();
    assert_eq!(
      params,
      json!({
        "protocolVersion": "2025-11-25",
        "capabilities": { "roots": { "listChanged": false } },
        "clientInfo": { "name": "mcp-native", "version": env!("CARGO_PKG_VERSION") },
      })
    );
  }

  #[test]
  fn the_client_option_overrides_each_part_and_merges_capabilities_by_key() {
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    capabilities.insert("roots".into(), json!({ "listChanged": true }));
    let options = ClientOptions {
      client_info: Some(json!({ "name": "agent", "version": "9" })),
      protocol_version: Some("2025-06-18".into()),
      capabilities: Some(capabilities),
    };
    let params: Value =
      serde_json::from_str(&initialize_params(&options, default_capabilities())).unwrap();
    assert_eq!(params["protocolVersion"], "2025-06-18");
    assert_eq!(
      params["clientInfo"],
      json!({ "name": "agent", "version": "9" })
    );
    assert_eq!(
      params["capabilities"],
      json!({ "roots": { "listChanged": true }, "elicitation": {} })
    );
  }

  #[test]
  fn n3_the_envelope_and_the_fallback_version() {
    let meta: Value = serde_json::from_str(&stateless_meta(
      &ClientOptions::default(),
      default_capabilities(),
      "2026-07-28",
    ))
    .unwrap();
    assert_eq!(
      meta,
      json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "roots": { "listChanged": false } },
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-native", "version": env!("CARGO_PKG_VERSION") },
      })
    );
    let supported = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
      fallback_version(&supported(&["2025-06-18", "2025-03-26"])),
      Some("2025-06-18")
    );
    assert_eq!(
      fallback_version(&supported(&["2026-07-28", "2025-11-25"])),
      Some("2026-07-28")
    );
    assert_eq!(fallback_version(&supported(&["2099-01-01"])), None);
  }

  #[test]
  fn p1_the_unsupported_version_message_is_exact() {
    assert_eq!(
      unsupported_version_message("github", "1999-01-01"),
      "MCP server \"github\" answered unsupported protocol version 1999-01-01"
    );
  }

  #[test]
  fn the_timeout_message_is_exact() {
    assert_eq!(
      connect_timeout_message("github", 30000.0),
      "Connection to MCP server \"github\" timed out after 30000ms"
    );
  }
}
