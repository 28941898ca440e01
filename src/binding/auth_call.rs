//! O1/O6: the OAuth flow's calls into JS — `config.oauth`'s `redirect`, `store` and token
//! functions, `process.env`, an SDK provider's methods, and `onAuthError` — answered with
//! what they settle with, as JSON.
use super::executor;
use super::host::{ready, JsHost};
use super::js::{Held, Js, Thrown, Value};
use super::js_side::{CallbackSlot, Shared};
use crate::oauth::{HostAnswer, HostCall};

/// O1: runs one of the OAuth flow's calls on `config.oauth` (its `redirect`, or its
/// `store`'s methods) and sends back what it settles with, as JSON.
pub(super) fn answer(
  js: Js,
  side: &Shared,
  call: HostCall,
  reply: tokio::sync::oneshot::Sender<HostAnswer>,
) {
  use crate::host::Values;
  let host = JsHost::new(js);
  if call == HostCall::AuthError {
    // O6: what `onAuthError()` settles with; no hook (or a throwing one) means `null`.
    let hook = side.borrow_mut().callback(CallbackSlot::AuthError);
    let pending = hook.map(|hook| host.call(hook, js.undefined(), &[]));
    executor::spawn(js, async move {
      let answer = match pending {
        Some(pending) => pending
          .await
          .ok()
          .and_then(|v| host.to_json(&v).ok().flatten()),
        None => None,
      };
      let _ = reply.send(Ok(answer));
    });
    return;
  }
  if let HostCall::Env(name) = &call {
    let value = super::args::env_var(js, name);
    let _ = reply.send(Ok(value.map(|v| serde_json::Value::String(v).to_string())));
    return;
  }
  let oauth = side.borrow().auth.and_then(|r| js.ref_value(r));
  if let (HostCall::Provider { method, args }, Some(provider)) = (&call, oauth) {
    let pending = provider_call(js, &host, provider, method, args);
    executor::spawn(js, async move {
      let answer = match pending.await {
        Ok(value) => host.to_json(&value).map_err(|thrown| host.message(&thrown)),
        Err(thrown) => Err(host.message(&thrown)),
      };
      let _ = reply.send(answer);
    });
    return;
  }
  let Some(oauth) = oauth else {
    let _ = reply.send(Err("config.oauth is gone".to_string()));
    return;
  };
  let store = || js.get(oauth, "store").unwrap_or_else(|_| js.undefined());
  let (target, method, args) = match call {
    HostCall::Redirect(url) => (oauth, "redirect", vec![js.string(&url)]),
    HostCall::StoreGet(key) => (store(), "get", vec![js.string(&key)]),
    HostCall::StoreSet(key, credential) => {
      let value = js
        .json_parse(&credential)
        .unwrap_or_else(|_| js.undefined());
      (store(), "set", vec![js.string(&key), value])
    }
    HostCall::StoreDelete(key) => (store(), "delete", vec![js.string(&key)]),
    // SEP-1933/SEP-990: `oauth.workloadToken()`, `oauth.idp.assertion()`.
    HostCall::ConfigFunction(path) => {
      let Some((method, parents)) = path.split_last() else {
        let _ = reply.send(Err("no function named".to_string()));
        return;
      };
      let target = parents.iter().fold(oauth, |object, key| {
        js.get(object, key).unwrap_or_else(|_| js.undefined())
      });
      (target, *method, Vec::new())
    }
    HostCall::AuthError | HostCall::Provider { .. } | HostCall::Env(_) => return,
  };
  let pending = host.call_method(&host.hold(target), method, &args);
  executor::spawn(js, async move {
    let answer = match pending.await {
      Ok(value) => host.to_json(&value).map_err(|thrown| host.message(&thrown)),
      Err(thrown) => Err(host.message(&thrown)),
    };
    let _ = reply.send(answer);
  });
}

/// O1: `provider[method](...args)`, or the property itself when it is not a function (the
/// SDK's `redirectUrl` and `clientMetadata` are getters); an absent optional method gives
/// `undefined`. `redirectToAuthorization` gets a `URL`, as the SDK passes one.
fn provider_call(
  js: Js,
  host: &JsHost,
  provider: Value,
  method: &str,
  args: &[String],
) -> crate::host::Pending<Held> {
  let value = match js.get(provider, method) {
    Ok(value) => value,
    Err(Thrown(error)) => return ready(Err(host.hold(error))),
  };
  if !js.is_function(value) {
    return ready(Ok(host.hold(value)));
  }
  let mut values: Vec<Value> = args
    .iter()
    .map(|a| js.json_parse(a).unwrap_or_else(|_| js.undefined()))
    .collect();
  if method == "redirectToAuthorization" {
    let url = js
      .get(js.global(), "URL")
      .ok()
      .filter(|c| js.is_function(*c))
      .and_then(|class| js.construct(class, &values).ok());
    if let Some(url) = url {
      values = vec![url];
    }
  }
  host.call(value, provider, &values)
}
