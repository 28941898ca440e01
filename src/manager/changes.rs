//! A36: the callbacks the agent hears changes through.
use super::host::ManagerHost;
use super::Manager;
use crate::host::Pending;

/// A36: the log line of a tools-changed handler that failed.
pub const TOOLS_CHANGED_FAILED: &str = "onToolsChanged failed for MCP server";

impl<H: ManagerHost> Manager<H> {
  /// A36 `setOnToolsChanged(handler)`; anything but a function removes it.
  pub fn set_on_tools_changed(&self, handler: Option<H::Value>) {
    let handler = handler.filter(|h| self.host.is_function(h));
    self.with(|s| s.on_tools_changed = handler);
  }

  /// The handler called with the whole tool list, if one is set.
  pub(super) fn call_on_tools_changed(&self) -> Option<Pending<H::Value>> {
    let handler = self.with(|s| s.on_tools_changed.clone())?;
    let tools = self.tools().ok()?;
    Some(self.host.call(&handler, vec![tools]))
  }

  /// A36: after a disconnect (and a v12 connect) the handler runs unawaited; what it
  /// throws or rejects with is logged.
  pub(super) fn tools_changed(&self, server: &str) {
    if let Some(called) = self.call_on_tools_changed() {
      self.warn_on_failure(called, server, TOOLS_CHANGED_FAILED);
    }
  }

  /// What an awaited handler threw or rejected with, logged as `warn_on_failure` would.
  pub(super) fn warn_tools_changed(&self, server: &str, error: &H::Value) {
    let message = self.host.message(error);
    let line = format!("{TOOLS_CHANGED_FAILED} \"{server}\": {message}");
    self
      .host
      .log(super::host::Level::Warn, &line, server, Some(&message));
  }
}
