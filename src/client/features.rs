//! P5: the client features a connect offers the server (roots, sampling, elicitation), the
//! capabilities they advertise, and how the server's requests reach the caller's handlers.
use serde_json::{json, Map, Value};

use crate::host::{Callbacks, Pending, Values};
use crate::protocol::message::METHOD_NOT_FOUND;

/// P5: what tells the server that the roots changed.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// The handler options of `connectToServer`, `MCPClient.connect` and the manager.
#[derive(Clone)]
pub struct ClientFeatures<V> {
  /// `Root[]`, or a function returning them (or a promise of them).
  pub roots: Option<V>,
  pub sampling: Option<V>,
  pub elicitation: Option<V>,
  /// T11's generic handler, for every other method.
  pub on_request: Option<V>,
  /// A26 `onNotification`, on the transport before `initialize`.
  pub on_notification: Option<V>,
  /// A26/A40 `compat: "v12"`: a request nobody handles is answered `Method not found`
  /// rather than v18's `Unsupported server request: <method>`.
  pub v12: bool,
}

impl<V> Default for ClientFeatures<V> {
  fn default() -> Self {
    ClientFeatures {
      roots: None,
      sampling: None,
      elicitation: None,
      on_request: None,
      on_notification: None,
      v12: false,
    }
  }
}

impl<V: Clone> ClientFeatures<V> {
  /// The handlers in `options`, or the TypeError message (E2) of one of the wrong kind.
  pub fn read<H: Values<Value = V>>(host: &H, options: Option<&V>) -> Result<Self, String> {
    let Some(options) = options.filter(|o| host.is_object(o)) else {
      return Ok(ClientFeatures::default());
    };
    let field = |name: &str| -> Result<Option<V>, String> {
      let value = host
        .field(options, name)
        .map_err(|_| format!("The \"options.{name}\" field could not be read"))?;
      Ok((!host.is_nullish(&value)).then_some(value))
    };
    let function = |name: &str| -> Result<Option<V>, String> {
      match field(name)? {
        Some(value) if !host.is_function(&value) => {
          Err(format!("The \"options.{name}\" field must be a function"))
        }
        value => Ok(value),
      }
    };
    let roots = field("roots")?;
    if let Some(roots) = &roots {
      if !host.is_function(roots) && host.items(roots).is_none() {
        return Err("The \"options.roots\" field must be an array or a function".into());
      }
    }
    Ok(ClientFeatures {
      roots,
      sampling: function("sampling")?,
      elicitation: function("elicitation")?,
      on_request: function("onRequest")?,
      on_notification: function("onNotification")?,
      v12: field("compat")?.and_then(|c| host.as_string(&c)).as_deref() == Some("v12"),
    })
  }

  /// What `initialize` advertises for these handlers; without a `roots` option the cwd is
  /// still offered, as a list that never changes.
  pub fn capabilities(&self) -> Map<String, Value> {
    let mut capabilities = Map::new();
    capabilities.insert(
      "roots".into(),
      json!({ "listChanged": self.roots.is_some() }),
    );
    if self.sampling.is_some() {
      capabilities.insert("sampling".into(), json!({}));
    }
    if self.elicitation.is_some() {
      capabilities.insert(
        "elicitation".into(),
        json!({ "form": { "applyDefaults": true }, "url": {} }),
      );
    }
    capabilities
  }
}

/// The answer to the server's `method` request: from the matching handler, else
/// `onRequest`, else `roots/list` from the cwd and anything else `-32601`. `extra` is the
/// handlers' second argument (`{serverName}`).
pub fn serve<H: Callbacks>(
  host: &H,
  features: &ClientFeatures<H::Value>,
  method: &str,
  params: H::Value,
  extra: H::Value,
) -> Pending<H::Value> {
  let handler = match method {
    "roots/list" => features.roots.clone(),
    "sampling/createMessage" => features.sampling.clone(),
    "elicitation/create" => features.elicitation.clone(),
    _ => None,
  };
  let host = host.clone();
  match (handler, method, &features.on_request) {
    (Some(roots), "roots/list", _) => Box::pin(async move {
      let roots = if host.is_function(&roots) {
        host.call(&roots, Vec::new()).await?
      } else {
        roots
      };
      if host.items(&roots).is_none() {
        return Err(host.type_error("The roots handler must return an array of roots"));
      }
      host.object(vec![("roots", roots)])
    }),
    (Some(elicitation), "elicitation/create", _) => Box::pin(async move {
      let schema = requested_defaults(&host, &params);
      let result = host.call(&elicitation, vec![params, extra]).await?;
      match schema {
        Some(defaults) if !defaults.is_empty() => apply_defaults(&host, result, &defaults),
        _ => Ok(result),
      }
    }),
    (Some(handler), _, _) => host.call(&handler, vec![params, extra]),
    (None, _, Some(on_request)) => {
      let method = host.string(method);
      host.call(on_request, vec![method, params, extra])
    }
    (None, "roots/list", None) => Box::pin(async move { host.json(&cwd_roots().to_string()) }),
    (None, _, None) => {
      let v18 = (!features.v12).then(|| method.to_string());
      Box::pin(async move { Err(method_not_found(&host, v18.as_deref())) })
    }
  }
}

