//! A response body read as server-sent events, one at a time, with the size limit (E3)
//! applied to each.
use crate::error::CoreError;
use crate::protocol::sse::{SseEvent, SseItem, SseParser};
use crate::transport::response::Response;

pub enum ReadItem {
  Event(SseEvent),
  TooLarge,
}

/// Pulls SSE events out of a response body.
pub struct EventReader {
  body: Response,
  parser: SseParser,
  ready: std::collections::VecDeque<SseItem>,
  limit: usize,
}

impl EventReader {
  pub fn new(response: Response, limit: usize) -> Self {
    EventReader {
      body: response,
      parser: SseParser::new(limit),
      ready: std::collections::VecDeque::new(),
      limit,
    }
  }

  /// The largest event kept (E3).
  pub fn limit(&self) -> usize {
    self.limit
  }

  /// # Cancel safety
  /// Parsed events are kept in `ready`, so dropping a pending call loses nothing.
  pub async fn next(&mut self) -> Option<Result<ReadItem, CoreError>> {
    loop {
      if let Some(item) = self.ready.pop_front() {
        return Some(Ok(match item {
          SseItem::Event(event) => ReadItem::Event(event),
          SseItem::TooLarge => ReadItem::TooLarge,
        }));
      }
      match self.body.chunk().await.transpose()? {
        Ok(chunk) => {
          let mut out = Vec::new();
          self.parser.push(&chunk, &mut out);
          self.ready.extend(out);
        }
        Err(error) => return Some(Err(error)),
      }
    }
  }
}
