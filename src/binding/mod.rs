//! The napi binding layer: converts values and bridges callbacks and signals. No protocol
//! logic lives here.
mod args;
pub(crate) mod calls;
mod client;
mod executor;
mod host;
mod http;
pub(crate) mod js;
mod js_error;
mod json_rpc;
mod manager;
mod mcp_client;
pub(crate) mod pump;
mod stdio;
pub(crate) mod transport_class;
