//! N1/N2: which era a server speaks when the caller asks for `"auto"`: what the probe's
//! outcome means, and the verdicts remembered for the process, per server.
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

pub const AUTO: &str = "auto";
/// N2: how long a stdio server may take to answer the probe (bounded by the connect
/// timeout) before it is taken for a handshake-era one.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
  Stateless(&'static str),
  Handshake,
}

impl Verdict {
  /// How a tool cache stores it: `"handshake"`, or the stateless version.
  pub fn stored(self) -> &'static str {
    match self {
      Verdict::Stateless(version) => version,
      Verdict::Handshake => HANDSHAKE,
    }
  }

  /// A stored verdict; one naming a version we no longer speak reads as none.
  pub fn from_stored(text: &str) -> Option<Verdict> {
    if text == HANDSHAKE {
      return Some(Verdict::Handshake);
    }
    crate::client::handshake::STATELESS_PROTOCOL_VERSIONS
      .iter()
      .find(|v| **v == text)
      .map(|v| Verdict::Stateless(v))
  }
}

const HANDSHAKE: &str = "handshake";

/// What a failed `server/discover` probe says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeFailure {
  /// -32022: the server speaks the stateless era, at another version.
  Unsupported,
  /// The process ended on it (old servers exit on an unknown first request): respawn once.
  Exited,
  /// Anything else: a handshake-era server.
  Legacy,
}

pub fn classify_probe_failure(code: Option<f64>, message: &str) -> ProbeFailure {
  if code == Some(-32022.0) {
    ProbeFailure::Unsupported
  } else if message == "Transport closed" || is_server_ended(message) {
    ProbeFailure::Exited
  } else {
    ProbeFailure::Legacy
  }
}

/// O4/O1: what an OAuth failure looks like from JS: an `OAUTH_*` code, or the name of
/// the TS SDK's `UnauthorizedError`.
pub fn is_authorization_failure(code: Option<&str>, name: Option<&str>) -> bool {
  code.is_some_and(|c| c.starts_with("OAUTH_")) || name == Some("UnauthorizedError")
}

/// A49: a stdio server's stdout ended on the request (the agent 18.3.4's words, ours too).
fn is_server_ended(message: &str) -> bool {
  message == "MCP subprocess closed stdout before responding"
    || message
      .strip_prefix("MCP subprocess exited with code ")
      .and_then(|rest| rest.strip_suffix(" before responding"))
      .is_some_and(|code| code.parse::<i64>().is_ok())
}

/// The server a verdict is about: an HTTP server by origin and path, a stdio server by its
/// command line, environment and directory.
pub fn verdict_key(config: &Value) -> Option<String> {
  match config.get("type").and_then(Value::as_str) {
    Some("http" | "sse") => {
      let mut url = url::Url::parse(config.get("url")?.as_str()?).ok()?;
      url.set_query(None);
      url.set_fragment(None);
      Some(format!("http {url}"))
    }
    _ => {
      let keep = ["command", "args", "env", "cwd"];
      let server: serde_json::Map<String, Value> = keep
        .iter()
        .filter_map(|k| Some((k.to_string(), config.get(*k)?.clone())))
        .collect();
      Some(format!(
        "stdio {}",
        crate::protocol::stable_json::stable_json(&Value::Object(server))
      ))
    }
  }
}

thread_local! {
  // Verdicts are made and read by the connect flow, which runs on the JS thread.
  static VERDICTS: RefCell<HashMap<String, Verdict>> = RefCell::new(HashMap::new());
}

pub fn cached(key: &str) -> Option<Verdict> {
  VERDICTS.with(|v| v.borrow().get(key).copied())
}

pub fn remember(key: &str, verdict: Verdict) {
  VERDICTS.with(|v| v.borrow_mut().insert(key.to_string(), verdict));
}

pub fn forget(key: &str) {
  VERDICTS.with(|v| v.borrow_mut().remove(key));
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn n2_probe_failures() {
    assert_eq!(
      classify_probe_failure(Some(-32022.0), "x"),
      ProbeFailure::Unsupported
    );
    assert_eq!(
      classify_probe_failure(None, "Transport closed"),
      ProbeFailure::Exited
    );
    assert_eq!(
      classify_probe_failure(
        Some(1.0),
        "MCP subprocess exited with code 1 before responding"
      ),
      ProbeFailure::Exited
    );
    assert_eq!(
      classify_probe_failure(None, "MCP subprocess closed stdout before responding"),
      ProbeFailure::Exited
    );
    assert_eq!(
      classify_probe_failure(Some(-32601.0), "Method not found"),
      ProbeFailure::Legacy
    );
    assert_eq!(
      classify_probe_failure(None, "HTTP 404: nope"),
      ProbeFailure::Legacy
    );
  }

  #[test]
  fn authorization_failures_end_the_probe() {
    assert!(is_authorization_failure(Some("OAUTH_TOKEN"), Some("Error")));
    assert!(is_authorization_failure(None, Some("UnauthorizedError")));
    assert!(!is_authorization_failure(
      Some("ECONNREFUSED"),
      Some("Error")
    ));
    assert!(!is_authorization_failure(None, None));
  }

  #[test]
  fn n2_verdict_keys() {
    assert_eq!(
      verdict_key(
        &json!({ "type": "http", "url": "https://a.example/mcp?x=1", "headers": { "A": "b" } })
      ),
      Some("http https://a.example/mcp".to_string())
    );
    let stdio = |env: Value| {
      verdict_key(&json!({ "command": "node", "args": ["s.js"], "env": env, "timeout": 5 }))
    };
    assert_eq!(
      stdio(json!({ "A": "1", "B": "2" })),
      stdio(json!({ "B": "2", "A": "1" }))
    );
    assert_ne!(stdio(json!({ "A": "1" })), stdio(json!({ "A": "2" })));
    for verdict in [Verdict::Handshake, Verdict::Stateless("2026-07-28")] {
      assert_eq!(Verdict::from_stored(verdict.stored()), Some(verdict));
    }
    assert_eq!(Verdict::from_stored("2099-01-01"), None);
    remember("k", Verdict::Handshake);
    assert_eq!(cached("k"), Some(Verdict::Handshake));
    forget("k");
    assert_eq!(cached("k"), None);
  }
}
