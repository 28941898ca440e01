//! Which delivered events share one `JSON.parse`: a run of two or more plain results and
//! notifications becomes one JSON array (one parse and one string for the host instead of
//! one each), in the order they came (T3).
use super::Event;

/// A part of a delivery: an event alone, or a run with its payloads as one array text.
#[derive(Debug)]
pub enum Piece {
  One(Event),
  Run { events: Vec<Event>, array: String },
}

/// The JSON text a run carries for `event`: a result, or a notification's params.
fn payload(event: &Event) -> Option<&str> {
  match event {
    Event::Settled {
      outcome: Ok(Some(result)),
      ..
    } => Some(result.get()),
    Event::Notification { params, .. } => params.as_deref(),
    _ => None,
  }
}

fn batchable(event: &Event) -> bool {
  matches!(
    event,
    Event::Settled {
      outcome: Ok(Some(_)),
      ..
    } | Event::Notification { .. }
  )
}

/// `[payload, …]`, `null` for a notification without params.
fn array_of(run: &[Event]) -> String {
  let bytes: usize = run.iter().map(|e| payload(e).map_or(4, str::len) + 1).sum();
  let mut text = String::with_capacity(bytes + 2);
  text.push('[');
  for (i, event) in run.iter().enumerate() {
    if i > 0 {
      text.push(',');
    }
    text.push_str(payload(event).unwrap_or("null"));
  }
  text.push(']');
  text
}

/// `events` in order, runs of two or more batchable ones put together.
pub fn pieces(events: Vec<Event>) -> impl Iterator<Item = Piece> {
  let mut events = events.into_iter().peekable();
  std::iter::from_fn(move || {
    let event = events.next()?;
    if !(batchable(&event) && events.peek().is_some_and(batchable)) {
      return Some(Piece::One(event));
    }
    let mut run = vec![event];
    while let Some(next) = events.next_if(batchable) {
      run.push(next);
    }
    let array = array_of(&run);
    Some(Piece::Run { events: run, array })
  })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::error::CoreError;
  use crate::protocol::json_text::JsonText;

  fn result(ticket: u64, json: &str) -> Event {
    Event::Settled {
      ticket,
      outcome: Ok(Some(JsonText::parse(json).unwrap())),
    }
  }

  fn note(params: Option<&str>) -> Event {
    Event::Notification {
      method: "notifications/message".into(),
      params: params.map(Into::into),
    }
  }

  fn shape(pieces: &[Piece]) -> Vec<String> {
    pieces
      .iter()
      .map(|piece| match piece {
        Piece::One(event) => format!(
          "one {}",
          if batchable(event) {
            "batchable"
          } else {
            "other"
          }
        ),
        Piece::Run { events, array } => format!("run {} {array}", events.len()),
      })
      .collect()
  }

  #[test]
  fn t3_runs_of_results_and_notifications_share_one_array_in_order() {
    let events = vec![
      result(1, r#"{"a":1}"#),
      note(None),
      note(Some(r#"{"b":2}"#)),
      Event::Settled {
        ticket: 2,
        outcome: Err(CoreError::NotConnected),
      },
      result(3, "[]"),
      Event::Stderr("x".into()),
      note(Some("{}")),
      result(4, "7"),
    ];
    assert_eq!(
      shape(&pieces(events).collect::<Vec<_>>()),
      [
        r#"run 3 [{"a":1},null,{"b":2}]"#,
        "one other",
        "one batchable",
        "one other",
        "run 2 [{},7]",
      ]
    );
  }
}
