//! M5: the tool objects the manager hands out — the caller's `toolFactory`, or plain
//! objects named by the agent's rule — and the naming functions themselves.
use std::rc::{Rc, Weak};

use napi::{sys, Env};
use napi_derive::napi;

use super::{native_result, not_connected, Manager};
use crate::binding::client::{call_method, call_tool, Held};
use crate::binding::js::{Js, JsArg, JsRaw, Thrown, Value};
use crate::binding::js_async::when_settled;
use crate::binding::transport_class::finish;
use crate::manager::naming::{create_mcp_tool_name, parse_mcp_tool_name};

/// Live tools of a connected server: `toolFactory.live(connection, definitions)` or ours.
pub(super) fn live(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  connection: Value,
  definitions: Value,
) -> Result<Value, Thrown> {
  if let Some(factory) = factory(manager, js) {
    let built = call_method(js, factory, "live", &[connection, definitions])?;
    return as_array(js, built);
  }
  let connection = Held::new(js, connection);
  default_tools(manager, js, name, definitions, Some(connection))
}

/// Deferred tools from a cached listing (M4): `toolFactory.deferred(serverName,
/// definitions, getConnection, source)` or ours, which wait for the connection first.
pub(super) fn deferred(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  definitions: Value,
  source: Option<Value>,
) -> Result<Value, Thrown> {
  if let Some(factory) = factory(manager, js) {
    let target = Target {
      manager: Rc::downgrade(manager),
      server: name.to_string(),
      tool: String::new(),
      connection: None,
    };
    let get_connection = js.function("getConnection", get_connection, target)?;
    let source = source.unwrap_or_else(|| js.undefined());
    let built = call_method(
      js,
      factory,
      "deferred",
      &[js.string(name), definitions, get_connection, source],
    )?;
    return as_array(js, built);
  }
  default_tools(manager, js, name, definitions, None)
}

fn factory(manager: &Manager, js: Js) -> Option<Value> {
  manager
    .option(js, "toolFactory")
    .filter(|f| js.type_of(*f) == sys::ValueType::napi_object)
}

/// A factory's answer, as an array (anything else becomes no tools).
fn as_array(js: Js, value: Value) -> Result<Value, Thrown> {
  if js.is_array(value) {
    Ok(value)
  } else {
    js.array(0)
  }
}

/// What a default tool's `execute` calls: a live tool holds its connection (the one object
/// per server, updated in place by reconnects); a deferred one asks the manager for it.
struct Target {
  manager: Weak<Manager>,
  server: String,
  tool: String,
  connection: Option<Held>,
}

fn default_tools(
  manager: &Rc<Manager>,
  js: Js,
  server: &str,
  definitions: Value,
  connection: Option<Held>,
) -> Result<Value, Thrown> {
  let tools = js.array(0)?;
  if !js.is_array(definitions) {
    return Ok(tools);
  }
  let is_deferred = connection.is_none();
  let mut index = 0;
  for i in 0..js.array_length(definitions) {
    let definition = js.element(definitions, i)?;
    if js.type_of(definition) != sys::ValueType::napi_object {
      continue;
    }
    let Some(tool_name) = js.rust_string(js.get(definition, "name")?) else {
      continue;
    };
    let tool = js.object()?;
    js.set(
      tool,
      "name",
      js.string(&create_mcp_tool_name(server, &tool_name)),
    );
    js.set(tool, "label", js.string(&format!("{server}/{tool_name}")));
    let description = js
      .rust_string(js.get(definition, "description")?)
      .filter(|d| !d.is_empty())
      .unwrap_or_else(|| format!("MCP tool from {server}"));
    js.set(tool, "description", js.string(&description));
    js.set(
      tool,
      "parameters",
      parameters(js, js.get(definition, "inputSchema")?)?,
    );
    js.set(tool, "mcpServerName", js.string(server));
    js.set(tool, "mcpToolName", js.string(&tool_name));
    js.set(tool, "deferred", js.boolean(is_deferred));
    let target = Target {
      manager: Rc::downgrade(manager),
      server: server.to_string(),
      tool: tool_name,
      connection: connection.as_ref().map(|c| Held::new(js, c.get(js))),
    };
    js.set(tool, "execute", js.function("execute", execute, target)?);
    js.set_element(tools, index, tool)?;
    index += 1;
  }
  Ok(tools)
}

