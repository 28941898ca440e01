//! §5/§6: `createTransport`, `connectToServer`, `listTools`, `callTool`, `disconnectServer`,
//! `serverSupportsTools`. The flows are the core's (`crate::client`) over `JsHost`; this file
//! checks the arguments (E2) and turns the outcomes into promises.
use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::{call_method, JsHost};
use super::http::create_http_transport;
use super::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::finish;
use super::stdio::create_stdio_transport;
use crate::client::input_required;
use crate::client::{self, ConnectRequest};
use crate::config::{transport_kind, TransportKind};
use crate::host::Values;

fn reject_type_error(js: Js, message: &str) -> Result<Value, Thrown> {
  js.rejected(js_error::type_error(js, message))
}

/// §5: the transport for a config: stdio when `type` is omitted or "stdio", HTTP for "http"
/// and "sse" (which detects the legacy protocol itself, H11), else
/// `Error("Unknown server type: <type>")`. `legacy_sse` opens the legacy transport for an
/// "sse" config instead (A25: the core's connect decides when, and falls back).
pub(crate) fn create_transport_value(
  js: Js,
  config: Value,
  legacy_sse: bool,
) -> Result<Value, Thrown> {
  if !js.is_record(config) {
    return reject_type_error(js, "The \"config\" argument must be an object");
  }
  let kind = js.get(config, "type")?;
  let kind_text = if js.is_nullish(kind) {
    None
  } else {
    Some(
      js.rust_string(kind)
        .unwrap_or_else(|| js.json_stringify(kind).ok().flatten().unwrap_or_default()),
    )
  };
  let env = Env::from_raw(js.env);
  let created = match transport_kind(kind_text.as_deref()) {
    Ok(TransportKind::Stdio) => create_stdio_transport(env, JsArg(config)),
    Ok(TransportKind::Http) if legacy_sse => {
      super::legacy_sse::create_sse_transport(env, JsArg(config))
    }
    Ok(TransportKind::Http) => create_http_transport(env, JsArg(config), None),
    Err(message) => return js.rejected(js.error(ErrorKind::Error, &message)),
  };
  created.map(|raw| raw.0).map_err(|error| {
    Thrown(
      js.take_exception()
        .unwrap_or_else(|| js.error(ErrorKind::Error, &error.reason)),
    )
  })
}

/// Creates and connects the transport a config asks for (§5).
#[napi(
  js_name = "createTransport",
  ts_args_type = "config: MCPServerConfig",
  ts_return_type = "Promise<MCPTransport>"
)]
pub fn create_transport(env: Env, config: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  finish(js, create_transport_value(js, config.0, false))
}

/// C4: `capabilities.tools !== undefined`.
#[napi(
  js_name = "serverSupportsTools",
  ts_args_type = "capabilities: MCPServerCapabilities"
)]
pub fn server_supports_tools(env: Env, capabilities: JsArg) -> bool {
  let host = JsHost::new(Js::new(env.raw()));
  client::supports(&host, &host.hold(capabilities.0), "tools")
}

/// The arguments of `connectToServer`, checked (E2, the core's `ConnectRequest::read`),
/// with A9's process-wide resolver in place of `timeout ?? 30000`: the request, or the
/// value to reject with.
pub(crate) fn connect_request(
  js: Js,
  name: Value,
  config: Value,
  options: Option<Value>,
) -> Result<ConnectRequest<Held>, Value> {
  let host = JsHost::new(js);
  let options = options.map(|o| host.hold(o));
  let mut request = ConnectRequest::read(
    &host,
    &host.hold(name),
    &host.hold(config),
    options.as_ref(),
  )
  .map_err(|error| error.get(js))?;
  let input = super::timeout_resolver::config_input(js, request.config.get(js));
  if let Some(timeout) = super::timeout_resolver::resolve(js, input).map_err(|Thrown(e)| e)? {
    request.timeout = timeout;
  }
  Ok(request)
}

