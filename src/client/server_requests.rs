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

/// What a thrown value looked like, for A3's `toJsonRpcError`.
pub enum ThrownShape {
  /// An `Error`: its `code` when that is a number, and its message.
  Error {
    code: Option<f64>,
    message: String,
  },
  /// Any other object: its `code` and `message` when they are a number and a string.
  Object {
    code: Option<f64>,
    message: Option<String>,
  },
  Other,
}

/// A3: an `Error` keeps its message and numeric `code` (else -32603); a `{code: number,
/// message: string}` object is taken as it is; anything else is `-32603 Internal error`.
pub fn to_json_rpc_error(thrown: ThrownShape) -> (f64, String) {
  let internal = (
    f64::from(INTERNAL_ERROR as i32),
    "Internal error".to_string(),
  );
  match thrown {
    ThrownShape::Error { code, message } => (code.unwrap_or(internal.0), message),
    ThrownShape::Object {
      code: Some(code),
      message: Some(message),
    } => (code, message),
    _ => internal,
  }
}

/// A3 `toJsonRpcError(error)` on a host value: `{code, message}` by `to_json_rpc_error`.
pub fn json_rpc_error_value<H: Values>(h: &H, thrown: &H::Value) -> Result<H::Value, H::Value> {
  let field = |name: &str| {
    h.is_object(thrown)
      .then(|| h.field(thrown, name).ok())
      .flatten()
  };
  let code = field("code").and_then(|code| h.as_number(&code));
  let shape = if h.is_error(thrown) {
    ThrownShape::Error {
      code,
      message: h.message(thrown),
    }
  } else if h.is_object(thrown) {
    ThrownShape::Object {
      code,
      message: field("message").and_then(|message| h.as_string(&message)),
    }
  } else {
    ThrownShape::Other
  };
  let (code, message) = to_json_rpc_error(shape);
  h.object(vec![
    ("code", h.number(code)),
    ("message", h.string(&message)),
  ])
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a3_errors_objects_and_the_rest() {
    let error = |code, message: &str| ThrownShape::Error {
      code,
      message: message.into(),
    };
    assert_eq!(
      to_json_rpc_error(error(Some(-32001.0), "gone")),
      (-32001.0, "gone".into())
    );
    assert_eq!(
      to_json_rpc_error(error(None, "boom")),
      (-32603.0, "boom".into())
    );
    let object = |code, message: Option<&str>| ThrownShape::Object {
      code,
      message: message.map(str::to_string),
    };
    assert_eq!(
      to_json_rpc_error(object(Some(7.0), Some("seven"))),
      (7.0, "seven".into())
    );
    for partial in [
      object(Some(7.0), None),
      object(None, Some("x")),
      ThrownShape::Other,
    ] {
      assert_eq!(
        to_json_rpc_error(partial),
        (-32603.0, "Internal error".into())
      );
    }
  }
  #[test]
  fn a3_on_host_values() {
    use crate::fake_host::{error, v, FakeHost, V};
    let host = FakeHost::new();
    let of = |thrown: V| json_rpc_error_value(&host, &thrown).map(|value| value.to_json());
    let object = serde_json::json!({ "code": -32602, "message": "bad params" });
    assert_eq!(of(v(object.clone())).ok(), Some(object));
    let internal = serde_json::json!({ "code": -32603, "message": "Internal error" });
    assert_eq!(
      of(v(serde_json::json!({ "message": "no code" }))).ok(),
      Some(internal.clone())
    );
    assert_eq!(of(V::Str("plain".into())).ok(), Some(internal));
    let thrown = serde_json::json!({ "code": -32603, "message": "boom" });
    assert_eq!(of(error("boom")).ok(), Some(thrown));
  }
}
