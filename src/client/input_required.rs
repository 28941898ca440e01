//! N6 (SEP-2322): a stateless-era result that asks for input first. Its `inputRequests`
//! (elicitation, sampling, roots) go to the connection's handlers, through the transport's
//! `onRequest`, and the request is sent again, a new id each round, with `inputResponses`
//! keyed as asked and `requestState` echoed as received (or left out when none came).
use crate::host::{Callbacks, Transports};

/// N6: rounds before a request that keeps asking for input is given up.
pub const MAX_ROUNDS: usize = 8;

pub fn too_many_rounds_message() -> String {
  format!("MCP server kept asking for input after {MAX_ROUNDS} rounds")
}

/// `method` with `params`, its input requests fulfilled until the result is complete (a
/// missing `resultType` means complete). Only the final result reaches the caller.
pub async fn request_fulfilled<H: Transports + Callbacks>(
  host: &H,
  transport: &H::Value,
  method: &str,
  params: H::Value,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let mut next = params.clone();
  let mut relisted = false;
  let mut rounds = 0;
  while rounds < MAX_ROUNDS {
    let result = match host
      .request(transport, method, next.clone(), options.clone())
      .await
    {
      Ok(result) => result,
      // N4: -32020, the headers do not match the tool as the server now has it: its list
      // is fetched again (which renews the mirrored parameters), once, and the call repeated.
      Err(error) if method == "tools/call" && !relisted && is_header_mismatch(host, &error) => {
        relisted = true;
        super::listing::paginate(host, transport, "tools/list", "tools", options.clone()).await?;
        continue;
      }
      Err(error) => return Err(error),
    };
    rounds += 1;
    if !asks_for_input(host, &result)? {
      return Ok(result);
    }
    let responses = fulfil(host, transport, &host.field(&result, "inputRequests")?).await?;
    // Each round starts from the caller's params: nothing of another request leaks in.
    next = host.shallow_copy(&params)?;
    host.set_field(&next, "inputResponses", responses)?;
    let state = host.field(&result, "requestState")?;
    if !host.is_undefined(&state) {
      host.set_field(&next, "requestState", state)?;
    }
  }
  Err(host.error(&too_many_rounds_message()))
}

/// N4: -32020 (HeaderMismatch).
fn is_header_mismatch<H: Transports>(host: &H, error: &H::Value) -> bool {
  host
    .field(error, "code")
    .ok()
    .and_then(|c| host.as_number(&c))
    == Some(-32020.0)
}

fn asks_for_input<H: Transports>(host: &H, result: &H::Value) -> Result<bool, H::Value> {
  if !host.is_object(result) {
    return Ok(false);
  }
  let kind = host.field(result, "resultType")?;
  Ok(host.as_string(&kind).as_deref() == Some("input_required"))
}

/// Each input request answered by `transport.onRequest(method, params)`, under its key.
async fn fulfil<H: Transports + Callbacks>(
  host: &H,
  transport: &H::Value,
  requests: &H::Value,
) -> Result<H::Value, H::Value> {
  let responses = host.object(Vec::new())?;
  if !host.is_object(requests) {
    return Ok(responses);
  }
  let handler = host.field(transport, "onRequest")?;
  for key in host.keys(requests)? {
    let request = host.field(requests, &key)?;
    let method = host.field(&request, "method")?;
    let Some(name) = host.as_string(&method) else {
      continue;
    };
    if !host.is_function(&handler) {
      return Err(host.error(&format!(
        "MCP server asked for {name} input, and the connection has no handler for it"
      )));
    }
    let params = host.field(&request, "params")?;
    let answer = host
      .call(&handler, vec![host.string(&name), params])
      .await?;
    host.set_field(&responses, &key, answer)?;
  }
  Ok(responses)
}

/// Whether a connection speaks the stateless era (its results may ask for input).
pub fn is_stateless_connection<H: Transports>(host: &H, connection: &H::Value) -> bool {
  host
    .field(connection, "protocolVersion")
    .ok()
    .and_then(|v| host.as_string(&v))
    .is_some_and(|v| super::handshake::is_stateless(&v))
}
