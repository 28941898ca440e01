//! mcp-native: a Rust MCP client backend for Node.js and Bun.
//!
//! `protocol` frames and classifies JSON-RPC messages, `session` correlates requests with
//! responses, `transport` moves frames over a child process or HTTP. `client` and `manager`
//! hold the client flows and the manager's state machine over the traits of `host`, which
//! `binding` (the only place that knows about napi) implements with JS.
#![deny(clippy::all)]

pub mod client;
pub mod config;
pub mod error;
#[cfg(test)]
pub(crate) mod fake_host;
pub mod host;
pub mod http_client;
pub mod manager;
pub mod oauth;
pub mod persist;
pub mod protocol;
pub mod redaction;
pub mod runtime;
pub mod session;
pub mod sys;
pub mod transport;
pub mod transport_error;

#[cfg(not(test))]
mod binding;
