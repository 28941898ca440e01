//! A24 on the agent's plain header objects: `mergeMCPHeaders`, `setGeneratedHeader` and
//! `withoutHeader`.
use napi::Env;
use napi_derive::napi;

use super::js::{Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::transport_class::thrown;
use crate::protocol::header_policy::{merge, same_name};

/// An object's own headers, in order; nothing for a value that is not an object.
fn entries(js: Js, headers: Value) -> Result<Vec<(String, Value)>, Thrown> {
  if !js.is_record(headers) {
    return Ok(Vec::new());
  }
  js.keys(headers)?
    .into_iter()
    .map(|name| Ok((name.clone(), js.get(headers, &name)?)))
    .collect()
}

fn header_name(js: Js, name: Value) -> Result<String, Thrown> {
  js.rust_string(name).ok_or_else(|| {
    Thrown(js_error::type_error(
      js,
      "The \"name\" argument must be a string",
    ))
  })
}

/// A new object: the configured headers without those the client generates (whatever their
/// case), then the generated ones.
#[napi(
  js_name = "mergeMCPHeaders",
  ts_args_type = "headers: { generated: Record<string, string>; configured?: Record<string, string> }",
  ts_return_type = "Record<string, string>"
)]
pub fn merge_mcp_headers(env: Env, headers: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let merged = (|| {
    let (generated, configured) = if js.is_record(headers.0) {
      (
        js.get(headers.0, "generated")?,
        js.get(headers.0, "configured")?,
      )
    } else {
      (js.undefined(), js.undefined())
    };
    let out = js.object()?;
    for (name, value) in merge(&entries(js, generated)?, &entries(js, configured)?) {
      js.set(out, &name, value);
    }
    Ok(out)
  })();
  merged.map(JsRaw).map_err(|t| thrown(js, t))
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
  let js = Js::new(env.raw());
  let set = (|| {
    let name = header_name(js, name.0)?;
    for (existing, _) in entries(js, headers.0)? {
      if same_name(&existing, &name) {
        js.delete(headers.0, &existing);
      }
    }
    if js.is_record(headers.0) {
      js.set(headers.0, &name, value.0);
    }
    Ok(())
  })();
  set.map_err(|t| thrown(js, t))
}

/// `headers` itself when it has no header `name` (in any case), else a copy without it.
#[napi(
  js_name = "withoutHeader",
  ts_generic_types = "T extends Record<string, string> | undefined",
  ts_args_type = "headers: T, name: string",
  ts_return_type = "T"
)]
pub fn without_header(env: Env, headers: JsArg, name: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let name = header_name(js, name.0)?;
    let all = entries(js, headers.0)?;
    if !all.iter().any(|(existing, _)| same_name(existing, &name)) {
      return Ok(headers.0);
    }
    let copy = js.object()?;
    for (existing, value) in all {
      if !same_name(&existing, &name) {
        js.set(copy, &existing, value);
      }
    }
    Ok(copy)
  })();
  result.map(JsRaw).map_err(|t| thrown(js, t))
}
