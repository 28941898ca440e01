//! `FileToolCache` as seen from JS: the embedded `MCPToolCache`. The file work runs on the
//! shared runtime's blocking pool, so the JS thread never waits on the disk or the lock.
use crate::binding::js_error::runtime_failure;
use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::binding::executor::{on_runtime, promise};
use crate::binding::host::JsHost;
use crate::binding::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown, Value};
use crate::binding::js_error;
use crate::binding::js_error::{finish, thrown};
use crate::manager::tool_cache::FileToolCache;
use crate::persist::{read_off_thread, write_off_thread};

/// The embedded tool cache (M4): one JSON file, entries keyed by server name and a SHA-256 of
/// the config's key-sorted JSON, 30 days fresh, written atomically under a lock file.
#[napi(js_name = "FileToolCache")]
pub struct JsFileToolCache {
  cache: Arc<FileToolCache>,
}

/// A JS value as JSON (`undefined` fields dropped, as `JSON.stringify` does).
pub(crate) fn json_of(js: Js, value: Value) -> Option<serde_json::Value> {
  crate::host::json_of(&JsHost::new(js), &Held::new(js, value))
    .ok()
    .flatten()
}

/// The server name and the config as JSON, or the TypeError naming the bad argument (E2).
fn entry_key(js: Js, server: JsArg, config: JsArg) -> Result<(String, serde_json::Value), Value> {
  let server = js
    .rust_string(server.0)
    .ok_or_else(|| js_error::type_error(js, "The \"serverName\" argument must be a string"))?;
  let config = json_of(js, config.0)
    .ok_or_else(|| js_error::type_error(js, "The \"config\" argument must be an object"))?;
  Ok((server, config))
}

/// A file class's `path` argument: a non-empty string, else the TypeError (E2).
pub(crate) fn path_argument(env: Env, path: JsArg) -> napi::Result<String> {
  let js = Js::new(env.raw());
  js.rust_string(path.0)
    .filter(|p| !p.is_empty())
    .ok_or_else(|| {
      thrown(
        js,
        Thrown(js_error::type_error(
          js,
          "The \"path\" argument must be a non-empty string",
        )),
      )
    })
}

#[napi]
impl JsFileToolCache {
  /// A tool cache kept in the JSON file at `path` (created on first write).
  #[napi(constructor, ts_args_type = "path: string")]
  pub fn new(env: Env, path: JsArg) -> napi::Result<Self> {
    Ok(JsFileToolCache {
      cache: Arc::new(FileToolCache::new(path_argument(env, path)?)),
    })
  }

  /// The cache file.
  #[napi(getter)]
  pub fn path(&self) -> String {
    self.cache.path().to_string_lossy().into_owned()
  }

  /// The cached tool list, or `null` when absent, stale, for another config, or unreadable.
  #[napi(
    ts_args_type = "serverName: string, config: MCPServerConfig",
    ts_return_type = "Promise<MCPToolDefinition[] | null>"
  )]
  pub fn get(&self, env: Env, server: JsArg, config: JsArg) -> napi::Result<JsRaw> {
    self.read(env, server, config, |cache, server, config| {
      cache.get(server, config).map(|tools| tools.to_string())
    })
  }

  /// N2: the era verdict kept with the server's entry: `"handshake"`, or the stateless
  /// protocol version it speaks; `null` when none is kept for this config.
  #[napi(
    js_name = "getEra",
    ts_args_type = "serverName: string, config: MCPServerConfig",
    ts_return_type = "Promise<string | null>"
  )]
  pub fn get_era(&self, env: Env, server: JsArg, config: JsArg) -> napi::Result<JsRaw> {
    self.read(env, server, config, |cache, server, config| {
      cache
        .get_era(server, config)
        .map(|era| serde_json::Value::from(era).to_string())
    })
  }

  /// Stores the tool list of `serverName` for this config.
  #[napi(
    ts_args_type = "serverName: string, config: MCPServerConfig, tools: MCPToolDefinition[]",
    ts_return_type = "Promise<void>"
  )]
  pub fn set(&self, env: Env, server: JsArg, config: JsArg, tools: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let Some(tools) = json_of(js, tools.0).filter(|t| t.is_array()) else {
      let error = js_error::type_error(js, "The \"tools\" argument must be an array");
      return finish(js, js.rejected(error));
    };
    self.write(env, server, config, move |cache, server, config| {
      cache.set(server, config, &tools)
    })
  }

  /// N2: stores the era verdict of `serverName` for this config, beside its tools.
  #[napi(
    js_name = "setEra",
    ts_args_type = "serverName: string, config: MCPServerConfig, era: string",
    ts_return_type = "Promise<void>"
  )]
  pub fn set_era(&self, env: Env, server: JsArg, config: JsArg, era: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let Some(era) = js.rust_string(era.0) else {
      let error = js_error::type_error(js, "The \"era\" argument must be a string");
      return finish(js, js.rejected(error));
    };
    self.write(env, server, config, move |cache, server, config| {
      cache.set_era(server, config, &era)
    })
  }
}

impl JsFileToolCache {
  /// A lookup on the blocking pool; its JSON text (or `null`) is what the promise gives.
  fn read(
    &self,
    env: Env,
    server: JsArg,
    config: JsArg,
    lookup: impl FnOnce(&FileToolCache, &str, &serde_json::Value) -> Option<String> + Send + 'static,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let (server, config) = match entry_key(js, server, config) {
        Ok(key) => key,
        Err(error) => return js.rejected(error),
      };
      let cache = self.cache.clone();
      let found = on_runtime(
        js,
        read_off_thread(move || lookup(&cache, &server, &config)),
      );
      promise(js, async move {
        let Some(found) = found.await.flatten() else {
          return Err(runtime_failure(js));
        };
        let value = match found {
          Some(text) => js.json_parse(&text).unwrap_or_else(|_| js.null()),
          None => js.null(),
        };
        Ok(Held::new(js, value))
      })
    })();
    finish(js, result)
  }

  /// A write on the blocking pool, under the cache's lock.
  fn write(
    &self,
    env: Env,
    server: JsArg,
    config: JsArg,
    change: impl FnOnce(&FileToolCache, &str, &serde_json::Value) -> std::io::Result<()>
      + Send
      + 'static,
  ) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let (server, config) = match entry_key(js, server, config) {
        Ok(key) => key,
        Err(error) => return js.rejected(error),
      };
      let cache = self.cache.clone();
      let path = cache.path().to_path_buf();
      let write = on_runtime(js, async move {
        let work = move || change(&cache, &server, &config);
        write_off_thread("tool cache", &path, work).await
      });
      promise(js, async move {
        match write.await {
          None => Err(runtime_failure(js)),
          Some(Ok(())) => Ok(Held::new(js, js.undefined())),
          Some(Err(message)) => Err(Held::new(js, js.error(ErrorKind::Error, &message))),
        }
      })
    })();
    finish(js, result)
  }
}
