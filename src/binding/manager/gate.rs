//! M1/M4: `connectServers` — validate, connect every server in parallel, and answer once
//! all have settled or the startup gate has passed with cached tools for the rest.
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;
use std::time::Duration;

use napi::sys;

use super::connect::{connect_server, Outcome};
use super::state::{with, Pending, Phase};
use super::{tools, Manager};
use crate::binding::client::{call_method, Held};
use crate::binding::js::{Js, Thrown, Value};
use crate::binding::js_async::{after, when_settled, Timer};
use crate::manager::validation::{join_messages, validate_server_config};

const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_millis(250);

/// One `connectServers` call until its promise settles.
struct Gate {
  manager: Rc<Manager>,
  deferred: Cell<Option<sys::napi_deferred>>,
  /// Every server of the call that is (or was already) being handled, in config order.
  names: Vec<String>,
  errors: RefCell<Vec<(String, String)>>,
  /// Servers still connecting.
  remaining: RefCell<HashSet<String>>,
  /// After the gate: uncached servers the answer waits for.
  waiting: RefCell<HashSet<String>>,
  lookups: Cell<usize>,
  gate_passed: Cell<bool>,
  timer: RefCell<Option<Timer>>,
}

/// `sources[name]` from a plain object or a Map.
fn source_of(js: Js, sources: Value, name: &str) -> Result<Option<Value>, Thrown> {
  if js.type_of(sources) != sys::ValueType::napi_object {
    return Ok(None);
  }
  let get = js.get(sources, "get")?;
  let value = if js.is_function(get) && !js.is_array(sources) {
    js.call(get, sources, &[js.string(name)])?
  } else {
    js.get(sources, name)?
  };
  Ok((!js.is_nullish(value)).then_some(value))
}

fn config_json(js: Js, config: Value) -> serde_json::Value {
  js.json_stringify(config)
    .ok()
    .flatten()
    .and_then(|text| serde_json::from_str(&text).ok())
    .unwrap_or(serde_json::Value::Null)
}

pub(super) fn connect_servers(
  manager: &Rc<Manager>,
  js: Js,
  configs: Value,
  sources: Value,
  on_connecting: Value,
) -> Result<Value, Thrown> {
  if !js.is_record(configs) {
    let error =
      crate::binding::js_error::type_error(js, "The \"configs\" argument must be an object");
    return js.rejected(error);
  }
  let mut names = Vec::new();
  let mut errors = Vec::new();
  let mut to_connect = Vec::new();
  for name in js.keys(configs)? {
    let config = js.get(configs, &name)?;
    if let Some(source) = source_of(js, sources, &name)? {
      let connection = with(&manager.servers, |s| {
        s.sources.insert(name.clone(), Held::new(js, source));
        s.get(&name).and_then(|server| match &server.phase {
          Phase::Connected(c) => Some(c.get(js)),
          _ => None,
        })
      });
      // W3: a later call with new sources updates an already-connected server's source.
      if let Some(connection) = connection {
        js.set(connection, "_source", source);
      }
    }
    let busy = with(&manager.servers, |s| {
      s.get(&name).map(|server| {
        matches!(
          server.phase,
          Phase::Connected(_) | Phase::Connecting(_) | Phase::Reconnecting { .. }
        )
      })
    });
    if busy == Some(true) {
      names.push(name);
      continue;
    }
    let problems = validate_server_config(&name, &config_json(js, config));
    if !problems.is_empty() {
      errors.push((name, join_messages(&problems)));
      continue;
    }
    let pending = Pending::new(js)?;
    let generation = with(&manager.servers, |s| {
      s.begin_connect(&name, Held::new(js, config), pending)
    });
    names.push(name.clone());
    to_connect.push((name, generation));
  }
  let (deferred, promise) = js.create_promise()?;
  let gate = Rc::new(Gate {
    manager: manager.clone(),
    deferred: Cell::new(Some(deferred)),
    names,
    errors: RefCell::new(errors),
    remaining: RefCell::new(to_connect.iter().map(|(n, _)| n.clone()).collect()),
    waiting: RefCell::new(HashSet::new()),
    lookups: Cell::new(0),
    gate_passed: Cell::new(false),
    timer: RefCell::new(None),
  });
  if !to_connect.is_empty() && js.is_function(on_connecting) {
    let list = js.array(to_connect.len())?;
    for (i, (name, _)) in to_connect.iter().enumerate() {
      js.set_element(list, i as u32, js.string(name))?;
    }
    // The connects are already registered as pending; a throwing callback only loses itself.
    let _ = js.call(on_connecting, js.undefined(), &[list]);
  }
  for (name, generation) in to_connect {
    let gate = gate.clone();
    let server = name.clone();
    connect_server(
      manager,
      js,
      name,
      generation,
      Box::new(move |js, outcome| gate.settled(js, &server, outcome)),
    );
  }
  if gate.remaining.borrow().is_empty() {
    gate.finish(js);
  } else {
    let startup = manager
      .option(js, "startupTimeoutMs")
      .and_then(|v| js.number_value(v))
      .filter(|ms| ms.is_finite() && *ms >= 0.0)
      .map(|ms| Duration::from_secs_f64(ms / 1000.0))
      .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    let weak = Rc::downgrade(&gate);
    let timer = after(js, startup, move |js| {
      if let Some(gate) = weak.upgrade() {
        gate.pass(js);
      }
    });
    *gate.timer.borrow_mut() = timer;
  }
  Ok(promise)
}

