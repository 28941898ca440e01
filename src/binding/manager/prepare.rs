//! M3/W6 `prepareConfig`: a copy of the config with the OAuth credential injected and
//! every env value (stdio) or header value (http/sse) resolved; an entry that resolves to
//! nothing is dropped. The caller's config is never touched.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use napi::sys;

use super::Manager;
use crate::binding::client::{call_method, Held};
use crate::binding::js::{Js, Thrown, Value};
use crate::binding::js_async::{when_done, when_settled};
use crate::binding::js_error;
use crate::manager::value_resolution::resolve_config_values;

pub(super) fn prepare_config(
  manager: &Rc<Manager>,
  js: Js,
  config: Value,
) -> Result<Value, Thrown> {
  if !js.is_record(config) {
    let error = js_error::type_error(js, "The \"config\" argument must be an object");
    return js.rejected(error);
  }
  let assign = js.get(js.get(js.global(), "Object")?, "assign")?;
  let copy = js.call(assign, js.undefined(), &[js.object()?, config])?;
  let kind = js.get(config, "type")?;
  let stdio = js.is_nullish(kind) || js.rust_string(kind).as_deref() == Some("stdio");
  let field = if stdio { "env" } else { "headers" };
  let original = js.get(config, field)?;
  let entries = js.object()?;
  if js.type_of(original) == sys::ValueType::napi_object {
    js.call(assign, js.undefined(), &[entries, original])?;
  }
  let (deferred, promise) = js.create_promise()?;
  let flow = Rc::new(Prepared {
    deferred: Cell::new(Some(deferred)),
    copy: Held::new(js, copy),
    entries: Held::new(js, entries),
    field,
    had_field: !js.is_nullish(original),
  });
  let credential = oauth_credential(manager, js, config)?;
  let manager = manager.clone();
  match credential {
    None => flow.resolve_values(&manager, js),
    Some(lookup) => when_settled(js, lookup, move |js, result| {
      if let Ok(credential) = result {
        if let Some(access) = oauth_access(js, credential) {
          let (key, value) = if stdio {
            ("OAUTH_ACCESS_TOKEN", access)
          } else {
            ("Authorization", format!("Bearer {access}"))
          };
          js.set(flow.entries.get(js), key, js.string(&value));
        }
      }
      flow.resolve_values(&manager, js)
    }),
  }
  Ok(promise)
}

/// `authStorage.get(credentialId)` when the config asks for an OAuth credential.
fn oauth_credential(manager: &Manager, js: Js, config: Value) -> Result<Option<Value>, Thrown> {
  let storage = manager.auth_storage.borrow().as_ref().map(|s| s.get(js));
  let Some(storage) = storage.filter(|s| !js.is_nullish(*s)) else {
    return Ok(None);
  };
  let auth = js.get(config, "auth")?;
  if js.type_of(auth) != sys::ValueType::napi_object {
    return Ok(None);
  }
  if js.rust_string(js.get(auth, "type")?).as_deref() != Some("oauth") {
    return Ok(None);
  }
  let id = js.get(auth, "credentialId")?;
  if js.rust_string(id).is_none_or(|id| id.is_empty()) {
    return Ok(None);
  }
  call_method(js, storage, "get", &[id]).map(Some)
}

/// `{type: "oauth", access}` → the access token.
fn oauth_access(js: Js, credential: Value) -> Option<String> {
  if js.type_of(credential) != sys::ValueType::napi_object {
    return None;
  }
  let kind = js.rust_string(js.get(credential, "type").ok()?)?;
  let access = js.rust_string(js.get(credential, "access").ok()?)?;
  (kind == "oauth" && !access.is_empty()).then_some(access)
}

struct Prepared {
  deferred: Cell<Option<sys::napi_deferred>>,
  copy: Held,
  entries: Held,
  field: &'static str,
  had_field: bool,
}

impl Prepared {
  /// Every string entry through `options.resolveConfigValue` (W6) or the built-in rules.
  fn resolve_values(self: Rc<Self>, manager: &Manager, js: Js) {
    let entries = self.entries.get(js);
    let mut keys = Vec::new();
    let mut values = Vec::new();
    for key in js.keys(entries).unwrap_or_default() {
      let value = js.get(entries, &key).ok().and_then(|v| js.rust_string(v));
      if let Some(value) = value {
        keys.push(key);
        values.push(value);
      }
    }
    if keys.is_empty() {
      return self.finish(js);
    }
    if let Some((resolver, options)) = manager.option_function(js, "resolveConfigValue") {
      let results: Rc<RefCell<Vec<Option<Option<String>>>>> =
        Rc::new(RefCell::new(vec![None; keys.len()]));
      let keys = Rc::new(keys);
      for (index, value) in values.iter().enumerate() {
        let flow = self.clone();
        let results = results.clone();
        let keys = keys.clone();
        let record = move |js: Js, resolved: Option<String>| {
          results.borrow_mut()[index] = Some(resolved);
          let complete = results.borrow().iter().all(Option::is_some);
          if complete {
            let resolved: Vec<Option<String>> = results.borrow_mut().drain(..).flatten().collect();
            flow.apply(js, &keys, resolved);
          }
        };
        match js.call(resolver, options, &[js.string(value)]) {
          Err(_) => record(js, None),
          Ok(pending) => when_settled(js, pending, move |js, result| {
            record(js, result.ok().and_then(|v| js.rust_string(v)))
          }),
        }
      }
      return;
    }
    let flow = self.clone();
    let scheduled = when_done(js, resolve_config_values(values), move |js, resolved| {
      flow.apply(js, &keys, resolved)
    });
    if scheduled.is_none() {
      self.fail(js, "The async runtime could not start");
    }
  }

  fn apply(&self, js: Js, keys: &[String], resolved: Vec<Option<String>>) {
    let entries = self.entries.get(js);
    for (key, value) in keys.iter().zip(resolved) {
      match value.filter(|v| !v.is_empty()) {
        Some(value) => js.set(entries, key, js.string(&value)),
        None => delete(js, entries, key),
      }
    }
    self.finish(js);
  }

  fn finish(&self, js: Js) {
    let Some(deferred) = self.deferred.take() else {
      return;
    };
    let copy = self.copy.get(js);
    let entries = self.entries.get(js);
    let has_entries = !js.keys(entries).unwrap_or_default().is_empty();
    if self.had_field || has_entries {
      js.set(copy, self.field, entries);
    }
    js.resolve(deferred, copy);
  }

  fn fail(&self, js: Js, message: &str) {
    if let Some(deferred) = self.deferred.take() {
      js.reject(
        deferred,
        js.error(crate::binding::js::ErrorKind::Error, message),
      );
    }
  }
}

fn delete(js: Js, object: Value, key: &str) {
  let mut deleted = false;
  unsafe { sys::napi_delete_property(js.env, object, js.string(key), &mut deleted) };
}
