//! `FileTokenStore` as seen from JS (O3): an `MCPTokenStore` over one private JSON file.
//! The file work runs on the shared runtime's blocking pool.
use std::sync::Arc;

use napi::Env;
use napi_derive::napi;

use crate::binding::executor::{on_runtime, promise};
use crate::binding::js::{ErrorKind, Held, Js, JsArg, JsRaw, Thrown};
use crate::binding::js_error;
use crate::binding::js_error::finish;
use crate::binding::js_error::runtime_failure;
use crate::binding::manager::tool_cache::{json_of, path_argument};
use crate::oauth::store::FileTokenStore;
use crate::persist::{read_off_thread, write_off_thread};

/// O3: OAuth credentials in one JSON file readable by its owner only (mode 0600), written
/// atomically under a lock file, so several processes can share it.
#[napi(js_name = "FileTokenStore")]
pub struct JsFileTokenStore {
  store: Arc<FileTokenStore>,
}

fn key_of(js: Js, key: JsArg) -> Result<String, napi::sys::napi_value> {
  js.rust_string(key.0)
    .ok_or_else(|| js_error::type_error(js, "The \"key\" argument must be a string"))
}

impl JsFileTokenStore {
  /// Runs `work` on the blocking pool; its error becomes `Failed to write token store …`.
  fn write(
    &self,
    js: Js,
    work: impl FnOnce(&FileTokenStore) -> std::io::Result<()> + Send + 'static,
  ) -> Result<napi::sys::napi_value, Thrown> {
    let store = self.store.clone();
    let path = store.path().to_path_buf();
    let done = on_runtime(js, async move {
      write_off_thread("token store", &path, move || work(&store)).await
    });
    promise(js, async move {
      match done.await {
        None => Err(runtime_failure(js)),
        Some(Ok(())) => Ok(Held::new(js, js.undefined())),
        Some(Err(message)) => Err(Held::new(js, js.error(ErrorKind::Error, &message))),
      }
    })
  }
}

#[napi]
impl JsFileTokenStore {
  /// A token store kept in the JSON file at `path` (created on first write, owner-only).
  #[napi(constructor, ts_args_type = "path: string")]
  pub fn new(env: Env, path: JsArg) -> napi::Result<Self> {
    Ok(JsFileTokenStore {
      store: Arc::new(FileTokenStore::new(path_argument(env, path)?)),
    })
  }

  /// The store file.
  #[napi(getter)]
  pub fn path(&self) -> String {
    self.store.path().to_string_lossy().into_owned()
  }

  /// The credential saved under `key`, or `undefined`.
  #[napi(
    ts_args_type = "key: string",
    ts_return_type = "Promise<MCPStoredCredential | undefined>"
  )]
  pub fn get(&self, env: Env, key: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let key = match key_of(js, key) {
        Ok(key) => key,
        Err(error) => return js.rejected(error),
      };
      let store = self.store.clone();
      let lookup = on_runtime(js, async move {
        read_off_thread(move || store.get(&key).map(|v| v.to_string()))
          .await
          .flatten()
      });
      promise(js, async move {
        let value = match lookup.await {
          None => return Err(runtime_failure(js)),
          Some(Some(text)) => js.json_parse(&text).unwrap_or_else(|_| js.undefined()),
          Some(None) => js.undefined(),
        };
        Ok(Held::new(js, value))
      })
    })();
    finish(js, result)
  }

  /// Saves `credential` under `key`, keeping every other entry.
  #[napi(
    ts_args_type = "key: string, credential: MCPStoredCredential",
    ts_return_type = "Promise<void>"
  )]
  pub fn set(&self, env: Env, key: JsArg, credential: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let key = match key_of(js, key) {
        Ok(key) => key,
        Err(error) => return js.rejected(error),
      };
      let Some(credential) = json_of(js, credential.0).filter(|c| c.is_object()) else {
        return js.rejected(js_error::type_error(
          js,
          "The \"credential\" argument must be an object",
        ));
      };
      self.write(js, move |store| store.set(&key, credential))
    })();
    finish(js, result)
  }

  /// Forgets what is saved under `key`.
  #[napi(ts_args_type = "key: string", ts_return_type = "Promise<void>")]
  pub fn delete(&self, env: Env, key: JsArg) -> napi::Result<JsRaw> {
    let js = Js::new(env.raw());
    let result = (|| {
      let key = match key_of(js, key) {
        Ok(key) => key,
        Err(error) => return js.rejected(error),
      };
      self.write(js, move |store| store.delete(&key))
    })();
    finish(js, result)
  }
}
