//! A27/A28: resources and prompts, with their listings kept on the caller's connection
//! object (so a `list_changed` notification can drop them, P6), and resource subscriptions.
use futures::future::join_all;

use super::listing::{connection_transport, paginate, supports};
use crate::host::{Callbacks, Transports, Values};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
  Resources,
  ResourceTemplates,
  Prompts,
}

impl Listing {
  fn method(self) -> &'static str {
    match self {
      Listing::Resources => "resources/list",
      Listing::ResourceTemplates => "resources/templates/list",
      Listing::Prompts => "prompts/list",
    }
  }

  /// The result's key, which is also the connection's field.
  fn key(self) -> &'static str {
    match self {
      Listing::Resources => "resources",
      Listing::ResourceTemplates => "resourceTemplates",
      Listing::Prompts => "prompts",
    }
  }

  fn capability(self) -> &'static str {
    match self {
      Listing::Prompts => "prompts",
      _ => "resources",
    }
  }
}

/// `capabilities.resources.subscribe === true`.
pub fn supports_subscriptions<H: Values>(host: &H, capabilities: &H::Value) -> bool {
  let resources = match host.field(capabilities, "resources") {
    Ok(resources) if host.is_object(capabilities) && host.is_object(&resources) => resources,
    _ => return false,
  };
  // `=== true`: only the boolean writes itself as `true`.
  host
    .field(&resources, "subscribe")
    .and_then(|s| host.to_json(&s))
    .is_ok_and(|text| text.as_deref() == Some("true"))
}

/// A27: `[]` without the capability; the array kept on the connection; else every page,
/// kept there and returned as that same array. A server without templates (`-32601`, or
/// "method not found") has none: `[]` is kept.
pub async fn list<H: Transports>(
  host: H,
  connection: H::Value,
  listing: Listing,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let transport = connection_transport(&host, &connection)?;
  let capabilities = host.field(&connection, "capabilities")?;
  if !supports(&host, &capabilities, listing.capability()) {
    return host.array(Vec::new());
  }
  let kept = host.field(&connection, listing.key())?;
  if host.items(&kept).is_some() {
    return Ok(kept);
  }
  let items = match paginate(&host, &transport, listing.method(), listing.key(), options).await {
    Ok(items) => items,
    Err(error) if listing == Listing::ResourceTemplates && is_method_not_found(&host, &error) => {
      host.array(Vec::new())?
    }
    Err(error) => return Err(error),
  };
  host.set_field(&connection, listing.key(), items.clone())?;
  Ok(items)
}

/// An error saying the server has no such method: code -32601, or a message naming it.
fn is_method_not_found<H: Values>(host: &H, error: &H::Value) -> bool {
  let code = host
    .field(error, "code")
    .ok()
    .and_then(|c| host.as_number(&c));
  let message = host.message(error);
  code == Some(-32601.0)
    || message.contains("-32601")
    || message.to_lowercase().contains("method not found")
}

/// A28: `prompts/get`, `resources/read` and the like on the connection's transport; in the
/// stateless era a prompt or resource may ask for input first (N6).
pub async fn request<H: Transports + Callbacks>(
  host: &H,
  connection: &H::Value,
  method: &str,
  params: H::Value,
  options: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let transport = connection_transport(host, connection)?;
  let asks = matches!(method, "prompts/get" | "resources/read");
  if asks && super::input_required::is_stateless_connection(host, connection) {
    return super::input_required::request_fulfilled(host, &transport, method, params, options)
      .await;
  }
  host.request(&transport, method, params, options).await
}

/// A28: `prompts/get` params: `{name}`, and `arguments` (the caller's own object) when it
/// has any.
pub fn prompt_params<H: Values>(
  host: &H,
  name: H::Value,
  arguments: Option<H::Value>,
) -> Result<H::Value, H::Value> {
  let mut params = vec![("name", name)];
  let has_any = |a: &H::Value| host.keys(a).is_ok_and(|keys| !keys.is_empty());
  if let Some(arguments) = arguments.filter(|a| host.is_object(a) && has_any(a)) {
    params.push(("arguments", arguments));
  }
  host.object(params)
}

/// A28: `resources/subscribe` or `resources/unsubscribe` for each URI at once; nothing when
/// there are none or the server cannot; a failure is reported to `report` and never
/// rejects. In the stateless era (N7) a subscription lists the URIs instead.
pub async fn subscription<H: Transports>(
  host: H,
  connection: H::Value,
  uris: Vec<H::Value>,
  subscribe: bool,
  options: Option<H::Value>,
  report: impl Fn(&H::Value, &H::Value),
) {
  let Ok(transport) = connection_transport(&host, &connection) else {
    return;
  };
  let capabilities = host.field(&connection, "capabilities").ok();
  let able = capabilities.is_some_and(|c| supports_subscriptions(&host, &c));
  if uris.is_empty() || !able {
    return;
  }
  if super::input_required::is_stateless_connection(&host, &connection) {
    if subscribe {
      if let Ok(filter) = host
        .array(uris)
        .and_then(|uris| host.object(vec![("resourceSubscriptions", uris)]))
      {
        host.start_listener(&transport, Some(&filter));
      }
    }
    return;
  }
  let method = if subscribe {
    "resources/subscribe"
  } else {
    "resources/unsubscribe"
  };
  let requests = uris.iter().map(|uri| {
    let (host, transport, options) = (&host, &transport, options.clone());
    async move {
      let params = host.object(vec![("uri", uri.clone())])?;
      host.request(transport, method, params, options).await
    }
  });
  for (uri, outcome) in uris.iter().zip(join_all(requests).await) {
    if let Err(error) = outcome {
      report(uri, &error);
    }
  }
}
