//! M9/W4 `discoverAndConnect`: configs from `loadConfigs` (the call's, else the
//! constructor's) or `<cwd>/.mcp.json`, then `this.connectServers`, with `exaApiKeys`
//! copied into its result.
use std::path::Path;

use super::config_file::{read_project_configs, ProjectConfigs};
use super::host::{Loader, ManagerHost};

pub async fn discover_and_connect<H: ManagerHost>(
  host: H,
  cwd: String,
  options: H::Value,
) -> Result<H::Value, H::Value> {
  // W4: the call's own loader wins over the constructor's.
  let own = host.field(&options, "loadConfigs")?;
  let loader = if host.is_function(&own) {
    Loader::Given
  } else {
    Loader::Constructor
  };
  let loaded = match host.load_configs(loader, &cwd, &options) {
    Some(loading) => loading.await?,
    None => {
      let project =
        read_project_configs(Path::new(&cwd)).map_err(|e| host.error(&e.to_string()))?;
      project_configs(&host, &project)?
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
  let result = host
    .connect_servers(configs, sources, on_connecting)
    .await?;
  if host.is_object(&result) {
    host.set_field(&result, "exaApiKeys", exa_keys)?;
  }
  Ok(result)
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
