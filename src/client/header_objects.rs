//! A24 on the agent's plain header objects: `mergeMCPHeaders`, `setGeneratedHeader` and
//! `withoutHeader`, read and written through the host's values. Names compare in any case;
//! what a getter throws is thrown on.
use crate::host::Values;
use crate::protocol::header_policy::{merge, same_name};

/// A plain object: an object that is not an array.
pub fn is_record<H: Values>(h: &H, value: &H::Value) -> bool {
  h.is_object(value) && h.items(value).is_none()
}

/// An object's own headers, in order; nothing for a value that is not an object.
pub fn entries<H: Values>(h: &H, headers: &H::Value) -> Result<Vec<(String, H::Value)>, H::Value> {
  if !is_record(h, headers) {
    return Ok(Vec::new());
  }
  h.keys(headers)?
    .into_iter()
    .map(|name| {
      let value = h.field(headers, &name)?;
      Ok((name, value))
    })
    .collect()
}

/// The string entries of `headers` (values that are not strings are left out).
pub fn string_entries<H: Values>(
  h: &H,
  headers: &H::Value,
) -> Result<Vec<(String, String)>, H::Value> {
  Ok(
    entries(h, headers)?
      .into_iter()
      .filter_map(|(name, value)| Some((name, h.as_string(&value)?)))
      .collect(),
  )
}

fn header_name<H: Values>(h: &H, name: &H::Value) -> Result<String, H::Value> {
  h.as_string(name)
    .ok_or_else(|| h.type_error("The \"name\" argument must be a string"))
}

/// `mergeMCPHeaders({generated, configured})`: a new object, the configured headers without
/// those the client generates (whatever their case), then the generated ones.
pub fn merged<H: Values>(h: &H, headers: &H::Value) -> Result<H::Value, H::Value> {
  let (generated, configured) = if is_record(h, headers) {
    (
      h.field(headers, "generated")?,
      h.field(headers, "configured")?,
    )
  } else {
    (h.undefined(), h.undefined())
  };
  let merged = merge(&entries(h, &generated)?, &entries(h, &configured)?);
  h.object(
    merged
      .iter()
      .map(|(name, value)| (name.as_str(), value.clone()))
      .collect(),
  )
}

/// `setGeneratedHeader(headers, name, value)`: sets `name`, replacing any header of that name
/// in another case.
pub fn set_generated<H: Values>(
  h: &H,
  headers: &H::Value,
  name: &H::Value,
  value: H::Value,
) -> Result<(), H::Value> {
  let name = header_name(h, name)?;
  for (existing, _) in entries(h, headers)? {
    if same_name(&existing, &name) {
      h.delete_field(headers, &existing);
    }
  }
  if is_record(h, headers) {
    // A frozen object refuses quietly, as an assignment outside strict mode does.
    let _ = h.set_field(headers, &name, value);
  }
  Ok(())
}

/// `withoutHeader(headers, name)`: `headers` itself when it has no header `name` (in any
/// case), else a copy without it.
pub fn without<H: Values>(
  h: &H,
  headers: &H::Value,
  name: &H::Value,
) -> Result<H::Value, H::Value> {
  let name = header_name(h, name)?;
  let all = entries(h, headers)?;
  if !all.iter().any(|(existing, _)| same_name(existing, &name)) {
    return Ok(headers.clone());
  }
  h.object(
    all
      .iter()
      .filter(|(existing, _)| !same_name(existing, &name))
      .map(|(existing, value)| (existing.as_str(), value.clone()))
      .collect(),
  )
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::fake_host::{v, FakeHost, V};
  use serde_json::json;

  #[test]
  fn a24_merge_drops_configured_names_the_client_generates() {
    let h = FakeHost::new();
    let headers = v(json!({
      "generated": {"Content-Type": "application/json"},
      "configured": {"content-type": "text/plain", "X-Key": "k"},
    }));
    let merged = merged(&h, &headers).ok().map(|m| m.to_json());
    assert_eq!(
      merged,
      Some(json!({"X-Key": "k", "Content-Type": "application/json"}))
    );
    assert_eq!(
      super::merged(&h, &V::Undefined).ok().map(|m| m.to_json()),
      Some(json!({}))
    );
  }

  #[test]
  fn a24_set_generated_replaces_case_variants() {
    let h = FakeHost::new();
    let headers = v(json!({"mcp-session-id": "old", "X": "1"}));
    set_generated(&h, &headers, &v(json!("Mcp-Session-Id")), v(json!("new"))).unwrap();
    assert_eq!(
      headers.to_json(),
      json!({"X": "1", "Mcp-Session-Id": "new"})
    );
    let error = set_generated(&h, &headers, &V::Number(1.0), V::Undefined).unwrap_err();
    assert!(error.is_type_error());
    assert_eq!(error.message(), "The \"name\" argument must be a string");
  }

  #[test]
  fn a24_without_keeps_the_same_object_when_nothing_matches() {
    let h = FakeHost::new();
    let headers = v(json!({"Authorization": "Bearer t", "X": "1"}));
    let same = without(&h, &headers, &v(json!("cookie"))).unwrap();
    assert!(same.same(&headers));
    let copy = without(&h, &headers, &v(json!("authorization"))).unwrap();
    assert!(!copy.same(&headers));
    assert_eq!(copy.to_json(), json!({"X": "1"}));
    assert!(matches!(
      without(&h, &V::Undefined, &v(json!("x"))),
      Ok(V::Undefined)
    ));
  }
}
