//! M5: what the default tool objects hold, and what their `execute` does. A factory
//! (`options.toolFactory`) replaces them; the host builds the objects.
use super::host::{Compat, ManagerHost};
use super::naming::{create_mcp_tool_name, create_v18_tool_name};
use crate::host::Values;

/// One default tool: `{name, label, description, parameters, mcpServerName, mcpToolName,
/// deferred, execute}`.
pub struct DefaultTool<V> {
  pub name: String,
  pub label: String,
  pub description: String,
  pub parameters: V,
  pub server: String,
  pub tool: String,
}

/// The default tools for a listing; definitions that are not objects with a string `name`
/// are skipped.
pub fn default_tools<H: Values>(
  host: &H,
  server: &str,
  definitions: &H::Value,
  compat: Compat,
) -> Result<Vec<DefaultTool<H::Value>>, H::Value> {
  let name_of = match compat {
    Compat::V12 => create_mcp_tool_name,
    Compat::V18 => create_v18_tool_name,
  };
  let mut tools = Vec::new();
  for definition in host.items(definitions).unwrap_or_default() {
    if !host.is_object(&definition) {
      continue;
    }
    let Some(tool) = host.as_string(&host.field(&definition, "name")?) else {
      continue;
    };
    let description = host
      .as_string(&host.field(&definition, "description")?)
      .filter(|d| !d.is_empty())
      .unwrap_or_else(|| format!("MCP tool from {server}"));
    tools.push(DefaultTool {
      name: name_of(server, &tool),
      label: format!("{server}/{tool}"),
      description,
      parameters: parameters(host, &host.field(&definition, "inputSchema")?)?,
      server: server.to_string(),
      tool,
    });
  }
  Ok(tools)
}

/// A copy of the input schema with `properties: {}` added to an object schema without it;
/// no schema at all is `{type: "object", properties: {}}`.
fn parameters<H: Values>(host: &H, schema: &H::Value) -> Result<H::Value, H::Value> {
  let copy = if host.is_object(schema) {
    host.shallow_copy(schema)?
  } else {
    host.object(vec![("type", host.string("object"))])?
  };
  let is_object = host.as_string(&host.field(&copy, "type")?).as_deref() == Some("object");
  if is_object && host.is_nullish(&host.field(&copy, "properties")?) {
    host.set_field(&copy, "properties", host.object(Vec::new())?)?;
  }
  Ok(copy)
}

/// `execute(args, signal)`: a live tool calls on its connection (the one object per server,
/// updated in place by reconnects); a deferred one first waits for it through
/// `this.waitForConnection` (W1).
pub async fn execute<H: ManagerHost>(
  host: H,
  server: String,
  tool: String,
  connection: Option<H::Value>,
  arguments: H::Value,
  options: H::Value,
) -> Result<H::Value, H::Value> {
  let connection = match connection {
    Some(connection) => connection,
    None => host.wait_for_connection(&server).await?,
  };
  let tool = host.string(&tool);
  crate::client::call_tool(host, connection, tool, Some(arguments), Some(options)).await
}