/// T11's `-32601 Method not found` (A26 with v18: `Unsupported server request: <method>`), as
/// a thrown value the answer rules read.
fn method_not_found<H: Values>(host: &H, method: Option<&str>) -> H::Value {
  let message = method.map_or_else(
    || "Method not found".to_string(),
    |method| format!("Unsupported server request: {method}"),
  );
  let error = json!({ "code": METHOD_NOT_FOUND, "message": message });
  host
    .json(&error.to_string())
    .unwrap_or_else(|thrown| thrown)
}

/// The agent's default roots: the cwd as one `file://` root named by its last component.
pub fn cwd_roots() -> Value {
  let roots = std::env::current_dir()
    .ok()
    .map(|dir| roots_of(&dir))
    .unwrap_or_default();
  json!({ "roots": roots })
}

/// A directory as the agent's one root (A36: the manager's cwd).
pub fn roots_of(dir: &std::path::Path) -> Vec<Value> {
  let Ok(uri) = url::Url::from_directory_path(dir) else {
    return Vec::new();
  };
  let name = dir
    .file_name()
    .map(|n| n.to_string_lossy().into_owned())
    .unwrap_or_else(|| dir.to_string_lossy().into_owned());
  // Node's pathToFileURL, as the agent uses, writes no trailing slash.
  let uri = uri.as_str().trim_end_matches('/').to_string();
  let uri = if uri == "file://" {
    "file:///".into()
  } else {
    uri
  };
  vec![json!({ "uri": uri, "name": name })]
}

/// SEP-1034: the `default` of every property of a form's `requestedSchema`, by name.
fn requested_defaults<H: Values>(host: &H, params: &H::Value) -> Option<Map<String, Value>> {
  let params = crate::host::json_of(host, params).ok().flatten()?;
  if params.get("mode").and_then(Value::as_str) == Some("url") {
    return None;
  }
  let properties = params
    .get("requestedSchema")?
    .get("properties")?
    .as_object()?;
  Some(
    properties
      .iter()
      .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
      .filter(|(_, default)| is_primitive(default))
      .collect(),
  )
}

/// Strings, numbers, integers, booleans, and the string arrays of multi-select enums.
fn is_primitive(value: &Value) -> bool {
  match value {
    Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
    Value::Array(items) => items.iter().all(Value::is_string),
    _ => false,
  }
}

/// On `accept`, every defaulted field missing from `content` gets its default.
fn apply_defaults<H: Values>(
  host: &H,
  result: H::Value,
  defaults: &Map<String, Value>,
) -> Result<H::Value, H::Value> {
  if !host.is_object(&result) {
    return Ok(result);
  }
  let action = host.field(&result, "action")?;
  if host.as_string(&action).as_deref() != Some("accept") {
    return Ok(result);
  }
  let mut content = host.field(&result, "content")?;
  if !host.is_object(&content) {
    content = host.object(Vec::new())?;
    host.set_field(&result, "content", content.clone())?;
  }
  for (name, default) in defaults {
    if host.is_undefined(&host.field(&content, name)?) {
      host.set_field(&content, name, host.json(&default.to_string())?)?;
    }
  }
  Ok(result)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn p5_capabilities_follow_the_handlers() {
    let none = ClientFeatures::<()>::default();
    assert_eq!(
      Value::Object(none.capabilities()),
      json!({ "roots": { "listChanged": false } })
    );
    let all = ClientFeatures {
      roots: Some(()),
      sampling: Some(()),
      elicitation: Some(()),
      on_request: None,
      on_notification: None,
      v12: false,
    };
    assert_eq!(
      Value::Object(all.capabilities()),
      json!({
        "roots": { "listChanged": true },
        "sampling": {},
        "elicitation": { "form": { "applyDefaults": true }, "url": {} },
      })
    );
  }

  #[test]
  fn p5_the_default_root_is_the_cwd_as_a_file_url() {
    let roots = cwd_roots();
    let root = &roots["roots"][0];
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
      root["name"],
      cwd.file_name().unwrap().to_string_lossy().as_ref()
    );
    let uri = root["uri"].as_str().unwrap();
    assert!(uri.starts_with("file:///") && !uri.ends_with('/'), "{uri}");
  }
}

#[cfg(test)]
mod serve_tests {
  use std::rc::Rc;

  use super::*;
  use crate::fake_host::{local, v, FakeHost, V};

  /// A handler that records its arguments and resolves with `answer`.
  fn handler(answer: Json, seen: Rc<std::cell::RefCell<Vec<Json>>>) -> V {
    V::Callable(Rc::new(move |args: Vec<V>| {
      seen
        .borrow_mut()
        .push(Json::Array(args.iter().map(V::to_json).collect()));
      let answer = v(answer.clone());
      Box::pin(async move { Ok(answer) })
    }))
  }

