//! T11: the answer to a request the server sent us, from what the caller's `onRequest`
//! handler returned or threw.
use crate::host::{Pending, Values};
use crate::protocol::message::{RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};

/// The result as JSON text, or the error to send. `handled` is the handler's outcome;
/// `None` when there is no handler. A handler that returns nothing answers `{}`.
pub async fn answer<H: Values>(
  host: &H,
  handled: Option<Pending<H::Value>>,
) -> Result<String, RpcError> {
  let Some(handled) = handled else {
    return Err(RpcError {
      code: METHOD_NOT_FOUND,
      message: "Method not found".to_string(),
      data: None,
    });
  };
  let value = handled.await.map_err(|thrown| rpc_error(host, &thrown))?;
  match host.to_json(&value) {
    Ok(Some(text)) => Ok(text),
    Ok(None) => Ok("{}".to_string()),
    Err(thrown) => Err(rpc_error(host, &thrown)),
  }
}

/// A thrown value as a JSON-RPC error: its integer `code` if it has one, else -32603; its
/// `message` (a thrown string is the message); its `data` as JSON.
pub fn rpc_error<H: Values>(host: &H, thrown: &H::Value) -> RpcError {
  let field = |name: &str| {
    host
      .is_object(thrown)
      .then(|| host.field(thrown, name).ok())
      .flatten()
  };
  let code = field("code")
    .and_then(|code| host.as_number(&code))
    .filter(|code| code.fract() == 0.0)
    .map_or(INTERNAL_ERROR, |code| code as i64);
  let message = if host.is_object(thrown) {
    field("message").and_then(|m| host.as_string(&m))
  } else {
    host.as_string(thrown)
  };
  let data = field("data")
    .filter(|data| !host.is_nullish(data))
    .and_then(|data| host.to_json(&data).ok().flatten());
  RpcError {
    code,
    message: message.unwrap_or_else(|| "Internal error".to_string()),
    data,
  }
}
