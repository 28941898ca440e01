//! The operating system and the CPU behind safe functions. `unsafe` code lives here, in
//! `binding/js.rs` (Node-API) and in `binding/uv.rs` (the libuv glue), nowhere else;
//! `node scripts/layers.mjs --report` lists where.
pub mod errno;
pub mod fs;
pub mod host_symbol;
#[cfg(unix)]
pub mod mapping;
#[cfg(not(unix))]
pub mod mapping {
  //! Where there are no anonymous mappings, long lines live on the heap.
  pub struct Mapping(std::convert::Infallible);

  impl Mapping {
    pub fn new(_capacity: usize) -> Option<Self> {
      None
    }

    pub fn bytes(&self) -> &[u8] {
      match self.0 {}
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
      match self.0 {}
    }
  }
}
#[cfg(unix)]
pub mod pipe;
#[cfg(windows)]
#[path = "windows/pipe.rs"]
pub mod pipe;
#[cfg(unix)]
pub mod process;
#[cfg(windows)]
#[path = "windows/process.rs"]
pub mod process;
pub mod shell;
pub mod signal;
#[cfg(target_arch = "x86_64")]
pub mod simd;

/// `process.platform`'s name for the platform this was built for, when the runtime does
/// not say.
pub fn build_platform() -> &'static str {
  match std::env::consts::OS {
    "macos" => "darwin",
    "windows" => "win32",
    other => other,
  }
}

/// Whether two environment variable names name the same variable: in any case on Windows,
/// whose environment (and Node's `process.env` there) ignores case; exactly elsewhere.
pub fn same_env_name(a: impl AsRef<std::ffi::OsStr>, b: impl AsRef<std::ffi::OsStr>) -> bool {
  let (a, b) = (a.as_ref(), b.as_ref());
  a == b
    || (cfg!(windows) && a.to_string_lossy().to_uppercase() == b.to_string_lossy().to_uppercase())
}
