//! Moving frames: child-process stdio and HTTP. Transports feed a `Session`.
pub mod direct_origin;
pub mod event_stream;
pub mod fetch;
pub mod fetch_failure;
pub mod h1;
pub mod host_stream;
pub mod http;
pub mod legacy_sse;
pub mod legacy_stream;
pub mod long_line_feed;
pub mod one_shot;
pub mod pipe_writer;
pub mod process_group;
pub mod response;
pub mod spawn_command;
pub mod spawn_request;
pub mod stderr_tail;
pub mod stdio;
pub mod termination;
#[cfg(test)]
pub(crate) mod test_http;
pub mod win32_path;

use std::sync::Arc;

use crate::session::Session;

/// What the binding needs of any transport: its session, and the start of its close
/// sequence (which ends with `Event::Closed`).
pub trait Transport {
  fn session(&self) -> &Arc<Session>;
  fn close(&self);
}

impl Transport for stdio::StdioTransport {
  fn session(&self) -> &Arc<Session> {
    self.session()
  }
  fn close(&self) {
    self.close()
  }
}

impl Transport for http::HttpTransport {
  fn session(&self) -> &Arc<Session> {
    self.session()
  }
  fn close(&self) {
    self.close()
  }
}
