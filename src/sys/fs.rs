//! Files only their owner may read: token stores and caches that hold credentials (O3).
use std::fs::OpenOptions;

/// Files `options` creates are readable and writable by their owner only. Elsewhere than
/// Unix a new file takes its directory's access rules (on Windows, the user profile's).
pub fn owner_only(options: &mut OpenOptions) {
  #[cfg(unix)]
  {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600);
  }
  #[cfg(not(unix))]
  let _ = options;
}
