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
