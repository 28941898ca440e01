//! A24 on the agent's plain header objects (`mergeMCPHeaders`, `setGeneratedHeader`,
//! `withoutHeader`: the core's `client::header_objects`) and `mcpFetch`.
use napi::Env;
use napi_derive::napi;

use super::executor;
use super::host::JsHost;
use super::js::{Held, Js, JsArg, JsRaw, Thrown};
use super::js_error::thrown;
use crate::client::header_objects;
use crate::client::mcp_fetch::McpFetch;

/// Runs one of the header operations on the JS thread's values; what it throws is thrown.
fn run<T>(
  env: Env,
  operation: impl FnOnce(&JsHost) -> Result<T, Held>,
  convert: impl FnOnce(Js, T) -> JsRaw,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  operation(&JsHost::new(js))
    .map(|value| convert(js, value))
    .map_err(|error| thrown(js, Thrown(error.get(js))))
}

/// A new object: the configured headers without those the client generates (whatever their
/// case), then the generated ones.
#[napi(
  js_name = "mergeMCPHeaders",
  ts_args_type = "headers: { generated: Record<string, string>; configured?: Record<string, string> }",
  ts_return_type = "Record<string, string>"
)]
pub fn merge_mcp_headers(env: Env, headers: JsArg) -> napi::Result<JsRaw> {
  run(
    env,
    |h| header_objects::merged(h, &h.hold(headers.0)),
    |js, merged| JsRaw(merged.get(js)),
  )
}

/// Sets `name` on `headers`, replacing any header of that name in another case.
#[napi(
  js_name = "setGeneratedHeader",
  ts_args_type = "headers: Record<string, string>, name: string, value: string",
  ts_return_type = "void"
)]
pub fn set_generated_header(
  env: Env,
  headers: JsArg,
  name: JsArg,
  value: JsArg,
) -> napi::Result<()> {
  run(
    env,
    |h| header_objects::set_generated(h, &h.hold(headers.0), &h.hold(name.0), h.hold(value.0)),
    |js, ()| JsRaw(js.undefined()),
  )
  .map(|_| ())
}

/// `headers` itself when it has no header `name` (in any case), else a copy without it.
#[napi(
  js_name = "withoutHeader",
  ts_generic_types = "T extends Record<string, string> | undefined",
  ts_args_type = "headers: T, name: string",
  ts_return_type = "T"
)]
pub fn without_header(env: Env, headers: JsArg, name: JsArg) -> napi::Result<JsRaw> {
  run(
    env,
    |h| header_objects::without(h, &h.hold(headers.0), &h.hold(name.0)),
    |js, result| JsRaw(result.get(js)),
  )
}

/// A24 `mcpFetch` (the core's `client::mcp_fetch`): the runtime's `fetch` with the
/// generated headers over the configured ones; origin-locked, redirects followed here.
#[napi(
  js_name = "mcpFetch",
  ts_args_type = "url: string, init: MCPFetchInit, sources: { generated: Record<string, string>; configured?: Record<string, string> }, originLocked?: boolean",
  ts_return_type = "Promise<Response>"
)]
pub fn mcp_fetch(
  env: Env,
  url: JsArg,
  init: JsArg,
  sources: JsArg,
  origin_locked: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let h = JsHost::new(js);
  let locked = origin_locked.is_some_and(|v| js.truthy(v.0));
  let request = js
    .get(js.global(), "fetch")
    .map_err(|Thrown(e)| h.hold(e))
    .and_then(|fetch| {
      let held = |value: JsArg| h.hold(value.0);
      McpFetch::new(
        &h,
        &held(url),
        &held(init),
        &held(sources),
        locked,
        h.hold(fetch),
      )
    });
  let started = match request {
    Ok(request) => executor::promise(js, async move { request.run(&h).await }),
    Err(error) => Err(Thrown(error.get(js))),
  };
  started.map(JsRaw).map_err(|t| thrown(js, t))
}
