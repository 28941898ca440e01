//! The project's own server list, `<cwd>/.mcp.json` (M9).

use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

pub const PROJECT_CONFIG_FILE: &str = ".mcp.json";

/// The enabled servers of one config file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectConfigs {
  pub path: PathBuf,
  pub servers: Vec<(String, Value)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
  #[error("Failed to read MCP config file {}: {source}", path.display())]
  Read { path: PathBuf, source: io::Error },
  #[error("Failed to parse MCP config file {}: {source}", path.display())]
  Parse {
    path: PathBuf,
    source: serde_json::Error,
  },
  #[error("Invalid MCP config file {}: {reason}", path.display())]
  Invalid { path: PathBuf, reason: String },
}

/// Reads `<cwd>/.mcp.json`; no file means no servers, anything else wrong is an error
/// naming the file.
pub fn read_project_configs(cwd: &Path) -> Result<ProjectConfigs, ConfigFileError> {
  let path = cwd.join(PROJECT_CONFIG_FILE);
  let bytes = match std::fs::read(&path) {
    Ok(bytes) => bytes,
    Err(e) if e.kind() == io::ErrorKind::NotFound => {
      return Ok(ProjectConfigs {
        path,
        servers: Vec::new(),
      })
    }
    Err(source) => return Err(ConfigFileError::Read { path, source }),
  };
  // Editors on Windows like to start UTF-8 files with a BOM, which serde_json rejects.
  let text = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes);
  let root: Value = match serde_json::from_slice(text) {
    Ok(root) => root,
    Err(source) => return Err(ConfigFileError::Parse { path, source }),
  };
  match servers_of(root) {
    Ok(servers) => Ok(ProjectConfigs { path, servers }),
    Err(reason) => Err(ConfigFileError::Invalid { path, reason }),
  }
}

fn servers_of(root: Value) -> Result<Vec<(String, Value)>, String> {
  let Value::Object(mut root) = root else {
    return Err("top level must be an object".to_owned());
  };
  // `null` reads as absent, the way the agent's `?? {}` / `?? []` treat it.
  let servers = match root.remove("mcpServers") {
    None | Some(Value::Null) => Map::new(),
    Some(Value::Object(servers)) => servers,
    Some(_) => return Err("\"mcpServers\" must be an object".to_owned()),
  };
  let disabled: Vec<String> = match root.remove("disabledServers") {
    None | Some(Value::Null) => Vec::new(),
    Some(Value::Array(items)) => items
      .into_iter()
      .map(|item| match item {
        Value::String(name) => Ok(name),
        _ => Err("\"disabledServers\" must be an array of strings".to_owned()),
      })
      .collect::<Result<_, _>>()?,
    Some(_) => return Err("\"disabledServers\" must be an array of strings".to_owned()),
  };

  let mut enabled = Vec::with_capacity(servers.len());
  for (name, config) in servers {
    let Some(fields) = config.as_object() else {
      return Err(format!("server \"{name}\" must be an object"));
    };
    if disabled.contains(&name) || fields.get("enabled") == Some(&Value::Bool(false)) {
      continue;
    }
    enabled.push((name, config));
  }
  Ok(enabled)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::manager::test_dir::TempDir;
  use serde_json::json;

  fn with_file(contents: &str) -> TempDir {
    let dir = TempDir::new("config");
    std::fs::write(dir.0.join(PROJECT_CONFIG_FILE), contents).unwrap();
    dir
  }

  fn invalid_reason(contents: &str) -> String {
    let dir = with_file(contents);
    match read_project_configs(&dir.0) {
      Err(ConfigFileError::Invalid { path, reason }) => {
        assert_eq!(path, dir.0.join(PROJECT_CONFIG_FILE));
        reason
      }
      other => panic!("expected Invalid, got {other:?}"),
    }
  }

  #[test]
  fn missing_file_means_no_servers() {
    let dir = TempDir::new("config");
    let configs = read_project_configs(&dir.0).unwrap();
    assert_eq!(configs.path, dir.0.join(".mcp.json"));
    assert!(configs.servers.is_empty());
  }

  #[test]
  fn reads_servers_in_file_order_and_skips_disabled() {
    let dir = with_file(
      r#"{
        "mcpServers": {
          "zeta": {"command": "z"},
          "alpha": {"url": "http://a", "type": "http"},
          "off": {"command": "o", "enabled": false},
          "on": {"command": "o", "enabled": true},
          "listed": {"command": "l"},
          "mid": {"command": "m"}
        },
        "disabledServers": ["listed", "unknown"]
      }"#,
    );
    let configs = read_project_configs(&dir.0).unwrap();
    let names: Vec<&str> = configs.servers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "on", "mid"]);
    assert_eq!(
      configs.servers[1].1,
      json!({"url": "http://a", "type": "http"})
    );
  }

  #[test]
  fn accepts_absent_or_null_sections_and_a_bom() {
    for contents in [
      "{}",
      r#"{"mcpServers": null, "disabledServers": null}"#,
      "\u{feff}{\"other\": 1}",
    ] {
      let dir = with_file(contents);
      assert!(
        read_project_configs(&dir.0).unwrap().servers.is_empty(),
        "{contents}"
      );
    }
  }

  #[test]
  fn rejects_invalid_json() {
    let dir = with_file("{\"mcpServers\": ");
    let err = read_project_configs(&dir.0).unwrap_err();
    assert!(matches!(err, ConfigFileError::Parse { .. }));
    let prefix = format!(
      "Failed to parse MCP config file {}: ",
      dir.0.join(".mcp.json").display()
    );
    assert!(err.to_string().starts_with(&prefix), "{err}");
  }

  #[test]
  fn rejects_wrong_shapes() {
    assert_eq!(invalid_reason("[]"), "top level must be an object");
    assert_eq!(
      invalid_reason(r#"{"mcpServers": []}"#),
      "\"mcpServers\" must be an object"
    );
    assert_eq!(
      invalid_reason(r#"{"disabledServers": "a"}"#),
      "\"disabledServers\" must be an array of strings"
    );
    assert_eq!(
      invalid_reason(r#"{"disabledServers": ["a", 1]}"#),
      "\"disabledServers\" must be an array of strings"
    );
    assert_eq!(
      invalid_reason(r#"{"mcpServers": {"a": {}, "b": "x"}}"#),
      "server \"b\" must be an object"
    );
    // A disabled entry still has to be well-formed.
    assert_eq!(
      invalid_reason(r#"{"mcpServers": {"b": 1}, "disabledServers": ["b"]}"#),
      "server \"b\" must be an object"
    );
    let dir = with_file("3");
    let err = read_project_configs(&dir.0).unwrap_err();
    let want = format!(
      "Invalid MCP config file {}: top level must be an object",
      dir.0.join(".mcp.json").display()
    );
    assert_eq!(err.to_string(), want);
  }

  #[test]
  fn reports_read_errors() {
    // A directory where the file should be cannot be read as a file.
    let dir = TempDir::new("config");
    std::fs::create_dir(dir.0.join(PROJECT_CONFIG_FILE)).unwrap();
    let err = read_project_configs(&dir.0).unwrap_err();
    assert!(matches!(err, ConfigFileError::Read { .. }));
    let prefix = format!(
      "Failed to read MCP config file {}: ",
      dir.0.join(".mcp.json").display()
    );
    assert!(err.to_string().starts_with(&prefix), "{err}");
  }
}
