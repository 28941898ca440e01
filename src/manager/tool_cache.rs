//! `FileToolCache`, the embedded default tool cache: one JSON file of tool lists keyed by
//! server name and config hash. Blocking I/O; call it from a blocking thread.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::persist::{self, now_ms};
use crate::protocol::stable_json::stable_json;

const VERSION: u64 = 1;
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

#[derive(Debug, Clone)]
pub struct FileToolCache {
  path: PathBuf,
  max_age: Duration,
}

impl FileToolCache {
  /// A cache stored at `path`, whose entries expire after 30 days.
  pub fn new(path: impl Into<PathBuf>) -> Self {
    Self {
      path: path.into(),
      max_age: DEFAULT_MAX_AGE,
    }
  }

  pub fn with_max_age(self, max_age: Duration) -> Self {
    Self { max_age, ..self }
  }

  pub fn path(&self) -> &Path {
    &self.path
  }

  /// The tools saved for `server` under this exact config, unless expired. A missing,
  /// unreadable or corrupt file is just a miss.
  pub fn get(&self, server: &str, config: &Value) -> Option<Value> {
    self.field(server, config, "tools").filter(Value::is_array)
  }

  /// N2: the era verdict saved for `server` under this exact config (`"handshake"` or a
  /// stateless protocol version), unless expired.
  pub fn get_era(&self, server: &str, config: &Value) -> Option<String> {
    match self.field(server, config, "era")? {
      Value::String(era) => Some(era),
      _ => None,
    }
  }

  /// Saves `tools` for `server`, keeping other servers' fresh entries, even those another
  /// process writes at the same time, and this server's era verdict for the same config.
  pub fn set(&self, server: &str, config: &Value, tools: &Value) -> io::Result<()> {
    self.update(server, config, "tools", tools.clone())
  }

  /// N2: saves the era verdict of `server`, keeping its tools for the same config.
  pub fn set_era(&self, server: &str, config: &Value, era: &str) -> io::Result<()> {
    self.update(server, config, "era", Value::from(era))
  }

  fn field(&self, server: &str, config: &Value, name: &str) -> Option<Value> {
    let Value::Object(mut entry) = self.read_entries().remove(server)? else {
      return None;
    };
    let hash_matches =
      entry.get("configHash").and_then(Value::as_str) == Some(config_hash(config).as_str());
    if !hash_matches || !self.is_fresh(&entry, now_ms()) {
      return None;
    }
    entry.remove(name)
  }

  fn update(&self, server: &str, config: &Value, name: &str, value: Value) -> io::Result<()> {
    let _lock = persist::lock(&self.path)?;
    let now = now_ms();
    let hash = config_hash(config);
    let mut entries = self.read_entries();
    entries.retain(|_, entry| {
      entry
        .as_object()
        .is_some_and(|entry| self.is_fresh(entry, now))
    });
    let mut entry = match entries.remove(server) {
      Some(Value::Object(entry))
        if entry.get("configHash").and_then(Value::as_str) == Some(hash.as_str()) =>
      {
        entry
      }
      _ => Map::new(),
    };
    entry.insert("configHash".into(), Value::from(hash));
    // The age is the tool list's: an era verdict added to an entry does not freshen it.
    if name == "tools" || !entry.contains_key("savedAt") {
      entry.insert("savedAt".into(), Value::from(now));
    }
    entry.insert(name.into(), value);
    entries.insert(server.to_owned(), Value::Object(entry));
    let payload = serde_json::to_vec(&json!({ "version": VERSION, "entries": entries }))?;
    persist::replace(&self.path, &payload, false)
  }

  /// The entries of a well-formed version-1 file; anything else reads as empty.
  fn read_entries(&self) -> Map<String, Value> {
    persist::read_entries(&self.path, VERSION)
  }

  fn is_fresh(&self, entry: &Map<String, Value>, now_ms: u64) -> bool {
    entry
      .get("savedAt")
      .and_then(Value::as_u64)
      .is_some_and(|saved| u128::from(now_ms.saturating_sub(saved)) < self.max_age.as_millis())
  }
}

