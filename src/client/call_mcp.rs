//! J2 `callMCP`: what the answer to one POST becomes.
use crate::host::Values;
use crate::protocol::parse_sse::parse_sse;
use crate::transport::one_shot::Answer;

/// The JSON-RPC envelope of a 2xx answer (read with J1), else the error: `MCP request
/// failed: <status> <statusText>`, or `Failed to parse MCP response` when there is none.
pub fn envelope<H: Values>(host: &H, answer: &Answer) -> Result<H::Value, H::Value> {
  if !(200..300).contains(&answer.status) {
    return Err(host.error(&format!(
      "MCP request failed: {} {}",
      answer.status, answer.status_text
    )));
  }
  match parse_sse(&answer.body, |data| host.json(data), |v| host.truthy(v))? {
    Some(value) if !host.is_nullish(&value) => Ok(value),
    _ => Err(host.error("Failed to parse MCP response")),
  }
}
