//! M9/W4 `discoverAndConnect`: configs from `loadConfigs` (the call's, else the
//! constructor's) or `<cwd>/.mcp.json`, then `this.connectServers`.
use std::path::Path;
use std::rc::Rc;

use super::Manager;
use crate::binding::client::{call_method, Held};
use crate::binding::js::{ErrorKind, Js, Thrown, Value};
use crate::binding::js_async::when_settled;
use crate::manager::config_file::read_project_configs;

pub(super) fn discover_and_connect(
  manager: &Rc<Manager>,
  js: Js,
  this: Value,
  options: Value,
) -> Result<Value, Thrown> {
  let options = if js.type_of(options) == napi::sys::ValueType::napi_object {
    options
  } else {
    js.object()?
  };
  let own = js.get(options, "loadConfigs")?;
  let loader = if js.is_function(own) {
    Some((own, options))
  } else {
    manager.option_function(js, "loadConfigs")
  };
  let loaded = match loader {
    Some((load, load_this)) => {
      match js.call(load, load_this, &[js.string(&manager.cwd), options]) {
        Ok(loaded) => loaded,
        Err(Thrown(error)) => return js.rejected(error),
      }
    }
    None => match project_configs(js, &manager.cwd) {
      Ok(loaded) => loaded,
      Err(error) => return js.rejected(error),
    },
  };
  let (deferred, promise) = js.create_promise()?;
  let this = Held::new(js, this);
  let options = Held::new(js, options);
  when_settled(js, loaded, move |js, result| {
    let connected = result.and_then(|loaded| {
      connect_loaded(js, this.get(js), options.get(js), loaded).map_err(|Thrown(e)| e)
    });
    match connected {
      Err(error) => js.reject(deferred, error),
      Ok((pending, exa_keys)) => {
        let exa_keys = Held::new(js, exa_keys);
        when_settled(js, pending, move |js, result| match result {
          Err(error) => js.reject(deferred, error),
          Ok(result) => {
            if js.type_of(result) == napi::sys::ValueType::napi_object {
              js.set(result, "exaApiKeys", exa_keys.get(js));
            }
            js.resolve(deferred, result);
          }
        });
      }
    }
  });
  Ok(promise)
}

/// `this.connectServers(configs, sources, options.onConnecting)` and the exa keys to copy.
fn connect_loaded(
  js: Js,
  this: Value,
  options: Value,
  loaded: Value,
) -> Result<(Value, Value), Thrown> {
  let field = |name: &str| {
    if js.type_of(loaded) == napi::sys::ValueType::napi_object {
      js.get(loaded, name)
    } else {
      Ok(js.undefined())
    }
  };
  let configs = field("configs")?;
  let configs = if js.is_nullish(configs) {
    js.object()?
  } else {
    configs
  };
  let sources = field("sources")?;
  let sources = if js.is_nullish(sources) {
    js.object()?
  } else {
    sources
  };
  let exa_keys = field("exaApiKeys")?;
  let exa_keys = if js.is_array(exa_keys) {
    exa_keys
  } else {
    js.array(0)?
  };
  let on_connecting = js.get(options, "onConnecting")?;
  let pending = call_method(
    js,
    this,
    "connectServers",
    &[configs, sources, on_connecting],
  )?;
  Ok((pending, exa_keys))
}

/// `{configs, sources}` from `<cwd>/.mcp.json`, or the Error naming the file.
fn project_configs(js: Js, cwd: &str) -> Result<Value, Value> {
  let project =
    read_project_configs(Path::new(cwd)).map_err(|e| js.error(ErrorKind::Error, &e.to_string()))?;
  let build = || {
    let configs = js.object()?;
    let sources = js.object()?;
    let path = project.path.to_string_lossy().into_owned();
    for (name, config) in &project.servers {
      js.set(configs, name, js.json_parse(&config.to_string())?);
      let source = js.object()?;
      js.set(source, "provider", js.string("mcp-json"));
      js.set(source, "providerName", js.string(".mcp.json"));
      js.set(source, "path", js.string(&path));
      js.set(source, "level", js.string("project"));
      js.set(sources, name, source);
    }
    let loaded = js.object()?;
    js.set(loaded, "configs", configs);
    js.set(loaded, "sources", sources);
    Ok::<_, Thrown>(loaded)
  };
  build().map_err(|Thrown(e)| e)
}
