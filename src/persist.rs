//! Small JSON files shared between processes (the tool cache, the token store): replaced
//! atomically under a sibling lock file, so concurrent writers keep each other's entries
//! and a crash never leaves a partial file. Blocking I/O.
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A lookup off the host thread, on the blocking pool (the disk or a lock may be slow);
/// `None` when the work could not run to its end.
pub async fn read_off_thread<T: Send + 'static>(
  work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
  tokio::task::spawn_blocking(work).await.ok()
}

/// A write off the host thread; its failure is the message the caller's error carries:
/// `Failed to write <what> <path>: <reason>`.
pub async fn write_off_thread(
  what: &str,
  path: &Path,
  work: impl FnOnce() -> io::Result<()> + Send + 'static,
) -> Result<(), String> {
  let failed = |reason: String| format!("Failed to write {what} {}: {reason}", path.display());
  match tokio::task::spawn_blocking(work).await {
    Ok(Ok(())) => Ok(()),
    Ok(Err(error)) => Err(failed(error.to_string())),
    Err(error) => Err(failed(error.to_string())),
  }
}

/// The directory `path` lives in (created if missing).
pub fn parent_dir(path: &Path) -> io::Result<PathBuf> {
  let dir = match path.parent() {
    Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
    _ => PathBuf::from("."),
  };
  fs::create_dir_all(&dir)?;
  Ok(dir)
}

/// `<file name><suffix>`, for files that live next to `path`.
pub fn sibling(path: &Path, suffix: &str) -> io::Result<PathBuf> {
  let mut name: OsString = path
    .file_name()
    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?
    .to_os_string();
  name.push(suffix);
  Ok(path.with_file_name(name))
}

/// Holds an exclusive advisory lock on `<path>.lock` (flock on unix) until dropped; the file
/// itself is replaced by every write, so it cannot carry the lock.
pub fn lock(path: &Path) -> io::Result<File> {
  parent_dir(path)?;
  let file = OpenOptions::new()
    .create(true)
    .truncate(false)
    .write(true)
    .open(sibling(path, ".lock")?)?;
  match file.lock() {
    // Where the platform has no such lock, writers race as they would without one.
    Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(file),
    Err(e) => Err(e),
    Ok(()) => Ok(file),
  }
}

/// Replaces `path` with `bytes`: written to a temp sibling, synced, renamed over it.
/// `private` makes the file readable by its owner only (unix mode 0600).
pub fn replace(path: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
  static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
  let suffix = format!(
    ".{}.{}.tmp",
    std::process::id(),
    NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
  );
  let temp = sibling(path, &suffix)?;
  let written = write_synced(&temp, bytes, private).and_then(|()| fs::rename(&temp, path));
  if written.is_err() {
    let _ = fs::remove_file(&temp);
  }
  written
}

fn write_synced(path: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
  let mut options = OpenOptions::new();
  options.write(true).create_new(true);
  if private {
    crate::sys::fs::owner_only(&mut options);
  }
  let mut file = options.open(path)?;
  file.write_all(bytes)?;
  // On disk before the rename, so a crash cannot leave an empty or partial file.
  file.sync_all()
}

/// The `entries` of a `{"version": <version>, "entries": {…}}` file; a missing, unreadable,
/// corrupt or other-version file reads as empty.
pub fn read_entries(path: &Path, version: u64) -> serde_json::Map<String, serde_json::Value> {
  use serde_json::{Map, Value};
  let Ok(bytes) = fs::read(path) else {
    return Map::new();
  };
  let Ok(Value::Object(mut root)) = serde_json::from_slice::<Value>(&bytes) else {
    return Map::new();
  };
  if root.get("version").and_then(Value::as_u64) != Some(version) {
    return Map::new();
  }
  match root.remove("entries") {
    Some(Value::Object(entries)) => entries,
    _ => Map::new(),
  }
}

pub fn now_ms() -> u64 {
  SystemTime::now()
    .duration_since(UNIX_EPOCH)
    .map_or(0, |since| {
      u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

#[cfg(test)]
mod tests {
  use super::*;

  #[tokio::test]
  async fn m4_o3_a_failed_write_names_the_file_and_the_reason() {
    let failed = write_off_thread("tool cache", Path::new("/c/tools.json"), || {
      Err(io::Error::other("disk full"))
    });
    assert_eq!(
      failed.await,
      Err("Failed to write tool cache /c/tools.json: disk full".to_string())
    );
    assert_eq!(read_off_thread(|| 7).await, Some(7));
  }
}
