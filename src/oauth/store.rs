//! O3: where credentials live. The process-wide in-memory store is the default;
//! `FileTokenStore` keeps them in one JSON file readable by its owner only (mode 0600),
//! written the way the tool cache is (atomic replace under a lock). A caller's own store is
//! reached through the host (`HostCall::Store*`).
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Map, Value};

use crate::persist;

const VERSION: u64 = 1;

fn memory() -> &'static Mutex<HashMap<String, String>> {
  static MEMORY: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
  MEMORY.get_or_init(Mutex::default)
}

/// The default store: shared by every transport of the process, gone with it.
pub fn memory_get(key: &str) -> Option<String> {
  memory().lock().ok()?.get(key).cloned()
}

pub fn memory_set(key: &str, credential: String) {
  if let Ok(mut map) = memory().lock() {
    map.insert(key.to_string(), credential);
  }
}

pub fn memory_delete(key: &str) {
  if let Ok(mut map) = memory().lock() {
    map.remove(key);
  }
}

#[derive(Debug, Clone)]
pub struct FileTokenStore {
  path: PathBuf,
}

impl FileTokenStore {
  pub fn new(path: impl Into<PathBuf>) -> Self {
    FileTokenStore { path: path.into() }
  }

  pub fn path(&self) -> &Path {
    &self.path
  }

  /// The credential saved under `key`; a missing or corrupt file is just a miss.
  pub fn get(&self, key: &str) -> Option<Value> {
    self.read_entries().remove(key)
  }

  /// Saves `credential` under `key`, keeping the other entries, even those another process
  /// writes at the same time.
  ///
  /// # Errors
  /// When the file or its lock cannot be written.
  pub fn set(&self, key: &str, credential: Value) -> io::Result<()> {
    self.update(|entries| {
      entries.insert(key.to_string(), credential);
    })
  }

  /// # Errors
  /// When the file or its lock cannot be written.
  pub fn delete(&self, key: &str) -> io::Result<()> {
    self.update(|entries| {
      entries.remove(key);
    })
  }

  fn update(&self, change: impl FnOnce(&mut Map<String, Value>)) -> io::Result<()> {
    let _lock = persist::lock(&self.path)?;
    let mut entries = self.read_entries();
    change(&mut entries);
    let payload = serde_json::to_vec_pretty(&json!({ "version": VERSION, "entries": entries }))?;
    persist::replace(&self.path, &payload, true)
  }

  fn read_entries(&self) -> Map<String, Value> {
    persist::read_entries(&self.path, VERSION)
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::manager::test_dir::TempDir;
  use std::fs;

  #[test]
  fn o3_file_store_round_trip_private_and_atomic() {
    let dir = TempDir::new("tokens");
    let store = FileTokenStore::new(dir.0.join("nested/tokens.json"));
    assert_eq!(store.get("a"), None);
    store.set("a", json!({ "issuer": "x" })).unwrap();
    store.set("b", json!({ "issuer": "y" })).unwrap();
    assert_eq!(store.get("a"), Some(json!({ "issuer": "x" })));
    store.delete("a").unwrap();
    assert_eq!(store.get("a"), None);
    assert_eq!(store.get("b"), Some(json!({ "issuer": "y" })));
    #[cfg(unix)]
    {
      use std::os::unix::fs::PermissionsExt;
      let mode = fs::metadata(store.path()).unwrap().permissions().mode();
      assert_eq!(mode & 0o777, 0o600);
    }
    let mut names: Vec<String> = fs::read_dir(dir.0.join("nested"))
      .unwrap()
      .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
      .collect();
    names.sort();
    assert_eq!(names, ["tokens.json", "tokens.json.lock"]);
  }

  #[test]
  fn o3_corrupt_file_reads_empty_and_is_replaced() {
    let dir = TempDir::new("tokens");
    let path = dir.0.join("tokens.json");
    fs::write(&path, "{not json").unwrap();
    let store = FileTokenStore::new(&path);
    assert_eq!(store.get("a"), None);
    store.set("a", json!(1)).unwrap();
    assert_eq!(store.get("a"), Some(json!(1)));
  }

  #[test]
  fn o3_concurrent_writers_keep_every_entry() {
    let dir = TempDir::new("tokens");
    let path = dir.0.join("tokens.json");
    std::thread::scope(|scope| {
      for i in 0..8 {
        let path = path.clone();
        scope.spawn(move || {
          FileTokenStore::new(path)
            .set(&format!("k{i}"), json!(i))
            .unwrap();
        });
      }
    });
    let store = FileTokenStore::new(&path);
    for i in 0..8 {
      assert_eq!(store.get(&format!("k{i}")), Some(json!(i)));
    }
  }

  #[test]
  fn memory_store_is_process_wide() {
    memory_set("store-test", "v".into());
    assert_eq!(memory_get("store-test").as_deref(), Some("v"));
    memory_delete("store-test");
    assert_eq!(memory_get("store-test"), None);
  }
}