/// Lowercase hex SHA-256 of the config's [`stable_json`].
pub fn config_hash(config: &Value) -> String {
  const HEX: &[u8; 16] = b"0123456789abcdef";
  let digest = Sha256::digest(stable_json(config).as_bytes());
  let mut hex = String::with_capacity(digest.len() * 2);
  for byte in digest.iter() {
    hex.push(char::from(HEX[usize::from(byte >> 4)]));
    hex.push(char::from(HEX[usize::from(byte & 0xf)]));
  }
  hex
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::manager::test_dir::TempDir;
  use std::fs;

  /// A cache in a directory that does not exist yet, so `set` has to create it.
  fn cache_in(dir: &TempDir) -> FileToolCache {
    FileToolCache::new(dir.0.join("nested").join("tools.json"))
  }

  fn read_file(cache: &FileToolCache) -> Value {
    serde_json::from_slice(&fs::read(cache.path()).unwrap()).unwrap()
  }

  #[test]
  fn config_hash_is_sha256_of_stable_json() {
    assert_eq!(
      config_hash(&json!({})),
      "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    let config = json!({"b": {"d": "q\"\n", "c": "é"}, "a": [1, "x", null, true, 1.5]});
    assert_eq!(
      config_hash(&config),
      "2848bc484fc4ab9cc92e31890ca646060cfacfd44942c7ccb9a8a5d0149392b7"
    );
    let reordered = json!({"a": [1, "x", null, true, 1.5], "b": {"c": "é", "d": "q\"\n"}});
    assert_eq!(config_hash(&config), config_hash(&reordered));
    assert_ne!(
      config_hash(&json!({"a": [1, 2]})),
      config_hash(&json!({"a": [2, 1]}))
    );
  }

  #[test]
  fn round_trip() {
    let dir = TempDir::new("tool-cache");
    let cache = cache_in(&dir);
    let config = json!({"command": "node", "args": ["server.js"], "env": {"B": "2", "A": "1"}});
    let tools = json!([{"name": "read", "inputSchema": {"type": "object"}}]);
    assert_eq!(cache.get("fs", &config), None);
    cache.set("fs", &config, &tools).unwrap();
    assert_eq!(cache.get("fs", &config), Some(tools.clone()));
    let reordered = json!({"env": {"A": "1", "B": "2"}, "args": ["server.js"], "command": "node"});
    assert_eq!(cache.get("fs", &reordered), Some(tools));
    assert_eq!(cache.get("other", &config), None);

    let file = read_file(&cache);
    assert_eq!(file["version"], 1);
    assert_eq!(file["entries"]["fs"]["configHash"], config_hash(&config));
    assert!(file["entries"]["fs"]["savedAt"].as_u64().unwrap() > 1_600_000_000_000);
    // Only the cache and its lock file remain: no temp files left behind.
    let mut names: Vec<_> = fs::read_dir(dir.0.join("nested"))
      .unwrap()
      .map(|e| e.unwrap().file_name())
      .collect();
    names.sort();
    assert_eq!(names, ["tools.json", "tools.json.lock"]);
  }

  #[test]
  fn n2_era_verdict_beside_the_tools() {
    let dir = TempDir::new("tool-cache");
    let cache = cache_in(&dir);
    let config = json!({"type": "http", "url": "http://127.0.0.1/mcp"});
    assert_eq!(cache.get_era("s", &config), None);
    cache.set_era("s", &config, "2026-07-28").unwrap();
    assert_eq!(cache.get_era("s", &config), Some("2026-07-28".into()));
    assert_eq!(cache.get("s", &config), None);
    cache.set("s", &config, &json!([1])).unwrap();
    assert_eq!(cache.get_era("s", &config), Some("2026-07-28".into()));
    cache.set_era("s", &config, "handshake").unwrap();
    assert_eq!(cache.get("s", &config), Some(json!([1])));
    assert_eq!(cache.get_era("s", &config), Some("handshake".into()));
    // Another config is another server: its verdict starts over.
    let moved = json!({"type": "http", "url": "http://127.0.0.1/v2"});
    cache.set("s", &moved, &json!([2])).unwrap();
    assert_eq!(cache.get_era("s", &moved), None);
    assert_eq!(cache.get_era("s", &config), None);
  }

  #[test]
  fn other_config_misses_and_set_replaces() {
    let dir = TempDir::new("tool-cache");
    let cache = cache_in(&dir);
    cache
      .set("s", &json!({"command": "a"}), &json!([1]))
      .unwrap();
    assert_eq!(cache.get("s", &json!({"command": "b"})), None);
    cache
      .set("s", &json!({"command": "b"}), &json!([2]))
      .unwrap();
    assert_eq!(cache.get("s", &json!({"command": "a"})), None);
    assert_eq!(cache.get("s", &json!({"command": "b"})), Some(json!([2])));
  }

  #[test]
  fn entries_expire() {
    let dir = TempDir::new("tool-cache");
    let config = json!({"url": "http://x"});
    let cache = cache_in(&dir).with_max_age(Duration::ZERO);
    cache.set("s", &config, &json!([])).unwrap();
    assert_eq!(cache.get("s", &config), None);

    let cache = cache_in(&dir);
    let day_ms = 24 * 60 * 60 * 1000;
    let file = json!({"version": 1, "entries": {
      "old": {"configHash": config_hash(&config), "savedAt": now_ms() - 31 * day_ms, "tools": [1]},
      "recent": {"configHash": config_hash(&config), "savedAt": now_ms() - 29 * day_ms, "tools": [2]},
      "malformed": {"configHash": config_hash(&config), "tools": [3]},
    }});
    fs::write(cache.path(), file.to_string()).unwrap();
    assert_eq!(cache.get("old", &config), None);
    assert_eq!(cache.get("recent", &config), Some(json!([2])));
    assert_eq!(cache.get("malformed", &config), None);

    // A write drops expired and malformed entries and keeps fresh ones.
    cache.set("new", &config, &json!([4])).unwrap();
    let entries = read_file(&cache)["entries"].as_object().unwrap().clone();
    assert_eq!(entries.keys().collect::<Vec<_>>(), ["recent", "new"]);
  }

  #[test]
  fn corrupt_file_reads_as_empty_and_is_repaired() {
    let dir = TempDir::new("tool-cache");
    let cache = cache_in(&dir);
    let config = json!({});
    fs::create_dir_all(cache.path().parent().unwrap()).unwrap();
    for corrupt in [
      "{not json",
      "",
      "[]",
      r#"{"version": 1}"#,
      r#"{"version": 1, "entries": []}"#,
    ] {
      fs::write(cache.path(), corrupt).unwrap();
      assert_eq!(cache.get("s", &config), None, "{corrupt:?}");
    }
    let hash = config_hash(&config);
    let odd = json!({"version": 1, "entries": {"s": {"configHash": hash, "savedAt": now_ms(), "tools": "x"}}});
    fs::write(cache.path(), odd.to_string()).unwrap();
    assert_eq!(cache.get("s", &config), None);

    fs::write(cache.path(), "\0garbage").unwrap();
    cache.set("s", &config, &json!(["t"])).unwrap();
    assert_eq!(cache.get("s", &config), Some(json!(["t"])));
    assert_eq!(read_file(&cache)["entries"].as_object().unwrap().len(), 1);
  }

  #[test]
  fn version_mismatch_misses() {
    let dir = TempDir::new("tool-cache");
    let cache = cache_in(&dir);
    let config = json!({"command": "x"});
    cache.set("s", &config, &json!([1])).unwrap();
    let mut file = read_file(&cache);
    file["version"] = json!(2);
    fs::write(cache.path(), file.to_string()).unwrap();
    assert_eq!(cache.get("s", &config), None);
    // A write starts a fresh version-1 file rather than mixing formats.
    cache.set("t", &config, &json!([2])).unwrap();
    let file = read_file(&cache);
    assert_eq!(file["version"], 1);
    assert_eq!(
      file["entries"]
        .as_object()
        .unwrap()
        .keys()
        .collect::<Vec<_>>(),
      ["t"]
    );
  }

  #[test]
  fn missing_or_unwritable_locations() {
    let dir = TempDir::new("tool-cache");
    assert_eq!(cache_in(&dir).get("s", &json!({})), None);
    // A file where the directory should be makes `set` fail rather than panic.
    fs::create_dir_all(&dir.0).unwrap();
    fs::write(dir.0.join("nested"), "").unwrap();
    assert!(cache_in(&dir).set("s", &json!({}), &json!([])).is_err());
    assert!(FileToolCache::new("/")
      .set("s", &json!({}), &json!([]))
      .is_err());
  }

  #[test]
  fn concurrent_writers_keep_every_entry() {
    let dir = TempDir::new("tool-cache");
    let path = cache_in(&dir).path().to_owned();
    let threads: Vec<_> = (0..8)
      .map(|t| {
        let path = path.clone();
        std::thread::spawn(move || {
          // Separate instances, so each write opens its own lock file description, as
          // separate processes would.
          let cache = FileToolCache::new(path);
          for i in 0..20 {
            cache
              .set(&format!("server{t}"), &json!({"n": t}), &json!([i]))
              .unwrap();
          }
        })
      })
      .collect();
    for thread in threads {
      thread.join().unwrap();
    }
    let cache = FileToolCache::new(&path);
    let file = read_file(&cache);
    assert_eq!(file["entries"].as_object().unwrap().len(), 8);
    for t in 0..8 {
      assert_eq!(
        cache.get(&format!("server{t}"), &json!({"n": t})),
        Some(json!([19]))
      );
    }
  }
}