impl Gate {
  fn finished(&self) -> bool {
    self.deferred.get().is_none()
  }

  fn settled(self: &Rc<Self>, js: Js, name: &str, outcome: Outcome) {
    self.remaining.borrow_mut().remove(name);
    self.waiting.borrow_mut().remove(name);
    if let Outcome::Failed(message) = outcome {
      if self.finished() {
        // M4: a failure after the answer is reported, not thrown.
        self.manager.log(
          js,
          "error",
          &format!("MCP server \"{name}\" failed to connect: {message}"),
          name,
          Some(&message),
        );
      } else {
        self.errors.borrow_mut().push((name.to_string(), message));
      }
    }
    self.check(js);
  }

  /// The startup gate passed: servers with a cached tool list get deferred tools now.
  fn pass(self: &Rc<Self>, js: Js) {
    self.gate_passed.set(true);
    let pending: Vec<String> = self.remaining.borrow().iter().cloned().collect();
    let cache = self
      .manager
      .tool_cache
      .as_ref()
      .map(|c| c.get(js))
      .filter(|c| !js.is_nullish(*c));
    for name in pending {
      let Some(cache) = cache else {
        self.waiting.borrow_mut().insert(name);
        continue;
      };
      let config = with(&self.manager.servers, |s| {
        s.get(&name).map(|server| server.config.get(js))
      });
      let Some(config) = config else { continue };
      match call_method(js, cache, "get", &[js.string(&name), config]) {
        Err(_) => {
          self.waiting.borrow_mut().insert(name);
        }
        Ok(lookup) => {
          self.lookups.set(self.lookups.get() + 1);
          let gate = self.clone();
          when_settled(js, lookup, move |js, result| {
            gate.lookups.set(gate.lookups.get() - 1);
            gate.cached(js, name, result.ok());
          });
        }
      }
    }
    self.check(js);
  }

  fn cached(self: &Rc<Self>, js: Js, name: String, definitions: Option<Value>) {
    if !self.remaining.borrow().contains(&name) {
      return self.check(js);
    }
    let usable = definitions.filter(|d| js.is_array(*d) && js.array_length(*d) > 0);
    let built = usable.map(|definitions| {
      let source = with(&self.manager.servers, |s| {
        s.sources.get(&name).map(|h| h.get(js))
      });
      tools::deferred(&self.manager, js, &name, definitions, source)
    });
    match built {
      Some(Ok(deferred_tools)) => {
        let tools = Held::new(js, deferred_tools);
        with(&self.manager.servers, |s| {
          if let Some(server) = s.get_mut(&name) {
            if matches!(server.phase, Phase::Connecting(_)) {
              server.tools = Some(tools);
              server.tools_deferred = true;
            }
          }
        });
      }
      _ => {
        self.waiting.borrow_mut().insert(name);
      }
    }
    self.check(js);
  }

  fn check(self: &Rc<Self>, js: Js) {
    let all_settled = self.remaining.borrow().is_empty();
    let gate_done =
      self.gate_passed.get() && self.lookups.get() == 0 && self.waiting.borrow().is_empty();
    if all_settled || gate_done {
      self.finish(js);
    }
  }

  /// `{ tools, errors, connectedServers, exaApiKeys }` for the servers of this call.
  fn finish(self: &Rc<Self>, js: Js) {
    let Some(deferred) = self.deferred.take() else {
      return;
    };
    if let Some(timer) = self.timer.borrow_mut().take() {
      timer.cancel();
    }
    match self.result(js) {
      Ok(result) => js.resolve(deferred, result),
      Err(Thrown(error)) => js.reject(deferred, error),
    }
  }

  fn result(&self, js: Js) -> Result<Value, Thrown> {
    let tools = js.array(0)?;
    let push = js.get(tools, "push")?;
    let connected = js.array(0)?;
    let mut connected_count = 0;
    for name in &self.names {
      let (server_tools, is_connected) = with(&self.manager.servers, |s| {
        s.get(name).map_or((None, false), |server| {
          (
            server.tools.as_ref().map(|t| t.get(js)),
            matches!(server.phase, Phase::Connected(_)),
          )
        })
      });
      if let Some(server_tools) = server_tools.filter(|t| js.is_array(*t)) {
        for i in 0..js.array_length(server_tools) {
          js.call(push, tools, &[js.element(server_tools, i)?])?;
        }
      }
      if is_connected {
        js.set_element(connected, connected_count, js.string(name))?;
        connected_count += 1;
      }
    }
    let map_class = js.get(js.global(), "Map")?;
    let errors = js.construct(map_class, &[])?;
    let set = js.get(errors, "set")?;
    for (name, message) in self.errors.borrow().iter() {
      js.call(set, errors, &[js.string(name), js.string(message)])?;
    }
    let result = js.object()?;
    js.set(result, "tools", tools);
    js.set(result, "errors", errors);
    js.set(result, "connectedServers", connected);
    js.set(result, "exaApiKeys", js.array(0)?);
    Ok(result)
  }
}
