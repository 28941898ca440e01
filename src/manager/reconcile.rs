//! A62: a settings change applied to what is connected. `reconcileProjectConfig(enabled)`
//! disconnects the project-level servers (connecting any user-level server they shadowed)
//! or connects them; `reconcileBrowserFilter(enabled)` disconnects the browser servers or
//! connects them. Both load configs as the last `discoverAndConnect` did, with the one
//! setting changed, and run one at a time; before the first discovery there is nothing to
//! change for the project setting.
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use futures::future::{join_all, LocalBoxFuture, Shared};
use futures::FutureExt;

use super::browser_servers::is_browser_server;
use super::discover::{discover_and_connect, load};
use super::host::ManagerHost;
use super::Manager;

/// What the last `discoverAndConnect` was asked, and whether it is still running.
pub struct Discovery<V> {
  options: RefCell<Option<V>>,
  in_flight: RefCell<Option<Shared<LocalBoxFuture<'static, ()>>>>,
  turn: futures::lock::Mutex<()>,
}

impl<V> Default for Discovery<V> {
  fn default() -> Self {
    Discovery {
      options: RefCell::new(None),
      in_flight: RefCell::new(None),
      turn: futures::lock::Mutex::new(()),
    }
  }
}

/// The settings A62 reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
  /// `filterBrowser`: `true` leaves browser automation servers out.
  BrowserFilter,
  /// `enableProjectConfig`: `false` leaves project-level servers out.
  ProjectConfig,
}

/// The entries of a `{configs, sources}` result: name, config, source.
type Loaded<V> = Vec<(String, V, Option<V>)>;

impl<H: ManagerHost> Manager<H> {
  /// M9 `discoverAndConnect`, remembering its options for A62.
  pub fn discover(
    self: &Rc<Self>,
    options: H::Value,
  ) -> impl std::future::Future<Output = Result<H::Value, H::Value>> {
    let remembered = self
      .host
      .shallow_copy(&options)
      .unwrap_or_else(|_| options.clone());
    self.discovery.options.replace(Some(remembered));
    let (done, finished) = futures::channel::oneshot::channel::<()>();
    let finished: LocalBoxFuture<'static, ()> = Box::pin(finished.map(|_| ()));
    self.discovery.in_flight.replace(Some(finished.shared()));
    let work = discover_and_connect(self.host.clone(), self.cwd.clone(), options);
    async move {
      let outcome = work.await;
      drop(done);
      outcome
    }
  }

  /// A62: `setting` is now `enabled`; what it adds is connected and what it removes
  /// disconnected.
  pub async fn reconcile(self: &Rc<Self>, setting: Setting, enabled: bool) -> Result<(), H::Value> {
    match setting {
      Setting::BrowserFilter => self.reconcile_browser_filter(enabled).await,
      Setting::ProjectConfig => self.reconcile_project_config(enabled).await,
    }
  }

  async fn reconcile_project_config(self: &Rc<Self>, enabled: bool) -> Result<(), H::Value> {
    let _turn = self.discovery.turn.lock().await;
    let in_flight = self.discovery.in_flight.borrow().clone();
    if let Some(discovering) = in_flight {
      discovering.await;
    }
    let Some(options) = self.discovery.options.borrow().clone() else {
      return Ok(());
    };
    let current = self.host.field(&options, "enableProjectConfig")?;
    let current = if self.host.is_nullish(&current) {
      Some(true)
    } else {
      self.host.as_bool(&current)
    };
    if current == Some(enabled) {
      return Ok(());
    }
    let options = self.with_setting(&options, "enableProjectConfig", enabled)?;
    self.discovery.options.replace(Some(options.clone()));
    let loaded = self.loaded(&options).await?;
    let mut affected: BTreeSet<String> = self
      .all_server_names()
      .into_iter()
      .filter(|name| self.source(name).is_some_and(|s| self.is_project(&s)))
      .collect();
    for (name, _, source) in &loaded {
      if source.as_ref().is_some_and(|s| self.is_project(s)) {
        affected.insert(name.clone());
      }
    }
    if affected.is_empty() {
      return Ok(());
    }
    for done in join_all(affected.iter().map(|name| self.disconnect_server(name))).await {
      done?;
    }
    let back: Loaded<H::Value> = loaded
      .into_iter()
      .filter(|(name, ..)| affected.contains(name))
      .collect();
    self.connect_loaded(back, &options).await
  }

