//! C2 and C6's listings: every page of a `*/list` method, following `nextCursor`.
use crate::host::{Transports, Values};

/// `connection.transport`, or the TypeError naming what is wrong (E2).
pub fn connection_transport<H: Values>(
  host: &H,
  connection: &H::Value,
) -> Result<H::Value, H::Value> {
  if !host.is_object(connection) {
    return Err(host.type_error("The \"connection\" argument must be an object"));
  }
  let transport = host.field(connection, "transport")?;
  if !host.is_object(&transport) {
    return Err(host.type_error("The \"connection.transport\" field must be an MCPTransport"));
  }
  Ok(transport)
}

/// Every item under `key` of every page of `method`: params `{}`, then `{cursor}` while a
/// page has a `nextCursor`. A page that is not an object ends the listing.
pub async fn paginate<H: Transports>(
  host: &H,
  transport: &H::Value,
  method: &str,
  key: &str,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  Ok(
    paginate_with_ttl(host, transport, method, key, options)
      .await?
      .0,
  )
}

/// C4/A28: `capabilities[name] !== undefined`.
pub fn supports<H: Values>(host: &H, capabilities: &H::Value, name: &str) -> bool {
  host.is_object(capabilities)
    && host
      .field(capabilities, name)
      .is_ok_and(|c| !host.is_undefined(&c))
}

/// `paginate`, with N8's freshness: the smallest `ttlMs` of the pages, if any gave one.
pub async fn paginate_with_ttl<H: Transports>(
  host: &H,
  transport: &H::Value,
  method: &str,
  key: &str,
  options: Option<H::Value>,
) -> Result<(H::Value, Option<f64>), H::Value> {
  let mut all = Vec::new();
  let mut cursor = None;
  let mut ttl: Option<f64> = None;
  loop {
    let params = match cursor.take() {
      None => host.object(Vec::new())?,
      Some(cursor) => host.object(vec![("cursor", cursor)])?,
    };
    let page = host
      .request(transport, method, params, options.clone())
      .await?;
    if !host.is_object(&page) {
      break;
    }
    if let Some(items) = host.items(&host.field(&page, key)?) {
      all.extend(items);
    }
    if let Some(ms) = host
      .as_number(&host.field(&page, "ttlMs")?)
      .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
      ttl = Some(ttl.map_or(ms, |t| t.min(ms)));
    }
    let next = host.field(&page, "nextCursor")?;
    if host.is_nullish(&next) {
      break;
    }
    cursor = Some(next);
  }
  Ok((host.array(all)?, ttl))
}

/// N8: where a connection keeps until when its tool list is fresh (milliseconds since the
/// epoch), when the server gave the list a `ttlMs`.
pub const TOOLS_FRESH_UNTIL: &str = "toolsFreshUntil";

/// C2: `[]` without the tools capability; `connection.tools` once listed; else every page
/// of `tools/list`, stored in `connection.tools`.
pub async fn list_tools<H: Transports>(
  host: H,
  connection: H::Value,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let transport = connection_transport(&host, &connection)?;
  let capabilities = host.field(&connection, "capabilities")?;
  if !supports(&host, &capabilities, "tools") {
    return host.array(Vec::new());
  }
  let cached = host.field(&connection, "tools")?;
  let fresh_until = host.as_number(&host.field(&connection, TOOLS_FRESH_UNTIL)?);
  let fresh = fresh_until.is_none_or(|until| (crate::persist::now_ms() as f64) < until);
  if host.truthy(&cached) && fresh {
    return Ok(cached);
  }
  let (tools, ttl) = paginate_with_ttl(&host, &transport, "tools/list", "tools", options).await?;
  host.set_field(&connection, "tools", tools.clone())?;
  match ttl {
    Some(ttl) => {
      let until = crate::persist::now_ms() as f64 + ttl;
      host.set_field(
        &connection,
        TOOLS_FRESH_UNTIL,
        host.json(&format!("{}", until as u64))?,
      )?;
    }
    None if fresh_until.is_some() => host.delete_field(&connection, TOOLS_FRESH_UNTIL),
    None => {}
  }
  Ok(tools)
}

/// C3's request: the connection's transport and the `tools/call` params `{name, arguments}`
/// (`arguments` defaults to `{}`).
pub fn tool_call<H: Values>(
  host: &H,
  connection: &H::Value,
  tool: H::Value,
  arguments: Option<H::Value>,
) -> Result<(H::Value, H::Value), H::Value> {
  let transport = connection_transport(host, connection)?;
  let arguments = match arguments.filter(|a| !host.is_nullish(a)) {
    Some(arguments) => arguments,
    None => host.object(Vec::new())?,
  };
  let params = host.object(vec![("name", tool), ("arguments", arguments)])?;
  Ok((transport, params))
}

/// C3: `tools/call`; the result is the server's, untouched.
pub async fn call_tool<H: Transports>(
  host: H,
  connection: H::Value,
  tool: H::Value,
  arguments: Option<H::Value>,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let (transport, params) = tool_call(&host, &connection, tool, arguments)?;
  host
    .request(&transport, "tools/call", params, options)
    .await
}

/// P6: the lists cached on a connection that a server notification makes stale (a change
/// of the resources may change their templates too).
pub fn stale_list(method: &str) -> &'static [&'static str] {
  match method {
    "notifications/tools/list_changed" => &["tools"],
    "notifications/resources/list_changed" => &["resources", "resourceTemplates"],
    "notifications/prompts/list_changed" => &["prompts"],
    _ => &[],
  }
}
