//! A27/A28 as free functions on a connection, as the v18 agent's `client` module exports
//! them: resource and prompt listings kept on the connection, reads, prompts, resource
//! subscriptions and the capability checks.
use napi::Env;
use napi_derive::napi;

use super::client::optional;
use super::executor;
use super::host::JsHost;
use super::js::{Js, JsArg, JsRaw, Value};
use super::js_error;
use super::js_error::finish;
use crate::client::resources::{self, Listing};
use crate::host::Values;

fn listing(
  env: Env,
  connection: JsArg,
  which: Listing,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let listed = resources::list(host, host.hold(connection.0), which, optional(js, options));
  finish(js, executor::promise(js, listed))
}

/// `[]` without the resources capability; `connection.resources` when already listed; else
/// every page of `resources/list`, kept in `connection.resources`.
#[napi(
  js_name = "listResources",
  ts_args_type = "connection: MCPServerConnection, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPResource[]>"
)]
pub fn list_resources(env: Env, connection: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  listing(env, connection, Listing::Resources, options)
}

/// As `listResources`, for `resources/templates/list` (kept in
/// `connection.resourceTemplates`); a server without the method has none.
#[napi(
  js_name = "listResourceTemplates",
  ts_args_type = "connection: MCPServerConnection, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPResourceTemplate[]>"
)]
pub fn list_resource_templates(
  env: Env,
  connection: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  listing(env, connection, Listing::ResourceTemplates, options)
}

/// As `listResources`, for `prompts/list` (kept in `connection.prompts`).
#[napi(
  js_name = "listPrompts",
  ts_args_type = "connection: MCPServerConnection, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPPrompt[]>"
)]
pub fn list_prompts(env: Env, connection: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  listing(env, connection, Listing::Prompts, options)
}

fn request(
  js: Js,
  connection: JsArg,
  method: &'static str,
  params: impl FnOnce(&JsHost) -> Result<super::js::Held, super::js::Held>,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let host = JsHost::new(js);
  let connection = host.hold(connection.0);
  let options = optional(js, options);
  let params = params(&host);
  finish(
    js,
    executor::promise(js, async move {
      resources::request(&host, &connection, method, params?, options).await
    }),
  )
}

fn string_argument(js: Js, value: Value, name: &str) -> Option<napi::Result<JsRaw>> {
  if js.rust_string(value).is_some() {
    return None;
  }
  let error = js_error::type_error(js, &format!("The \"{name}\" argument must be a string"));
  Some(finish(js, js.rejected(error)))
}

/// `resources/read {uri}`.
#[napi(
  js_name = "readResource",
  ts_args_type = "connection: MCPServerConnection, uri: string, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPReadResourceResult>"
)]
pub fn read_resource(
  env: Env,
  connection: JsArg,
  uri: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  if let Some(rejected) = string_argument(js, uri.0, "uri") {
    return rejected;
  }
  let uri = JsHost::new(js).hold(uri.0);
  request(
    js,
    connection,
    "resources/read",
    |host| host.object(vec![("uri", uri)]),
    options,
  )
}

/// `prompts/get {name}`, with `arguments` (the caller's object) when it has any.
#[napi(
  js_name = "getPrompt",
  ts_args_type = "connection: MCPServerConnection, name: string, args?: Record<string, string>, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPGetPromptResult>"
)]
pub fn get_prompt(
  env: Env,
  connection: JsArg,
  name: JsArg,
  args: Option<JsArg>,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  if let Some(rejected) = string_argument(js, name.0, "name") {
    return rejected;
  }
  let name = JsHost::new(js).hold(name.0);
  let args = optional(js, args);
  request(
    js,
    connection,
    "prompts/get",
    |host| resources::prompt_params(host, name, args),
    options,
  )
}

fn subscription(
  env: Env,
  connection: JsArg,
  uris: JsArg,
  subscribe: bool,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let uris = host.items(&host.hold(uris.0)).unwrap_or_default();
  let options = optional(js, options);
  let logger = options
    .as_ref()
    .and_then(|o| host.field(o, "logger").ok())
    .filter(|l| host.is_object(l));
  let reporter = host;
  let report = move |uri: &super::js::Held, error: &super::js::Held| {
    let Some(logger) = &logger else { return };
    let verb = if subscribe {
      "subscribe to"
    } else {
      "unsubscribe from"
    };
    let message = format!(
      "Failed to {verb} MCP resource {}: {}",
      reporter.message(uri),
      reporter.message(error)
    );
    let js = reporter.js;
    let warn = js
      .get(logger.get(js), "warn")
      .ok()
      .filter(|f| js.is_function(*f));
    if let Some(warn) = warn {
      let _ = js.call(warn, logger.get(js), &[js.string(&message)]);
    }
  };
  let work = resources::subscription(
    host,
    host.hold(connection.0),
    uris,
    subscribe,
    options,
    report,
  );
  finish(
    js,
    executor::promise(js, async move {
      work.await;
      Ok(host.undefined())
    }),
  )
}

/// A28: `resources/subscribe` for each URI at once (in the stateless era, a subscription
/// listing them); nothing without URIs or `capabilities.resources.subscribe`. Failures go to
/// `options.logger.warn`; it never rejects.
#[napi(
  js_name = "subscribeToResources",
  ts_args_type = "connection: MCPServerConnection, uris: string[], options?: MCPRequestOptions & { logger?: MCPLogger }",
  ts_return_type = "Promise<void>"
)]
pub fn subscribe_to_resources(
  env: Env,
  connection: JsArg,
  uris: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  subscription(env, connection, uris, true, options)
}

/// A28: `resources/unsubscribe`, as `subscribeToResources` does it.
#[napi(
  js_name = "unsubscribeFromResources",
  ts_args_type = "connection: MCPServerConnection, uris: string[], options?: MCPRequestOptions & { logger?: MCPLogger }",
  ts_return_type = "Promise<void>"
)]
pub fn unsubscribe_from_resources(
  env: Env,
  connection: JsArg,
  uris: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  subscription(env, connection, uris, false, options)
}

/// A28: `capabilities.resources !== undefined`.
#[napi(
  js_name = "serverSupportsResources",
  ts_args_type = "capabilities: MCPServerCapabilities"
)]
pub fn server_supports_resources(env: Env, capabilities: JsArg) -> bool {
  let host = JsHost::new(Js::new(env.raw()));
  crate::client::supports(&host, &host.hold(capabilities.0), "resources")
}

/// A28: `capabilities.resources?.subscribe === true`.
#[napi(
  js_name = "serverSupportsResourceSubscriptions",
  ts_args_type = "capabilities: MCPServerCapabilities"
)]
pub fn server_supports_resource_subscriptions(env: Env, capabilities: JsArg) -> bool {
  let host = JsHost::new(Js::new(env.raw()));
  resources::supports_subscriptions(&host, &host.hold(capabilities.0))
}

/// A28: `capabilities.prompts !== undefined`.
#[napi(
  js_name = "serverSupportsPrompts",
  ts_args_type = "capabilities: MCPServerCapabilities"
)]
pub fn server_supports_prompts(env: Env, capabilities: JsArg) -> bool {
  let host = JsHost::new(Js::new(env.raw()));
  crate::client::supports(&host, &host.hold(capabilities.0), "prompts")
}
