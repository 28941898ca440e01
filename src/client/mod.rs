//! The client flows of §6 over any host transport (C5): the `initialize` handshake with its
//! timeout and abort (C1), paginated listings and the tool list cached on the connection
//! (C2). `handshake` holds the pure parts: what `initialize` offers and the timeout text.
pub mod call_mcp;
mod connect;
pub mod era;
pub mod features;
pub mod handshake;
pub mod header_objects;
pub mod input_required;
mod listing;
pub mod mcp_fetch;
pub mod removed_methods;
pub mod resources;
pub mod server_requests;

#[cfg(test)]
mod tests;

pub use connect::{connect, ConnectRequest};
pub use features::ClientFeatures;
pub use handshake::{
  connect_timeout_message, initialize_params, ClientOptions, CONNECT_TIMEOUT_ERROR,
};
pub use listing::{
  call_tool, connection_transport, list_tools, paginate, stale_list, supports, tool_call,
};
