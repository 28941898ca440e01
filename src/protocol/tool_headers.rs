//! N4 (SEP-2243): tool parameters a server wants mirrored into `Mcp-Param-<Name>` headers
//! (`x-mcp-header` on a property of the tool's input schema), which tools `tools/list` must
//! drop because their annotations are invalid, and the headers of a `tools/call`.
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::headers::header_value;

/// For each tool, its mirrored parameters: `(parameter, header name)`.
pub type ToolHeaders = HashMap<String, Vec<(String, String)>>;

/// A `tools/list` result with the tools of invalid annotations removed; what they were and
/// why; and the mirrored parameters of the tools kept. `None` when nothing had to change.
pub struct Screened {
  pub result: Option<String>,
  pub dropped: Vec<(String, String)>,
  pub headers: ToolHeaders,
}

pub fn screen_tools_list(result: &str) -> Option<Screened> {
  let mut result: Map<String, Value> = serde_json::from_str(result).ok()?;
  let tools = result.get_mut("tools")?.as_array_mut()?;
  let mut dropped = Vec::new();
  let mut headers = ToolHeaders::new();
  tools.retain(|tool| {
    let name = tool
      .get("name")
      .and_then(Value::as_str)
      .unwrap_or("")
      .to_string();
    match annotations(tool) {
      Ok(mirrored) => {
        if !mirrored.is_empty() {
          headers.insert(name, mirrored);
        }
        true
      }
      Err(reason) => {
        dropped.push((name, reason));
        false
      }
    }
  });
  let rewritten = (!dropped.is_empty()).then(|| Value::Object(result).to_string());
  Some(Screened {
    result: rewritten,
    dropped,
    headers,
  })
}

/// The `x-mcp-header` annotations of one tool, or why they are invalid.
fn annotations(tool: &Value) -> Result<Vec<(String, String)>, String> {
  let Some(properties) = tool
    .get("inputSchema")
    .and_then(|s| s.get("properties"))
    .and_then(Value::as_object)
  else {
    return Ok(Vec::new());
  };
  let mut mirrored: Vec<(String, String)> = Vec::new();
  for (parameter, schema) in properties {
    let Some(header) = schema.get("x-mcp-header") else {
      continue;
    };
    let Some(header) = header.as_str() else {
      return Err(format!("x-mcp-header of \"{parameter}\" is not a string"));
    };
    if header.is_empty() || !header.bytes().all(is_tchar) {
      return Err(format!(
        "x-mcp-header {header:?} of \"{parameter}\" is not a header name"
      ));
    }
    let kind = schema.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("string" | "integer" | "boolean")) {
      return Err(format!(
        "x-mcp-header of \"{parameter}\" is on a {} parameter, not a string, integer or boolean",
        kind.unwrap_or("untyped")
      ));
    }
    if mirrored.iter().any(|(_, h)| h.eq_ignore_ascii_case(header)) {
      return Err(format!("x-mcp-header {header:?} is used twice"));
    }
    mirrored.push((parameter.clone(), header.to_string()));
  }
  Ok(mirrored)
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
  b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers of a `tools/call` frame, for the tools `known` mirrors.
pub fn call_headers(frame: &str, known: &ToolHeaders) -> Vec<(String, String)> {
  if known.is_empty() {
    return Vec::new();
  }
  #[derive(serde::Deserialize)]
  struct Params {
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
  }
  #[derive(serde::Deserialize)]
  struct Frame {
    method: String,
    params: Params,
  }
  let Ok(frame) = serde_json::from_str::<Frame>(frame) else {
    return Vec::new();
  };
  if frame.method != "tools/call" {
    return Vec::new();
  }
  let Some(mirrored) = known.get(&frame.params.name) else {
    return Vec::new();
  };
  mirrored
    .iter()
    .filter_map(|(parameter, header)| {
      let value = match frame.params.arguments.get(parameter)? {
        Value::String(text) => header_value(text).into_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) if number.is_i64() || number.is_u64() => number.to_string(),
        _ => return None,
      };
      Some((format!("mcp-param-{}", header.to_ascii_lowercase()), value))
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn tool(name: &str, properties: Value) -> Value {
    json!({ "name": name, "inputSchema": { "type": "object", "properties": properties } })
  }

  #[test]
  fn n4_invalid_annotations_drop_the_tool_and_keep_the_others() {
    let result = json!({ "tools": [
      tool("valid", json!({ "region": { "type": "string", "x-mcp-header": "Region" } })),
      tool("empty", json!({ "v": { "type": "string", "x-mcp-header": "" } })),
      tool("object", json!({ "v": { "type": "object", "x-mcp-header": "Data" } })),
      tool("number", json!({ "v": { "type": "number", "x-mcp-header": "Score" } })),
      tool("twice", json!({ "a": { "type": "string", "x-mcp-header": "MyField" }, "b": { "type": "string", "x-mcp-header": "myfield" } })),
      tool("space", json!({ "v": { "type": "string", "x-mcp-header": "My Region" } })),
      tool("colon", json!({ "v": { "type": "string", "x-mcp-header": "Region:Primary" } })),
      tool("accent", json!({ "v": { "type": "string", "x-mcp-header": "Région" } })),
      tool("plain", json!({ "q": { "type": "string" } })),
    ], "nextCursor": "2" });
    let screened = screen_tools_list(&result.to_string()).unwrap();
    let kept: Value = serde_json::from_str(screened.result.as_deref().unwrap()).unwrap();
    let names: Vec<&str> = kept["tools"]
      .as_array()
      .unwrap()
      .iter()
      .map(|t| t["name"].as_str().unwrap())
      .collect();
    assert_eq!(names, ["valid", "plain"]);
    assert_eq!(kept["nextCursor"], "2");
    assert_eq!(screened.dropped.len(), 7);
    assert_eq!(
      screened.headers["valid"],
      [("region".to_string(), "Region".to_string())]
    );
    assert!(!screened.headers.contains_key("plain"));
  }

  #[test]
  fn n4_nothing_to_drop_leaves_the_result_alone() {
    let result =
      json!({ "tools": [tool("a", json!({ "x": { "type": "integer", "x-mcp-header": "X" } }))] });
    let screened = screen_tools_list(&result.to_string()).unwrap();
    assert!(screened.result.is_none());
    assert!(screened.dropped.is_empty());
  }

  #[test]
  fn n4_call_headers_encode_each_type_and_skip_null() {
    let mut known = ToolHeaders::new();
    known.insert(
      "t".into(),
      ["Region", "Priority", "Verbose", "Missing", "Accent"]
        .iter()
        .map(|h| (h.to_lowercase(), h.to_string()))
        .collect(),
    );
    let frame = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "t", "arguments": {
      "region": "us-west1", "priority": 42, "verbose": null, "accent": "Hello, 世界"
    } } });
    assert_eq!(
      call_headers(&frame.to_string(), &known),
      [
        ("mcp-param-region".to_string(), "us-west1".to_string()),
        ("mcp-param-priority".to_string(), "42".to_string()),
        (
          "mcp-param-accent".to_string(),
          "=?base64?SGVsbG8sIOS4lueVjA==?=".to_string()
        ),
      ]
    );
    let other = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "u", "arguments": { "region": "x" } } });
    assert!(call_headers(&other.to_string(), &known).is_empty());
  }
}