  async fn reconcile_browser_filter(self: &Rc<Self>, enabled: bool) -> Result<(), H::Value> {
    let _turn = self.discovery.turn.lock().await;
    let remembered = self.discovery.options.borrow().clone();
    let options = match remembered {
      Some(options) => options,
      None => self.host.object(Vec::new())?,
    };
    let loaded = self
      .loaded(&self.with_setting(&options, "filterBrowser", false)?)
      .await?;
    let browser: Loaded<H::Value> = loaded
      .into_iter()
      .filter(|(name, config, _)| self.is_browser(name, config))
      .collect();
    let options = self.with_setting(&options, "filterBrowser", enabled)?;
    if !enabled {
      self.connect_loaded(browser, &options).await?;
      self.discovery.options.replace(Some(options));
      return Ok(());
    }
    let mut names: BTreeSet<String> = browser.into_iter().map(|(name, ..)| name).collect();
    for name in self.all_server_names() {
      let given = self.with(|s| s.given_config(&name).cloned());
      if given.is_some_and(|config| self.is_browser(&name, &config)) {
        names.insert(name);
      }
    }
    for done in join_all(names.iter().map(|name| self.disconnect_server(name))).await {
      done?;
    }
    self.discovery.options.replace(Some(options));
    Ok(())
  }

  /// `{...options, [name]: value}`.
  fn with_setting(
    &self,
    options: &H::Value,
    name: &str,
    value: bool,
  ) -> Result<H::Value, H::Value> {
    let copy = self.host.shallow_copy(options)?;
    self.host.set_field(
      &copy,
      name,
      self.host.json(if value { "true" } else { "false" })?,
    )?;
    Ok(copy)
  }

  async fn loaded(&self, options: &H::Value) -> Result<Loaded<H::Value>, H::Value> {
    let host = &self.host;
    let loaded = load(host, &self.cwd, options).await?;
    let part = |name: &str| -> Result<Option<H::Value>, H::Value> {
      if !host.is_object(&loaded) {
        return Ok(None);
      }
      let value = host.field(&loaded, name)?;
      Ok((host.is_object(&value)).then_some(value))
    };
    let (Some(configs), sources) = (part("configs")?, part("sources")?) else {
      return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    for name in host.keys(&configs)? {
      let config = host.field(&configs, &name)?;
      let source = match &sources {
        Some(sources) => Some(host.field(sources, &name)?).filter(|s| !host.is_nullish(s)),
        None => None,
      };
      entries.push((name, config, source));
    }
    Ok(entries)
  }

  /// `this.connectServers(configs, sources, options.onStatus, options.startupTimeoutMs)`.
  async fn connect_loaded(
    &self,
    entries: Loaded<H::Value>,
    options: &H::Value,
  ) -> Result<(), H::Value> {
    if entries.is_empty() {
      return Ok(());
    }
    let host = &self.host;
    let configs = host.object(Vec::new())?;
    let sources = host.object(Vec::new())?;
    for (name, config, source) in entries {
      host.set_field(&configs, &name, config)?;
      if let Some(source) = source {
        host.set_field(&sources, &name, source)?;
      }
    }
    let on_status = host.field(options, "onStatus")?;
    let window = host.field(options, "startupTimeoutMs")?;
    host
      .connect_servers(configs, sources, on_status, window)
      .await?;
    Ok(())
  }

  fn is_project(&self, source: &H::Value) -> bool {
    let level = self.host.field(source, "level").ok();
    level.and_then(|l| self.host.as_string(&l)).as_deref() == Some("project")
  }

  fn is_browser(&self, name: &str, config: &H::Value) -> bool {
    let json = self.host.to_json(config).ok().flatten();
    let config = json.and_then(|text| serde_json::from_str(&text).ok());
    config.is_some_and(|config| is_browser_server(name, &config))
  }
}
