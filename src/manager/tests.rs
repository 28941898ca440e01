//! The manager's decisions (M1–M11, W1–W7) over the fake host, with tokio's paused clock:
//! when `connectServers` answers, which tools it hands out, what late completions and
//! failures do, how unexpected closes, reconnects and disconnects interact.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Value as Json};
use tokio::task::spawn_local;
use tokio::time::{sleep, sleep_until, Instant};

use super::backoff::ReconnectPolicy;
use super::host::{Level, ManagerHost};
use super::test_dir::TempDir;
use super::tools::execute;
use super::{discover_and_connect, prepare_entries, Entry, Manager, Prepared, Report, Wait};
use crate::fake_host::{
  core_connect, error, local, ms, tool_definitions, v, FakeHost, Log, Reply, Script, V,
};

type Shared = Rc<Manager<FakeHost>>;

/// A status hook that keeps the names of each `Connecting` it hears.
fn heard_connecting() -> (super::StatusHook, Rc<RefCell<Vec<Vec<String>>>>) {
  let heard = Rc::new(RefCell::new(Vec::new()));
  let keep = heard.clone();
  let hook: super::StatusHook = Rc::new(move |status| {
    if let super::Status::Connecting(names) = status {
      keep.borrow_mut().push(names.to_vec());
    }
  });
  (hook, heard)
}

fn quiet() -> super::StatusHook {
  Rc::new(|_| {})
}

fn entry_of(name: &str, config: V) -> Entry<V> {
  Entry {
    name: name.to_string(),
    config,
    source: None,
  }
}

fn stdio(name: &str) -> Entry<V> {
  entry_of(name, v(json!({ "command": name })))
}

async fn connect(manager: &Shared, entries: Vec<Entry<V>>) -> Report<V> {
  manager.connect_servers(entries, quiet()).await.unwrap()
}

/// `connectServers` running on its own, so the test can act while it waits.
fn connect_in_background(
  manager: &Shared,
  entries: Vec<Entry<V>>,
) -> tokio::task::JoinHandle<Report<V>> {
  let manager = manager.clone();
  spawn_local(async move { manager.connect_servers(entries, quiet()).await.unwrap() })
}

/// Each tool's name and whether it is deferred.
fn flags(tools: &V) -> Vec<(String, bool)> {
  tools
    .items()
    .iter()
    .map(|t| {
      let name = t.get("name").text().unwrap();
      (name, matches!(t.get("deferred"), V::Bool(true)))
    })
    .collect()
}

fn flag(name: &str, deferred: bool) -> (String, bool) {
  (name.to_string(), deferred)
}

fn names(tools: &V) -> Vec<String> {
  flags(tools).into_iter().map(|(name, _)| name).collect()
}

fn pending(manager: &Shared, name: &str) -> V {
  match manager.wait_for_connection(name) {
    Wait::Pending(promise) => promise,
    Wait::Connected(_) => panic!("{name} is connected"),
    Wait::Missing(e) => panic!("{name} is missing: {e:?}"),
  }
}

fn missing(manager: &Shared, name: &str) -> String {
  match manager.wait_for_connection(name) {
    Wait::Missing(error) => error.message(),
    _ => panic!("{name} is not missing"),
  }
}

fn rejection(promise: &V) -> String {
  match promise.promise().outcome() {
    Some(Err(error)) => error.message(),
    other => panic!("not rejected: {other:?}"),
  }
}

fn log(level: Level, message: &str, server: &str, error: Option<&str>) -> Log {
  Log {
    level,
    message: message.to_string(),
    server: server.to_string(),
    error: error.map(str::to_string),
  }
}

fn policy(max_attempts: u32, initial: u64) -> Option<ReconnectPolicy> {
  Some(ReconnectPolicy {
    max_attempts,
    initial_delay: ms(initial),
    max_delay: ms(10_000),
  })
}

fn pairs(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
  list
    .iter()
    .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
    .collect()
}

async fn run_tool(
  host: &FakeHost,
  server: &str,
  tool: &str,
  connection: Option<V>,
) -> Result<V, V> {
  execute(
    host.clone(),
    server.to_string(),
    tool.to_string(),
    connection,
    v(json!({ "x": 1 })),
    v(json!({})),
  )
  .await
}

