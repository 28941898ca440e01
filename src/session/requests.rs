//! The one table of a connection's requests. An entry lives from the moment its request is
//! sent until its caller has been told how it ended: its wire side (timers, cancellation,
//! the ids it went out under) while the server may still answer, its caller's side (the
//! promise, abort listener and progress callback, as opaque handles) until the outcome has
//! been delivered. Which handles to release, and whether the host must stay alive, follow
//! from the entries. Generic over the handle, so the rules are tested without a JS host.
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A reference the host keeps for a request (a promise to settle, a function to call or
/// detach). The core stores it and hands it back; only the host knows what it points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRef(usize);

impl HostRef {
  pub fn new(raw: usize) -> Self {
    HostRef(raw)
  }

  pub fn raw(self) -> usize {
    self.0
  }
}

/// The caller's side of an entry: who waits for it and what to release once told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hooks<H> {
  pub promise: H,
  /// P4: the request's `onProgress`.
  pub progress: Option<H>,
  /// T8: the abort signal and the listener added to it.
  pub abort: Option<(H, H)>,
  /// Background work (the SSE listener, a subscription) does not keep the host alive.
  pub background: bool,
}

impl<H> Hooks<H> {
  pub fn promise(promise: H) -> Self {
    Hooks {
      promise,
      progress: None,
      abort: None,
      background: false,
    }
  }

  pub fn background(promise: H) -> Self {
    Hooks {
      background: true,
      ..Hooks::promise(promise)
    }
  }
}

/// The wire side of an entry: what the session does while the server may still answer.
#[derive(Default)]
pub(super) struct Wire {
  /// T9: `initialize` is never cancelled.
  pub is_initialize: bool,
  /// N4: a `tools/list` of the stateless era, whose tools are screened.
  pub lists_tools: bool,
  pub timer: Option<JoinHandle<()>>,
  /// P4: `maxTotalTimeout`'s timer, never restarted.
  pub total_timer: Option<JoinHandle<()>>,
  pub cancel: Option<CancellationToken>,
  /// P4: its progress notifications are reported.
  pub progress: bool,
  /// P4: the timeout a progress notification restarts.
  pub reset_after: Option<Duration>,
  /// N7: a subscription (never timed; it ends without an error).
  pub subscription: bool,
}

impl Wire {
  /// Nobody waits for the answer any more: stop its timers and whatever the transport
  /// still does for it.
  pub fn stop(self) {
    for timer in [self.timer, self.total_timer].into_iter().flatten() {
      timer.abort();
    }
    if let Some(cancel) = self.cancel {
      cancel.cancel();
    }
  }
}

struct Entry<H> {
  wire: Option<Wire>,
  hooks: Option<Hooks<H>>,
}

/// What `finish` removed: the wire side if the server could still answer, and the hooks.
pub(super) struct Finished<H> {
  pub wire: Option<Wire>,
  pub hooks: Option<Hooks<H>>,
}

/// A map keyed by our own request ids. SipHash's resistance to chosen keys buys nothing
/// here (the keys are our counter; an answer's id is only looked up) and it showed in a
/// call's profile: one multiply spreads the sequential ids over the table instead.
type ById<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
  fn finish(&self) -> u64 {
    self.0
  }

  fn write(&mut self, bytes: &[u8]) {
    for byte in bytes {
      self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
  }

  fn write_u64(&mut self, id: u64) {
    // Fibonacci hashing: the table indexes by the low bits and tags by the top ones, so a
    // plain counter would put every id under one tag.
    self.0 = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
  }
}

pub(super) struct Requests<H> {
  entries: ById<Entry<H>>,
  /// N5: the id a request was re-sent under → the ticket it still settles.
  reissued: ById<u64>,
  /// Entries whose caller, not yet told, keeps the host alive.
  foreground: usize,
}

impl<H> Default for Requests<H> {
  fn default() -> Self {
    Requests {
      entries: ById::default(),
      reissued: ById::default(),
      foreground: 0,
    }
  }
}

impl<H: Copy> Requests<H> {
  /// A new entry. Without hooks nobody is told through the table: it goes at its settle.
  pub fn insert(&mut self, ticket: u64, wire: Option<Wire>, hooks: Option<Hooks<H>>) {
    if hooks.is_some_and(|h| !h.background) {
      self.foreground += 1;
    }
    if let Some(old) = self.entries.insert(ticket, Entry { wire, hooks }) {
      self.forget(old);
    }
  }

