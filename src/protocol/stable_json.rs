//! JSON text that does not depend on the order keys were written in: what config hashes
//! and verdict keys are computed over.
use serde_json::Value;

/// Compact JSON with object keys sorted (byte order, recursively), so equal configs hash
/// equally whatever order their keys were written in.
pub fn stable_json(value: &Value) -> String {
  let mut out = String::new();
  write_stable(value, &mut out);
  out
}

fn write_stable(value: &Value, out: &mut String) {
  match value {
    Value::Object(map) => {
      let mut fields: Vec<_> = map.iter().collect();
      fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
      out.push('{');
      for (i, (key, field)) in fields.into_iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        out.push_str(&Value::from(key.as_str()).to_string());
        out.push(':');
        write_stable(field, out);
      }
      out.push('}');
    }
    Value::Array(items) => {
      out.push('[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push(',');
        }
        write_stable(item, out);
      }
      out.push(']');
    }
    scalar => out.push_str(&scalar.to_string()),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn stable_json_sorts_keys_recursively() {
    let config = json!({"b": {"y": [3, {"q": 1, "p": null}], "x": "s"}, "a": 1.5, "A": true});
    assert_eq!(
      stable_json(&config),
      r#"{"A":true,"a":1.5,"b":{"x":"s","y":[3,{"p":null,"q":1}]}}"#
    );
    assert_eq!(stable_json(&json!([])), "[]");
    assert_eq!(stable_json(&json!("é\"\n")), "\"é\\\"\\n\"");
  }
}
