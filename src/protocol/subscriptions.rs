//! N7: `subscriptions/listen`, the stateless era's one way to hear of changes: what it
//! asks for, and which notifications belong to a subscription.
use std::sync::LazyLock;

use memchr::memmem;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::protocol::message::WireId;

pub const LISTEN: &str = "subscriptions/listen";
/// The server's first message on a subscription: for us, not for the caller.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The params of `subscriptions/listen`: the caller's filter, or by default every list
/// change (the server acknowledges the subset it supports), as the GET stream gave.
pub fn listen_params(filter: Option<&Value>) -> String {
  let notifications = match filter {
    Some(filter @ Value::Object(_)) => filter.clone(),
    _ => json!({
      "toolsListChanged": true,
      "promptsListChanged": true,
      "resourcesListChanged": true,
    }),
  };
  json!({ "notifications": notifications }).to_string()
}

/// The filter of every list change `capabilities` (a `server/discover` result's) say the
/// server may announce; `None` when it announces none, so there is nothing to listen for.
pub fn advertised_changes(capabilities: &Value) -> Option<Value> {
  let filter: serde_json::Map<String, Value> = [
    ("tools", "toolsListChanged"),
    ("prompts", "promptsListChanged"),
    ("resources", "resourcesListChanged"),
  ]
  .into_iter()
  .filter(|(feature, _)| capabilities[feature]["listChanged"] == Value::Bool(true))
  .map(|(_, flag)| (flag.to_string(), Value::Bool(true)))
  .collect();
  (!filter.is_empty()).then_some(Value::Object(filter))
}

/// Whether `text` may name a subscription (N7).
pub fn mentions_subscription(text: &str) -> bool {
  // Built once: `str::contains` builds its searcher on every call.
  static FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(SUBSCRIPTION_ID));
  FINDER.find(text.as_bytes()).is_some()
}

/// The subscription a notification was delivered on: `None` when it names none,
/// `Some(None)` when it names one that cannot be ours (A7: not an id shape we send).
pub fn subscription_id(params: Option<&RawValue>) -> Option<Option<WireId>> {
  let params = params?.get();
  // Most notifications have none: skip the parse.
  if !mentions_subscription(params) {
    return None;
  }
  #[derive(serde::Deserialize)]
  struct Params {
    #[serde(rename = "_meta")]
    meta: Option<serde_json::Map<String, Value>>,
  }
  let parsed: Params = serde_json::from_str(params).ok()?;
  let id = parsed.meta?.remove(SUBSCRIPTION_ID)?;
  Some(WireId::parse(&id.to_string()))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn n7_the_filter_asked_for() {
    assert_eq!(
      listen_params(None),
      r#"{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}"#
    );
    let mine = json!({ "resourceSubscriptions": ["file:///a"] });
    assert_eq!(
      listen_params(Some(&mine)),
      r#"{"notifications":{"resourceSubscriptions":["file:///a"]}}"#
    );
  }

  #[test]
  fn n7_what_the_server_says_it_announces() {
    let capabilities = json!({
      "tools": { "listChanged": true },
      "prompts": {},
      "resources": { "listChanged": true, "subscribe": true },
    });
    assert_eq!(
      advertised_changes(&capabilities),
      Some(json!({ "toolsListChanged": true, "resourcesListChanged": true }))
    );
    assert_eq!(advertised_changes(&json!({ "tools": {} })), None);
    assert_eq!(advertised_changes(&json!(null)), None);
  }

  #[test]
  fn n7_the_subscription_a_notification_came_on() {
    let raw = |text: &str| RawValue::from_string(text.to_string()).unwrap();
    let meta = |id: &str| {
      raw(&format!(
        r#"{{"_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}},"uri":"x"}}"#
      ))
    };
    assert_eq!(
      subscription_id(Some(&meta("4"))),
      Some(Some(WireId::Number(4)))
    );
    assert_eq!(subscription_id(Some(&meta(r#""listen-1""#))), Some(None));
    assert_eq!(subscription_id(Some(&raw(r#"{"uri":"x"}"#))), None);
    assert_eq!(subscription_id(None), None);
  }
}
