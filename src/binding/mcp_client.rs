//! C6: `MCPClient`, an object-style API over the same functions, with every `list*`
//! following pagination to the end.
use napi::bindgen_prelude::JavaScriptClassExt;
use napi::Env;
use napi_derive::napi;

use super::client::{
  call_method, call_tool, connect_to_server, connection_transport, disconnect_server, list_tools,
  Held, Paginate,
};
use super::js::{ErrorKind, Js, JsArg, JsRaw, Thrown, Value};
use super::js_async::when_settled;
use super::js_error;
use super::transport_class::{finish, thrown};

/// A connected MCP server as one object (C6).
#[napi(js_name = "MCPClient")]
pub struct JsMcpClient {
  connection: Held,
}

impl JsMcpClient {
  fn transport(&self, js: Js) -> Result<Value, Value> {
    connection_transport(js, self.connection.get(js))
  }

  /// `transport.request(method, params, options)`, as a promise (rejections included).
  fn request(
    &self,
    js: Js,
    method: &str,
    params: Value,
    options: Option<JsArg>,
  ) -> Result<Value, Thrown> {
    let transport = match self.transport(js) {
      Ok(t) => t,
      Err(error) => return js.rejected(error),
    };
    let mut args = vec![js.string(method), params];
    if let Some(options) = options {
      args.push(options.0);
    }
    match call_method(js, transport, "request", &args) {
      Ok(pending) => Ok(pending),
      Err(Thrown(error)) => js.rejected(error),
    }
  }

  fn list(
    &self,
    js: Js,
    method: &'static str,
    key: &'static str,
    options: Option<JsArg>,
  ) -> Result<Value, Thrown> {
    match self.transport(js) {
      Ok(transport) => Paginate::start(js, transport, method, key, options.map(|o| o.0), None),
      Err(error) => js.rejected(error),
    }
  }

  fn object(js: Js, entries: &[(&str, Value)]) -> Result<Value, Thrown> {
    let object = js.json_parse("{}")?;
    for (key, value) in entries {
      if !js.is_nullish(*value) {
        js.set(object, key, *value);
      }
    }
    Ok(object)
  }
}

#[napi]
impl JsMcpClient {
  /// Wraps a connection made by `connectToServer` (or built by hand).
  #[napi(constructor, ts_args_type = "connection: MCPServerConnection")]
  pub fn new(env: Env, connection: JsArg) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    if let Err(error) = connection_transport(js, connection.0) {
      return Err(thrown(js, Thrown(error)));
    }
    Ok(JsMcpClient {
      connection: Held::new(js, connection.0),
    })
  }

  /// `connectToServer` (C1), as an `MCPClient`.
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
    let connecting = connect_to_server(env, name, config, options)?;
    let result = (|| {
      let (deferred, promise) = js.create_promise()?;
      when_settled(js, connecting.0, move |js, result| match result {
        Err(error) => js.reject(deferred, error),
        Ok(connection) => {
          let client = JsMcpClient {
            connection: Held::new(js, connection),
          };
          let env = Env::from_raw(js.env);
          match client.into_instance(&env) {
            Ok(instance) => js.resolve(deferred, instance.value),
            Err(e) => js.reject(deferred, js.error(ErrorKind::Error, &e.reason)),
          }
        }
      });
      Ok(promise)
    })();
    finish(js, result)
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

  /// `ping`; resolves with the server's (empty) result.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<Record<string, unknown>>"
  )]
  pub fn ping(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = js
      .json_parse("{}")
      .and_then(|params| self.request(js, "ping", params, options));
    finish(js, result)
  }

  /// Every resource of every `resources/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPResource[]>"
  )]
  pub fn list_resources(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, self.list(js, "resources/list", "resources", options))
  }

  /// Every template of every `resources/templates/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPResourceTemplate[]>"
  )]
  pub fn list_resource_templates(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(
      js,
      self.list(js, "resources/templates/list", "resourceTemplates", options),
    )
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
    let result = Self::object(js, &[("uri", uri.0)])
      .and_then(|p| self.request(js, "resources/read", p, options));
    finish(js, result)
  }

  /// Every prompt of every `prompts/list` page.
  #[napi(
    ts_args_type = "options?: MCPRequestOptions",
    ts_return_type = "Promise<MCPPrompt[]>"
  )]
  pub fn list_prompts(&self, env: Env, options: Option<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    finish(js, self.list(js, "prompts/list", "prompts", options))
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
    let result = Self::object(js, &[("name", name.0), ("arguments", arguments)])
      .and_then(|p| self.request(js, "prompts/get", p, options));
    finish(js, result)
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
    let result = Self::object(
      js,
      &[
        ("ref", reference.0),
        ("argument", argument.0),
        ("context", context),
      ],
    )
    .and_then(|p| self.request(js, "completion/complete", p, options));
    finish(js, result)
  }

  /// `logging/setLevel {level}`.
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
    let result = Self::object(js, &[("level", level.0)]).and_then(|p| {
      let pending = self.request(js, "logging/setLevel", p, options)?;
      let (deferred, promise) = js.create_promise()?;
      when_settled(js, pending, move |js, result| match result {
        Ok(_) => js.resolve(deferred, js.undefined()),
        Err(error) => js.reject(deferred, error),
      });
      Ok(promise)
    });
    finish(js, result)
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
        .ok()
        .and_then(|t| js.get(t, "onNotification").ok())
        .unwrap_or_else(|| js.undefined()),
    )
  }

  #[napi(
    setter,
    js_name = "onNotification",
    ts_args_type = "callback: ((method: string, params: unknown) => void) | undefined"
  )]
  pub fn set_on_notification(&self, env: Env, callback: JsArg) {
    let js = Js::new(env.raw());
    if let Ok(transport) = self.transport(js) {
      js.set(transport, "onNotification", callback.0);
    }
  }
}