  type Json = Value;

  async fn ask(features: &ClientFeatures<V>, method: &str, params: Json) -> Result<Json, String> {
    let host = FakeHost::new();
    let extra = v(json!({ "serverName": "files" }));
    serve(&host, features, method, v(params), extra)
      .await
      .map(|value| value.to_json())
      .map_err(|error| format!("{error:?}"))
  }

  fn form(properties: Json) -> Json {
    json!({ "message": "?", "requestedSchema": { "type": "object", "properties": properties } })
  }

  #[tokio::test]
  async fn p5_accepted_forms_get_the_defaults_they_left_out() {
    local(async {
      let seen = Rc::default();
      let features = ClientFeatures {
        elicitation: Some(handler(
          json!({ "action": "accept", "content": { "name": "Ada" } }),
          Rc::clone(&seen),
        )),
        ..Default::default()
      };
      let params = form(json!({
        "name": { "type": "string", "default": "John" },
        "age": { "type": "integer", "default": 30 },
        "score": { "type": "number", "default": 95.5 },
        "status": { "type": "string", "enum": ["a", "b"], "default": "b" },
        "verified": { "type": "boolean", "default": true },
        "tags": { "type": "array", "items": { "enum": ["x", "y"] }, "default": ["x"] },
        "nested": { "type": "object", "default": { "no": 1 } },
        "plain": { "type": "string" },
      }));
      let answer = ask(&features, "elicitation/create", params.clone())
        .await
        .unwrap();
      assert_eq!(
        answer,
        json!({ "action": "accept", "content": {
          "name": "Ada", "age": 30, "score": 95.5, "status": "b", "verified": true, "tags": ["x"],
        }})
      );
      assert_eq!(*seen.borrow(), [json!([params, { "serverName": "files" }])]);
    })
    .await;
  }

  #[tokio::test]
  async fn p5_declined_or_url_elicitations_are_left_alone() {
    local(async {
      let declined = ClientFeatures {
        elicitation: Some(handler(json!({ "action": "decline" }), Rc::default())),
        ..Default::default()
      };
      let params = form(json!({ "name": { "type": "string", "default": "John" } }));
      assert_eq!(
        ask(&declined, "elicitation/create", params).await.unwrap(),
        json!({ "action": "decline" })
      );
      let url = ClientFeatures {
        elicitation: Some(handler(json!({ "action": "accept" }), Rc::default())),
        ..Default::default()
      };
      let params =
        json!({ "mode": "url", "url": "https://x", "elicitationId": "1", "message": "?" });
      assert_eq!(
        ask(&url, "elicitation/create", params).await.unwrap(),
        json!({ "action": "accept" })
      );
    })
    .await;
  }

  #[tokio::test]
  async fn p5_roots_come_from_the_option_else_on_request_else_the_cwd() {
    local(async {
      let listed = json!([{ "uri": "file:///work", "name": "work" }]);
      let given = ClientFeatures {
        roots: Some(v(listed.clone())),
        ..Default::default()
      };
      assert_eq!(
        ask(&given, "roots/list", json!({})).await.unwrap(),
        json!({ "roots": listed })
      );
      let computed = ClientFeatures {
        roots: Some(handler(listed.clone(), Rc::default())),
        ..Default::default()
      };
      assert_eq!(
        ask(&computed, "roots/list", json!({})).await.unwrap(),
        json!({ "roots": listed })
      );
      let seen = Rc::default();
      let generic = ClientFeatures {
        on_request: Some(handler(json!({ "roots": [] }), Rc::clone(&seen))),
        ..Default::default()
      };
      assert_eq!(
        ask(&generic, "roots/list", json!({})).await.unwrap(),
        json!({ "roots": [] })
      );
      assert_eq!(
        *seen.borrow(),
        [json!(["roots/list", {}, { "serverName": "files" }])]
      );
      assert_eq!(
        ask(&ClientFeatures::default(), "roots/list", json!({}))
          .await
          .unwrap(),
        cwd_roots()
      );
    })
    .await;
  }

  #[tokio::test]
  async fn p5_a26_unhandled_methods_are_unsupported_v12_method_not_found() {
    local(async {
      let host = FakeHost::new();
      let v12 = ClientFeatures {
        v12: true,
        ..ClientFeatures::default()
      };
      for (features, message) in [
        (
          ClientFeatures::default(),
          "Unsupported server request: sampling/createMessage",
        ),
        (v12, "Method not found"),
      ] {
        let error = serve(
          &host,
          &features,
          "sampling/createMessage",
          v(json!({})),
          V::Undefined,
        )
        .await
        .unwrap_err();
        let answer = crate::client::server_requests::rpc_error(&host, &error);
        assert_eq!((answer.code, answer.message.as_str()), (-32601, message));
      }
    })
    .await;
  }
}