  fn forget(&mut self, entry: Entry<H>) {
    if entry.hooks.is_some_and(|h| !h.background) {
      self.foreground -= 1;
    }
    if let Some(wire) = entry.wire {
      wire.stop();
    }
  }

  /// The wire side of `ticket` while the server may still answer it.
  pub fn waiting(&self, ticket: u64) -> Option<&Wire> {
    self.entries.get(&ticket)?.wire.as_ref()
  }

  pub fn waiting_mut(&mut self, ticket: u64) -> Option<&mut Wire> {
    self.entries.get_mut(&ticket)?.wire.as_mut()
  }

  pub fn any_waiting(&self, test: impl Fn(&Wire) -> bool) -> bool {
    self
      .entries
      .values()
      .filter_map(|e| e.wire.as_ref())
      .any(test)
  }

  pub fn waiting_count(&self) -> usize {
    self.entries.values().filter(|e| e.wire.is_some()).count()
  }

  /// The ticket an answer with wire id `id` settles (N5: a reissued id names its request).
  pub fn ticket_of(&self, id: u64) -> u64 {
    self.reissued.get(&id).copied().unwrap_or(id)
  }

  /// N5: request `ticket` goes out again as `id`; false once it no longer waits.
  pub fn reissue(&mut self, ticket: u64, id: u64) -> bool {
    if self.waiting(ticket).is_none() {
      return false;
    }
    self.reissued.retain(|_, of| *of != ticket);
    self.reissued.insert(id, ticket);
    true
  }

  /// The server can no longer answer `ticket` (answered, timed out, failed, closed): its
  /// wire side, to stop. The entry stays while its caller has to be told.
  pub fn settle(&mut self, ticket: u64) -> Option<Wire> {
    let entry = self.entries.get_mut(&ticket)?;
    let wire = entry.wire.take()?;
    if entry.hooks.is_none() {
      self.entries.remove(&ticket);
    }
    if !self.reissued.is_empty() {
      self.reissued.retain(|_, of| *of != ticket);
    }
    Some(wire)
  }

  /// `settle` for the answer with wire id `id`: its ticket and wire side.
  pub fn settle_answered(&mut self, id: u64) -> (u64, Option<Wire>) {
    let ticket = self.ticket_of(id);
    (ticket, self.settle(ticket))
  }

  /// Every request still waiting, settled, in ticket order.
  pub fn settle_all(&mut self) -> Vec<(u64, Wire)> {
    let mut waiting: Vec<u64> = self
      .entries
      .iter()
      .filter(|(_, e)| e.wire.is_some())
      .map(|(ticket, _)| *ticket)
      .collect();
    waiting.sort_unstable();
    self.reissued.clear();
    waiting
      .into_iter()
      .filter_map(|ticket| Some((ticket, self.settle(ticket)?)))
      .collect()
  }

  /// The caller has been told, or gave up (T8): the entry is gone. Its wire side comes
  /// back if the server could still answer (to cancel), and its hooks, to release.
  pub fn finish(&mut self, ticket: u64) -> Option<Finished<H>> {
    let entry = self.entries.remove(&ticket)?;
    if entry.wire.is_some() && !self.reissued.is_empty() {
      self.reissued.retain(|_, of| *of != ticket);
    }
    if entry.hooks.is_some_and(|h| !h.background) {
      self.foreground -= 1;
    }
    Some(Finished {
      wire: entry.wire,
      hooks: entry.hooks,
    })
  }

  pub fn hooks(&self, ticket: u64) -> Option<Hooks<H>> {
    self.entries.get(&ticket)?.hooks
  }

  /// T8: the caller listens for an abort of `ticket`; false once its caller has been told.
  pub fn set_abort(&mut self, ticket: u64, signal: H, listener: H) -> bool {
    match self.entries.get_mut(&ticket).and_then(|e| e.hooks.as_mut()) {
      Some(hooks) => {
        hooks.abort = Some((signal, listener));
        true
      }
      None => false,
    }
  }