/// C1: creates the transport, runs the `initialize` handshake and `notifications/initialized`,
/// all bounded by `config.timeout ?? 30000`. The era is the handshake unless
/// `client.protocolVersion` (or the config's `protocolVersion`) says `"2026-07-28"` (no
/// handshake) or `"auto"` (a `server/discover` probe first, N2). Rejects with an
/// `MCPConnectionTimeoutError` when the timeout passes.
#[napi(
  js_name = "connectToServer",
  ts_args_type = "name: string, config: MCPServerConfig, options?: MCPConnectOptions",
  ts_return_type = "Promise<MCPServerConnection>"
)]
pub fn connect_to_server(
  env: Env,
  name: JsArg,
  config: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = match connect_request(js, name.0, config.0, options.map(|o| o.0)) {
    Ok(mut request) => {
      // A25: v18's connectToServer routes "sse" to the legacy transport.
      request.legacy_sse = !request.features.v12;
      executor::promise(js, client::connect(JsHost::new(js), request))
    }
    Err(error) => js.rejected(error),
  };
  finish(js, result)
}

pub(crate) fn optional(js: Js, value: Option<JsArg>) -> Option<Held> {
  value
    .map(|v| v.0)
    .filter(|v| !js.is_nullish(*v))
    .map(|v| Held::new(js, v))
}

/// C2: `[]` without the tools capability; `connection.tools` when already listed; else
/// every page of `tools/list`, stored in `connection.tools`.
#[napi(
  js_name = "listTools",
  ts_args_type = "connection: MCPServerConnection, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPToolDefinition[]>"
)]
pub fn list_tools(env: Env, connection: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let listing = client::list_tools(host, host.hold(connection.0), optional(js, options));
  finish(js, executor::promise(js, listing))
}

/// C3: `tools/call {name, arguments}`; the result is passed through untouched.
#[napi(
  js_name = "callTool",
  ts_args_type = "connection: MCPServerConnection, toolName: string, args?: Record<string, unknown>, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPToolCallResult>"
)]
pub fn call_tool(
  env: Env,
  connection: JsArg,
  tool_name: JsArg,
  arguments: Option<JsArg>,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let arguments = arguments.map(|a| host.hold(a.0));
  let prepared = client::tool_call(
    &host,
    &host.hold(connection.0),
    host.hold(tool_name.0),
    arguments,
  );
  let result = match prepared {
    Err(error) => js.rejected(error.get(js)),
    Ok(_) if js.rust_string(tool_name.0).is_none() => {
      reject_type_error(js, "The \"toolName\" argument must be a string")
    }
    Ok((transport, params)) => {
      let options = options.map(|o| o.0).filter(|o| !js.is_nullish(*o));
      send_tool_call(js, &host.hold(connection.0), &transport, &params, options)
    }
  };
  finish(js, result)
}

/// C3 without a task: `transport.request("tools/call", …)` started now, its own promise
/// returned (the hot path of every tool call).
pub(crate) fn start_tool_call(
  js: Js,
  connection: Value,
  tool: Value,
  arguments: Option<Value>,
  options: Option<Value>,
) -> Result<Value, Thrown> {
  let host = JsHost::new(js);
  let arguments = arguments.map(|a| host.hold(a));
  let connection = host.hold(connection);
  match client::tool_call(&host, &connection, host.hold(tool), arguments) {
    Err(error) => js.rejected(error.get(js)),
    Ok((transport, params)) => send_tool_call(js, &connection, &transport, &params, options),
  }
}

fn send_tool_call(
  js: Js,
  connection: &Held,
  transport: &Held,
  params: &Held,
  options: Option<Value>,
) -> Result<Value, Thrown> {
  let host = JsHost::new(js);
  // N6: a stateless-era result may ask for input first.
  if input_required::is_stateless_connection(&host, connection) {
    let (transport, params) = (transport.clone(), params.clone());
    let options = options.map(|o| host.hold(o));
    return executor::promise(js, async move {
      input_required::request_fulfilled(&host, &transport, "tools/call", params, options).await
    });
  }
  let mut args = vec![js.string("tools/call"), params.get(js)];
  args.extend(options);
  match call_method(js, transport.get(js), "request", &args) {
    Ok(pending) => Ok(pending),
    Err(Thrown(error)) => js.rejected(error),
  }
}

/// C4: closes the connection's transport.
#[napi(
  js_name = "disconnectServer",
  ts_args_type = "connection: MCPServerConnection",
  ts_return_type = "Promise<void>"
)]
pub fn disconnect_server(env: Env, connection: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let host = JsHost::new(js);
  let connection = host.hold(connection.0);
  let closing = async move {
    let transport = client::connection_transport(&host, &connection)?;
    crate::host::Transports::close(&host, &transport).await?;
    Ok(host.undefined())
  };
  finish(js, executor::promise(js, closing))
}
