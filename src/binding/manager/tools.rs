//! M5: the tool objects the manager hands out — the caller's `toolFactory`, or the default
//! ones the core describes — and the naming functions themselves.
use napi::{sys, Env};
use napi_derive::napi;

use super::JsManagerHost;
use crate::binding::client::start_tool_call;
use crate::binding::executor;
use crate::binding::js::{Held, Js, JsArg, JsRaw, Thrown, Value};
use crate::binding::js_error::finish;
use crate::manager::naming::{create_mcp_tool_name, parse_mcp_tool_name};
use crate::manager::ordering::js_string_order;
use crate::manager::subscription_epoch::post_action;
use crate::manager::tools::{default_tools, execute};

fn held(js: Js, result: Result<Value, Thrown>) -> Result<Held, Held> {
  result
    .map(|v| Held::new(js, v))
    .map_err(|Thrown(e)| Held::new(js, e))
}

/// M5's default tools as JS objects, a connected server's or (without a connection) a
/// cached listing's; `execute` runs the core's flow.
pub(super) fn build(
  host: &JsManagerHost,
  server: &str,
  definitions: &Held,
  connection: Option<&Held>,
) -> Result<Held, Held> {
  let js = host.js();
  let compat = crate::manager::host::Settings::read(
    host,
    crate::manager::host::ManagerHost::options(host).as_ref(),
  )
  .compat;
  let specs = default_tools(host, server, definitions, compat)?;
  let built = (|| {
    let tools = js.array(specs.len())?;
    for (index, spec) in specs.into_iter().enumerate() {
      let tool = js.object()?;
      js.set(tool, "name", js.string(&spec.name));
      js.set(tool, "label", js.string(&spec.label));
      js.set(tool, "description", js.string(&spec.description));
      js.set(tool, "parameters", spec.parameters.get(js));
      js.set(tool, "mcpServerName", js.string(&spec.server));
      js.set(tool, "mcpToolName", js.string(&spec.tool));
      js.set(tool, "deferred", js.boolean(connection.is_none()));
      let host = host.clone();
      let connection = connection.cloned();
      let run = js.closure("execute", move |js, args| {
        // P4: `execute(args, signal?, {onProgress, timeout, …}?)` passes them to callTool.
        let extra = args.get(2);
        let options = if js.type_of(extra) == sys::ValueType::napi_object {
          let assign = js.get(js.get(js.global(), "Object")?, "assign")?;
          js.call(assign, js.undefined(), &[js.object()?, extra])?
        } else {
          js.object()?
        };
        let signal = args.get(1);
        if !js.is_nullish(signal) {
          js.set(options, "signal", signal);
        }
        // A live tool's call starts at once; a deferred one waits for its connection first.
        if let Some(connection) = &connection {
          let tool = js.string(&spec.tool);
          return start_tool_call(
            js,
            connection.get(js),
            tool,
            Some(args.get(0)),
            Some(options),
          );
        }
        let flow = execute(
          host.clone(),
          spec.server.clone(),
          spec.tool.clone(),
          None,
          Held::new(js, args.get(0)),
          Held::new(js, options),
        );
        executor::promise(js, flow)
      })?;
      js.set(tool, "execute", run);
      js.set_element(tools, index as u32, tool)?;
    }
    Ok(tools)
  })();
  held(js, built)
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

/// A30: sorts tools by `name` in place, in JS string order; the same array back.
#[napi(
  js_name = "sortMCPToolsByName",
  ts_generic_types = "T extends { name: string }",
  ts_args_type = "tools: T[]",
  ts_return_type = "T[]"
)]
pub fn sort_tools_by_name(env: Env, tools: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let sorted = (|| {
    if !js.is_array(tools.0) {
      return Ok(tools.0);
    }
    let mut named = (0..js.array_length(tools.0))
      .map(|i| {
        let tool = js.element(tools.0, i)?;
        let name = if js.is_record(tool) {
          js.get(tool, "name").map(|n| js.display(n))?
        } else {
          js.display(tool)
        };
        Ok((name, tool))
      })
      .collect::<Result<Vec<_>, Thrown>>()?;
    // Stable, as `Array.prototype.sort` is.
    named.sort_by(|a, b| js_string_order(&a.0, &b.0));
    for (i, (_, tool)) in named.into_iter().enumerate() {
      js.set_element(tools.0, i as u32, tool)?;
    }
    Ok(tools.0)
  })();
  finish(js, sorted)
}

/// A30: what to do with a resource subscription once its request settles: `"rollback"`
/// when notifications are off, `"ignore"` when a later epoch owns them, else `"apply"`.
#[napi(
  js_name = "resolveSubscriptionPostAction",
  ts_return_type = "\"rollback\" | \"ignore\" | \"apply\""
)]
pub fn resolve_subscription_post_action(
  enabled: bool,
  current_epoch: f64,
  subscription_epoch: f64,
) -> &'static str {
  post_action(enabled, current_epoch, subscription_epoch).as_str()
}
