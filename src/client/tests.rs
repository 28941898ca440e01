//! C1–C3, C5 over the fake host: what the handshake builds and sends, which error wins when
//! the connect gives up, that no transport outlives a failed connect, and how listings page.
use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Value as Json};
use tokio::time::Instant;

use super::*;
use crate::fake_host::{error, local, ms, signal, v, FakeHost, Reply, Script, V};
use crate::host::{Transports, Values};

fn request(config: V) -> ConnectRequest<V> {
  ConnectRequest {
    name: "files".into(),
    timeout: Some(ms(30000)),
    config,
    client: ClientOptions::default(),
    features: Default::default(),
    signal: None,
    legacy_sse: false,
  }
}

fn files_config() -> V {
  v(json!({ "command": "files" }))
}

fn closed_ids(host: &FakeHost) -> Vec<u64> {
  host.records().closed.clone()
}

fn params_of(host: &FakeHost, method: &str) -> Vec<Json> {
  let records = host.records();
  let sent = records.sent.iter().filter(|s| s.method == method);
  sent.map(|s| s.params.clone()).collect()
}

/// A connection over a fresh transport of the script `key`, as `connect` would build it.
async fn connection(host: &FakeHost, key: &str, capabilities: Json) -> V {
  let transport = host
    .create_transport(&v(json!({ "command": key })))
    .await
    .unwrap();
  let connection = v(json!({ "name": key, "capabilities": capabilities }));
  connection.set("transport", transport);
  connection
}

fn page(tools: &[&str], next: Json) -> Reply {
  let tools: Vec<Json> = tools.iter().map(|t| json!({ "name": t })).collect();
  Reply::ok(json!({ "tools": tools, "nextCursor": next }))
}

