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
  match parse_sse(&answer.body, |data| host.json(data), |v| host.truthy(v)) {
    Some(value) if !host.is_nullish(&value) => Ok(value),
    _ => Err(host.error("Failed to parse MCP response")),
  }
}

/// A6: how long a call without the caller's signal may take.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// A6: `work`, unless the caller's `signal` aborts first (its reason is the error) or, with
/// no signal, 60 s pass (an Error named `TimeoutError`, as `AbortSignal.timeout` gives).
pub async fn bounded<H, T>(
  host: &H,
  signal: Option<&H::Value>,
  work: impl std::future::Future<Output = Result<T, H::Value>>,
) -> Result<T, H::Value>
where
  H: crate::host::Signals + crate::host::Clock,
{
  use futures::future::{select, Either};
  if let Some(reason) = signal.and_then(|s| host.abort_reason(s)) {
    return Err(reason);
  }
  let stop: futures::future::LocalBoxFuture<'static, H::Value> = match signal {
    Some(signal) => host.when_aborted(signal),
    None => {
      let timeout = host.error("The operation was aborted due to timeout");
      let _ = host.set_field(&timeout, "name", host.string("TimeoutError"));
      let sleep = host.sleep(DEADLINE);
      Box::pin(async move {
        sleep.await;
        timeout
      })
    }
  };
  match select(std::pin::pin!(work), stop).await {
    Either::Left((outcome, _)) => outcome,
    Either::Right((reason, _)) => Err(reason),
  }
}
