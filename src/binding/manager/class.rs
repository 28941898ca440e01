//! The `MCPManager` class and `createMCPManager`. Methods are ordinary prototype methods,
//! so a JS subclass can override them and `vi.spyOn` works (W1); the flows call the
//! overridable ones (`prepareConfig`, `connectServers`, `refreshServerTools`,
//! `waitForConnection`) through the object.
use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::{JavaScriptClassExt, This};
use napi::{sys, Env};
use napi_derive::napi;

use super::connect::{list, settle_phase};
use super::state::{with, Phase, Servers};
use super::{not_connected, Manager};
use crate::binding::client::{call_method, Held};
use crate::binding::js::{Js, JsArg, JsRaw, Thrown, Value};
use crate::binding::js_async::when_settled;
use crate::binding::js_error;
use crate::binding::transport_class::{finish, thrown};

#[napi(js_name = "MCPManager")]
pub struct JsMcpManager {
  manager: Rc<Manager>,
}

fn optional(js: Js, value: Option<JsArg>) -> Option<Value> {
  value.map(|v| v.0).filter(|v| !js.is_nullish(*v))
}

impl JsMcpManager {
  fn build(
    js: Js,
    cwd: Value,
    tool_cache: Option<Value>,
    options: Option<Value>,
  ) -> Result<Self, Thrown> {
    let Some(cwd) = js.rust_string(cwd) else {
      return Err(Thrown(js_error::type_error(
        js,
        "The \"cwd\" argument must be a string",
      )));
    };
    if let Some(options) = options {
      if js.type_of(options) != sys::ValueType::napi_object {
        return Err(Thrown(js_error::type_error(
          js,
          "The \"options\" argument must be an object",
        )));
      }
    }
    Ok(JsMcpManager {
      manager: Rc::new(Manager {
        cwd,
        tool_cache: tool_cache.map(|c| Held::new(js, c)),
        options: options.map(|o| Held::new(js, o)),
        auth_storage: RefCell::new(None),
        this: RefCell::new(None),
        servers: RefCell::new(Servers::default()),
      }),
    })
  }

  fn bound(&self, js: Js, this: &This<JsArg>) -> Rc<Manager> {
    self.manager.remember_this(js, this.object.0);
    self.manager.clone()
  }
}

fn name_arg(js: Js, name: JsArg) -> Option<String> {
  js.rust_string(name.0)
}

fn reject_name(js: Js) -> Result<Value, Thrown> {
  js.rejected(js_error::type_error(
    js,
    "The \"name\" argument must be a string",
  ))
}

fn string_array(js: Js, names: &[String]) -> Result<Value, Thrown> {
  let array = js.array(names.len())?;
  for (i, name) in names.iter().enumerate() {
    js.set_element(array, i as u32, js.string(name))?;
  }
  Ok(array)
}

/// Resolves once every promise in `pending` settled; failures go to `on_error`.
fn all_settled(
  js: Js,
  pending: Vec<Value>,
  on_error: impl Fn(Js, Value) + 'static,
) -> Result<Value, Thrown> {
  let (deferred, promise) = js.create_promise()?;
  if pending.is_empty() {
    js.resolve(deferred, js.undefined());
    return Ok(promise);
  }
  let left = Rc::new(std::cell::Cell::new(pending.len()));
  let deferred = Rc::new(std::cell::Cell::new(Some(deferred)));
  let on_error = Rc::new(on_error);
  for value in pending {
    let left = left.clone();
    let deferred = deferred.clone();
    let on_error = on_error.clone();
    when_settled(js, value, move |js, result| {
      if let Err(error) = result {
        on_error(js, error);
      }
      left.set(left.get() - 1);
      if left.get() == 0 {
        if let Some(deferred) = deferred.take() {
          js.resolve(deferred, js.undefined());
        }
      }
    });
  }
  Ok(promise)
}