  /// Whether a caller still waits for an outcome that keeps the host alive.
  pub fn keeps_alive(&self) -> bool {
    self.foreground > 0
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn table() -> Requests<u32> {
    Requests::default()
  }

  #[test]
  fn sequential_ids_spread_over_the_tables_slots_and_tags() {
    use std::collections::HashSet;
    use std::hash::BuildHasher;
    let hashes: Vec<u64> = (1..=1024u64)
      .map(|id| BuildHasherDefault::<IdHasher>::default().hash_one(id))
      .collect();
    let slots: HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
    let tags: HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
    assert_eq!(slots.len(), 1024);
    assert_eq!(tags.len(), 128);
  }

  #[test]
  fn an_entry_with_hooks_outlives_its_settle_until_its_caller_is_told() {
    let mut t = table();
    t.insert(1, Some(Wire::default()), Some(Hooks::promise(10)));
    assert!(t.keeps_alive());
    assert!(t.settle(1).is_some());
    // Answered: no second settle, no longer waiting, but the caller is still owed it.
    assert!(t.settle(1).is_none());
    assert!(t.waiting(1).is_none());
    assert!(t.keeps_alive());
    let finished = t.finish(1).unwrap();
    assert!(finished.wire.is_none());
    assert_eq!(finished.hooks.map(|h| h.promise), Some(10));
    assert!(!t.keeps_alive());
    assert!(t.finish(1).is_none(), "hooks are released exactly once");
  }

  #[test]
  fn an_entry_without_hooks_goes_at_its_settle() {
    let mut t = table();
    t.insert(1, Some(Wire::default()), None);
    assert!(!t.keeps_alive());
    assert!(t.settle(1).is_some());
    assert!(t.finish(1).is_none());
    assert_eq!(t.waiting_count(), 0);
  }

  #[test]
  fn a_caller_giving_up_first_gets_the_wire_side_back_to_cancel() {
    let mut t = table();
    t.insert(1, Some(Wire::default()), Some(Hooks::promise(10)));
    assert!(t.set_abort(1, 11, 12));
    let finished = t.finish(1).unwrap();
    assert!(finished.wire.is_some());
    assert_eq!(finished.hooks.unwrap().abort, Some((11, 12)));
    // A late answer finds nothing to settle.
    assert!(t.settle(1).is_none());
    assert!(!t.set_abort(1, 11, 12));
  }

  #[test]
  fn background_callers_never_keep_the_host_alive() {
    let mut t = table();
    t.insert(1, None, Some(Hooks::background(10)));
    t.insert(2, Some(Wire::default()), Some(Hooks::background(20)));
    assert!(!t.keeps_alive());
    t.insert(3, None, Some(Hooks::promise(30)));
    assert!(t.keeps_alive());
    t.finish(3);
    assert!(!t.keeps_alive());
    t.finish(1);
    t.finish(2);
    assert!(!t.keeps_alive());
  }

  #[test]
  fn a_reissued_id_settles_its_ticket_and_is_forgotten_with_it() {
    let mut t = table();
    t.insert(1, Some(Wire::default()), Some(Hooks::promise(10)));
    assert!(t.reissue(1, 5));
    assert!(t.reissue(1, 6));
    // Only the latest id stands for the request.
    assert_eq!(t.ticket_of(5), 5);
    let (ticket, wire) = t.settle_answered(6);
    assert_eq!(ticket, 1);
    assert!(wire.is_some());
    assert_eq!(t.ticket_of(6), 6);
    assert!(!t.reissue(1, 7), "no longer waiting");
  }

  #[test]
  fn settle_all_takes_every_waiting_request_in_order_and_keeps_what_callers_are_owed() {
    let mut t = table();
    for ticket in [3, 1, 2] {
      t.insert(
        ticket,
        Some(Wire::default()),
        Some(Hooks::promise(ticket as u32)),
      );
    }
    t.insert(4, Some(Wire::default()), None);
    t.insert(9, None, Some(Hooks::promise(9)));
    let settled: Vec<u64> = t.settle_all().into_iter().map(|(t, _)| t).collect();
    assert_eq!(settled, [1, 2, 3, 4]);
    assert_eq!(t.waiting_count(), 0);
    assert!(t.keeps_alive());
    for ticket in [1, 2, 3, 9] {
      assert!(t.finish(ticket).unwrap().hooks.is_some());
    }
    assert!(t.finish(4).is_none());
    assert!(!t.keeps_alive());
  }

  #[test]
  fn a_replaced_entry_releases_its_count() {
    let mut t = table();
    t.insert(1, None, Some(Hooks::promise(10)));
    t.insert(1, None, Some(Hooks::promise(11)));
    t.finish(1);
    assert!(!t.keeps_alive());
  }
}
