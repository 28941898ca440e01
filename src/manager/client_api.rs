//! A38 `options.clientApi`: the agent's own client functions, read at each call, so a spy
//! on its `client` module sees what the manager does. Each one missing is ours.
use super::host::ManagerHost;
use super::Manager;
use crate::client::list_tools;
use crate::client::resources::{list, request, Listing};
use crate::host::Pending;

impl<H: ManagerHost> Manager<H> {
  /// `clientApi[name](...args)` when the caller gave that function.
  fn client_api(&self, name: &str, args: Vec<H::Value>) -> Option<Pending<H::Value>> {
    let function = self.host.client_function(name)?;
    Some(self.host.call(&function, args))
  }

  /// `listTools(connection)`.
  pub(super) async fn list_tools_of(&self, connection: &H::Value) -> Result<H::Value, H::Value> {
    match self.client_api("listTools", vec![connection.clone()]) {
      Some(listing) => listing.await,
      None => list_tools(self.host.clone(), connection.clone(), None).await,
    }
  }

  /// `listResources` / `listResourceTemplates` / `listPrompts(connection)`.
  pub(super) async fn list_of(
    &self,
    connection: &H::Value,
    listing: Listing,
  ) -> Result<H::Value, H::Value> {
    let name = match listing {
      Listing::Resources => "listResources",
      Listing::ResourceTemplates => "listResourceTemplates",
      Listing::Prompts => "listPrompts",
    };
    match self.client_api(name, vec![connection.clone()]) {
      Some(listing) => listing.await,
      None => list(self.host.clone(), connection.clone(), listing, None).await,
    }
  }

  /// `readResource(connection, uri, options)`.
  pub(super) async fn read_resource_of(
    &self,
    connection: &H::Value,
    uri: H::Value,
    options: Option<H::Value>,
  ) -> Result<H::Value, H::Value> {
    let mut args = vec![connection.clone(), uri.clone()];
    args.extend(options.clone());
    if let Some(reading) = self.client_api("readResource", args) {
      return reading.await;
    }
    let params = self.host.object(vec![("uri", uri)])?;
    request(&self.host, connection, "resources/read", params, options).await
  }

  /// `getPrompt(connection, name, args, options)`.
  pub(super) async fn get_prompt_of(
    &self,
    connection: &H::Value,
    prompt: H::Value,
    arguments: Option<H::Value>,
    options: Option<H::Value>,
  ) -> Result<H::Value, H::Value> {
    let mut args = vec![connection.clone(), prompt.clone()];
    args.push(arguments.clone().unwrap_or_else(|| self.host.undefined()));
    args.extend(options.clone());
    if let Some(getting) = self.client_api("getPrompt", args) {
      return getting.await;
    }
    let params = crate::client::resources::prompt_params(&self.host, prompt, arguments)?;
    request(&self.host, connection, "prompts/get", params, options).await
  }

  /// `subscribeToResources` / `unsubscribeFromResources(connection, uris)`, when given.
  pub(super) fn subscription_of(
    &self,
    connection: &H::Value,
    uris: &[String],
    on: bool,
  ) -> Option<Pending<H::Value>> {
    let name = if on {
      "subscribeToResources"
    } else {
      "unsubscribeFromResources"
    };
    let uris = self
      .host
      .array(uris.iter().map(|u| self.host.string(u)).collect())
      .ok()?;
    self.client_api(name, vec![connection.clone(), uris])
  }

  /// `disconnectServer(connection)`, when given: what closes a connection.
  pub(super) fn disconnect_of(&self, connection: &H::Value) -> Option<Pending<H::Value>> {
    self.client_api("disconnectServer", vec![connection.clone()])
  }
}
