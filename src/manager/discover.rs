//! M9/W4 `discoverAndConnect`: configs from `loadConfigs` (the call's, else the
//! constructor's) or `<cwd>/.mcp.json`, then `this.connectServers`, with `exaApiKeys`
//! copied into its result.
use std::path::Path;

use super::config_file::{read_project_configs, ProjectConfigs};
use super::host::{Compat, Loader, ManagerHost, Settings};
use crate::host::HostFn;

/// `{configs, sources, exaApiKeys?}` for `options`: from the loader (W4: the call's own wins
/// over the constructor's), else from `<cwd>/.mcp.json`.
pub async fn load<H: ManagerHost>(
  host: &H,
  cwd: &str,
  options: &H::Value,
) -> Result<H::Value, H::Value> {
  let own = host.field(options, "loadConfigs")?;
  let loader = if host.is_function(&own) {
    Loader::Given
  } else {
    Loader::Constructor
  };
  match host.load_configs(loader, cwd, options) {
    Some(loading) => loading.await,
    None => read_project_configs(Path::new(cwd))
      .map_err(|e| host.error(&e.to_string()))
      .and_then(|project| project_configs(host, &project)),
  }
}

pub async fn discover_and_connect<H: ManagerHost>(
  host: H,
  cwd: String,
  options: H::Value,
) -> Result<H::Value, H::Value> {
  let v18 = Settings::read(&host, host.options().as_ref()).compat == Compat::V18;
  let on_status = host.field(&options, "onStatus")?;
  let loaded = match load(&host, &cwd, &options).await {
    Ok(loaded) => loaded,
    Err(error) => {
      // A31: the config files themselves failed: one `failed` event, then the rejection.
      if v18 && host.is_function(&on_status) {
        let event = host.object(vec![
          ("type", host.string("failed")),
          ("serverName", host.string(".mcp.json")),
          ("error", host.string(&host.message(&error))),
        ])?;
        let _ = host.call(&on_status, vec![event]).await;
      }
      return Err(error);
    }
  };
  let field = |name: &str| {
    if host.is_object(&loaded) {
      host.field(&loaded, name)
    } else {
      Ok(host.undefined())
    }
  };
  let or_empty = |value: H::Value| {
    if host.is_nullish(&value) {
      host.object(Vec::new())
    } else {
      Ok(value)
    }
  };
  let configs = or_empty(field("configs")?)?;
  let sources = or_empty(field("sources")?)?;
  let exa_keys = field("exaApiKeys")?;
  let exa_keys = match host.items(&exa_keys) {
    Some(_) => exa_keys,
    None => host.array(Vec::new())?,
  };
  let on_connecting = host.field(&options, "onConnecting")?;
  let third = if !v18 {
    on_connecting
  } else if !host.is_function(&on_connecting) {
    on_status
  } else {
    // A31: `onConnecting` keeps M1's meaning beside v18's `onStatus`.
    status_and_connecting(&host, on_status, on_connecting)?
  };
  let window = host.field(&options, "startupTimeoutMs")?;
  let result = host
    .connect_servers(configs, sources, third, window)
    .await?;
  if host.is_object(&result) {
    host.set_field(&result, "exaApiKeys", exa_keys)?;
  }
  Ok(result)
}

/// An `onStatus` that also hands each `connecting` event's names to `onConnecting`.
fn status_and_connecting<H: ManagerHost>(
  host: &H,
  on_status: H::Value,
  on_connecting: H::Value,
) -> Result<H::Value, H::Value> {
  let caller = host.clone();
  let body: HostFn<H::Value> = std::rc::Rc::new(move |args: Vec<H::Value>| {
    let host = caller.clone();
    let (on_status, on_connecting) = (on_status.clone(), on_connecting.clone());
    Box::pin(async move {
      let event = args.into_iter().next().unwrap_or_else(|| host.undefined());
      let connecting = host.is_object(&event)
        && host
          .field(&event, "type")
          .ok()
          .and_then(|t| host.as_string(&t))
          .as_deref()
          == Some("connecting");
      if connecting {
        let names = host.field(&event, "serverNames")?;
        let _ = host.call(&on_connecting, vec![names]).await;
      }
      if host.is_function(&on_status) {
        let _ = host.call(&on_status, vec![event]).await;
      }
      Ok(host.undefined())
    })
  });
  host.function("onStatus", body)
}

/// `{configs, sources}` from `.mcp.json`; each source names the file (W3).
fn project_configs<H: ManagerHost>(
  host: &H,
  project: &ProjectConfigs,
) -> Result<H::Value, H::Value> {
  let configs = host.object(Vec::new())?;
  let sources = host.object(Vec::new())?;
  let path = project.path.to_string_lossy();
  for (name, config) in &project.servers {
    host.set_field(&configs, name, host.json(&config.to_string())?)?;
    let source = host.object(vec![
      ("provider", host.string("mcp-json")),
      ("providerName", host.string(".mcp.json")),
      ("path", host.string(&path)),
      ("level", host.string("project")),
    ])?;
    host.set_field(&sources, name, source)?;
  }
  host.object(vec![("configs", configs), ("sources", sources)])
}