/// `options.connect` after `delay` ms, running the real handshake.
fn delayed_connect(host: &FakeHost, delay: u64) {
  host.custom_connect(Rc::new(move |host, name, config| {
    let (host, name, config) = (host.clone(), name.to_string(), config.clone());
    Box::pin(async move {
      sleep(ms(delay)).await;
      core_connect(&host, &name, &config).await
    })
  }));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_fast_servers_answer_once_all_settle_before_the_gate() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[]);
    host.script("alpha", Script::new("alpha").tools(&["read"]).slow(10));
    host.script("beta", Script::new("beta").tools(&["write"]).slow(30));
    let manager = host.manager();
    let (hook, heard) = heard_connecting();
    let start = Instant::now();

    let report = manager
      .connect_servers(vec![stdio("alpha"), stdio("beta")], hook)
      .await
      .unwrap();

    assert_eq!(start.elapsed(), ms(30));
    assert_eq!(*heard.borrow(), [["alpha", "beta"]]);
    // M5: default tool names, live.
    assert_eq!(
      flags(&report.tools),
      [flag("mcp_alpha_read", false), flag("mcp_beta_write", false)]
    );
    assert_eq!(report.connected, ["alpha", "beta"]);
    assert!(report.errors.is_empty());
    // Nobody was still pending at the gate: the cache is not asked.
    assert!(host.records().cache_gets.is_empty());
    assert_eq!(host.records().cache_sets.len(), 2);
    assert_eq!(manager.connected_servers(), ["alpha", "beta"]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_w5_slow_cached_server_gets_deferred_tools_at_the_gate_then_live_ones() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[("slow", tool_definitions(&["cached"]))]);
    host.script("fast", Script::new("fast").tools(&["quick"]).slow(10));
    host.script(
      "slow",
      Script::new("slow").tools(&["live", "extra"]).slow(1000),
    );
    let manager = host.manager();
    // W5: an explicit undefined field is fine, and the cache sees this very object.
    let slow_config = v(json!({ "command": "slow" }));
    slow_config.set("url", V::Undefined);
    let start = Instant::now();

    let report = connect(
      &manager,
      vec![stdio("fast"), entry_of("slow", slow_config.clone())],
    )
    .await;

    assert_eq!(start.elapsed(), ms(250));
    assert_eq!(
      flags(&report.tools),
      [flag("mcp_fast_quick", false), flag("mcp_slow_cached", true)]
    );
    assert_eq!(report.connected, ["fast"]);
    assert!(report.errors.is_empty());
    assert_eq!(manager.status("slow"), "connecting");
    {
      let records = host.records();
      assert_eq!(records.cache_gets.len(), 1);
      assert_eq!(records.cache_gets[0].0, "slow");
      assert!(records.cache_gets[0].1.same(&slow_config));
      assert_eq!(records.deferred.len(), 1);
    }

    sleep_until(start + ms(1001)).await;
    assert_eq!(manager.status("slow"), "connected");
    assert_eq!(
      flags(&manager.tools().unwrap()),
      [
        flag("mcp_fast_quick", false),
        flag("mcp_slow_live", false),
        flag("mcp_slow_extra", false)
      ]
    );
    let records = host.records();
    let written = records.cache_sets.iter().find(|(n, _, _)| n == "slow");
    let (_, config, definitions) = written.expect("slow's listing is cached");
    assert!(config.same(&slow_config));
    assert_eq!(*definitions, tool_definitions(&["live", "extra"]));
    let connection = manager.connection("slow").unwrap();
    assert!(connection.get("config").same(&slow_config));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_slow_servers_without_usable_cached_tools_make_the_answer_wait() {
  local(async {
    let host = FakeHost::new();
    // An empty cached listing is as good as none.
    host.cache(&[("empty", json!([]))]);
    host.script("empty", Script::new("empty").tools(&["a"]).slow(600));
    host.script("none", Script::new("none").tools(&["b"]).slow(800));
    let manager = host.manager();
    let start = Instant::now();
    let report = connect(&manager, vec![stdio("empty"), stdio("none")]).await;
    assert_eq!(start.elapsed(), ms(800));
    assert_eq!(
      flags(&report.tools),
      [flag("mcp_empty_a", false), flag("mcp_none_b", false)]
    );
    assert_eq!(report.connected, ["empty", "none"]);
    assert!(host.records().deferred.is_empty());

    // Without a tool cache at all, likewise.
    let host = FakeHost::new();
    host.script("solo", Script::new("solo").tools(&["c"]).slow(400));
    let manager = host.manager();
    let start = Instant::now();
    let report = connect(&manager, vec![stdio("solo")]).await;
    assert_eq!(start.elapsed(), ms(400));
    assert_eq!(report.connected, ["solo"]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_w7_a_late_failure_is_logged_and_the_deferred_tools_stay() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[("slow", tool_definitions(&["cached"]))]);
    host.script(
      "slow",
      Script::new("slow").initialize(Reply::Err(1000, "boom".into())),
    );
    let manager = host.manager();
    let start = Instant::now();
    let report = connect(&manager, vec![stdio("slow")]).await;
    assert_eq!(start.elapsed(), ms(250));
    assert_eq!(flags(&report.tools), [flag("mcp_slow_cached", true)]);
    assert!(report.errors.is_empty());
    assert!(report.connected.is_empty());

    let waiting = pending(&manager, "slow");
    // A deferred tool run meanwhile waits for the connect and hears its failure.
    let early = {
      let host = host.clone();
      spawn_local(async move { run_tool(&host, "slow", "cached", None).await })
    };
    sleep_until(start + ms(1001)).await;

    assert_eq!(early.await.unwrap().unwrap_err().message(), "boom");
    assert_eq!(rejection(&waiting), "boom");
    assert_eq!(
      host.logs(),
      [log(
        Level::Error,
        "MCP server \"slow\" failed to connect: boom",
        "slow",
        Some("boom")
      )]
    );
    assert_eq!(
      flags(&manager.tools().unwrap()),
      [flag("mcp_slow_cached", true)]
    );
    assert_eq!(manager.status("slow"), "disconnected");
    assert!(manager.connection("slow").is_none());
    let late = run_tool(&host, "slow", "cached", None).await.unwrap_err();
    assert_eq!(late.message(), "MCP server not connected: slow");
    assert!(host.latest_transport("slow").is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_c1_a_late_connect_timeout_is_logged_with_the_timeout_message() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[("slow", tool_definitions(&["cached"]))]);
    host.script("slow", Script::new("slow").initialize(Reply::Never));
    let manager = host.manager();
    let config = v(json!({ "command": "slow", "timeout": 500 }));
    let start = Instant::now();
    connect(&manager, vec![entry_of("slow", config)]).await;
    assert_eq!(start.elapsed(), ms(250));
    sleep_until(start + ms(501)).await;
    let message = "Connection to MCP server \"slow\" timed out after 500ms";
    assert_eq!(
      host.logs(),
      [log(
        Level::Error,
        &format!("MCP server \"slow\" failed to connect: {message}"),
        "slow",
        Some(message)
      )]
    );
    assert!(host.latest_transport("slow").is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_the_startup_timeout_comes_from_the_settings() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().startup_timeout = Some(ms(100));
    host.cache(&[("slow", tool_definitions(&["cached"]))]);
    host.script("slow", Script::new("slow").slow(1000));
    let manager = host.manager();
    let start = Instant::now();
    let report = connect(&manager, vec![stdio("slow")]).await;
    assert_eq!(start.elapsed(), ms(100));
    assert_eq!(flags(&report.tools), [flag("mcp_slow_cached", true)]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_a_failure_before_the_answer_goes_to_errors_and_the_server_is_forgotten() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "bad",
      Script::new("bad").initialize(Reply::Err(5, "MCP error -32601: nope".into())),
    );
    host.script("good", Script::new("good").tools(&["t"]));
    let manager = host.manager();
    let start = Instant::now();
    let report = connect(&manager, vec![stdio("bad"), stdio("good")]).await;
    assert_eq!(start.elapsed(), ms(5));
    assert_eq!(
      report.errors,
      [("bad".to_string(), "MCP error -32601: nope".to_string())]
    );
    assert_eq!(report.connected, ["good"]);
    assert_eq!(flags(&report.tools), [flag("mcp_good_t", false)]);
    assert_eq!(manager.status("bad"), "disconnected");
    assert_eq!(manager.all_server_names(), ["good"]);
    assert_eq!(missing(&manager, "bad"), "MCP server not connected: bad");
    // Failures the caller hears about are not logged as well.
    assert!(host.logs().is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m2_w8_invalid_configs_are_reported_and_never_connected() {
  local(async {
    let host = FakeHost::new();
    let manager = host.manager();
    let entries = vec![
      entry_of("both", v(json!({ "command": "x", "url": "http://x" }))),
      entry_of("nocmd", v(json!({ "env": {} }))),
      entry_of("emptycmd", v(json!({ "command": "" }))),
      entry_of("nourl", v(json!({ "type": "http" }))),
      entry_of("sse", v(json!({ "type": "sse", "url": "" }))),
      entry_of("ws", v(json!({ "type": "ws", "url": "ws://x" }))),
      entry_of("many", v(json!({ "type": "ws", "command": "x", "url": "y" }))),
    ];
    let both = "both \"command\" and \"url\" are set - server should be either stdio (command) OR http/sse (url), not both";
    let (hook, heard) = heard_connecting();
    let start = Instant::now();
    let report = manager.connect_servers(entries, hook).await.unwrap();
    assert_eq!(start.elapsed(), ms(0));
    let expected = [
      ("both", format!("Server \"both\": {both}")),
      (
        "nocmd",
        "Server \"nocmd\": stdio server requires \"command\" field".into(),
      ),
      (
        "emptycmd",
        "Server \"emptycmd\": stdio server requires \"command\" field".into(),
      ),
      (
        "nourl",
        "Server \"nourl\": http server requires \"url\" field".into(),
      ),
      ("sse", "Server \"sse\": sse server requires \"url\" field".into()),
      ("ws", "Server \"ws\": unknown server type \"ws\"".into()),
      (
        "many",
        format!("Server \"many\": {both}; Server \"many\": unknown server type \"ws\""),
      ),
    ];
    let expected: Vec<(String, String)> = expected
      .into_iter()
      .map(|(n, m)| (n.to_string(), m))
      .collect();
    assert_eq!(report.errors, expected);
    assert!(heard.borrow().is_empty());
    assert!(report.connected.is_empty());
    assert_eq!(report.tools.to_json(), json!([]));
    let records = host.records();
    assert!(records.prepared.is_empty());
    assert!(records.connects.is_empty());
    assert!(records.creates.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m6_all_server_names_includes_a_server_whose_config_failed_validation() {
  local(async {
    let host = FakeHost::new();
    let manager = host.manager();
    let source = v(json!({ "provider": "agent", "path": "/home/me/.mcp.json", "level": "user" }));
    let mut broken = entry_of("broken", v(json!({ "type": "http" })));
    broken.source = Some(source.clone());
    let report = connect(&manager, vec![broken, stdio("fine")]).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(manager.all_server_names(), ["fine", "broken"]);
    assert!(manager.source("broken").unwrap().same(&source));
    assert_eq!(manager.status("broken"), "disconnected");
    assert!(manager.connection("broken").is_none());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_w3_a_connected_server_is_skipped_counted_and_gets_the_new_source() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").tools(&["read"]));
    let manager = host.manager();
    let first_source = v(json!({ "provider": "agent", "level": "user" }));
    let mut entry = stdio("files");
    let config = entry.config.clone();
    entry.source = Some(first_source.clone());
    connect(&manager, vec![entry]).await;
    let connection = manager.connection("files").unwrap();
    assert!(connection.get("_source").same(&first_source));

    let second_source = v(json!({ "provider": "mcp-json", "level": "project" }));
    let mut again = stdio("files");
    again.source = Some(second_source.clone());
    let report = connect(&manager, vec![again]).await;

    assert_eq!(host.connect_count(), 1);
    assert_eq!(report.connected, ["files"]);
    assert_eq!(flags(&report.tools), [flag("mcp_files_read", false)]);
    assert!(connection.get("_source").same(&second_source));
    assert!(manager.source("files").unwrap().same(&second_source));
    assert!(connection.get("config").same(&config));
    assert!(manager.connection("files").unwrap().same(&connection));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_a_concurrent_call_skips_the_server_that_is_pending() {
  local(async {
    let host = FakeHost::new();
    host.script("slow", Script::new("slow").tools(&["t"]).slow(1000));
    let manager = host.manager();
    let first = connect_in_background(&manager, vec![stdio("slow")]);
    tokio::task::yield_now().await;
    assert_eq!(manager.status("slow"), "connecting");

    let (hook, heard) = heard_connecting();
    let start = Instant::now();
    let second = manager
      .connect_servers(vec![stdio("slow")], hook)
      .await
      .unwrap();
    assert_eq!(start.elapsed(), ms(0));
    assert!(heard.borrow().is_empty());
    assert!(second.errors.is_empty());
    assert!(second.connected.is_empty());
    assert_eq!(second.tools.to_json(), json!([]));

    let first = first.await.unwrap();
    assert_eq!(first.connected, ["slow"]);
    assert_eq!(host.connect_count(), 1);
    assert_eq!(host.records().creates.len(), 1);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_on_connecting_hears_only_the_servers_actually_connected() {
  local(async {
    let host = FakeHost::new();
    let manager = host.manager();
    connect(&manager, vec![stdio("old")]).await;
    let (hook, heard) = heard_connecting();
    manager
      .connect_servers(
        vec![stdio("old"), entry_of("bad", v(json!({}))), stdio("new")],
        hook,
      )
      .await
      .unwrap();
    assert_eq!(*heard.borrow(), [["new"]]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_disconnect_during_connect_aborts_it_and_rejects_the_waiters() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[]);
    host.script("slow", Script::new("slow").initialize(Reply::Never));
    let manager = host.manager();
    let answer = connect_in_background(&manager, vec![stdio("slow")]);
    sleep(ms(100)).await;
    let waiting = pending(&manager, "slow");

    manager.disconnect_server("slow").await.unwrap();

    assert_eq!(rejection(&waiting), "MCP server not connected: slow");
    assert_eq!(host.records().aborts, 1);
    let report = answer.await.unwrap();
    assert!(report.errors.is_empty());
    assert!(report.connected.is_empty());
    assert!(host.latest_transport("slow").is_closed());
    assert_eq!(manager.status("slow"), "disconnected");
    assert!(manager.all_server_names().is_empty());
    assert!(manager.connection("slow").is_none());
    let records = host.records();
    assert!(records.watched.is_empty());
    assert!(records.cache_sets.is_empty());
    assert!(records.logs.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_a_custom_connect_completing_after_disconnect_is_closed_not_adopted() {
  local(async {
    let host = FakeHost::new();
    host.script("slow", Script::new("slow").tools(&["t"]));
    delayed_connect(&host, 1000);
    let manager = host.manager();
    let start = Instant::now();
    let answer = connect_in_background(&manager, vec![stdio("slow")]);
    sleep(ms(100)).await;
    let waiting = pending(&manager, "slow");

    manager.disconnect_server("slow").await.unwrap();
    assert_eq!(rejection(&waiting), "MCP server not connected: slow");
    // Nothing to abort: the caller's connect has no controller.
    assert_eq!(host.records().aborts, 0);
    let report = answer.await.unwrap();
    assert!(report.connected.is_empty());

    sleep_until(start + ms(1001)).await;
    let transport = host.latest_transport("slow");
    assert!(transport.is_closed());
    assert_eq!(host.records().closed, [transport.id]);
    assert_eq!(host.methods("slow"), ["initialize"]);
    assert!(manager.connection("slow").is_none());
    assert!(host.records().watched.is_empty());
    assert_eq!(manager.tools().unwrap().to_json(), json!([]));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m3_w1_the_connect_gets_the_resolved_config_and_the_connection_the_original() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[]);
    host.credentials(&[("cred-1", json!({ "type": "oauth", "access": "tok-123" }))]);
    host.environment(&[("HOME_DIR", "/home/me")]);
    let manager = host.manager();
    let config = v(json!({
      "command": "files",
      "env": { "ROOT": "HOME_DIR", "MODE": "fast" },
      "auth": { "type": "oauth", "credentialId": "cred-1" },
    }));
    let before = config.to_json();

    connect(&manager, vec![entry_of("files", config.clone())]).await;

    let records = host.records();
    assert!(records.prepared[0].same(&config));
    let (name, resolved) = &records.connects[0];
    assert_eq!(name, "files");
    assert!(!resolved.same(&config));
    assert_eq!(
      resolved.get("env").to_json(),
      json!({ "ROOT": "/home/me", "MODE": "fast", "OAUTH_ACCESS_TOKEN": "tok-123" })
    );
    let connection = manager.connection("files").unwrap();
    assert!(connection.get("config").same(&config));
    assert_eq!(config.to_json(), before);
    // W5: the cache is keyed by the caller's config, never the resolved one.
    assert!(records.cache_sets[0].1.same(&config));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_m3_a_custom_connects_connection_gets_the_original_config_back() {
  local(async {
    let host = FakeHost::new();
    host.credentials(&[("c", json!({ "type": "oauth", "access": "abc" }))]);
    delayed_connect(&host, 0);
    let manager = host.manager();
    let config = v(json!({
      "type": "http",
      "url": "https://mcp.example",
      "auth": { "type": "oauth", "credentialId": "c" },
    }));
    let report = connect(&manager, vec![entry_of("remote", config.clone())]).await;
    assert_eq!(report.connected, ["remote"]);
    let (_, resolved) = host.records().connects[0].clone();
    assert_eq!(
      resolved.get("headers").to_json(),
      json!({ "Authorization": "Bearer abc" })
    );
    let connection = manager.connection("remote").unwrap();
    assert!(connection.get("config").same(&config));
    assert!(!config.has("headers"));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m1_a_custom_connect_without_a_connection_is_an_error() {
  local(async {
    let host = FakeHost::new();
    host.custom_connect(Rc::new(|_, _, _| Box::pin(async { Ok(V::Undefined) })));
    let manager = host.manager();
    let report = connect(&manager, vec![stdio("odd")]).await;
    assert_eq!(
      report.errors,
      [(
        "odd".to_string(),
        "Connecting to MCP server \"odd\" returned no connection".to_string()
      )]
    );
    assert_eq!(manager.status("odd"), "disconnected");
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m10_m11_an_unexpected_close_without_reconnect_leaves_a_dead_connection() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").tools(&["read"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    let connection = manager.connection("files").unwrap();

    host.kill("files");

    assert_eq!(manager.status("files"), "disconnected");
    assert!(manager.connection("files").unwrap().same(&connection));
    assert!(manager.connected_servers().is_empty());
    assert_eq!(
      host.logs(),
      [log(
        Level::Warn,
        "MCP server \"files\" disconnected unexpectedly",
        "files",
        None
      )]
    );
    assert_eq!(names(&manager.tools().unwrap()), ["mcp_files_read"]);
    // M11: a call fails at once instead of waiting for a timeout.
    let start = Instant::now();
    let failure = run_tool(&host, "files", "read", Some(connection))
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "Transport not connected");
    assert_eq!(start.elapsed(), ms(0));
    assert_eq!(
      missing(&manager, "files"),
      "MCP server not connected: files"
    );

    sleep(ms(60_000)).await;
    assert_eq!(host.connect_count(), 1);
    // A dead server is connected again by the next call.
    let report = connect(&manager, vec![stdio("files")]).await;
    assert_eq!(report.connected, ["files"]);
    assert_eq!(host.connect_count(), 2);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m10_w3_a_reconnect_reestablishes_the_same_connection_object_in_place() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    host.cache(&[]);
    host.script("files", Script::new("files").tools(&["read"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    let connection = manager.connection("files").unwrap();
    let first = host.latest_transport("files");
    let before = names(&manager.tools().unwrap());

    host.kill("files");

    assert_eq!(manager.status("files"), "connecting");
    assert_eq!(
      host.logs(),
      [log(
        Level::Warn,
        "MCP server \"files\" disconnected unexpectedly; reconnecting",
        "files",
        None
      )]
    );
    let waiting = pending(&manager, "files");
    sleep(ms(150)).await;

    assert_eq!(manager.status("files"), "connected");
    let second = host.latest_transport("files");
    assert_ne!(second.id, first.id);
    assert!(manager.connection("files").unwrap().same(&connection));
    assert!(connection
      .get("transport")
      .same(&V::Transport(second.clone())));
    match waiting.promise().outcome() {
      Some(Ok(resolved)) => assert!(resolved.same(&connection)),
      other => panic!("waiter: {other:?}"),
    }
    assert_eq!(
      host.logs().last(),
      Some(&log(
        Level::Info,
        "MCP server \"files\" reconnected",
        "files",
        None
      ))
    );
    assert_eq!(names(&manager.tools().unwrap()), before);
    assert_eq!(host.records().cache_sets.len(), 2);
    assert_eq!(
      host.methods("files"),
      ["initialize", "tools/list", "initialize", "tools/list"]
    );

    // The new transport is watched too.
    host.kill("files");
    assert_eq!(manager.status("files"), "connecting");
    sleep(ms(150)).await;
    assert_eq!(manager.status("files"), "connected");
    assert_eq!(host.transports_of("files").len(), 3);
    assert!(manager.connection("files").unwrap().same(&connection));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m10_when_reconnect_attempts_run_out_the_server_is_removed_and_the_last_error_logged() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    host.script("files", Script::new("files").tools(&["read"]));
    let attempts = Rc::new(Cell::new(0));
    let counted = attempts.clone();
    host.custom_connect(Rc::new(move |host, name, config| {
      counted.set(counted.get() + 1);
      match counted.get() {
        1 => core_connect(host, name, config),
        n => {
          let failure = error(&format!("attempt {n} refused: ECONNREFUSED"));
          Box::pin(async move { Err(failure) })
        }
      }
    }));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.kill("files");
    let waiting = pending(&manager, "files");

    sleep(ms(2000)).await;

    assert_eq!(attempts.get(), 4);
    assert_eq!(manager.status("files"), "disconnected");
    assert!(manager.connection("files").is_none());
    assert_eq!(manager.tools().unwrap().to_json(), json!([]));
    assert!(manager.connected_servers().is_empty());
    let last = "attempt 4 refused: ECONNREFUSED";
    assert_eq!(
      host.logs().last(),
      Some(&log(
        Level::Error,
        &format!("MCP server \"files\" could not be reconnected: {last}"),
        "files",
        Some(last)
      ))
    );
    assert_eq!(rejection(&waiting), last);
    assert_eq!(
      missing(&manager, "files"),
      "MCP server not connected: files"
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_m10_disconnect_during_the_reconnect_delay_stops_the_attempts() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(5, 1000);
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.kill("files");
    let waiting = pending(&manager, "files");
    sleep(ms(100)).await;

    manager.disconnect_server("files").await.unwrap();

    assert_eq!(rejection(&waiting), "MCP server not connected: files");
    sleep(ms(60_000)).await;
    assert_eq!(host.connect_count(), 1);
    assert_eq!(host.records().creates.len(), 1);
    assert_eq!(manager.status("files"), "disconnected");
    assert!(manager.all_server_names().is_empty());
    assert!(host.logs().iter().all(|l| l.level == Level::Warn));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_m10_a_connection_completing_after_disconnect_during_a_reconnect_is_closed() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    let attempts = Rc::new(Cell::new(0));
    let counted = attempts.clone();
    host.custom_connect(Rc::new(move |host, name, config| {
      counted.set(counted.get() + 1);
      let (host, name, config) = (host.clone(), name.to_string(), config.clone());
      let delay = if counted.get() == 1 { 0 } else { 1000 };
      Box::pin(async move {
        sleep(ms(delay)).await;
        core_connect(&host, &name, &config).await
      })
    }));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.kill("files");
    sleep(ms(500)).await;
    // The first reconnect attempt is in flight; the caller's connect answers later.
    assert_eq!(attempts.get(), 2);

    manager.disconnect_server("files").await.unwrap();
    sleep(ms(3000)).await;

    let transports = host.transports_of("files");
    assert_eq!(transports.len(), 2);
    assert!(
      transports[1].is_closed(),
      "the reconnect attempt's transport was left open"
    );
    assert!(manager.connection("files").is_none());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_m10_disconnect_during_a_reconnect_handshake_closes_its_transport() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.edit("files", |s| s.initialize = Reply::Never);
    host.kill("files");
    sleep(ms(500)).await;
    // The attempt's transport exists and its initialize is unanswered.
    assert_eq!(host.transports_of("files").len(), 2);
    assert_eq!(host.methods("files").last().unwrap(), "initialize");

    manager.disconnect_server("files").await.unwrap();
    assert_eq!(host.records().aborts, 1);
    sleep(ms(1000)).await;

    assert!(
      host.latest_transport("files").is_closed(),
      "the reconnect attempt's transport was left open"
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_m10_disconnect_all_closes_everything_and_never_reconnects() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    host.script("c", Script::new("c").initialize(Reply::Never));
    let manager = host.manager();
    connect(&manager, vec![stdio("a"), stdio("b")]).await;
    let answer = connect_in_background(&manager, vec![stdio("c")]);
    sleep(ms(10)).await;
    let waiting = pending(&manager, "c");

    manager.disconnect_all().await;

    assert_eq!(rejection(&waiting), "MCP server not connected: c");
    answer.await.unwrap();
    for key in ["a", "b", "c"] {
      assert!(host.latest_transport(key).is_closed(), "{key} left open");
      assert_eq!(manager.status(key), "disconnected");
    }
    assert!(manager.all_server_names().is_empty());
    assert_eq!(manager.tools().unwrap().to_json(), json!([]));
    sleep(ms(10_000)).await;
    assert_eq!(host.connect_count(), 3);
    assert!(host.logs().is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m7_m10_disconnect_server_closes_and_never_triggers_a_reconnect() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().reconnect = policy(3, 100);
    host.script("files", Script::new("files").tools(&["read"]));
    let manager = host.manager();
    let mut entry = stdio("files");
    entry.source = Some(v(json!({ "level": "user" })));
    connect(&manager, vec![entry, stdio("other")]).await;

    manager.disconnect_server("files").await.unwrap();

    assert!(host.latest_transport("files").is_closed());
    assert_eq!(manager.status("files"), "disconnected");
    assert!(manager.source("files").is_none());
    assert_eq!(manager.all_server_names(), ["other"]);
    assert!(!names(&manager.tools().unwrap()).contains(&"mcp_files_read".to_string()));
    sleep(ms(10_000)).await;
    assert_eq!(host.connect_count(), 2);
    assert!(host.logs().is_empty());
    // Unknown names are fine.
    manager.disconnect_server("nobody").await.unwrap();
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m8_refresh_server_tools_lists_again_replaces_the_tools_and_writes_the_cache() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[]);
    host.script("files", Script::new("files").tools(&["a"]));
    let manager = host.manager();
    let entry = stdio("files");
    let config = entry.config.clone();
    connect(&manager, vec![entry]).await;
    host.edit("files", |s| *s = s.clone().tools(&["a", "b"]));

    manager.refresh_server_tools("files").await.unwrap();

    assert_eq!(
      names(&manager.tools().unwrap()),
      ["mcp_files_a", "mcp_files_b"]
    );
    let connection = manager.connection("files").unwrap();
    assert_eq!(
      connection.get("tools").to_json(),
      tool_definitions(&["a", "b"])
    );
    {
      let records = host.records();
      let (name, cached_config, definitions) = records.cache_sets.last().unwrap();
      assert_eq!(name, "files");
      assert!(cached_config.same(&config));
      assert_eq!(*definitions, tool_definitions(&["a", "b"]));
    }
    assert_eq!(
      host.methods("files"),
      ["initialize", "tools/list", "tools/list"]
    );

    // A failed listing is the caller's error; the tools handed out stay.
    host.edit("files", |s| {
      s.pages = vec![(None, Reply::err("MCP error -32603: down"))]
    });
    let failure = manager.refresh_server_tools("files").await.unwrap_err();
    assert_eq!(failure.message(), "MCP error -32603: down");
    assert_eq!(
      names(&manager.tools().unwrap()),
      ["mcp_files_a", "mcp_files_b"]
    );
    // Not connected: nothing to do.
    manager.refresh_server_tools("nobody").await.unwrap();
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m8_w1_refresh_all_tools_refreshes_each_connected_server_and_logs_failures() {
  local(async {
    let host = FakeHost::new();
    host.script("a", Script::new("a").tools(&["x"]));
    host.script("b", Script::new("b").tools(&["y"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("a"), stdio("b")]).await;
    host.edit("a", |s| *s = s.clone().tools(&["x", "z"]));
    host.edit("b", |s| s.pages = vec![(None, Reply::err("gone"))]);

    manager.refresh_all_tools().await;

    // W1: each refresh goes through the host's (overridable) method.
    assert_eq!(host.records().refreshes, ["a", "b"]);
    assert_eq!(
      names(&manager.tools().unwrap()),
      ["mcp_a_x", "mcp_a_z", "mcp_b_y"]
    );
    assert_eq!(
      host.logs(),
      [log(
        Level::Warn,
        "Failed to refresh MCP tools: gone",
        "",
        Some("gone")
      )]
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m10_w1_tools_list_changed_refreshes_through_the_host_when_asked() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().auto_refresh_tools = true;
    host.script("files", Script::new("files").tools(&["a"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.edit("files", |s| *s = s.clone().tools(&["b"]));

    host.notify_from("files", "notifications/resources/list_changed");
    sleep(ms(1)).await;
    assert!(host.records().refreshes.is_empty());

    host.notify_from("files", "notifications/tools/list_changed");
    sleep(ms(1)).await;
    assert_eq!(host.records().refreshes, ["files"]);
    assert_eq!(names(&manager.tools().unwrap()), ["mcp_files_b"]);

    host.edit("files", |s| s.pages = vec![(None, Reply::err("busy"))]);
    host.notify_from("files", "notifications/tools/list_changed");
    sleep(ms(1)).await;
    assert_eq!(
      host.logs(),
      [log(
        Level::Warn,
        "Failed to refresh tools of MCP server \"files\": busy",
        "files",
        Some("busy")
      )]
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m10_notifications_are_not_watched_unless_asked_for() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").tools(&["a"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    host.edit("files", |s| *s = s.clone().tools(&["b"]));
    host.notify_from("files", "notifications/tools/list_changed");
    sleep(ms(1)).await;
    assert!(host.records().refreshes.is_empty());
    assert_eq!(names(&manager.tools().unwrap()), ["mcp_files_a"]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m4_a_failed_cache_write_is_a_warning() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[]);
    host.fail_cache_writes("disk full");
    let manager = host.manager();
    let report = connect(&manager, vec![stdio("files")]).await;
    assert_eq!(report.connected, ["files"]);
    sleep(ms(1)).await;
    assert_eq!(
      host.logs(),
      [log(
        Level::Warn,
        "Failed to cache tools of MCP server \"files\": disk full",
        "files",
        Some("disk full")
      )]
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m5_w1_a_deferred_tool_waits_for_the_connection_then_calls_it() {
  local(async {
    let host = FakeHost::new();
    host.cache(&[("slow", tool_definitions(&["echo"]))]);
    host.script("slow", Script::new("slow").tools(&["echo"]).slow(1000));
    let manager = host.manager();
    let source = v(json!({ "level": "project" }));
    let mut entry = stdio("slow");
    entry.source = Some(source.clone());
    let start = Instant::now();
    let report = connect(&manager, vec![entry]).await;
    let tool = &report.tools.items()[0];
    assert_eq!(tool.get("label").text().as_deref(), Some("slow/echo"));
    assert_eq!(tool.get("mcpToolName").text().as_deref(), Some("echo"));
    assert_eq!(
      tool.get("description").text().as_deref(),
      Some("MCP tool from slow")
    );
    assert_eq!(
      tool.get("parameters").to_json(),
      json!({ "type": "object", "properties": {} })
    );
    // M4: the deferred tools get the recorded source.
    let deferred = host.records().deferred.clone();
    assert!(deferred[0].1.as_ref().unwrap().same(&source));

    let result = run_tool(&host, "slow", "echo", None).await.unwrap();

    assert_eq!(start.elapsed(), ms(1000));
    assert_eq!(result.to_json(), json!({ "content": [] }));
    let records = host.records();
    let call = records.sent.iter().find(|s| s.method == "tools/call");
    let call = call.unwrap();
    assert_eq!(
      call.params,
      json!({ "name": "echo", "arguments": { "x": 1 } })
    );
    assert_eq!(call.transport, host.latest_transport("slow").id);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m3_prepare_entries_resolves_env_for_stdio_and_headers_for_http() {
  local(async {
    let host = FakeHost::new();
    host.environment(&[("TOKEN_VAR", "from-env"), ("EMPTY_VAR", "")]);
    let stdio = json!({
      "command": "x",
      "env": { "A": "TOKEN_VAR", "B": "literal", "C": 5, "D": "EMPTY_VAR" },
      "headers": { "IGNORED": "y" },
    });
    // Only strings are resolved; an empty variable falls back to the literal.
    assert_eq!(
      prepare_entries(&host, &stdio).await,
      Prepared {
        field: "env",
        updates: pairs(&[
          ("A", Some("from-env")),
          ("B", Some("literal")),
          ("D", Some("EMPTY_VAR")),
        ]),
      }
    );
    let http = json!({
      "type": "http",
      "url": "https://x",
      "headers": { "X-Key": "TOKEN_VAR" },
      "env": { "IGNORED": "y" },
    });
    assert_eq!(
      prepare_entries(&host, &http).await,
      Prepared {
        field: "headers",
        updates: pairs(&[("X-Key", Some("from-env"))]),
      }
    );
    let sse = json!({ "type": "sse", "url": "https://x" });
    assert_eq!(
      prepare_entries(&host, &sse).await,
      Prepared {
        field: "headers",
        updates: Vec::new(),
      }
    );
    let typed = json!({ "type": "stdio", "command": "x", "env": { "K": "v" } });
    assert_eq!(prepare_entries(&host, &typed).await.field, "env");
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m3_w6_an_oauth_credential_is_injected_only_when_usable() {
  local(async {
    let host = FakeHost::new();
    let oauth = |mut config: Json, id: &str| {
      config["auth"] = json!({ "type": "oauth", "credentialId": id });
      config
    };
    let stdio = json!({ "command": "x", "env": { "A": "a" } });
    let http = json!({
      "type": "http",
      "url": "u",
      "headers": { "Authorization": "old", "X": "x" },
    });

    // No auth storage: nothing to inject.
    let prepared = prepare_entries(&host, &oauth(stdio.clone(), "good")).await;
    assert_eq!(prepared.updates, pairs(&[("A", Some("a"))]));

    host.credentials(&[
      ("good", json!({ "type": "oauth", "access": "tok" })),
      ("empty", json!({ "type": "oauth", "access": "" })),
      ("apikey", json!({ "type": "apikey", "access": "tok" })),
    ]);
    let prepared = prepare_entries(&host, &oauth(stdio.clone(), "good")).await;
    assert_eq!(
      prepared.updates,
      pairs(&[("A", Some("a")), ("OAUTH_ACCESS_TOKEN", Some("tok"))])
    );
    // An existing entry is replaced where it stands.
    let prepared = prepare_entries(&host, &oauth(http.clone(), "good")).await;
    assert_eq!(
      prepared.updates,
      pairs(&[("Authorization", Some("Bearer tok")), ("X", Some("x"))])
    );
    for id in ["empty", "apikey", "unknown", ""] {
      let prepared = prepare_entries(&host, &oauth(stdio.clone(), id)).await;
      assert_eq!(prepared.updates.len(), 1, "credential {id:?}");
    }
    let mut not_oauth = stdio.clone();
    not_oauth["auth"] = json!({ "type": "basic", "credentialId": "good" });
    assert_eq!(prepare_entries(&host, &not_oauth).await.updates.len(), 1);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m3_w6_the_callers_resolver_replaces_the_builtin_and_empty_results_drop_entries() {
  local(async {
    let host = FakeHost::new();
    host.credentials(&[("c", json!({ "type": "oauth", "access": "tok" }))]);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let heard = seen.clone();
    host.resolver(Rc::new(move |value| {
      heard.borrow_mut().push(value.to_string());
      match value {
        "secret" => Ok(V::Str("s3cr3t".into())),
        "gone" => Ok(V::Undefined),
        "blank" => Ok(V::Str("".into())),
        "number" => Ok(V::Number(4.0)),
        "fails" => Err(error("resolver failed")),
        other => Ok(V::Str(format!("<{other}>").as_str().into())),
      }
    }));
    let config = json!({
      "type": "http",
      "url": "u",
      "headers": {
        "A": "secret", "B": "gone", "C": "blank", "D": "number", "E": "fails",
      },
      "auth": { "type": "oauth", "credentialId": "c" },
    });
    let prepared = prepare_entries(&host, &config).await;
    assert_eq!(
      prepared.updates,
      pairs(&[
        ("A", Some("s3cr3t")),
        ("B", None),
        ("C", None),
        ("D", None),
        ("E", None),
        ("Authorization", Some("<Bearer tok>")),
      ])
    );
    // W6: the injected header goes through the resolver like every other value.
    assert_eq!(
      *seen.borrow(),
      ["secret", "gone", "blank", "number", "fails", "Bearer tok"]
    );

    // Through prepareConfig: a copy without the dropped entries; the caller's untouched.
    let original = v(json!({ "command": "x", "env": { "KEEP": "secret", "DROP": "blank" } }));
    let copy = host.prepare_config(&original).await.unwrap();
    assert_eq!(
      copy.to_json(),
      json!({ "command": "x", "env": { "KEEP": "s3cr3t" } })
    );
    assert_eq!(
      original.to_json(),
      json!({ "command": "x", "env": { "KEEP": "secret", "DROP": "blank" } })
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m9_w4_discover_uses_the_loader_and_copies_exa_keys() {
  local(async {
    let host = FakeHost::new();
    host.load_configs_with(json!({
      "configs": { "files": { "command": "files" }, "broken": { "type": "http" } },
      "sources": { "files": { "provider": "agent", "level": "user" } },
      "exaApiKeys": ["k1", "k2"],
    }));
    let manager = host.manager();
    let cwd = manager.cwd().to_string();
    let result = discover_and_connect(host.clone(), cwd, v(json!({})))
      .await
      .unwrap();
    assert_eq!(result.get("exaApiKeys").to_json(), json!(["k1", "k2"]));
    assert_eq!(result.get("connectedServers").to_json(), json!(["files"]));
    assert_eq!(
      result.get("errors").to_json(),
      json!({ "broken": "Server \"broken\": http server requires \"url\" field" })
    );
    // W1: through the host's connectServers, with its onConnecting.
    assert_eq!(host.records().connecting, [["files"]]);
    let source = manager.source("files").unwrap();
    assert_eq!(
      source.to_json(),
      json!({ "provider": "agent", "level": "user" })
    );
    let connection = manager.connection("files").unwrap();
    assert!(connection.get("_source").same(&source));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m9_discover_reads_the_project_file_and_skips_disabled_servers() {
  local(async {
    let dir = TempDir::new("discover");
    let host = FakeHost::new();
    let cwd = dir.0.to_string_lossy().into_owned();
    let manager = host.manager_in(&cwd);
    let empty = discover_and_connect(host.clone(), cwd.clone(), v(json!({})))
      .await
      .unwrap();
    assert_eq!(empty.get("connectedServers").to_json(), json!([]));
    assert_eq!(empty.get("exaApiKeys").to_json(), json!([]));

    let file = json!({
      "mcpServers": {
        "files": { "command": "files" },
        "off": { "command": "off", "enabled": false },
        "listed": { "command": "listed" },
      },
      "disabledServers": ["listed"],
    });
    std::fs::write(dir.0.join(".mcp.json"), file.to_string()).unwrap();
    let result = discover_and_connect(host.clone(), cwd.clone(), v(json!({})))
      .await
      .unwrap();
    assert_eq!(result.get("connectedServers").to_json(), json!(["files"]));
    assert_eq!(manager.all_server_names(), ["files"]);
    let source = manager.source("files").unwrap().to_json();
    assert_eq!(source["provider"], "mcp-json");
    assert_eq!(source["level"], "project");

    std::fs::write(dir.0.join(".mcp.json"), "{ not json").unwrap();
    let failure = discover_and_connect(host.clone(), cwd, v(json!({})))
      .await
      .unwrap_err();
    assert!(failure.message().contains(".mcp.json"), "{failure:?}");
  })
  .await;
}

/// A hook that writes down every status event as text.
fn status_log() -> (super::StatusHook, Rc<RefCell<Vec<String>>>) {
  let log = Rc::new(RefCell::new(Vec::new()));
  let keep = log.clone();
  let hook: super::StatusHook = Rc::new(move |status| {
    keep.borrow_mut().push(match status {
      super::Status::Connecting(names) => format!("connecting {}", names.join(",")),
      super::Status::Connected(name) => format!("connected {name}"),
      super::Status::Reconnecting(name) => format!("reconnecting {name}"),
      super::Status::Failed { server, error, .. } => format!("failed {server}: {error}"),
    });
  });
  (hook, log)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a31_a32_v18_events_come_in_order_and_an_uncached_slow_server_is_not_waited_for() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.cache(&[]);
    host.script("zeta", Script::new("zeta").tools(&["read"]).slow(10));
    host.script("alpha", Script::new("alpha").tools(&["write"]).slow(1000));
    let manager = host.manager();
    connect(&manager, vec![stdio("done")]).await;
    let (hook, log) = status_log();
    let start = Instant::now();
    let report = manager
      .connect_servers(
        vec![
          stdio("done"),
          stdio("zeta"),
          entry_of("bad", v(json!({}))),
          stdio("alpha"),
        ],
        hook,
      )
      .await
      .unwrap();
    // A32: the window (250 ms), not the slow server's second.
    assert_eq!(start.elapsed(), ms(250));
    assert_eq!(
      *log.borrow(),
      [
        "connecting zeta,bad,alpha",
        "failed bad: Server \"bad\": stdio server requires \"command\" field",
        "connected zeta",
      ]
    );
    assert_eq!(report.connected, ["done", "zeta"]);
    assert_eq!(report.errors.len(), 1);
    // A33: every tool of the manager, sorted, in v18's spelling.
    assert_eq!(names(&report.tools), ["mcp__zeta_read"]);
    sleep(ms(1000)).await;
    assert_eq!(
      log.borrow().last().map(String::as_str),
      Some("connected alpha")
    );
    assert_eq!(
      names(&manager.tools().unwrap()),
      ["mcp__alpha_write", "mcp__zeta_read"]
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a32_v18_a_connect_outlived_by_a_disconnect_fails_with_its_own_message() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("slow", Script::new("slow").tools(&["read"]).slow(100));
    let manager = host.manager();
    let (hook, log) = status_log();
    let connecting = {
      let manager = manager.clone();
      spawn_local(async move {
        manager
          .connect_servers(vec![stdio("slow")], hook)
          .await
          .unwrap()
      })
    };
    sleep(ms(10)).await;
    manager.disconnect_all().await;
    let report = connecting.await.unwrap();
    assert_eq!(
      report.errors,
      [(
        "slow".to_string(),
        "Server \"slow\" was disconnected during initial connection".to_string()
      )]
    );
    assert_eq!(
      log.borrow().last().map(String::as_str),
      Some("failed slow: Server \"slow\" was disconnected during initial connection")
    );
    assert_eq!(manager.server_config("slow").map(|c| c.to_json()), None);
  })
  .await;
}

/// Every connect after the first is refused (`attempt <n> refused`); when each was tried.
fn only_the_first_connect_succeeds(host: &FakeHost) -> Rc<RefCell<Vec<Instant>>> {
  let attempts: Rc<RefCell<Vec<Instant>>> = Rc::default();
  let counted = attempts.clone();
  host.custom_connect(Rc::new(move |host, name, config| {
    counted.borrow_mut().push(Instant::now());
    match counted.borrow().len() {
      1 => core_connect(host, name, config),
      n => {
        let failure = error(&format!("attempt {n} refused"));
        Box::pin(async move { Err(failure) })
      }
    }
  }));
  attempts
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a34_v18_a_lost_server_is_retried_on_the_ladder_then_keeps_its_tools() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("files", Script::new("files").tools(&["read"]));
    let attempts = only_the_first_connect_succeeds(&host);
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    let old = manager.connection("files").unwrap();
    let lost = Instant::now();
    host.kill("files");
    assert_eq!(manager.status("files"), "connecting");
    assert!(
      manager.connection("files").is_none(),
      "the old connection is let go"
    );
    assert_eq!(names(&manager.tools().unwrap()), ["mcp__files_read"]);

    sleep(ms(10_000)).await;

    let offsets: Vec<u128> = attempts.borrow()[1..]
      .iter()
      .map(|at| at.duration_since(lost).as_millis())
      .collect();
    assert_eq!(offsets, [0, 500, 1500, 3500, 7500]);
    assert_eq!(manager.status("files"), "disconnected");
    assert_eq!(names(&manager.tools().unwrap()), ["mcp__files_read"]);
    assert_eq!(
      host.logs().last(),
      Some(&log(
        Level::Error,
        "MCP server \"files\" could not be reconnected: attempt 6 refused",
        "files",
        Some("attempt 6 refused")
      ))
    );
    assert_eq!(
      missing(&manager, "files"),
      "MCP server not connected: files"
    );
    assert!(!old.same(&V::Undefined));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a37_literal_policies_keep_values_as_data() {
  local(async {
    let host = FakeHost::new();
    host.environment(&[("TOKEN_VAR", "from-env")]);
    let literal = json!({ "command": "x", "env": { "A": "TOKEN_VAR", "B": "" }, "envPolicy": "literal" });
    assert_eq!(prepare_entries(&host, &literal).await.updates, Vec::new());
    let keys = json!({
      "command": "x",
      "env": { "A": "TOKEN_VAR", "B": "TOKEN_VAR" },
      "envLiteralKeys": ["A"],
    });
    assert_eq!(
      prepare_entries(&host, &keys).await.updates,
      pairs(&[("B", Some("from-env"))])
    );
    let locked = json!({
      "type": "http",
      "url": "u",
      "headers": { "X": "TOKEN_VAR" },
      "headerPolicy": "origin-locked",
    });
    assert_eq!(prepare_entries(&host, &locked).await.updates, Vec::new());
    // The policy of the other transport kind does not apply.
    let mixed = json!({ "type": "http", "url": "u", "headers": { "X": "TOKEN_VAR" }, "envPolicy": "literal" });
    assert_eq!(
      prepare_entries(&host, &mixed).await.updates,
      pairs(&[("X", Some("from-env"))])
    );
  })
  .await;
}

/// A listener that writes down the `i` of every `notifications/custom` it hears.
fn recording_listener() -> (V, Rc<RefCell<Vec<i64>>>) {
  let heard = Rc::new(RefCell::new(Vec::new()));
  let keep = heard.clone();
  let listener = V::Callable(Rc::new(move |args: Vec<V>| {
    let i = args.get(2).map(V::to_json).and_then(|p| p["i"].as_i64());
    if let Some(i) = i {
      keep.borrow_mut().push(i);
    }
    Box::pin(std::future::ready(Ok(V::Undefined)))
  }));
  (listener, heard)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a35_early_notifications_wait_for_the_first_listener_and_listeners_are_isolated() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("s", Script::new("s").tools(&["read"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("s")]).await;
    for i in 0..105 {
      host.notify_with("s", "notifications/custom", v(json!({ "i": i })));
    }
    let (first, heard_first) = recording_listener();
    let remove = manager.add_notification_listener(first).unwrap();
    // The buffer keeps the last 100, oldest dropped, and drains them in order.
    assert_eq!(*heard_first.borrow(), (5..105).collect::<Vec<_>>());
    let throwing = V::Callable(Rc::new(|_| {
      Box::pin(std::future::ready(Err(error("boom"))))
    }));
    manager.add_notification_listener(throwing).unwrap();
    let (second, heard_second) = recording_listener();
    manager.add_notification_listener(second).unwrap();
    // Only the first listener drains the buffer.
    assert!(heard_second.borrow().is_empty());
    host.notify_with("s", "notifications/custom", v(json!({ "i": 200 })));
    sleep(ms(1)).await;
    assert_eq!(heard_first.borrow().last(), Some(&200));
    assert_eq!(*heard_second.borrow(), [200]);
    let failure = host
      .logs()
      .into_iter()
      .find(|l| l.error.as_deref() == Some("boom"));
    assert!(failure.is_some_and(|l| l.server == "s"));
    assert!(crate::host::Callbacks::call(&host, &remove, vec![])
      .await
      .is_ok());
    host.notify_with("s", "notifications/custom", v(json!({ "i": 201 })));
    sleep(ms(1)).await;
    assert_eq!(heard_first.borrow().last(), Some(&200));
    assert_eq!(*heard_second.borrow(), [200, 201]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a31_v18_a_server_listing_its_tools_is_connected_and_a_disconnect_closes_it() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("s", Script::new("s").tools(&["read"]).slow_tools(1000));
    let manager = host.manager();
    let report = connect(&manager, vec![stdio("s")]).await;
    // A32: not in the report, whose servers are the ones with tools.
    assert!(report.connected.is_empty());
    // The agent at v18 counts the connection as soon as connectToServer resolved.
    assert_eq!(manager.status("s"), "connected");
    assert!(manager.connection("s").is_some());
    assert_eq!(manager.connected_servers(), ["s"]);
    // W5: disconnectAll closes it now, not when its listing ends.
    manager.disconnect_all().await;
    assert!(host.latest_transport("s").is_closed());
    assert_eq!(manager.status("s"), "disconnected");
  })
  .await;
}

/// C1/A36: what our own connect is given: the abort signal, the manager's client options,
/// a v18 manager's cwd as roots, `compat: "v12"` for a v12 manager.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a36_our_connect_gets_the_signal_roots_or_compat() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").tools(&["read"]));
    connect(&host.manager(), vec![stdio("files")]).await;
    let v12 = host.records().connect_options[0].clone();
    assert_eq!(v12["compat"], "v12");
    assert!(
      v12.get("signal").is_some() && v12.get("roots").is_none(),
      "{v12}"
    );

    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("files", Script::new("files").tools(&["read"]));
    connect(&host.manager_in("/work/project"), vec![stdio("files")]).await;
    let v18 = host.records().connect_options[0].clone();
    assert!(v18.get("compat").is_none(), "{v18}");
    assert_eq!(v18["roots"][0]["uri"], "file:///work/project");
  })
  .await;
}

/// A37/A34: `prepareConfig`'s and `reconnectServer`'s options, as the agent reads them.
#[test]
fn a37_a34_options_as_the_agent_reads_them() {
  let host = FakeHost::new();
  let prepare = |options: Json| super::PrepareOptions::read(&host, Some(&v(options)));
  assert!(prepare(json!({})).oauth);
  assert!(prepare(json!({ "oauth": 0 })).oauth, "only false skips");
  assert!(!prepare(json!({ "oauth": false })).oauth);
  assert!(prepare(json!({ "forceRefresh": 1 })).force_refresh);
  assert!(!super::PrepareOptions::read(&host, None).force_refresh);

  let (manual, challenge) = super::reconnect_options(
    &host,
    Some(&v(json!({ "manual": "yes", "authChallenge": null }))),
  );
  assert!(manual && challenge.is_none());
  let (manual, challenge) = super::reconnect_options(
    &host,
    Some(&v(json!({ "authChallenge": { "scope": "x" } }))),
  );
  assert!(!manual && challenge.is_some());
}

/// M5/A33: a caller's `toolFactory` builds the live tools (its answer as an array, anything
/// else as none) and the deferred ones, whose `getConnection` waits for the connection.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m5_a33_the_tool_factory_builds_live_and_deferred_tools() {
  local(async {
    let host = FakeHost::new();
    let calls = Rc::new(RefCell::new(Vec::new()));
    let (live_calls, deferred_calls) = (calls.clone(), calls.clone());
    let factory = v(json!({}));
    factory.set(
      "live",
      V::Callable(Rc::new(move |args: Vec<V>| {
        live_calls
          .borrow_mut()
          .push(format!("live {} args", args.len()));
        Box::pin(std::future::ready(Ok(v(json!([{ "name": "custom" }])))))
      })),
    );
    factory.set(
      "deferred",
      V::Callable(Rc::new(move |args: Vec<V>| {
        let callable = matches!(args.get(2), Some(V::Callable(_)));
        deferred_calls.borrow_mut().push(format!(
          "deferred {} getConnection {callable}",
          args[0].text().unwrap_or_default()
        ));
        Box::pin(std::future::ready(Ok(V::Str("not an array".into()))))
      })),
    );
    host.set_option("toolFactory", factory);
    host.script("files", Script::new("files").tools(&["read"]));
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    let tools = manager.tools().unwrap();
    let names: Vec<String> = tools
      .items()
      .iter()
      .filter_map(|t| t.get("name").text())
      .collect();
    assert_eq!(names, ["custom"]);
    let connection = manager.connection("files").expect("connected");
    let definitions = v(json!([{ "name": "read" }]));
    let deferred = super::tools::deferred(&host, "files", &definitions, None, None).unwrap();
    assert_eq!(
      deferred.items().len(),
      0,
      "anything but an array is no tools"
    );
    let live = super::tools::live(&host, "files", &connection, &definitions, None).unwrap();
    assert_eq!(live.items().len(), 1);
    assert_eq!(
      *calls.borrow(),
      [
        "live 2 args",
        "deferred files getConnection true",
        "live 2 args"
      ]
    );
  })
  .await;
}

/// M1: `connectServers`' entries: config order, sources from a Map-like `get` or a plain
/// object, and the configs argument checked; A31: the callback hears the status events.
#[test]
fn m1_entries_from_configs_and_sources_and_the_status_hook() {
  let host = FakeHost::new();
  let configs = v(json!({ "b": { "command": "b" }, "a": { "command": "a" } }));
  let plain = v(json!({ "a": { "path": "/a.json" } }));
  let read = super::entries(&host, &configs, &plain).unwrap();
  let summary: Vec<(String, Json)> = read
    .iter()
    .map(|e| {
      (
        e.name.clone(),
        e.source.as_ref().map_or(Json::Null, V::to_json),
      )
    })
    .collect();
  assert_eq!(
    summary,
    [
      ("b".to_string(), Json::Null),
      ("a".to_string(), json!({ "path": "/a.json" }))
    ]
  );
  let map = v(json!({}));
  map.set(
    "get",
    V::Callable(Rc::new(|args: Vec<V>| {
      let found = v(json!({ "from": args[0].text().unwrap_or_default() }));
      Box::pin(std::future::ready(Ok(found)))
    })),
  );
  let read = super::entries(&host, &configs, &map).unwrap();
  assert_eq!(
    read[1].source.as_ref().map(V::to_json),
    Some(json!({ "from": "a" }))
  );
  let refused = super::entries(&host, &v(json!([])), &V::Undefined).err();
  assert_eq!(
    refused
      .map(|e| crate::host::Values::message(&host, &e))
      .as_deref(),
    Some("The \"configs\" argument must be an object")
  );

  let heard = Rc::new(RefCell::new(Vec::new()));
  let seen = heard.clone();
  let callback = V::Callable(Rc::new(move |args: Vec<V>| {
    seen.borrow_mut().push(args[0].to_json());
    Box::pin(std::future::ready(Ok(V::Undefined)))
  }));
  let hook = super::status_hook(&host, Some(callback), false);
  hook(super::Status::Connecting(&[
    "a".to_string(),
    "b".to_string(),
  ]));
  assert_eq!(*heard.borrow(), [json!(["a", "b"])]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a64_a_v18_manager_hears_what_a_server_sends_while_its_tools_are_listing() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("s", Script::new("s").tools(&["read"]).slow_tools(100));
    let manager = host.manager();
    let (listener, heard) = recording_listener();
    manager.add_notification_listener(listener).unwrap();
    let connecting = connect_in_background(&manager, vec![stdio("s")]);
    sleep(ms(50)).await;
    // `initialize` was answered, `tools/list` was not: the server speaks first.
    host.notify_with("s", "notifications/custom", v(json!({ "i": 1 })));
    connecting.await.unwrap();
    host.notify_with("s", "notifications/custom", v(json!({ "i": 2 })));
    sleep(ms(1)).await;
    // Each heard once: the listener set before `initialize` is not chained a second time.
    assert_eq!(*heard.borrow(), [1, 2]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a58_wait_for_startup_says_who_connected_who_is_pending_and_who_failed_and_why() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("fast", Script::new("fast").tools(&["a"]));
    host.script("slow", Script::new("slow").tools(&["b"]).slow(5_000));
    host.script(
      "refused",
      Script::new("refused").initialize(Reply::err("refused on purpose")),
    );
    let manager = host.manager();
    let entries = vec![
      stdio("fast"),
      stdio("slow"),
      stdio("refused"),
      entry_of("nourl", v(json!({ "type": "http" }))),
    ];
    let connecting = connect_in_background(&manager, entries);
    sleep(ms(1)).await;
    let started = Instant::now();
    let status = manager.wait_for_startup(Some(ms(1_000))).await;
    assert_eq!(started.elapsed(), ms(1_000));
    assert_eq!(status.connected, ["fast"]);
    assert_eq!(status.pending, ["slow"]);
    let failed: Vec<&str> = status.failed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(failed, ["refused", "nourl"]);
    assert!(
      status.failed[0].1.contains("refused on purpose"),
      "{:?}",
      status.failed
    );
    // No limit: it waits for the slow one.
    let status = manager.wait_for_startup(None).await;
    assert_eq!(status.connected, ["fast", "slow"]);
    assert!(status.pending.is_empty());
    connecting.await.unwrap();
    // A disconnected server is no startup server any more.
    manager.disconnect_server("refused").await.unwrap();
    let status = manager.wait_for_startup(Some(ms(10))).await;
    assert_eq!(status.failed.len(), 1);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a58_wait_for_pending_connections_resolves_when_nothing_is_connecting() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("slow", Script::new("slow").tools(&["b"]).slow(2_000));
    let manager = host.manager();
    let started = Instant::now();
    manager.wait_for_pending_connections().await;
    assert_eq!(started.elapsed(), ms(0));
    let connecting = connect_in_background(&manager, vec![stdio("slow")]);
    sleep(ms(1)).await;
    manager.wait_for_pending_connections().await;
    assert_eq!(started.elapsed(), ms(2_000));
    assert_eq!(manager.status("slow"), "connected");
    connecting.await.unwrap();
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a57_a_startup_connect_that_times_out_is_retried_through_reconnect_server() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.script("s", Script::new("s").tools(&["read"]).slow(5_000));
    let manager = host.manager();
    let (hook, log) = status_log();
    let config = v(json!({ "command": "s", "timeout": 1000 }));
    let connecting = {
      let manager = manager.clone();
      spawn_local(async move {
        manager
          .connect_servers(vec![entry_of("s", config)], hook)
          .await
      })
    };
    sleep(ms(1_100)).await;
    // The server answers now: the retry connects it.
    host.script("s", Script::new("s").tools(&["read"]));
    sleep(ms(10_000)).await;
    assert_eq!(
      *log.borrow(),
      [
        "connecting s",
        "failed s: Connection to MCP server \"s\" timed out after 1000ms",
        "reconnecting s",
        "connected s",
      ]
    );
    assert_eq!(manager.status("s"), "connected");
    assert!(connecting.await.unwrap().is_ok());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a55_the_reconnect_policy_s_ladder_sets_the_waits_between_attempts() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.settings_mut().ladder = Some(vec![ms(100), ms(300)]);
    host.script("files", Script::new("files").tools(&["read"]));
    let attempts = only_the_first_connect_succeeds(&host);
    let manager = host.manager();
    connect(&manager, vec![stdio("files")]).await;
    let lost = Instant::now();
    host.kill("files");
    sleep(ms(10_000)).await;
    let offsets: Vec<u128> = attempts.borrow()[1..]
      .iter()
      .map(|at| at.duration_since(lost).as_millis())
      .collect();
    assert_eq!(offsets, [0, 100, 400]);
    assert_eq!(manager.status("files"), "disconnected");
  })
  .await;
}

/// Connects whose outcome `succeeds(attempt)` decides (attempts count from 1).
fn connects_when(host: &FakeHost, succeeds: fn(usize) -> bool) -> Rc<RefCell<Vec<Instant>>> {
  let attempts: Rc<RefCell<Vec<Instant>>> = Rc::default();
  let counted = attempts.clone();
  host.custom_connect(Rc::new(move |host, name, config| {
    counted.borrow_mut().push(Instant::now());
    let n = counted.borrow().len();
    if succeeds(n) {
      return core_connect(host, name, config);
    }
    let failure = error(&format!("attempt {n} refused"));
    Box::pin(async move { Err(failure) })
  }));
  attempts
}

fn remote(name: &str) -> Entry<V> {
  // The fake host keys a server by its URL: the name itself here.
  entry_of(name, v(json!({ "type": "http", "url": name })))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a56_a_lost_remote_server_is_retried_quietly_doubling_to_the_ceiling_until_it_answers() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.settings_mut().ladder = Some(vec![ms(100)]);
    host.settings_mut().retry_max = ms(40_000);
    host.script("remote", Script::new("remote").tools(&["read"]));
    let attempts = connects_when(&host, |n| n == 1 || n == 6);
    let manager = host.manager();
    connect(&manager, vec![remote("remote")]).await;
    let lost = Instant::now();
    host.kill("remote");
    sleep(ms(1_000_000)).await;
    let offsets: Vec<u128> = attempts.borrow()[1..]
      .iter()
      .map(|at| at.duration_since(lost).as_millis())
      .collect();
    // The ladder (0, 100), then 15 s, 30 s and 40 s (the ceiling) after each failure.
    assert_eq!(offsets, [0, 100, 15_100, 45_100, 85_100]);
    assert_eq!(manager.status("remote"), "connected");
    let errors: Vec<_> = host
      .logs()
      .into_iter()
      .filter(|l| l.level == Level::Error)
      .collect();
    assert_eq!(
      errors.len(),
      1,
      "only the ladder's failure is an error: {errors:?}"
    );
    let quiet = host
      .logs()
      .into_iter()
      .filter(|l| l.message.contains("scheduled reconnect failed"))
      .count();
    assert_eq!(quiet, 2);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a56_stdio_stops_at_the_ladder_and_a_disconnect_ends_the_schedule() {
  local(async {
    let host = FakeHost::new();
    host.settings_mut().compat = super::host::Compat::V18;
    host.settings_mut().ladder = Some(vec![ms(100)]);
    host.script("files", Script::new("files").tools(&["read"]));
    host.script("remote", Script::new("remote").tools(&["read"]));
    let attempts = connects_when(&host, |n| n <= 2);
    let manager = host.manager();
    connect(&manager, vec![stdio("files"), remote("remote")]).await;
    host.kill("files");
    host.kill("remote");
    sleep(ms(1_000)).await;
    assert_eq!(attempts.borrow().len(), 6, "two ladders of two attempts");
    sleep(ms(100_000)).await;
    assert_eq!(
      attempts.borrow().len(),
      8,
      "the remote one is tried at 15 s and 45 s"
    );
    manager.disconnect_server("remote").await.unwrap();
    sleep(ms(1_000_000)).await;
    assert_eq!(attempts.borrow().len(), 8);
  })
  .await;
}
