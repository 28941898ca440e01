//! Server config validation (M2): what must hold before a connect is attempted.

use serde_json::Value;

/// The problems with one server's config, in the agent's words; empty means valid.
pub fn validate_server_config(name: &str, config: &Value) -> Vec<String> {
  let Some(config) = config.as_object() else {
    return vec![format!("Server \"{name}\": config must be an object")];
  };
  // W8: an empty string is as good as no field at all.
  let has = |key: &str| {
    config
      .get(key)
      .and_then(Value::as_str)
      .is_some_and(|s| !s.is_empty())
  };
  let has_command = has("command");
  let has_url = has("url");
  let server_type = match config.get("type") {
    None | Some(Value::Null) => "stdio".to_owned(),
    Some(Value::String(s)) => s.clone(),
    Some(other) => other.to_string(),
  };

  let mut messages = Vec::new();
  if has_command && has_url {
    messages.push(format!(
      "Server \"{name}\": both \"command\" and \"url\" are set - server should be either stdio (command) OR http/sse (url), not both"
    ));
  }
  match server_type.as_str() {
    "stdio" if !has_command => messages.push(format!(
      "Server \"{name}\": stdio server requires \"command\" field"
    )),
    "http" | "sse" if !has_url => messages.push(format!(
      "Server \"{name}\": {server_type} server requires \"url\" field"
    )),
    "stdio" | "http" | "sse" => {}
    _ => messages.push(format!(
      "Server \"{name}\": unknown server type \"{server_type}\""
    )),
  }
  messages
}

/// Several messages for one server, as one error string.
pub fn join_messages(messages: &[String]) -> String {
  messages.join("; ")
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn check(config: Value) -> Vec<String> {
    validate_server_config("s", &config)
  }

  #[test]
  fn accepts_valid_configs() {
    assert!(check(json!({"command": "node"})).is_empty());
    assert!(check(json!({"type": null, "command": "node", "args": []})).is_empty());
    assert!(check(json!({"type": "stdio", "command": "node"})).is_empty());
    assert!(check(json!({"type": "http", "url": "http://x"})).is_empty());
    assert!(check(json!({"type": "sse", "url": "http://x"})).is_empty());
  }

  #[test]
  fn reports_missing_fields() {
    assert_eq!(
      check(json!({})),
      ["Server \"s\": stdio server requires \"command\" field"]
    );
    assert_eq!(
      check(json!({"command": ""})),
      ["Server \"s\": stdio server requires \"command\" field"]
    );
    assert_eq!(
      check(json!({"command": 5})),
      ["Server \"s\": stdio server requires \"command\" field"]
    );
    assert_eq!(
      check(json!({"url": "http://x"})),
      ["Server \"s\": stdio server requires \"command\" field"]
    );
    assert_eq!(
      check(json!({"type": "http"})),
      ["Server \"s\": http server requires \"url\" field"]
    );
    assert_eq!(
      check(json!({"type": "sse", "url": "", "command": "x"})),
      ["Server \"s\": sse server requires \"url\" field"]
    );
  }

  #[test]
  fn reports_both_command_and_url() {
    let both = "Server \"s\": both \"command\" and \"url\" are set - server should be either stdio (command) OR http/sse (url), not both";
    assert_eq!(check(json!({"command": "a", "url": "b"})), [both]);
    assert_eq!(
      check(json!({"type": "http", "command": "a", "url": "b"})),
      [both]
    );
    assert_eq!(
      check(json!({"type": "ws", "command": "a", "url": "b"})),
      [both, "Server \"s\": unknown server type \"ws\""]
    );
  }

  #[test]
  fn reports_unknown_types() {
    assert_eq!(
      check(json!({"type": "ws"})),
      ["Server \"s\": unknown server type \"ws\""]
    );
    assert_eq!(
      check(json!({"type": ""})),
      ["Server \"s\": unknown server type \"\""]
    );
    assert_eq!(
      check(json!({"type": "HTTP", "url": "u"})),
      ["Server \"s\": unknown server type \"HTTP\""]
    );
    assert_eq!(
      check(json!({"type": 5, "command": "x"})),
      ["Server \"s\": unknown server type \"5\""]
    );
    assert_eq!(
      check(json!({"type": ["a"]})),
      ["Server \"s\": unknown server type \"[\"a\"]\""]
    );
  }

  #[test]
  fn rejects_non_objects() {
    for config in [json!(null), json!("x"), json!([1]), json!(3)] {
      assert_eq!(check(config), ["Server \"s\": config must be an object"]);
    }
  }

  #[test]
  fn joins_messages() {
    assert_eq!(join_messages(&[]), "");
    assert_eq!(join_messages(&["a".to_owned()]), "a");
    assert_eq!(join_messages(&["a".to_owned(), "b".to_owned()]), "a; b");
  }
}
