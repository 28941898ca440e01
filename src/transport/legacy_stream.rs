//! The 2024-11-05 HTTP+SSE protocol's one stream (A22, A23, H11), read the same way by
//! `LegacySseTransport` and by `HttpTransport`'s fallback for `type: "sse"`: its first
//! `endpoint` event names where frames are POSTed, on the configured origin only, and every
//! later event carries the server's messages.
use reqwest::Url;
use serde_json::value::RawValue;

use super::event_stream::{EventReader, ReadItem};
use crate::error::{CoreError, LegacySseError};
use crate::protocol::destination::legacy_endpoint;
use crate::session::{Event, Session};

/// A22: the events up to the first `endpoint` one, whose URL (resolved against `url`, on
/// its origin) is returned. Events before it have no session to go to yet and are dropped.
///
/// # Errors
/// The stream's read error; `Endpoint` for a URL that is not one or is on another origin;
/// `LegacySse(NoEndpoint)` when the stream ends first.
pub async fn endpoint_event(events: &mut EventReader, url: &Url) -> Result<Url, CoreError> {
  while let Some(item) = events.next().await {
    if let ReadItem::Event(event) = item? {
      if event.event.as_deref() == Some("endpoint") {
        return Ok(legacy_endpoint(url, &event.data)?);
      }
    }
  }
  Err(LegacySseError::NoEndpoint.into())
}

/// Feeds each event's JSON into the session until the stream ends; a payload that is not
/// JSON ends it (A23).
pub async fn deliver(session: &Session, events: &mut EventReader) -> Result<(), CoreError> {
  let limit = events.limit();
  while let Some(item) = events.next().await {
    let event = match item? {
      ReadItem::Event(event) => event,
      ReadItem::TooLarge => {
        session
          .events()
          .emit(Event::Error(CoreError::MessageTooLarge { limit }));
        continue;
      }
    };
    // Only the first endpoint event counts.
    if event.event.as_deref() == Some("endpoint") {
      continue;
    }
    let data = event.data.trim();
    if data.is_empty() || data == "[DONE]" {
      continue;
    }
    let Some(frames) = frames_of(data) else {
      return Err(LegacySseError::NonJson(event.data).into());
    };
    for frame in frames {
      session.handle_frame(frame);
    }
  }
  Ok(())
}

/// A8: the frames of one event's JSON: an array is a batch. `None` if it is not JSON.
fn frames_of(data: &str) -> Option<Vec<&str>> {
  if data.starts_with('[') {
    let batch: Vec<&RawValue> = serde_json::from_str(data).ok()?;
    return Some(batch.into_iter().map(RawValue::get).collect());
  }
  serde_json::from_str::<serde::de::IgnoredAny>(data).ok()?;
  Some(vec![data])
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a23_events_are_frames_batches_or_not_json() {
    assert_eq!(frames_of(r#"{"a":1}"#), Some(vec![r#"{"a":1}"#]));
    assert_eq!(
      frames_of(r#"[{"a":1}, {"b":2}]"#),
      Some(vec![r#"{"a":1}"#, r#"{"b":2}"#])
    );
    assert_eq!(frames_of("{not json"), None);
    assert_eq!(frames_of("[1,"), None);
  }
}
