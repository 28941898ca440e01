//! A24 on the agent's plain header objects (`mergeMCPHeaders`, `setGeneratedHeader`,
//! `withoutHeader`: the core's `client::header_objects`) and `mcpFetch`.
use napi::Env;
use napi_derive::napi;

use super::host::JsHost;
use super::js::{Held, Js, JsArg, JsRaw, Thrown, Value};
use super::js_error;
use super::js_error::thrown;
use crate::client::header_objects;
use crate::protocol::header_policy::merge;

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

/// A24 `mcpFetch`: the runtime's `fetch` with the generated headers over the configured
/// ones. Origin-locked, redirects are followed here: at most five, 301/302/303 of anything
/// but a GET refused, and the configured headers only sent to `url`'s origin.
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
  let started = (|| {
    let type_error = |message: &str| Thrown(js_error::type_error(js, message));
    let start = js
      .rust_string(url.0)
      .and_then(|text| reqwest::Url::parse(&text).ok())
      .ok_or_else(|| type_error("The \"url\" argument must be an absolute URL"))?;
    if !js.is_record(init.0) {
      return Err(type_error("The \"init\" argument must be an object"));
    }
    let method = match js.get(init.0, "method")? {
      m if js.is_nullish(m) => "GET".to_string(),
      m => js
        .rust_string(m)
        .ok_or_else(|| type_error("The \"init.method\" field must be a string"))?
        .to_ascii_uppercase(),
    };
    let (generated, configured) = if js.is_record(sources.0) {
      let h = JsHost::new(js);
      let entries = |name| {
        let headers = js.get(sources.0, name)?;
        header_objects::string_entries(&h, &h.hold(headers)).map_err(|e| Thrown(e.get(js)))
      };
      let generated = entries("generated")?;
      (generated, entries("configured")?)
    } else {
      (Vec::new(), Vec::new())
    };
    let locked = origin_locked.is_some_and(|v| js.truthy(v.0));
    let fetch = js.get(js.global(), "fetch")?;
    if !js.is_function(fetch) {
      return Err(type_error("This runtime has no global fetch"));
    }
    let host = super::host::JsHost::new(js);
    let fetch = host.hold(fetch);
    let body = host.hold(js.get(init.0, "body")?);
    let signal = host.hold(js.get(init.0, "signal")?);
    let merged = merge(&generated, &configured);
    super::executor::promise(js, async move {
      let mut current = start.clone();
      let mut hops = 0;
      loop {
        let headers = if current.origin() == start.origin() {
          &merged
        } else {
          &generated
        };
        let options = fetch_options(js, &method, headers, locked, &body, &signal)
          .map_err(|Thrown(e)| host.hold(e))?;
        let args = [js.string(current.as_str()), options];
        let response = host.call(fetch.get(js), js.undefined(), &args).await?;
        if !locked {
          return Ok(response);
        }
        let (status, location) = status_and_location(js, response.get(js));
        let next = crate::protocol::redirects::next_hop(
          &start,
          &current,
          &method,
          status,
          location.as_deref(),
          hops,
        );
        match next {
          crate::protocol::redirects::Hop::Answer => return Ok(response),
          crate::protocol::redirects::Hop::Follow(next) => {
            discard_body(js, response.get(js));
            current = next;
            hops += 1;
          }
          crate::protocol::redirects::Hop::Refuse(error) => {
            discard_body(js, response.get(js));
            let message = crate::redaction::redact_secrets(&error.to_string());
            return Err(host.hold(js.error(super::js::ErrorKind::Error, &message)));
          }
        }
      }
    })
  })();
  started.map(JsRaw).map_err(|t| thrown(js, t))
}

fn fetch_options(
  js: Js,
  method: &str,
  headers: &[(String, String)],
  locked: bool,
  body: &super::js::Held,
  signal: &super::js::Held,
) -> Result<Value, Thrown> {
  let options = js.object()?;
  js.set(options, "method", js.string(method));
  let sent = js.object()?;
  for (name, value) in headers {
    js.set(sent, name, js.string(value));
  }
  js.set(options, "headers", sent);
  if locked {
    js.set(options, "redirect", js.string("manual"));
  }
  for (name, value) in [("body", body.get(js)), ("signal", signal.get(js))] {
    if !js.is_nullish(value) {
      js.set(options, name, value);
    }
  }
  Ok(options)
}

/// A response's status and `Location` header, as `fetch` gives them.
fn status_and_location(js: Js, response: Value) -> (u16, Option<String>) {
  let status = js
    .get(response, "status")
    .ok()
    .and_then(|s| js.number_value(s))
    .map_or(0, |n| n as u16);
  let location = js
    .get(response, "headers")
    .ok()
    .and_then(|headers| {
      let get = js.get(headers, "get").ok()?;
      js.call(get, headers, &[js.string("location")]).ok()
    })
    .and_then(|value| js.rust_string(value));
  (status, location)
}

/// A redirect's body is not read: cancelling it frees the connection.
fn discard_body(js: Js, response: Value) {
  let body = js.get(response, "body").ok().filter(|b| !js.is_nullish(*b));
  if let Some(body) = body {
    if let Ok(cancel) = js.get(body, "cancel") {
      if let Ok(pending) = js.call(cancel, body, &[]) {
        // Its rejection (a body already taken) is nobody's business.
        drop(super::executor::settled(js, pending));
      }
    }
  }
}
