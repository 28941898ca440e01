//! The napi binding layer: implements the core's host traits over JS values, converts
//! arguments and results, and bridges callbacks, promises and signals. The flows and their
//! decisions are the core's (`crate::client`, `crate::manager`, `crate::session`); Node-API's
//! unsafe calls are all in `js`, and libuv's in `uv`.
mod args;
mod auth_call;
pub(crate) mod calls;
mod client;
mod executor;
mod header_policy;
mod host;
mod host_reader;
mod host_transports;
mod http;
pub(crate) mod js;
mod js_error;
pub(crate) mod js_side;
mod js_slot;
mod json_rpc;
mod legacy_sse;
mod loop_spin;
mod manager;
mod mcp_client;
pub(crate) mod pump;
mod request_entry;
mod request_hooks;
mod resources;
mod response_reader;
mod server_request;
mod spawn_command;
mod stdio;
pub(crate) mod timeout_resolver;
mod token_store;
pub(crate) mod transport_class;
mod transport_error;
mod tree_value;
mod uv;
mod write_frame;
mod write_hold;

/// What runs as the addon loads, once per JS thread: the error classes are defined and
/// exported, and the system's trust store starts loading off the JS thread (H10), so the
/// first HTTPS transport does not wait for it.
#[napi_derive::napi(module_exports)]
pub fn on_load(exports: napi::bindgen_prelude::Object, env: napi::Env) -> napi::Result<()> {
  crate::http_client::warm_up();
  let js = js::Js::new(env.raw());
  let classes = napi::JsValue::raw(&exports);
  // Without the entry (it cannot fail unless the exports are not ours), the checked
  // `request` serves: slower, never wrong.
  let _ = request_entry::install::<stdio::JsStdioTransport>(js, classes);
  let _ = request_entry::install::<http::JsHttpTransport>(js, classes);
  transport_error::export_error_classes(exports, env)
}