/// Forgets a server: its waiters are told it is not connected, a connect in flight is
/// aborted, and the transport's close promise (if there was one) is returned.
fn forget(js: Js, server: super::state::Server) -> Option<Value> {
  let connection = server.connection(js);
  if let Some(controller) = &server.abort {
    let _ = call_method(js, controller.get(js), "abort", &[]);
  }
  settle_phase(js, server.phase, Err(not_connected(js, &server.name)));
  let connection = connection?;
  let transport = js.get(connection, "transport").ok()?;
  if js.type_of(transport) != sys::ValueType::napi_object {
    return None;
  }
  Some(
    call_method(js, transport, "close", &[])
      .unwrap_or_else(|Thrown(e)| js.rejected(e).unwrap_or_else(|_| js.undefined())),
  )
}

#[napi]
impl JsMcpManager {
  #[napi(constructor, skip_typescript)]
  pub fn new(
    env: Env,
    cwd: JsArg,
    tool_cache: Option<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<Self> {
    let js = Js::new(env.raw());
    Self::build(js, cwd.0, optional(js, tool_cache), optional(js, options))
      .map_err(|t| thrown(js, t))
  }

  #[napi(getter, skip_typescript)]
  pub fn cwd(&self) -> String {
    self.manager.cwd.clone()
  }

  #[napi(js_name = "setAuthStorage", skip_typescript)]
  pub fn set_auth_storage(&self, env: Env, storage: Option<JsArg>) {
    let js = Js::new(env.raw());
    *self.manager.auth_storage.borrow_mut() = optional(js, storage).map(|s| Held::new(js, s));
  }

  #[napi(js_name = "prepareConfig", skip_typescript)]
  pub fn prepare_config(&self, env: Env, this: This<JsArg>, config: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(js, &this);
    finish(js, super::prepare::prepare_config(&manager, js, config.0))
  }

  #[napi(js_name = "connectServers", skip_typescript)]
  pub fn connect_servers(
    &self,
    env: Env,
    this: This<JsArg>,
    configs: JsArg,
    sources: Option<JsArg>,
    on_connecting: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(js, &this);
    let sources = sources.map_or_else(|| js.undefined(), |s| s.0);
    let on_connecting = on_connecting.map_or_else(|| js.undefined(), |c| c.0);
    finish(
      js,
      super::gate::connect_servers(&manager, js, configs.0, sources, on_connecting),
    )
  }

  #[napi(js_name = "discoverAndConnect", skip_typescript)]
  pub fn discover_and_connect(
    &self,
    env: Env,
    this: This<JsArg>,
    options: Option<JsArg>,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(js, &this);
    let options = options.map_or_else(|| js.undefined(), |o| o.0);
    finish(
      js,
      super::discover::discover_and_connect(&manager, js, this.object.0, options),
    )
  }

  #[napi(js_name = "getTools", skip_typescript)]
  pub fn get_tools(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let arrays: Vec<Value> = with(&self.manager.servers, |s| {
        s.iter()
          .filter_map(|server| server.tools.as_ref().map(|t| t.get(js)))
          .collect()
      });
      let all = js.array(0)?;
      let mut index = 0;
      for tools in arrays.into_iter().filter(|t| js.is_array(*t)) {
        for i in 0..js.array_length(tools) {
          js.set_element(all, index, js.element(tools, i)?)?;
          index += 1;
        }
      }
      Ok(all)
    })();
    finish(js, result)
  }

  #[napi(js_name = "getConnection", skip_typescript)]
  pub fn get_connection(&self, env: Env, name: JsArg) -> JsRaw {
    let js = Js::new(env.raw());
    let connection = name_arg(js, name).and_then(|name| {
      with(&self.manager.servers, |s| {
        s.get(&name).and_then(|server| server.connection(js))
      })
    });
    JsRaw(connection.unwrap_or_else(|| js.undefined()))
  }

  #[napi(js_name = "getConnectionStatus", skip_typescript)]
  pub fn get_connection_status(&self, env: Env, name: JsArg) -> &'static str {
    let js = Js::new(env.raw());
    name_arg(js, name)
      .and_then(|name| {
        with(&self.manager.servers, |s| {
          s.get(&name).map(|server| server.status())
        })
      })
      .unwrap_or("disconnected")
  }

  #[napi(js_name = "getSource", skip_typescript)]
  pub fn get_source(&self, env: Env, name: JsArg) -> JsRaw {
    let js = Js::new(env.raw());
    let source = name_arg(js, name).and_then(|name| {
      with(&self.manager.servers, |s| {
        s.sources.get(&name).map(|h| h.get(js))
      })
    });
    JsRaw(source.unwrap_or_else(|| js.undefined()))
  }

  #[napi(js_name = "waitForConnection", skip_typescript)]
  pub fn wait_for_connection(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let Some(name) = name_arg(js, name) else {
        return reject_name(js);
      };
      enum Found {
        Connected(Value),
        Pending(Value),
        Missing,
      }
      let found = with(&self.manager.servers, |s| match s.get(&name) {
        Some(server) => match (&server.phase, server.pending()) {
          (Phase::Connected(c), _) => Found::Connected(c.get(js)),
          (_, Some(pending)) => Found::Pending(pending.promise.get(js)),
          _ => Found::Missing,
        },
        None => Found::Missing,
      });
      match found {
        Found::Connected(connection) => js.resolved(connection),
        Found::Pending(promise) => Ok(promise),
        Found::Missing => js.rejected(not_connected(js, &name)),
      }
    })();
    finish(js, result)
  }

  #[napi(js_name = "getConnectedServers", skip_typescript)]
  pub fn get_connected_servers(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let names: Vec<String> = with(&self.manager.servers, |s| {
      s.iter()
        .filter(|server| matches!(server.phase, Phase::Connected(_)))
        .map(|server| server.name.clone())
        .collect()
    });
    finish(js, string_array(js, &names))
  }

  #[napi(js_name = "getAllServerNames", skip_typescript)]
  pub fn get_all_server_names(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let names: Vec<String> = with(&self.manager.servers, |s| {
      s.iter().map(|server| server.name.clone()).collect()
    });
    finish(js, string_array(js, &names))
  }

  /// M7: forgets the server (pending state, source, tools) and closes its transport.
  #[napi(js_name = "disconnectServer", skip_typescript)]
  pub fn disconnect_server(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let Some(name) = name_arg(js, name) else {
        return reject_name(js);
      };
      let server = with(&self.manager.servers, |s| {
        s.sources.remove(&name);
        s.remove(&name)
      });
      let closing = server.and_then(|server| forget(js, server));
      let Some(closing) = closing else {
        return js.resolved(js.undefined());
      };
      let (deferred, promise) = js.create_promise()?;
      when_settled(js, closing, move |js, result| match result {
        Ok(_) => js.resolve(deferred, js.undefined()),
        Err(error) => js.reject(deferred, error),
      });
      Ok(promise)
    })();
    finish(js, result)
  }

  /// M7: closes everything, never rejects.
  #[napi(js_name = "disconnectAll", skip_typescript)]
  pub fn disconnect_all(&self, env: Env) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let servers = with(&self.manager.servers, |s| s.take_all());
    let closing: Vec<Value> = servers
      .into_iter()
      .filter_map(|server| forget(js, server))
      .collect();
    finish(js, all_settled(js, closing, |_, _| {}))
  }

  /// M8: lists the server's tools again, caches them and replaces its tools.
  #[napi(js_name = "refreshServerTools", skip_typescript)]
  pub fn refresh_server_tools(&self, env: Env, name: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let Some(name) = name_arg(js, name) else {
        return reject_name(js);
      };
      let current = with(&self.manager.servers, |s| {
        s.get(&name).and_then(|server| match &server.phase {
          Phase::Connected(c) => Some((c.get(js), server.generation)),
          _ => None,
        })
      });
      let Some((connection, generation)) = current else {
        return js.resolved(js.undefined());
      };
      js.set(connection, "tools", js.undefined());
      let listing = match list(js, connection) {
        Ok(listing) => listing,
        Err(Thrown(error)) => return js.rejected(error),
      };
      let (deferred, promise) = js.create_promise()?;
      let manager = self.manager.clone();
      let held = Held::new(js, connection);
      when_settled(js, listing, move |js, result| {
        let replaced = result.and_then(|definitions| {
          replace_tools(&manager, js, &name, generation, held.get(js), definitions)
            .map_err(|Thrown(e)| e)
        });
        match replaced {
          Ok(()) => js.resolve(deferred, js.undefined()),
          Err(error) => js.reject(deferred, error),
        }
      });
      Ok(promise)
    })();
    finish(js, result)
  }

  /// M8: `this.refreshServerTools` for every connected server; settles, never rejects.
  #[napi(js_name = "refreshAllTools", skip_typescript)]
  pub fn refresh_all_tools(&self, env: Env, this: This<JsArg>) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let manager = self.bound(js, &this);
    let result = (|| {
      let names: Vec<String> = with(&manager.servers, |s| {
        s.iter()
          .filter(|server| matches!(server.phase, Phase::Connected(_)))
          .map(|server| server.name.clone())
          .collect()
      });
      let mut pending = Vec::new();
      for name in names {
        match call_method(js, this.object.0, "refreshServerTools", &[js.string(&name)]) {
          Ok(p) => pending.push(p),
          Err(Thrown(error)) => pending.push(js.rejected(error)?),
        }
      }
      let weak = Rc::downgrade(&manager);
      all_settled(js, pending, move |js, error| {
        if let Some(manager) = weak.upgrade() {
          let message = js.error_message(error);
          manager.log(
            js,
            "warn",
            &format!("Failed to refresh MCP tools: {message}"),
            "",
            Some(&message),
          );
        }
      })
    })();
    finish(js, result)
  }
}

