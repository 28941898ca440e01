//! M1/M4 `connectServers`: validate, connect every server in parallel, and answer once all
//! have settled, or once the startup gate has passed and every server still connecting has
//! deferred tools from the cache. Completions after the answer replace that server's tools
//! (and write the cache) as usual; late failures are logged, not thrown.
use std::collections::HashSet;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use futures::channel::mpsc;
use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use super::connect::Outcome;
use super::host::{Compat, Level, ManagerHost};
use super::state::Phase;
use super::validation::{join_messages, validate_server_config};
use super::Manager;
use crate::host::{json_of, Values};

pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_millis(250);

/// One server of a `connectServers` call.
pub struct Entry<V> {
  pub name: String,
  /// The caller's config object (W3, W5).
  pub config: V,
  pub source: Option<V>,
}

/// `{tools, errors, connectedServers}` of one call (`exaApiKeys` is the caller's).
pub struct Report<V> {
  pub tools: V,
  pub errors: Vec<(String, String)>,
  pub connected: Vec<String>,
}

impl<V: Clone> Report<V> {
  /// M1's result: `{tools, errors: Map<server, message>, connectedServers, exaApiKeys: []}`.
  pub fn value<H: Values<Value = V>>(&self, h: &H) -> Result<V, V> {
    let errors = self
      .errors
      .iter()
      .map(|(name, message)| (name.clone(), h.string(message)))
      .collect();
    let connected = self.connected.iter().map(|name| h.string(name)).collect();
    h.object(vec![
      ("tools", self.tools.clone()),
      ("errors", h.map(errors)?),
      ("connectedServers", h.array(connected)?),
      ("exaApiKeys", h.array(Vec::new())?),
    ])
  }
}

