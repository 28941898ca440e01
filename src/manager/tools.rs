//! M5: what the default tool objects hold, and what their `execute` does. A factory
//! (`options.toolFactory`) replaces them; the host builds the objects.
use std::rc::Rc;

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
/// M5: the caller's `toolFactory`, when it gave one (an object).
fn factory<H: ManagerHost>(h: &H) -> Option<H::Value> {
  let options = h.options()?;
  let factory = h.field(&options, "toolFactory").ok()?;
  h.is_object(&factory).then_some(factory)
}

/// A factory's answer, as an array (anything else becomes no tools).
fn as_array<H: Values>(h: &H, value: H::Value) -> Result<H::Value, H::Value> {
  if h.items(&value).is_some() {
    Ok(value)
  } else {
    h.array(Vec::new())
  }
}

/// M5: a connected server's tools: `toolFactory.live(connection, definitions)` (A33:
/// `reconnect` last), or the default ones.
pub fn live<H: ManagerHost>(
  h: &H,
  name: &str,
  connection: &H::Value,
  definitions: &H::Value,
  reconnect: Option<&H::Value>,
) -> Result<H::Value, H::Value> {
  let Some(factory) = factory(h) else {
    return h.live_tools(name, connection, definitions, reconnect);
  };
  let mut args = vec![connection.clone(), definitions.clone()];
  args.extend(reconnect.cloned());
  as_array(h, h.call_now(&factory, "live", args)?)
}

/// M4/M5: tools from a cached listing: `toolFactory.deferred(name, definitions,
/// getConnection, source)` (A33: `reconnect` last), or the default ones, which wait for the
/// connection first. `getConnection` goes through the manager object (W1).
pub fn deferred<H: ManagerHost>(
  h: &H,
  name: &str,
  definitions: &H::Value,
  source: Option<&H::Value>,
  reconnect: Option<&H::Value>,
) -> Result<H::Value, H::Value> {
  let Some(factory) = factory(h) else {
    return h.deferred_tools(name, definitions, source, reconnect);
  };
  let (host, server) = (h.clone(), name.to_string());
  let get_connection = h.function(
    "getConnection",
    Rc::new(move |_| host.wait_for_connection(&server)),
  )?;
  let source = source.cloned().unwrap_or_else(|| h.undefined());
  let mut args = vec![h.string(name), definitions.clone(), get_connection, source];
  args.extend(reconnect.cloned());
  as_array(h, h.call_now(&factory, "deferred", args)?)
}

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
