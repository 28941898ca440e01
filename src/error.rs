//! Failures the contract makes observable. `Display` is the exact text the JS `Error` gets.
use std::time::Duration;

use thiserror::Error;

#[derive(Debug, Clone, Error, PartialEq)]
pub enum CoreError {
  /// T10: the transport was never connected or is closed.
  #[error("Transport not connected")]
  NotConnected,
  /// S4/S6: the transport closed while the request was pending.
  #[error("Transport closed")]
  TransportClosed {
    /// S5: the last 8 KiB of stderr when the close was caused by the process ending.
    stderr: Option<String>,
  },
  /// T7
  #[error("Request timeout after {}ms", .0.as_millis())]
  RequestTimeout(Duration),
  /// T4: a JSON-RPC error response. `data` is raw JSON text.
  #[error("MCP error {code}: {message}")]
  Rpc {
    code: i64,
    message: String,
    data: Option<String>,
  },
  /// S1: the command could not be started.
  #[error("Failed to start MCP server \"{command}\": {reason} ({code})")]
  Spawn {
    command: String,
    reason: String,
    code: String,
  },
  /// S7: the frame could not be written to the server.
  #[error("Failed to write to MCP server: {0}")]
  Write(String),
  /// S4: reading the server's stdout failed (not EOF).
  #[error("Failed to read from MCP server: {0}")]
  Read(String),
  /// E3: one incoming message was larger than the limit and was discarded.
  #[error("Discarded an incoming message larger than maxMessageBytes ({limit} bytes)")]
  MessageTooLarge { limit: usize },
}

impl CoreError {
  /// The `code` property of the JS error, where the contract gives one as a string.
  pub fn string_code(&self) -> Option<&str> {
    match self {
      CoreError::Spawn { code, .. } => Some(code),
      _ => None,
    }
  }
}

/// The symbolic name Node uses for an errno (`ENOENT`, …), so JS callers can branch on `code`.
pub fn errno_name(errno: i32) -> String {
  let name = match errno {
    libc::EPERM => "EPERM",
    libc::ENOENT => "ENOENT",
    libc::EIO => "EIO",
    libc::E2BIG => "E2BIG",
    libc::ENOEXEC => "ENOEXEC",
    libc::EAGAIN => "EAGAIN",
    libc::ENOMEM => "ENOMEM",
    libc::EACCES => "EACCES",
    libc::ENOTDIR => "ENOTDIR",
    libc::EISDIR => "EISDIR",
    libc::EINVAL => "EINVAL",
    libc::ENFILE => "ENFILE",
    libc::EMFILE => "EMFILE",
    libc::ETXTBSY => "ETXTBSY",
    libc::EPIPE => "EPIPE",
    libc::ENAMETOOLONG => "ENAMETOOLONG",
    libc::ELOOP => "ELOOP",
    _ => return format!("E{errno}"),
  };
  name.to_string()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn messages_match_the_contract() {
    assert_eq!(
      CoreError::NotConnected.to_string(),
      "Transport not connected"
    );
    assert_eq!(
      CoreError::TransportClosed { stderr: None }.to_string(),
      "Transport closed"
    );
    assert_eq!(
      CoreError::RequestTimeout(Duration::from_millis(1500)).to_string(),
      "Request timeout after 1500ms"
    );
    let rpc = CoreError::Rpc {
      code: -32601,
      message: "Method not found".into(),
      data: None,
    };
    assert_eq!(rpc.to_string(), "MCP error -32601: Method not found");
  }

  #[test]
  fn errno_names_follow_node() {
    assert_eq!(errno_name(libc::ENOENT), "ENOENT");
    assert_eq!(errno_name(libc::EACCES), "EACCES");
  }
}
