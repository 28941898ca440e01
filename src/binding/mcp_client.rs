//! C6: `MCPClient`, an object-style API over the same functions, with every `list*`
//! following pagination to the end.
use napi::bindgen_prelude::JavaScriptClassExt;
use napi::Env;
use napi_derive::napi;

use super::client::{call_tool, connect_request, disconnect_server, list_tools, optional};
use super::executor;
use super::host::JsHost;
use super::js::{Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::{finish, thrown};
use crate::client::resources::{self, Listing};
use crate::client::{self, connection_transport};
use crate::host::Values;

/// A connected MCP server as one object (C6).
#[napi(js_name = "MCPClient")]
pub struct JsMcpClient {
  connection: Held,
}

impl JsMcpClient {
  fn host(&self) -> JsHost {
    JsHost::new(self.connection.js())
  }

  /// `transport.request(method, params, options)`, as a promise resolving to its result.
  fn request(
    &self,
    js: Js,
    method: &'static str,
    params: Vec<(&'static str, Value)>,
    options: Option<JsArg>,
  ) -> Result<Value, Thrown> {
    let host = self.host();
    let connection = self.connection.clone();
    let options = optional(js, options);
    let params: Vec<(&str, Held)> = params
      .into_iter()
      .filter(|(_, value)| !js.is_nullish(*value))
      .map(|(key, value)| (key, host.hold(value)))
      .collect();
    executor::promise(js, async move {
      let params = host.object(params)?;
      crate::client::resources::request(&host, &connection, method, params, options).await
    })
  }

  /// A27: every page of a listing, kept on the connection until a `list_changed` says
  /// otherwise.
  fn list(&self, js: Js, listing: Listing, options: Option<JsArg>) -> Result<Value, Thrown> {
    let host = self.host();
    let connection = self.connection.clone();
    let options = optional(js, options);
    executor::promise(js, resources::list(host, connection, listing, options))
  }

  fn transport(&self, js: Js) -> Option<Value> {
    connection_transport(&self.host(), &self.connection)
      .ok()
      .map(|t| t.get(js))
  }
}

#[napi]
impl JsMcpClient {
  /// Wraps a connection made by `connectToServer` (or built by hand).
  #[napi(constructor, ts_args_type = "connection: MCPServerConnection")]
  pub fn new(env: Env, connection: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    let connection = Held::new(js, connection.0);
    if let Err(error) = connection_transport(&JsHost::new(js), &connection) {
      return Err(thrown(js, Thrown(error.get(js))));
    }
    Ok(JsMcpClient { connection })
  }

  /// Connects as `connectToServer` does, but finds the era out first: `client.protocolVersion`
  /// (and a config's `protocolVersion`) defaults to `"auto"` here, a `server/discover` probe
  /// (N2); `"2026-07-28"` skips the handshake, a handshake version runs `initialize`.
  #[napi(
    ts_args_type = "name: string, config: MCPServerConfig, options?: MCPConnectOptions",
    ts_return_type = "Promise<MCPClient>"
  )]
  pub fn connect(
    env: Env,
    name: JsArg,
    config: JsArg,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let request = match connect_request(js, name.0, config.0, options.map(|o| o.0)) {
      // N1: MCPClient finds the era out unless told (connectToServer keeps the handshake).
      Ok(mut request) => {
        request
          .client
          .protocol_version
          .get_or_insert_with(|| crate::client::era::AUTO.to_string());
        request
      }
      Err(error) => return finish(js, js.rejected(error)),
    };
    let host = JsHost::new(js);
    let connecting = async move {
      let connection = client::connect(host, request).await?;
      let env = Env::from_raw(js.env);
      let instance = JsMcpClient { connection }
        .into_instance(&env)
        .map_err(|e| host.error(&e.reason))?;
      Ok(host.hold(instance.value))
    };
    finish(js, executor::promise(js, connecting))
  }

  /// The `MCPServerConnection` this client drives.
  #[napi(getter, ts_return_type = "MCPServerConnection")]
  pub fn connection(&self, env: Env) -> JsRaw {
    JsRaw(self.connection.get(Js::new(env.raw())))
  }

  /// C2, cached in `connection.tools`.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPToolDefinition[]>"
  )]
  pub fn list_tools(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    list_tools(env, JsArg(self.connection.get(Js::new(env.raw()))), options)
  }

  /// C3
  #[napi(
    ts_args_type = "name: string, args?: Record<string, unknown>, options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPToolCallResult>"
  )]
  pub fn call_tool(
    &self,
    env: Env,
    name: JsArg,
    args: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    call_tool(
      env,
      JsArg(self.connection.get(Js::new(env.raw()))),
      name,
      args,
      options,
    )
  }

  /// `ping`; resolves with the server's (empty) result. In the 2026-07-28 era, which has no
  /// `ping`, it sends `server/discover` and resolves `{}` (N9).
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<Record<string, unknown>>"
  )]
  pub fn ping(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let host = self.host();
    let connection = self.connection.clone();
    let options = optional(js, options);
    let pinging = async move {
      let transport = connection_transport(&host, &connection)?;
      crate::client::removed_methods::ping(&host, &connection, &transport, options).await
    };
    finish(js, executor::promise(js, pinging))
  }

  /// Every resource of every `resources/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPResource[]>"
  )]
  pub fn list_resources(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, self.list(js, Listing::Resources, options))
  }

  /// Every template of every `resources/templates/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPResourceTemplate[]>"
  )]
  pub fn list_resource_templates(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, self.list(js, Listing::ResourceTemplates, options))
  }

  /// `resources/read {uri}`.
  #[napi(
    ts_args_type = "uri: string, options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPReadResourceResult>"
  )]
  pub fn read_resource(&self, env: Env, uri: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    if js.rust_string(uri.0).is_none() {
      let error = js_error::type_error(js, "The \"uri\" argument must be a string");
      return finish(js, js.rejected(error));
    }
    finish(
      js,
      self.request(js, "resources/read", vec![("uri", uri.0)], options),
    )
  }

  /// Every prompt of every `prompts/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPPrompt[]>"
  )]
  pub fn list_prompts(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, self.list(js, Listing::Prompts, options))
  }

  /// `prompts/get {name, arguments}`.
  #[napi(
    ts_args_type = "name: string, args?: Record<string, string>, options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPGetPromptResult>"
  )]
  pub fn get_prompt(
    &self,
    env: Env,
    name: JsArg,
    args: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    if js.rust_string(name.0).is_none() {
      let error = js_error::type_error(js, "The \"name\" argument must be a string");
      return finish(js, js.rejected(error));
    }
    let arguments = args.map(|a| a.0).unwrap_or_else(|| js.undefined());
    let params = vec![("name", name.0), ("arguments", arguments)];
    finish(js, self.request(js, "prompts/get", params, options))
  }

  /// `completion/complete {ref, argument, context?}`.
  #[napi(
    ts_args_type = "ref: MCPCompleteRef, argument: { name: string; value: string }, context?: { arguments?: Record<string, string> }, options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPCompleteResult>"
  )]
  pub fn complete(
    &self,
    env: Env,
    reference: JsArg,
    argument: JsArg,
    context: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let context = context.map(|c| c.0).unwrap_or_else(|| js.undefined());
    let params = vec![
      ("ref", reference.0),
      ("argument", argument.0),
      ("context", context),
    ];
    finish(js, self.request(js, "completion/complete", params, options))
  }

  /// `logging/setLevel {level}`. In the 2026-07-28 era, which has no `logging/setLevel`, the
  /// level goes as `_meta["io.modelcontextprotocol/logLevel"]` on the requests that follow (N9).
  #[napi(
    ts_args_type = "level: MCPLoggingLevel, options?: MCPRequestOptions",
    ts_return_type = "Promise<void>"
  )]
  pub fn set_logging_level(
    &self,
    env: Env,
    level: JsArg,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let host = self.host();
    let connection = self.connection.clone();
    let options = optional(js, options);
    let level = host.hold(level.0);
    let setting = async move {
      let transport = connection_transport(&host, &connection)?;
      crate::client::removed_methods::set_logging_level(
        &host,
        &connection,
        &transport,
        level,
        options,
      )
      .await?;
      Ok(host.undefined())
    };
    finish(js, executor::promise(js, setting))
  }

  /// P5: sends `notifications/roots/list_changed`; the server then asks for the roots again.
  #[napi(ts_return_type = "Promise<void>")]
  pub fn notify_roots_changed(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let host = self.host();
    let connection = self.connection.clone();
    let notifying = async move {
      let transport = connection_transport(&host, &connection)?;
      crate::host::Transports::notify(&host, &transport, client::features::ROOTS_LIST_CHANGED).await
    };
    finish(js, executor::promise(js, notifying))
  }

  /// Closes the transport (C4).
  #[napi(ts_return_type = "Promise<void>")]
  pub fn close(&self, env: Env) -> napi::Result<JsRaw> {
    disconnect_server(env, JsArg(self.connection.get(Js::new(env.raw()))))
  }

  /// Passes through to `connection.transport.onNotification`.
  #[napi(
    getter,
    js_name = "onNotification",
    ts_return_type = "((method: string, params: unknown) => void) | undefined"
  )]
  pub fn get_on_notification(&self, env: Env) -> JsRaw {
    let js = Js::new(env.raw());
    JsRaw(
      self
        .transport(js)
        .and_then(|t| js.get(t, "onNotification").ok())
        .unwrap_or_else(|| js.undefined()),
    )
  }

  /// Passes through to `connection.transport.onNotification`.
  #[napi(
    setter,
    js_name = "onNotification",
    ts_args_type = "callback: ((method: string, params: unknown) => void) | undefined"
  )]
  pub fn set_on_notification(&self, env: Env, callback: JsArg) {
    let js = Js::new(env.raw());
    if let Some(transport) = self.transport(js) {
      js.set(transport, "onNotification", callback.0);
    }
  }
}
