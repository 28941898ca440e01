//! Pure JSON-RPC 2.0 logic: framing, message classification, outgoing frames.
pub mod destination;
pub mod framing;
pub mod header_policy;
pub mod headers;
pub mod line_region;
pub mod line_scan;
pub mod message;
pub mod parse_sse;
pub mod plain_notification;
pub mod redirects;
pub mod resumption;
pub mod session_id;
pub mod sse;
pub mod stable_json;
pub mod subscriptions;
pub mod tool_headers;
pub mod tree;