/// A31: what `onStatus` hears (v12 hears only `Connecting`, as `onConnecting`).
#[derive(Clone)]
pub enum Status<'a> {
  /// The servers this call connects, in config order (with v18, the invalid ones too).
  Connecting(&'a [String]),
  /// Connected, its tools stored.
  Connected(&'a str),
  /// A59: its connection was lost; a reconnect is under way.
  Reconnecting(&'a str),
  Failed {
    server: &'a str,
    error: &'a str,
    /// `sources[server].path`.
    source_path: Option<String>,
  },
}

impl Status<'_> {
  /// What the status callback is given: v18's `McpConnectionStatusEvent`; before v18 only
  /// the names being connected, as `onConnecting` (`None`: the event is not reported).
  pub fn argument<H: Values>(&self, h: &H, v18: bool) -> Option<Result<H::Value, H::Value>> {
    let names = |names: &[String]| h.array(names.iter().map(|name| h.string(name)).collect());
    if !v18 {
      return match self {
        Status::Connecting(connecting) => Some(names(connecting)),
        _ => None,
      };
    }
    Some(match self {
      Status::Connecting(connecting) => names(connecting).and_then(|array| {
        h.object(vec![
          ("type", h.string("connecting")),
          ("serverNames", array),
        ])
      }),
      Status::Connected(server) => h.object(vec![
        ("type", h.string("connected")),
        ("serverName", h.string(server)),
      ]),
      Status::Reconnecting(server) => h.object(vec![
        ("type", h.string("reconnecting")),
        ("serverName", h.string(server)),
      ]),
      Status::Failed {
        server,
        error,
        source_path,
      } => {
        let mut fields = vec![
          ("type", h.string("failed")),
          ("serverName", h.string(server)),
          ("error", h.string(error)),
        ];
        if let Some(path) = source_path {
          fields.push(("sourcePath", h.string(path)));
        }
        h.object(fields)
      }
    })
  }
}

pub type StatusHook = Rc<dyn Fn(Status<'_>)>;

/// M1 `connectServers(configs, sources)`: an entry per key of `configs`, in order, with its
/// source: `sources.get(name)` of a Map (anything with a `get` method that is not an
/// array), else `sources[name]`; a getter's throw is the call's.
pub fn entries<H: crate::host::Callbacks>(
  h: &H,
  configs: &H::Value,
  sources: &H::Value,
) -> Result<Vec<Entry<H::Value>>, H::Value> {
  if !h.is_object(configs) || h.items(configs).is_some() {
    return Err(h.type_error("The \"configs\" argument must be an object"));
  }
  let by_get = h.is_object(sources)
    && h.items(sources).is_none()
    && h.field(sources, "get").is_ok_and(|get| h.is_function(&get));
  let source_of = |name: &str| -> Result<Option<H::Value>, H::Value> {
    if !h.is_object(sources) {
      return Ok(None);
    }
    let source = if by_get {
      h.call_now(sources, "get", vec![h.string(name)])?
    } else {
      h.field(sources, name)?
    };
    Ok((!h.is_nullish(&source)).then_some(source))
  };
  h.keys(configs)?
    .into_iter()
    .map(|name| {
      Ok(Entry {
        config: h.field(configs, &name)?,
        source: source_of(&name)?,
        name,
      })
    })
    .collect()
}

/// M1/A31: the hook that tells the caller's callback (`onStatus`, or v12's `onConnecting`)
/// what it hears; a throwing callback only loses itself.
pub fn status_hook<H: crate::host::Callbacks>(
  h: &H,
  callback: Option<H::Value>,
  v18: bool,
) -> StatusHook {
  let h = h.clone();
  Rc::new(move |event: Status<'_>| {
    let Some(callback) = callback.as_ref().filter(|c| h.is_function(c)) else {
      return;
    };
    if let Some(Ok(argument)) = event.argument(&h, v18) {
      drop(h.call(callback, vec![argument]));
    }
  })
}

/// A32: the error of a first connect that ended after a disconnect or a newer attempt.
fn disconnected_during_connect(name: &str) -> String {
  format!("Server \"{name}\" was disconnected during initial connection")
}

enum Event<V> {
  Settled(String, Outcome),
  GatePassed,
  Cached(String, Option<V>),
}

impl<H: ManagerHost> Manager<H> {
  /// M1/A31: `status` hears the names actually being connected, before any waiting, and
  /// (v18) how each of them ends, in or after the startup window.
  pub async fn connect_servers(
    self: &Rc<Self>,
    entries: Vec<Entry<H::Value>>,
    status: StatusHook,
  ) -> Result<Report<H::Value>, H::Value> {
    self.connect_servers_within(entries, None, status).await
  }

  /// `connectServers` with A58's startup window of this call (else the constructor's); in
  /// v18 a window of 0 waits for every server to settle.
  pub async fn connect_servers_within(
    self: &Rc<Self>,
    entries: Vec<Entry<H::Value>>,
    window: Option<Duration>,
    status: StatusHook,
  ) -> Result<Report<H::Value>, H::Value> {
    let v18 = self.settings().compat == Compat::V18;
    // A59: what the caller hears, every status listener hears too.
    let caller = status.clone();
    let status = if v18 {
      self.heard_by_listeners(status)
    } else {
      status
    };
    let mut names = Vec::new();
    let mut errors = Vec::new();
    let mut to_connect = Vec::new();
    // A31: every server this call takes on, in config order, the invalid ones included.
    let mut announced = Vec::new();
    let mut invalid = Vec::new();
    for entry in entries {
      let name = entry.name;
      self.with(|s| s.note_startup(&name));
      if let Some(source) = entry.source {
        let connection = self.with(|s| {
          s.record_source(&name, source.clone());
          s.get(&name)
            .filter(|server| server.is_connected())
            .and_then(|server| server.connection().cloned())
        });
        // W3: a later call with new sources updates a connected server's source.
        if let Some(connection) = connection {
          let _ = self.host.set_field(&connection, "_source", source);
        }
      }
      if self.with(|s| s.get(&name).is_some_and(|server| server.is_busy())) {
        // A31: a connected server counts; one still on its way is left to that attempt.
        let connected = self.with(|s| s.get(&name).is_some_and(|server| server.is_connected()));
        if !v18 || connected {
          names.push(name);
        }
        continue;
      }
      announced.push(name.clone());
      // M2 reads the config as JSON; one without a JSON form fails it like an empty one.
      let json = json_of(&self.host, &entry.config).ok().flatten();
      let problems = validate_server_config(&name, &json.unwrap_or(serde_json::Value::Null));
      if !problems.is_empty() {
        let message = join_messages(&problems);
        self.record_startup(&name, &Outcome::Failed(message.clone()));
        invalid.push((name.clone(), message.clone()));
        errors.push((name, message));
        continue;
      }
      let waiter = self.host.waiter()?;
      let generation = self.with(|s| s.begin_connect(&name, entry.config, waiter));
      names.push(name.clone());
      to_connect.push((name, generation));
    }
    if v18 {
      if !announced.is_empty() {
        status(Status::Connecting(&announced));
      }
      for (name, message) in &invalid {
        self.report_status(&status, name, &Outcome::Failed(message.clone()));
      }
    } else if !to_connect.is_empty() {
      let connecting: Vec<String> = to_connect.iter().map(|(n, _)| n.clone()).collect();
      status(Status::Connecting(&connecting));
    }
    let (sender, mut outcomes) = mpsc::unbounded();
    let mut remaining: Vec<String> = Vec::new();
    for (name, generation) in to_connect {
      remaining.push(name.clone());
      let manager = self.clone();
      let sender = sender.clone();
      let status = status.clone();
      let caller = caller.clone();
      self.host.spawn(Box::pin(async move {
        let (mut outcome, timed_out) = manager.connect_server(&name, generation).await;
        manager.record_startup(&name, &outcome);
        // The manager's own disconnect is not a failure to log.
        let abandoned = matches!(outcome, Outcome::Abandoned);
        if v18 {
          if matches!(outcome, Outcome::Abandoned) {
            outcome = Outcome::Failed(disconnected_during_connect(&name));
          }
          manager.report_status(&status, &name, &outcome);
        }
        if timed_out {
          manager.reconnect_after_timeout(&name, caller);
        }
        // The answer went out already: what is left is only worth a log line.
        if let Err(unsent) = sender.unbounded_send((name, outcome)) {
          let (name, outcome) = unsent.into_inner();
          if !abandoned {
            manager.report_late(&name, outcome);
          }
        }
      }));
    }
    drop(sender);

    let startup = window
      .or(self.settings().startup_timeout)
      .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    let wait_for_all = v18 && startup.is_zero();
    let mut gate = (!remaining.is_empty() && !wait_for_all).then(|| self.host.sleep(startup));
    let mut lookups: FuturesUnordered<LocalBoxFuture<'static, (String, Option<H::Value>)>> =
      FuturesUnordered::new();
    // M4 (v12): servers still connecting with nothing cached are waited for.
    let mut uncached: HashSet<String> = HashSet::new();
    let mut gate_passed = false;
    loop {
      if remaining.is_empty() || (gate_passed && lookups.is_empty() && uncached.is_empty()) {
        break;
      }
      let event = poll_fn(|context| {
        if let Poll::Ready(Some((name, outcome))) = outcomes.poll_next_unpin(context) {
          return Poll::Ready(Event::Settled(name, outcome));
        }
        if let Some(timer) = gate.as_mut() {
          if timer.poll_unpin(context).is_ready() {
            gate = None;
            return Poll::Ready(Event::GatePassed);
          }
        }
        if let Poll::Ready(Some((name, definitions))) = lookups.poll_next_unpin(context) {
          return Poll::Ready(Event::Cached(name, definitions));
        }
        Poll::Pending
      })
      .await;
      match event {
        Event::Settled(name, outcome) => {
          remaining.retain(|n| *n != name);
          uncached.remove(&name);
          if let Outcome::Failed(message) = outcome {
            errors.push((name, message));
          }
        }
        Event::GatePassed => {
          gate_passed = true;
          for name in &remaining {
            let config = self.with(|s| s.get(name).map(|server| server.config.clone()));
            let Some(config) = config else { continue };
            match self.host.cache_get(name, &config) {
              // A32: with v18 an uncached server is not waited for; its tools come later.
              None => {
                if !v18 {
                  uncached.insert(name.clone());
                }
              }
              Some(lookup) => {
                let name = name.clone();
                lookups.push(Box::pin(async move { (name, lookup.await.ok()) }));
              }
            }
          }
        }
        Event::Cached(name, definitions) => {
          if remaining.contains(&name) && !self.defer_tools(&name, definitions) && !v18 {
            uncached.insert(name);
          }
        }
      }
    }
    // Settled before the answer but not yet heard: they belong in it.
    outcomes.close();
    while let Ok((name, outcome)) = outcomes.try_recv() {
      if let Outcome::Failed(message) = outcome {
        errors.push((name, message));
      }
    }
    self.report(&names, errors, v18)
  }

  /// A31: a settled connect's `connected` or `failed` event.
  /// A57: after its `failed` status, the server is `reconnecting` through
  /// `this.reconnectServer(name)` (W1), whose ladder tries again; the caller of
  /// `connectServers` hears that, and the connect it ends with (the listeners hear all).
  fn reconnect_after_timeout(self: &Rc<Self>, name: &str, caller: StatusHook) {
    let manager = self.clone();
    let name = name.to_string();
    self.host.spawn(Box::pin(async move {
      caller(Status::Reconnecting(&name));
      manager.emit_status(Status::Reconnecting(&name));
      match manager.host.reconnect_server(&name, None).await {
        Ok(connection) if manager.host.is_object(&connection) => caller(Status::Connected(&name)),
        Ok(_) => {}
        Err(error) => {
          let message = manager.host.message(&error);
          let text = format!("Failed to reconnect MCP server \"{name}\": {message}");
          manager.host.log(Level::Warn, &text, &name, Some(&message));
        }
      }
    }));
  }

  fn report_status(&self, status: &StatusHook, name: &str, outcome: &Outcome) {
    match outcome {
      Outcome::Connected => status(Status::Connected(name)),
      Outcome::Failed(message) => {
        let source_path = self
          .with(|s| s.source(name).cloned())
          .and_then(|source| self.host.field(&source, "path").ok())
          .and_then(|path| self.host.as_string(&path));
        status(Status::Failed {
          server: name,
          error: message,
          source_path,
        })
      }
      Outcome::Abandoned => {}
    }
  }

  /// M4: deferred tools from a cached listing for a server still connecting; false when
  /// there is nothing usable, so the answer waits for it.
  fn defer_tools(&self, name: &str, definitions: Option<H::Value>) -> bool {
    let usable = definitions.filter(|d| self.host.items(d).is_some_and(|items| !items.is_empty()));
    let Some(definitions) = usable else {
      return false;
    };
    let source = self.with(|s| s.source(name).cloned());
    let reconnect = self.reconnect_function(name);
    let deferred = super::tools::deferred(
      &self.host,
      name,
      &definitions,
      source.as_ref(),
      reconnect.as_ref(),
    );
    let Ok(tools) = deferred else {
      return false;
    };
    self.with(|s| {
      if let Some(server) = s.get_mut(name) {
        if matches!(server.phase, Phase::Connecting(_)) {
          server.tools = Some(tools);
          server.tools_deferred = true;
        }
      }
    });
    true
  }

  fn report_late(&self, name: &str, outcome: Outcome) {
    if let Outcome::Failed(message) = outcome {
      self.host.log(
        Level::Error,
        &format!("MCP server \"{name}\" failed to connect: {message}"),
        name,
        Some(&message),
      );
    }
  }

  /// v12: the tools of this call's servers; v18: every tool the manager has, sorted (A33).
  fn report(
    &self,
    names: &[String],
    errors: Vec<(String, String)>,
    v18: bool,
  ) -> Result<Report<H::Value>, H::Value> {
    let (arrays, connected) = self.with(|s| {
      let mut arrays = Vec::new();
      let mut connected = Vec::new();
      for name in names {
        if let Some(server) = s.get(name) {
          arrays.extend(server.tools.clone());
          if server.is_connected() {
            connected.push(name.clone());
          }
        }
      }
      (arrays, connected)
    });
    if v18 {
      return Ok(Report {
        tools: self.tools()?,
        errors,
        connected,
      });
    }
    let tools = arrays
      .iter()
      .filter_map(|array| self.host.items(array))
      .flatten()
      .collect();
    Ok(Report {
      tools: self.host.array(tools)?,
      errors,
      connected,
    })
  }
}

#[cfg(test)]
mod status_tests {
  use super::Status;
  use crate::fake_host::FakeHost;
  use serde_json::json;

  #[test]
  fn a31_v18_hears_events_and_v12_only_the_names_connecting() {
    let h = FakeHost::new();
    let names = ["a".to_string(), "b".to_string()];
    let value = |status: Status<'_>, v18| {
      status
        .argument(&h, v18)
        .map(|argument| argument.ok().map(|v| v.to_json()))
    };
    assert_eq!(
      value(Status::Connecting(&names), false),
      Some(Some(json!(["a", "b"])))
    );
    assert_eq!(value(Status::Connected("a"), false), None);
    assert_eq!(
      value(Status::Connecting(&names), true),
      Some(Some(
        json!({"type": "connecting", "serverNames": ["a", "b"]})
      ))
    );
    let failed = Status::Failed {
      server: "b",
      error: "boom",
      source_path: Some("/p/.mcp.json".into()),
    };
    assert_eq!(
      value(failed, true),
      Some(Some(json!({
        "type": "failed", "serverName": "b", "error": "boom", "sourcePath": "/p/.mcp.json"
      })))
    );
  }
}