fn names(tools: &V) -> Vec<String> {
  tools
    .items()
    .iter()
    .map(|t| t.get("name").text().unwrap())
    .collect()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_handshake_builds_the_connection_and_sends_initialized() {
  local(async {
    let host = FakeHost::new();
    let result = json!({
      "protocolVersion": "2025-06-18",
      "capabilities": { "tools": { "listChanged": true } },
      "serverInfo": { "name": "files-server", "version": "2.1" },
      "instructions": "Read files carefully",
    });
    host.script(
      "files",
      Script::new("files").initialize(Reply::Ok(20, result)),
    );
    let config = files_config();
    let (_, abort) = signal();
    let mut req = request(config.clone());
    req.signal = Some(abort.clone());

    let connection = connect(host.clone(), req).await.unwrap();

    assert_eq!(
      connection.keys(),
      [
        "name",
        "config",
        "transport",
        "serverInfo",
        "capabilities",
        "protocolVersion",
        "instructions",
        "notifyRootsChanged"
      ]
    );
    assert_eq!(connection.get("name").text().as_deref(), Some("files"));
    // W3: the caller's config object itself, not a copy.
    assert!(connection.get("config").same(&config));
    let transport = host.latest_transport("files");
    assert!(connection
      .get("transport")
      .same(&V::Transport(transport.clone())));
    assert_eq!(
      connection.get("serverInfo").to_json(),
      json!({ "name": "files-server", "version": "2.1" })
    );
    assert_eq!(
      connection.get("capabilities").to_json(),
      json!({ "tools": { "listChanged": true } })
    );
    // Whatever version the server answers is kept.
    assert_eq!(
      connection.get("protocolVersion").text().as_deref(),
      Some("2025-06-18")
    );
    assert_eq!(
      connection.get("instructions").text().as_deref(),
      Some("Read files carefully")
    );

    let expected: Json = serde_json::from_str(&initialize_params(
      &ClientOptions::default(),
      ClientFeatures::<V>::default().capabilities(),
    ))
    .unwrap();
    assert_eq!(params_of(&host, "initialize"), [expected]);
    // T8: the caller's signal goes along with the initialize request.
    assert_eq!(
      host.records().sent[0].options,
      Some(json!({ "signal": "$signal" }))
    );
    assert_eq!(
      host.records().notified,
      [(transport.id, "notifications/initialized".to_string())]
    );
    // The GET listener starts once the server is initialized.
    assert_eq!(host.records().listeners, [transport.id]);
    assert!(closed_ids(&host).is_empty());
    assert!(!transport.is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_capabilities_default_to_an_empty_object_and_instructions_only_when_present() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").initialize(Reply::ok(json!({
        "protocolVersion": "2025-03-26",
        "capabilities": null,
        "instructions": null,
      }))),
    );
    let connection = connect(host.clone(), request(files_config()))
      .await
      .unwrap();
    assert_eq!(connection.get("capabilities").to_json(), json!({}));
    assert!(!connection.has("instructions"));
    assert!(connection.has("serverInfo"));
    assert!(matches!(connection.get("serverInfo"), V::Undefined));

    // A result that is not an object still makes a connection, with nothing in it.
    host.script(
      "odd",
      Script::new("odd").initialize(Reply::ok(json!("yes"))),
    );
    let odd = connect(host.clone(), request(v(json!({ "command": "odd" }))))
      .await
      .unwrap();
    assert_eq!(odd.get("capabilities").to_json(), json!({}));
    assert!(matches!(odd.get("protocolVersion"), V::Undefined));
    assert!(!odd.has("instructions"));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_the_client_option_shapes_the_initialize_request() {
  local(async {
    let host = FakeHost::new();
    let mut req = request(files_config());
    req.client = ClientOptions {
      client_info: Some(json!({ "name": "agent", "version": "7" })),
      protocol_version: Some("2025-06-18".into()),
      capabilities: None,
    };
    connect(host.clone(), req).await.unwrap();
    let params = &params_of(&host, "initialize")[0];
    assert_eq!(
      params["clientInfo"],
      json!({ "name": "agent", "version": "7" })
    );
    assert_eq!(params["protocolVersion"], "2025-06-18");
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_connect_timeout_wins_over_the_request_timeout_and_the_transport_closes_first() {
  local(async {
    let host = FakeHost::new();
    // The request's own timeout expires at the very moment the connect's does; closing
    // takes a while, and the rejection must wait for it.
    host.script(
      "files",
      Script::new("files")
        .initialize(Reply::Err(1000, "Request timeout after 1000ms".into()))
        .close(Reply::Ok(50, Json::Null)),
    );
    let mut req = request(files_config());
    req.timeout = Some(ms(1000));
    let start = Instant::now();

    let failure = connect(host.clone(), req).await.unwrap_err();

    assert_eq!(
      failure.message(),
      "Connection to MCP server \"files\" timed out after 1000ms"
    );
    assert_eq!(start.elapsed(), ms(1050));
    let transport = host.latest_transport("files");
    assert_eq!(closed_ids(&host), [transport.id]);
    assert!(host.records().notified.is_empty());
    assert!(host.records().listeners.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a_silent_server_times_out_at_the_config_timeout() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").initialize(Reply::Never));
    let config = v(json!({ "command": "files", "timeout": 500 }));
    let mut req = request(config);
    req.timeout = Some(ms(500));
    let start = Instant::now();
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert_eq!(
      failure.message(),
      "Connection to MCP server \"files\" timed out after 500ms"
    );
    assert_eq!(start.elapsed(), ms(500));
    assert!(host.latest_transport("files").is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_an_earlier_failure_keeps_its_own_message_and_closes_the_transport() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").initialize(Reply::Err(10, "MCP error -32600: bad request".into())),
    );
    let failure = connect(host.clone(), request(files_config()))
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "MCP error -32600: bad request");
    assert_eq!(closed_ids(&host), [host.latest_transport("files").id]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a_failed_initialized_notification_fails_the_connect_and_closes() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.initialized = Reply::err("EPIPE: broken pipe");
    host.script("files", script);
    let failure = connect(host.clone(), request(files_config()))
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "EPIPE: broken pipe");
    assert!(host.latest_transport("files").is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a_failed_transport_creation_is_the_error_and_nothing_is_closed() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").create(Reply::Err(5, "spawn files ENOENT".into())),
    );
    let failure = connect(host.clone(), request(files_config()))
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "spawn files ENOENT");
    assert!(host.records().transports.is_empty());
    assert!(closed_ids(&host).is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_no_timeout_waits_as_long_as_the_server_takes() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").slow(120_000));
    let mut req = request(files_config());
    req.timeout = None;
    let start = Instant::now();
    connect(host.clone(), req).await.unwrap();
    assert_eq!(start.elapsed(), ms(120_000));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_t8_an_aborted_signal_rejects_with_its_reason_before_anything_is_created() {
  local(async {
    let host = FakeHost::new();
    let (controller, abort) = signal();
    let reason = error("user cancelled");
    controller.abort(reason.clone());
    let mut req = request(files_config());
    req.signal = Some(abort);
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert!(failure.same(&reason));
    assert!(host.records().creates.is_empty());
    assert!(host.records().sent.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_t8_an_abort_during_the_handshake_rejects_at_once_and_closes() {
  local(async {
    let host = FakeHost::new();
    host.script("files", Script::new("files").initialize(Reply::Never));
    let (controller, abort) = signal();
    let reason = error("user cancelled");
    let later = reason.clone();
    tokio::task::spawn_local(async move {
      tokio::time::sleep(ms(100)).await;
      controller.abort(later);
    });
    let mut req = request(files_config());
    req.signal = Some(abort);
    let start = Instant::now();
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert!(failure.same(&reason));
    assert_eq!(start.elapsed(), ms(100));
    assert_eq!(host.methods("files"), ["initialize"]);
    assert!(host.latest_transport("files").is_closed());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_t8_a_transport_that_arrives_after_an_abort_is_closed() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").create(Reply::Ok(500, Json::Null)),
    );
    let (controller, abort) = signal();
    tokio::task::spawn_local(async move {
      tokio::time::sleep(ms(100)).await;
      controller.abort(error("user cancelled"));
    });
    let mut req = request(files_config());
    req.signal = Some(abort);
    let start = Instant::now();
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert_eq!(failure.message(), "user cancelled");
    assert_eq!(start.elapsed(), ms(100));
    assert!(host.records().transports.is_empty());

    tokio::time::sleep(ms(500)).await;
    let transport = host.latest_transport("files");
    assert!(transport.is_closed());
    assert_eq!(closed_ids(&host), [transport.id]);
    assert!(host.records().sent.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a_transport_created_after_the_timeout_is_closed() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").create(Reply::Ok(2000, Json::Null)),
    );
    let mut req = request(files_config());
    req.timeout = Some(ms(1000));
    let start = Instant::now();
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert_eq!(
      failure.message(),
      "Connection to MCP server \"files\" timed out after 1000ms"
    );
    assert_eq!(start.elapsed(), ms(1000));

    tokio::time::sleep(ms(1500)).await;
    let transport = host.latest_transport("files");
    assert!(transport.is_closed());
    assert!(host.records().sent.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c1_a_creation_failure_after_the_deadline_reports_the_timeout() {
  local(async {
    let host = FakeHost::new();
    // Fails at the deadline itself: the timeout's message wins.
    host.script(
      "files",
      Script::new("files").create(Reply::Err(1000, "spawn files EACCES".into())),
    );
    let mut req = request(files_config());
    req.timeout = Some(ms(1000));
    let failure = connect(host.clone(), req).await.unwrap_err();
    assert_eq!(
      failure.message(),
      "Connection to MCP server \"files\" timed out after 1000ms"
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_list_tools_follows_next_cursor_across_pages_and_stores_the_list() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![
      (None, page(&["a"], json!("p2"))),
      (Some("p2".into()), page(&["b", "c"], json!("p3"))),
      (Some("p3".into()), page(&["d"], Json::Null)),
    ];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;

    let tools = list_tools(host.clone(), conn.clone(), None).await.unwrap();

    assert_eq!(names(&tools), ["a", "b", "c", "d"]);
    assert_eq!(
      params_of(&host, "tools/list"),
      [
        json!({}),
        json!({ "cursor": "p2" }),
        json!({ "cursor": "p3" })
      ]
    );
    assert!(conn.get("tools").same(&tools));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_a_page_without_items_adds_nothing_but_its_cursor_is_followed() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![
      (None, Reply::ok(json!({ "nextCursor": "more" }))),
      (
        Some("more".into()),
        Reply::ok(json!({ "tools": "not a list", "nextCursor": "last" })),
      ),
      (Some("last".into()), page(&["z"], Json::Null)),
    ];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(names(&tools), ["z"]);
    assert_eq!(host.methods("files").len(), 3);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_a_page_that_is_not_an_object_ends_the_listing() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![
      (None, page(&["a"], json!("next"))),
      (Some("next".into()), Reply::ok(Json::Null)),
      (Some("never".into()), page(&["b"], Json::Null)),
    ];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(names(&tools), ["a"]);
    assert_eq!(host.methods("files").len(), 2);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_a_null_or_missing_next_cursor_ends_the_listing() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![(None, page(&["a", "b"], Json::Null))];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(names(&tools), ["a", "b"]);
    assert_eq!(params_of(&host, "tools/list"), [json!({})]);

    let mut script = Script::new("other");
    script.pages = vec![(None, Reply::ok(json!({ "tools": [{ "name": "x" }] })))];
    host.script("other", script);
    let conn = connection(&host, "other", json!({ "tools": {} })).await;
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(names(&tools), ["x"]);
    assert_eq!(host.methods("other").len(), 1);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_an_error_mid_way_propagates_and_nothing_is_stored() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![
      (None, page(&["a"], json!("p2"))),
      (
        Some("p2".into()),
        Reply::Err(10, "MCP error -32603: internal".into()),
      ),
    ];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let failure = list_tools(host.clone(), conn.clone(), None)
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "MCP error -32603: internal");
    assert!(!conn.has("tools"));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_tools_already_on_the_connection_are_returned_without_a_request() {
  local(async {
    let host = FakeHost::new();
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let cached = v(json!([{ "name": "kept" }]));
    conn.set("tools", cached.clone());
    let tools = list_tools(host.clone(), conn.clone(), None).await.unwrap();
    assert!(tools.same(&cached));

    // `[]` is truthy in JS: an empty list once listed is not listed again.
    let empty = v(json!([]));
    conn.set("tools", empty.clone());
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert!(tools.same(&empty));
    assert!(host.records().sent.is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_without_the_tools_capability_lists_nothing_and_asks_nothing() {
  local(async {
    let host = FakeHost::new();
    for capabilities in [json!({}), json!({ "resources": {} }), json!("none")] {
      let conn = connection(&host, "files", capabilities).await;
      let tools = list_tools(host.clone(), conn.clone(), None).await.unwrap();
      assert_eq!(tools.to_json(), json!([]));
      assert!(!conn.has("tools"));
    }
    let conn = connection(&host, "files", json!({})).await;
    conn.delete("capabilities");
    let tools = list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(tools.to_json(), json!([]));
    assert!(host.records().sent.is_empty());

    // `tools: null` is not undefined: the server does list.
    let conn = connection(&host, "files", json!({ "tools": null })).await;
    list_tools(host.clone(), conn, None).await.unwrap();
    assert_eq!(host.methods("files"), ["tools/list"]);
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c2_every_page_gets_the_callers_options() {
  local(async {
    let host = FakeHost::new();
    let mut script = Script::new("files");
    script.pages = vec![
      (None, page(&["a"], json!("p2"))),
      (Some("p2".into()), page(&["b"], Json::Null)),
    ];
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    let (_, abort) = signal();
    let options = v(json!({}));
    options.set("signal", abort);
    list_tools(host.clone(), conn, Some(options)).await.unwrap();
    let records = host.records();
    assert_eq!(records.sent.len(), 2);
    assert!(records
      .sent
      .iter()
      .all(|s| s.options == Some(json!({ "signal": "$signal" }))));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c3_call_tool_defaults_arguments_and_returns_the_result_untouched() {
  local(async {
    let host = FakeHost::new();
    let result = json!({
      "content": [{ "type": "text", "text": "hi" }],
      "isError": true,
      "structuredContent": { "n": 1 },
      "_meta": { "trace": "x" },
    });
    let mut script = Script::new("files");
    script.call = Reply::ok(result.clone());
    host.script("files", script);
    let conn = connection(&host, "files", json!({ "tools": {} })).await;

    let answer = call_tool(host.clone(), conn.clone(), v(json!("read")), None, None)
      .await
      .unwrap();
    assert_eq!(answer.to_json(), result);
    call_tool(host.clone(), conn, v(json!("read")), Some(V::Null), None)
      .await
      .unwrap();
    assert_eq!(
      params_of(&host, "tools/call"),
      [
        json!({ "name": "read", "arguments": {} }),
        json!({ "name": "read", "arguments": {} })
      ]
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn c5_e2_a_connection_without_a_transport_object_is_a_type_error() {
  local(async {
    let host = FakeHost::new();
    let failure = list_tools(host.clone(), v(json!("conn")), None)
      .await
      .unwrap_err();
    assert!(failure.is_type_error());
    assert_eq!(
      failure.message(),
      "The \"connection\" argument must be an object"
    );
    let failure = call_tool(
      host.clone(),
      v(json!({ "transport": 3, "capabilities": { "tools": {} } })),
      v(json!("t")),
      None,
      None,
    )
    .await
    .unwrap_err();
    assert!(failure.is_type_error());
    assert_eq!(
      failure.message(),
      "The \"connection.transport\" field must be an MCPTransport"
    );
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn m11_a_closed_transport_fails_fast() {
  local(async {
    let host = FakeHost::new();
    let conn = connection(&host, "files", json!({ "tools": {} })).await;
    host.kill("files");
    let start = Instant::now();
    let failure = call_tool(host.clone(), conn, v(json!("t")), None, None)
      .await
      .unwrap_err();
    assert_eq!(failure.message(), "Transport not connected");
    assert_eq!(start.elapsed(), ms(0));
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn p1_every_handshake_version_the_server_answers_is_kept_on_the_connection() {
  local(async {
    let host = FakeHost::new();
    for version in crate::client::handshake::SUPPORTED_PROTOCOL_VERSIONS {
      host.script(
        "files",
        Script::new("files").initialize(Reply::ok(json!({
          "protocolVersion": version,
          "capabilities": {},
        }))),
      );
      let connection = connect(host.clone(), request(files_config()))
        .await
        .unwrap();
      assert_eq!(
        connection.get("protocolVersion").text().as_deref(),
        Some(version)
      );
    }
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn p1_an_unsupported_version_fails_the_connect_and_closes_the_transport() {
  local(async {
    let host = FakeHost::new();
    host.script(
      "files",
      Script::new("files").initialize(Reply::ok(json!({
        "protocolVersion": "2026-07-28",
        "capabilities": {},
      }))),
    );
    let failure = connect(host.clone(), request(files_config()))
      .await
      .unwrap_err();
    assert_eq!(
      failure.message(),
      "MCP server \"files\" answered unsupported protocol version 2026-07-28"
    );
    assert!(host.latest_transport("files").is_closed());
    // Nothing was confirmed to a server we cannot speak to.
    assert!(params_of(&host, "notifications/initialized").is_empty());
  })
  .await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a6_call_mcp_gives_up_after_60_s_without_a_signal_and_on_the_callers_abort() {
  local(async {
    let host = FakeHost::new();
    let started = Instant::now();
    let never = std::future::pending::<Result<V, V>>();
    let Err(timeout) = super::call_mcp::bounded(&host, None, never).await else {
      panic!("a call that never answers gave up");
    };
    assert_eq!(
      timeout.message(),
      "The operation was aborted due to timeout"
    );
    assert_eq!(started.elapsed(), super::call_mcp::DEADLINE);
    // With a signal there is no deadline: only its abort ends the wait, with its reason.
    let (controller, signal_value) = signal();
    let waiting = super::call_mcp::bounded(
      &host,
      Some(&signal_value),
      std::future::pending::<Result<V, V>>(),
    );
    let aborting = async {
      tokio::time::sleep(ms(120_000)).await;
      controller.abort(error("stop"));
    };
    let (outcome, ()) = futures::join!(waiting, aborting);
    assert_eq!(outcome.err().map(|e| e.message()).as_deref(), Some("stop"));
    let answered = super::call_mcp::bounded(&host, None, async { Ok(v(json!({"ok": 1}))) }).await;
    assert!(answered.is_ok());
  })
  .await;
}

/// A25: v18's connect of an "sse" config: legacy first, Streamable HTTP once when the server
/// answers as one (here: not an event stream), nothing more for any other failure, and
/// straight to HTTP for a config with our own `oauth`.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a25_sse_tries_legacy_then_falls_back_once() {
  local(async {
    let url = "http://127.0.0.1:1/mcp";
    let attempt = |legacy: Reply, config: Json| async move {
      let host = FakeHost::new();
      let mut script = Script::new(url);
      script.legacy_create = legacy;
      host.script(url, script);
      let mut req = request(v(config));
      req.legacy_sse = true;
      let outcome = connect(host.clone(), req).await;
      let creates = host.records().creates.clone();
      (outcome.map_err(|e| host.message(&e)), creates)
    };
    let sse = json!({ "type": "sse", "url": url });

    let (outcome, creates) = attempt(Reply::ok(Json::Null), sse.clone()).await;
    assert!(outcome.is_ok());
    assert_eq!(creates, [format!("legacy:{url}")]);

    let not_sse = Reply::err("Legacy SSE response is not an event stream: application/json");
    let (outcome, creates) = attempt(not_sse, sse.clone()).await;
    assert!(outcome.is_ok());
    assert_eq!(creates, [format!("legacy:{url}"), url.to_string()]);

    let refused = Reply::err("fetch failed");
    let (outcome, creates) = attempt(refused, sse.clone()).await;
    assert_eq!(outcome.err().as_deref(), Some("fetch failed"));
    assert_eq!(creates, [format!("legacy:{url}")]);

    let with_oauth =
      json!({ "type": "sse", "url": url, "oauth": { "grantType": "client_credentials" } });
    let (outcome, creates) = attempt(Reply::err("unused"), with_oauth).await;
    assert!(outcome.is_ok());
    assert_eq!(creates, [url.to_string()]);

    let http = json!({ "type": "http", "url": url });
    let (_, creates) = attempt(Reply::err("unused"), http).await;
    assert_eq!(creates, [url.to_string()]);
  })
  .await;
}

/// J2/E2: callMCP's arguments, checked in the agent's order; W9's log without secrets.
#[test]
fn j2_arguments_are_checked_in_order_and_failures_logged_without_secrets() {
  use super::call_mcp::{log_failure, read_args};
  let host = FakeHost::new();
  let check = |url: V, method: V, params: Option<V>, options: Option<V>| {
    read_args(&host, &url, &method, params.as_ref(), options.as_ref())
      .err()
      .map(|e| host.message(&e))
  };
  let url = || V::Str("http://127.0.0.1:1/mcp".into());
  let method = || V::Str("tools/list".into());
  assert_eq!(
    check(V::Number(1.0), V::Number(1.0), None, None).as_deref(),
    Some("The \"url\" argument must be a string")
  );
  assert_eq!(
    check(V::Str("nope".into()), method(), None, None).as_deref(),
    Some("The \"url\" argument must be a valid URL, got \"nope\"")
  );
  assert_eq!(
    check(url(), V::Null, None, None).as_deref(),
    Some("The \"method\" argument must be a string")
  );
  assert_eq!(
    check(url(), method(), Some(v(json!([1]))), None).as_deref(),
    Some("The \"params\" argument must be an object")
  );
  assert_eq!(
    check(url(), method(), None, Some(V::Str("x".into()))).as_deref(),
    Some("The \"options\" argument must be an object")
  );
  assert_eq!(
    check(url(), method(), None, Some(v(json!({ "signal": {} })))).as_deref(),
    Some("The \"options.signal\" field must be an AbortSignal")
  );
  let (_, abort) = signal();
  let options = v(json!({ "logger": {} }));
  options.set("signal", abort);
  let args = read_args(
    &host,
    &url(),
    &method(),
    Some(&v(json!({ "a": 1 }))),
    Some(&options),
  );
  let Ok(args) = args else {
    panic!("valid arguments")
  };
  assert_eq!(args.params.as_deref(), Some("{\"a\":1}"));
  assert!(args.signal.is_some() && args.logger.is_some());

  let logged = Rc::new(RefCell::new(Vec::new()));
  let seen = logged.clone();
  let logger = v(json!({}));
  logger.set(
    "error",
    V::Callable(Rc::new(move |args: Vec<V>| {
      seen
        .borrow_mut()
        .push((args[0].to_json(), args[1].to_json()));
      Box::pin(std::future::ready(Ok(V::Undefined)))
    })),
  );
  let url = "http://u:pw@127.0.0.1:1/mcp?token=abc";
  log_failure(
    &host,
    &logger,
    "HTTP 500 at http://127.0.0.1/?token=abc",
    url,
    "tools/list",
    "HTTP 500 at http://127.0.0.1/?token=abc",
  );
  let logged = logged.borrow();
  assert_eq!(logged.len(), 1);
  let text = format!("{:?}", logged[0]);
  assert!(!text.contains("abc") && !text.contains("pw"), "{text}");
  assert_eq!(logged[0].1["method"], "tools/list");
}
