//! N9: methods the stateless era removed, as a stateless connection still offers them:
//! `ping` is a `server/discover`, and `logging/setLevel` becomes the level every later
//! request carries in its `_meta`.
use super::input_required::is_stateless_connection;
use crate::host::Transports;

pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// `ping`: the server's empty result, or for a stateless connection `{}` once
/// `server/discover` succeeds.
pub async fn ping<H: Transports>(
  host: &H,
  connection: &H::Value,
  transport: &H::Value,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  if !is_stateless_connection(host, connection) {
    let params = host.object(Vec::new())?;
    return host.request(transport, "ping", params, options).await;
  }
  let params = host.object(Vec::new())?;
  host
    .request(transport, "server/discover", params, options)
    .await?;
  host.object(Vec::new())
}

/// `logging/setLevel {level}`, or for a stateless connection the `_meta` level of the
/// requests that follow.
pub async fn set_logging_level<H: Transports>(
  host: &H,
  connection: &H::Value,
  transport: &H::Value,
  level: H::Value,
  options: Option<H::Value>,
) -> Result<(), H::Value> {
  if is_stateless_connection(host, connection) {
    let level = host.to_json(&level)?.unwrap_or_else(|| "null".to_string());
    if host.set_meta_entry(transport, META_LOG_LEVEL, &level) {
      return Ok(());
    }
  }
  let params = host.object(vec![("level", level)])?;
  host
    .request(transport, "logging/setLevel", params, options)
    .await?;
  Ok(())
}
