//! The addon's runtimes: its own tokio runtime, independent of napi-rs's (which is torn down
//! with the JS environment while our exit hooks may still need to stop children), and
//! `local`, the executor that runs the core's `!Send` flows on a JS thread.
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

pub mod local;
pub mod spin;
pub mod turn;

static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();

/// The shared runtime handle, or `None` if the OS refused to start its threads.
pub fn handle() -> Option<Handle> {
  RUNTIME
    .get_or_init(|| {
      Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mcp-native")
        .enable_all()
        .build()
        .ok()
    })
    .as_ref()
    .map(|rt| rt.handle().clone())
}