fn replace_tools(
  manager: &Rc<Manager>,
  js: Js,
  name: &str,
  generation: u64,
  connection: Value,
  definitions: Value,
) -> Result<(), Thrown> {
  let still = with(&manager.servers, |s| {
    s.current(name, generation)
      .is_some_and(|server| matches!(server.phase, Phase::Connected(_)))
  });
  if !still {
    return Ok(());
  }
  let built = super::tools::live(manager, js, name, connection, definitions)?;
  let tools = Held::new(js, built);
  let config = with(&manager.servers, |s| {
    s.current(name, generation).map(|server| {
      server.tools = Some(tools);
      server.tools_deferred = false;
      server.config.get(js)
    })
  });
  if let Some(config) = config {
    manager.write_cache(js, name, config, definitions);
  }
  Ok(())
}

/// M9: `new MCPManager(cwd, options.toolCache, options)` and its `discoverAndConnect(options)`.
#[napi(js_name = "createMCPManager", skip_typescript)]
pub fn create_mcp_manager(env: Env, cwd: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let options = optional(js, options);
    let tool_cache = match options {
      Some(options) if js.type_of(options) == sys::ValueType::napi_object => {
        let cache = js.get(options, "toolCache")?;
        (!js.is_nullish(cache)).then_some(cache)
      }
      _ => None,
    };
    let manager = match JsMcpManager::build(js, cwd.0, tool_cache, options) {
      Ok(manager) => manager,
      Err(Thrown(error)) => return js.rejected(error),
    };
    let instance = manager
      .into_instance(&env)
      .map_err(|e| Thrown(js.error(crate::binding::js::ErrorKind::Error, &e.reason)))?;
    let object = instance.value;
    let discover_options = options.unwrap_or_else(|| js.undefined());
    let discovered = call_method(js, object, "discoverAndConnect", &[discover_options])?;
    let (deferred, promise) = js.create_promise()?;
    let object = Held::new(js, object);
    when_settled(js, discovered, move |js, result| match result {
      Err(error) => {
        if let Ok(disconnecting) = call_method(js, object.get(js), "disconnectAll", &[]) {
          when_settled(js, disconnecting, |_, _| {});
        }
        js.reject(deferred, error)
      }
      Ok(result) => {
        let answer = js.object();
        match answer {
          Ok(answer) => {
            js.set(answer, "manager", object.get(js));
            js.set(answer, "result", result);
            js.resolve(deferred, answer);
          }
          Err(Thrown(error)) => js.reject(deferred, error),
        }
      }
    });
    Ok(promise)
  })();
  finish(js, result)
}