/// The input schema, with `properties: {}` added to an object schema without it (M5).
fn parameters(js: Js, schema: Value) -> Result<Value, Thrown> {
  let copy = js.object()?;
  if js.type_of(schema) == sys::ValueType::napi_object {
    let assign = js.get(js.get(js.global(), "Object")?, "assign")?;
    js.call(assign, js.undefined(), &[copy, schema])?;
  } else {
    js.set(copy, "type", js.string("object"));
  }
  let is_object = js.rust_string(js.get(copy, "type")?).as_deref() == Some("object");
  if is_object && js.is_nullish(js.get(copy, "properties")?) {
    js.set(copy, "properties", js.object()?);
  }
  Ok(copy)
}

unsafe extern "C" fn execute(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the Target given to js.function.
  let ([args, signal], data) = unsafe { js.args::<2>(info) };
  let target = unsafe { &*(data as *const Target) };
  let result = (|| {
    let options = js.object()?;
    if !js.is_nullish(signal) {
      js.set(options, "signal", signal);
    }
    if let Some(connection) = &target.connection {
      return call(js, connection.get(js), &target.tool, args, options);
    }
    let waiting = wait_for_connection(js, target)?;
    let (deferred, promise) = js.create_promise()?;
    let tool = target.tool.clone();
    let args = Held::new(js, args);
    let options = Held::new(js, options);
    when_settled(js, waiting, move |js, result| {
      let called = result.and_then(|connection| {
        call(js, connection, &tool, args.get(js), options.get(js)).map_err(|Thrown(e)| e)
      });
      match called {
        Ok(pending) => when_settled(js, pending, move |js, result| match result {
          Ok(value) => js.resolve(deferred, value),
          Err(error) => js.reject(deferred, error),
        }),
        Err(error) => js.reject(deferred, error),
      }
    });
    Ok(promise)
  })();
  match result {
    Ok(promise) => promise,
    Err(Thrown(error)) => js.rejected(error).unwrap_or_else(|_| js.undefined()),
  }
}

fn call(
  js: Js,
  connection: Value,
  tool: &str,
  args: Value,
  options: Value,
) -> Result<Value, Thrown> {
  native_result(
    js,
    call_tool(
      Env::from_raw(js.env),
      JsArg(connection),
      JsArg(js.string(tool)),
      Some(JsArg(args)),
      Some(JsArg(options)),
    ),
  )
}

/// `manager.waitForConnection(server)`, through the object so an override applies (W1).
fn wait_for_connection(js: Js, target: &Target) -> Result<Value, Thrown> {
  let Some(manager) = target.manager.upgrade() else {
    return js.rejected(not_connected(js, &target.server));
  };
  let this = manager.this_object(js)?;
  call_method(js, this, "waitForConnection", &[js.string(&target.server)])
}

unsafe extern "C" fn get_connection(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: info belongs to this call; data is the Target given to js.function.
  let (_, data) = unsafe { js.args::<0>(info) };
  let target = unsafe { &*(data as *const Target) };
  match wait_for_connection(js, target) {
    Ok(promise) => promise,
    Err(Thrown(error)) => js.rejected(error).unwrap_or_else(|_| js.undefined()),
  }
}

/// M5: `mcp_<server>_<tool>` from sanitized parts.
#[napi(
  js_name = "createMCPToolName",
  ts_args_type = "serverName: string, toolName: string",
  ts_return_type = "string",
  skip_typescript
)]
pub fn create_tool_name(env: Env, server: JsArg, tool: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let server = js.display(server.0);
  let tool = js.display(tool.0);
  finish(js, Ok(js.string(&create_mcp_tool_name(&server, &tool))))
}

/// Splits `mcp_<server>_<tool>`; `null` for other names.
#[napi(js_name = "parseMCPToolName", skip_typescript)]
pub fn parse_tool_name(env: Env, name: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let Some((server, tool)) = js.rust_string(name.0).and_then(|n| parse_mcp_tool_name(&n)) else {
      return Ok(js.null());
    };
    let parsed = js.object()?;
    js.set(parsed, "serverName", js.string(&server));
    js.set(parsed, "toolName", js.string(&tool));
    Ok(parsed)
  })();
  finish(js, result)
}
