//! C1: create the transport, `initialize`, check the answered version (P1), build the
//! connection, `notifications/initialized`; all of it bounded by the connect timeout and the
//! caller's abort signal.
use std::time::Duration;

use futures::future::{select, Either, LocalBoxFuture};
use tokio::time::Instant;

use super::features::{self, ClientFeatures};
use super::handshake::{
  self, connect_timeout_message, initialize_params, unsupported_version_message, ClientOptions,
  SUPPORTED_PROTOCOL_VERSIONS,
};
use std::cell::RefCell;
use std::rc::Rc;

use super::era;
use crate::error::CoreError;
use crate::host::{json_of, Callbacks, Clock, HostFn, Signals, Transports, Values};
use crate::protocol::subscriptions;
use crate::transport::legacy_sse::falls_back_to_streamable_http;

/// One `connectToServer` call.
pub struct ConnectRequest<V> {
  pub name: String,
  /// The caller's config object; the connection keeps it (W3).
  pub config: V,
  pub client: ClientOptions,
  /// P5: the handlers the server's requests go to.
  pub features: ClientFeatures<V>,
  pub signal: Option<V>,
  /// `config.timeout ?? 30000`; `None` when 0.
  pub timeout: Option<Duration>,
  /// A25: `type: "sse"` opens the legacy transport (falling back to Streamable HTTP), as the
  /// v18 agent's `connectToServer` does; otherwise §5/H11's HTTP transport.
  pub legacy_sse: bool,
}

impl<V: Clone> ConnectRequest<V> {
  /// C1/E2: `connectToServer(name, config, options)`'s arguments, checked: the request, or
  /// the TypeError (or a getter's throw) to reject with. A9's resolver, when the host has
  /// one, then replaces `timeout`.
  pub fn read<H: Values<Value = V>>(
    h: &H,
    name: &V,
    config: &V,
    options: Option<&V>,
  ) -> Result<Self, V> {
    let type_error = |message: &str| h.type_error(message);
    let name = h
      .as_string(name)
      .ok_or_else(|| type_error("The \"name\" argument must be a string"))?;
    if !crate::config::is_record(h, config) {
      return Err(type_error("The \"config\" argument must be an object"));
    }
    let config = crate::config::with_oauth_option(h, config, options)?;
    let mut client = ClientOptions::read(h, options).map_err(|m| type_error(&m))?;
    // N1: a server's own `protocolVersion` is more specific than the caller's `client`.
    let own_version = h.field(&config, "protocolVersion").ok();
    if let Some(version) = own_version.and_then(|v| h.as_string(&v)) {
      client.protocol_version = Some(version);
    }
    let features = ClientFeatures::read(h, options).map_err(|m| type_error(&m))?;
    let signal = crate::config::signal_option(h, options).map_err(|m| type_error(&m))?;
    let timeout = crate::config::timeout(h, &config).map_err(|m| type_error(&m))?;
    Ok(ConnectRequest {
      name,
      config,
      client,
      features,
      signal,
      timeout,
      legacy_sse: false,
    })
  }
}

/// A25: with `legacy_sse` (v18's `connectToServer`), an "sse" config without our own
/// `oauth` (whose flow runs on the HTTP transport) opens the legacy transport, and falls
/// back, once, to Streamable HTTP when the server answers the legacy GET as one does.
fn create_transport<H: Transports>(
  host: &H,
  config: &H::Value,
  legacy_sse: bool,
) -> LocalBoxFuture<'static, Result<H::Value, H::Value>> {
  let kind = host
    .field(config, "type")
    .ok()
    .and_then(|kind| host.as_string(&kind));
  let own_oauth = crate::config::own_oauth(host, config).is_ok_and(|oauth| oauth.is_some());
  if !legacy_sse || kind.as_deref() != Some("sse") || own_oauth {
    return host.create_transport_as(config, false);
  }
  let legacy = host.create_transport_as(config, true);
  let (host, config) = (host.clone(), config.clone());
  Box::pin(async move {
    let failure = match legacy.await {
      Ok(transport) => return Ok(transport),
      Err(failure) => failure,
    };
    let status = host
      .field(&failure, "status")
      .ok()
      .and_then(|status| host.as_number(&status))
      .map(|status| status as u16);
    if !falls_back_to_streamable_http(status, &host.message(&failure)) {
      return Err(failure);
    }
    host.create_transport_as(&config, false).await
  })
}

/// The connection object `{name, config, transport, serverInfo, capabilities,
/// protocolVersion, instructions?}`, or the error. On any failure the transport is closed
/// before the error is returned; one that arrives after the connect gave up is closed too.
pub async fn connect<H>(host: H, request: ConnectRequest<H::Value>) -> Result<H::Value, H::Value>
where
  H: Transports + Signals + Clock + Callbacks,
{
  if let Some(reason) = request.signal.as_ref().and_then(|s| host.abort_reason(s)) {
    return Err(reason);
  }
  let deadline = request.timeout.map(|t| (Instant::now() + t, t));
  let created: Created<H::Value> = Rc::default();
  // C1: once the deadline has passed, its message wins over any other failure (the
  // initialize request's own timeout expires at the same moment).
  let blame = |error: H::Value| match deadline {
    Some((at, limit)) if Instant::now() >= at + user_wait(&host, &created) => {
      timeout_error(&host, &request.name, limit)
    }
    _ => error,
  };
  let mut stop = stopped(&host, &request, created.clone());
  // N2: a server that exits on the era probe is started again, once, for the handshake.
  let mut respawned = false;
  loop {
    let creating = create_transport(&host, &request.config, request.legacy_sse);
    let transport = match select(creating, &mut stop).await {
      Either::Left((Ok(transport), _)) => {
        *created.borrow_mut() = Some(transport.clone());
        transport
      }
      Either::Left((Err(error), _)) => return Err(blame(error)),
      Either::Right((reason, creating)) => {
        let closer = host.clone();
        host.spawn(Box::pin(async move {
          if let Ok(transport) = creating.await {
            let _ = closer.close(&transport).await;
          }
        }));
        return Err(blame(reason));
      }
    };
    let handshake = Box::pin(initialize(&host, &request, &transport, respawned));
    let error = match select(handshake, &mut stop).await {
      Either::Left((Ok(Initialized::Connected(connection)), _)) => return Ok(connection),
      Either::Left((Ok(Initialized::Respawn), _)) if !respawned => {
        let _ = host.close(&transport).await;
        respawned = true;
        continue;
      }
      Either::Left((Ok(Initialized::Respawn), _)) => {
        blame(host.error(&CoreError::TransportClosed { stderr: None }.to_string()))
      }
      Either::Left((Err(error), _)) | Either::Right((error, _)) => blame(error),
    };
    let _ = host.close(&transport).await;
    return Err(error);
  }
}

/// What an attempt on one transport came to.
enum Initialized<V> {
  Connected(V),
  /// N2: the server exited on the era probe; a new one gets the handshake.
  Respawn,
}

fn timeout_error<H: Transports>(host: &H, name: &str, limit: Duration) -> H::Value {
  let timeout_ms = limit.as_secs_f64() * 1000.0;
  host.connect_timeout_error(name, timeout_ms, &connect_timeout_message(name, timeout_ms))
}

/// The transport, once created: the timeout asks it how long the user kept it waiting.
type Created<V> = Rc<RefCell<Option<V>>>;

fn user_wait<H: Transports>(host: &H, created: &Created<H::Value>) -> Duration {
  created
    .borrow()
    .as_ref()
    .map_or(Duration::ZERO, |t| host.user_wait(t))
}

/// Resolves with the error that ends the connect early: the timeout's or the abort's. The
/// time an OAuth flow waits for the user agent is not counted (O1).
fn stopped<'a, H>(
  host: &'a H,
  request: &'a ConnectRequest<H::Value>,
  created: Created<H::Value>,
) -> LocalBoxFuture<'a, H::Value>
where
  H: Transports + Signals + Clock + Callbacks,
{
  let timeout: LocalBoxFuture<'a, H::Value> = match request.timeout {
    Some(limit) => Box::pin(async move {
      host.sleep(limit).await;
      let mut counted = Duration::ZERO;
      loop {
        let waited = user_wait(host, &created);
        if waited <= counted {
          break;
        }
        host.sleep(waited - counted).await;
        counted = waited;
      }
      timeout_error(host, &request.name, limit)
    }),
    None => Box::pin(std::future::pending()),
  };
  let aborted: LocalBoxFuture<'a, H::Value> = match &request.signal {
    Some(signal) => host.when_aborted(signal),
    None => Box::pin(std::future::pending()),
  };
  Box::pin(async move { select(timeout, aborted).await.factor_first().0 })
}

/// P5/T11: the server's requests on `transport` go to the connect's handlers.
fn serve_requests<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
) -> Result<(), H::Value> {
  let (server, features, owner) = (request.name.clone(), request.features.clone(), host.clone());
  let serve: HostFn<H::Value> = std::rc::Rc::new(move |args: Vec<H::Value>| {
    let host = &owner;
    let mut args = args.into_iter();
    let method = args
      .next()
      .and_then(|m| host.as_string(&m))
      .unwrap_or_default();
    let params = args.next().unwrap_or_else(|| host.undefined());
    // P6: the transport's `{signal}`, aborted if the server cancels this request.
    let mut extra = vec![("serverName", host.string(&server))];
    if let Some(signal) = args
      .next()
      .and_then(|given| host.field(&given, "signal").ok())
      .filter(|signal| !host.is_undefined(signal))
    {
      extra.push(("signal", signal));
    }
    match host.object(extra) {
      Ok(extra) => features::serve(host, &features, &method, params, extra),
      Err(error) => Box::pin(std::future::ready(Err(error))),
    }
  });
  let on_request = host.function("onRequest", serve)?;
  host.set_field(transport, "onRequest", on_request)?;
  // A26: set before `initialize`, so nothing the server sends first is lost.
  match &request.features.on_notification {
    Some(listener) => host.set_field(transport, "onNotification", listener.clone()),
    None => Ok(()),
  }
}

async fn initialize<H: Transports + Callbacks + Clock>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  respawned: bool,
) -> Result<Initialized<H::Value>, H::Value> {
  serve_requests(host, request, transport)?;
  let version = request
    .client
    .protocol_version
    .clone()
    .unwrap_or_else(|| handshake::DEFAULT_PROTOCOL_VERSION.to_string());
  if version == era::AUTO {
    return detect(host, request, transport, respawned).await;
  }
  connect_at(host, request, transport, &version)
    .await
    .map(Initialized::Connected)
}

/// N1: the era and version the caller named.
async fn connect_at<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  version: &str,
) -> Result<H::Value, H::Value> {
  if !handshake::is_stateless(version) {
    return initialize_handshake(host, request, transport, &request.client).await;
  }
  let error = match discover(host, request, transport, version).await {
    Ok(connection) => return Ok(connection),
    Err(error) => error,
  };
  // N3: -32022 names the versions the server speaks.
  Ok(follow_unsupported(host, request, transport, error).await?.0)
}

/// N3: after a -32022: the stateless version the server names (asked once: a server that
/// rejects what it says it speaks is not asked again), or the handshake at the newest
/// common handshake version. The connection, and the era it is in.
async fn follow_unsupported<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  error: H::Value,
) -> Result<(H::Value, era::Verdict), H::Value> {
  let Some(next) = unsupported_version_fallback(host, &error) else {
    return Err(error);
  };
  if handshake::is_stateless(next) {
    let connection = discover(host, request, transport, next).await?;
    return Ok((connection, era::Verdict::Stateless(next)));
  }
  host.set_stateless(transport, None);
  let client = ClientOptions {
    protocol_version: Some(next.to_string()),
    ..request.client.clone()
  };
  let connection = initialize_handshake(host, request, transport, &client).await?;
  Ok((connection, era::Verdict::Handshake))
}

/// N2: `"auto"`: the verdict remembered for this server, else a `server/discover` probe
/// (3 s at most): an answer means the stateless era, -32022 the version it names, the
/// process exiting a respawn, anything else the handshake. A remembered stateless verdict
/// that fails as a handshake-era server would is forgotten.
async fn detect<H: Transports + Callbacks + Clock>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  respawned: bool,
) -> Result<Initialized<H::Value>, H::Value> {
  let key = json_of(host, &request.config)
    .ok()
    .flatten()
    .and_then(|config| era::verdict_key(&config));
  let remember = |verdict| {
    if let Some(key) = &key {
      era::remember(key, verdict);
    }
  };
  let handshake_client = ClientOptions {
    protocol_version: None,
    ..request.client.clone()
  };
  // What `inspect` tells of how the era was found.
  let found = |connection: H::Value, how: &str| -> Result<Initialized<H::Value>, H::Value> {
    host.set_field(&connection, ERA_DETECTION, host.string(how))?;
    Ok(Initialized::Connected(connection))
  };
  let mut cached = key.as_deref().and_then(era::cached);
  if respawned || cached == Some(era::Verdict::Handshake) {
    remember(era::Verdict::Handshake);
    match initialize_handshake(host, request, transport, &handshake_client).await {
      Ok(connection) => {
        return found(connection, if respawned { "respawn" } else { "remembered" });
      }
      // A remembered handshake the server answers with a JSON-RPC error (a server that
      // moved to the stateless era): forgotten, and the server probed.
      Err(error) if respawned || !is_rpc_error(host, &error) => return Err(error),
      Err(_) => {
        if let Some(key) = &key {
          era::forget(key);
        }
        cached = None;
      }
    }
  }
  let version = match cached {
    Some(era::Verdict::Stateless(version)) => version,
    _ => handshake::STATELESS_PROTOCOL_VERSIONS[0],
  };
  let probe = Box::pin(discover(host, request, transport, version));
  let timeout = host.sleep(era::PROBE_TIMEOUT);
  let error = match select(probe, timeout).await {
    Either::Left((Ok(connection), _)) => {
      remember(era::Verdict::Stateless(version));
      return found(
        connection,
        if cached.is_some() {
          "remembered"
        } else {
          "probe"
        },
      );
    }
    // O2: a failed authorization is the answer, not a sign of the era: the handshake would
    // run the flow again (and send the user agent twice).
    Either::Left((Err(error), _)) if is_authorization_failure(host, &error) => return Err(error),
    Either::Left((Err(error), _)) => Some(error),
    Either::Right(_) => None,
  };
  let failure = match &error {
    None => era::ProbeFailure::Legacy,
    Some(error) => {
      let code = host
        .field(error, "code")
        .ok()
        .and_then(|c| host.as_number(&c));
      era::classify_probe_failure(code, &host.message(error))
    }
  };
  match (failure, error) {
    (era::ProbeFailure::Unsupported, Some(error)) => {
      let (connection, verdict) = follow_unsupported(host, request, transport, error).await?;
      remember(verdict);
      found(connection, "unsupported-version")
    }
    (era::ProbeFailure::Exited, _) => {
      remember(era::Verdict::Handshake);
      Ok(Initialized::Respawn)
    }
    (_, error) => {
      host.set_stateless(transport, None);
      remember(era::Verdict::Handshake);
      let connection = initialize_handshake(host, request, transport, &handshake_client).await?;
      found(
        connection,
        if error.is_some() {
          "refused"
        } else {
          "timeout"
        },
      )
    }
  }
}

/// O4: an `OAUTH_*` failure, or the provider's `UnauthorizedError` (O1 two-step flow).
fn is_authorization_failure<H: Transports>(host: &H, error: &H::Value) -> bool {
  let text = |name: &str| {
    host
      .field(error, name)
      .ok()
      .and_then(|v| host.as_string(&v))
  };
  era::is_authorization_failure(text("code").as_deref(), text("name").as_deref())
}

/// An error the server answered with, as opposed to the transport's own failure.
fn is_rpc_error<H: Transports>(host: &H, error: &H::Value) -> bool {
  host
    .field(error, "code")
    .ok()
    .and_then(|code| host.as_number(&code))
    .is_some()
}

/// N2: the connection field saying how `"auto"` found the era out.
pub const ERA_DETECTION: &str = "eraDetection";

/// N3: the version to retry with after a -32022 (UnsupportedProtocolVersion) error.
fn unsupported_version_fallback<H: Transports>(host: &H, error: &H::Value) -> Option<&'static str> {
  let code = host
    .field(error, "code")
    .ok()
    .and_then(|c| host.as_number(&c))?;
  if code != -32022.0 {
    return None;
  }
  let data = host.field(error, "data").ok()?;
  let supported: Vec<String> = match host.as_string(&data) {
    // A45: an `MCPTransportError` carries `data` as (redacted, bounded) JSON text.
    Some(text) => serde_json::from_str::<serde_json::Value>(&text)
      .ok()?
      .get("supported")?
      .as_array()?
      .iter()
      .filter_map(|v| v.as_str().map(str::to_string))
      .collect(),
    None => {
      let supported = host.field(&data, "supported").ok()?;
      host
        .items(&supported)?
        .iter()
        .filter_map(|v| host.as_string(v))
        .collect()
    }
  };
  handshake::fallback_version(&supported)
}

fn request_options<H: Transports>(
  host: &H,
  request: &ConnectRequest<H::Value>,
) -> Result<H::Value, H::Value> {
  let mut options = Vec::new();
  if let Some(signal) = &request.signal {
    options.push(("signal", signal.clone()));
  }
  host.object(options)
}

/// C1: `initialize`, the connection, `notifications/initialized`, the GET listener.
async fn initialize_handshake<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  client: &ClientOptions,
) -> Result<H::Value, H::Value> {
  let params = host.json(&initialize_params(client, request.features.capabilities()))?;
  let options = request_options(host, request)?;
  let result = host
    .request(transport, "initialize", params, Some(options))
    .await?;
  let field = |name: &str| field_of(host, &result, name);
  // P1: an answer naming a version we do not speak ends the connect (and closes).
  let version = field("protocolVersion")?;
  if let Some(version) = host.as_string(&version) {
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str()) {
      return Err(host.error(&unsupported_version_message(&request.name, &version)));
    }
    host.set_protocol_version(transport, &version);
  }
  let connection = connection_object(
    host,
    request,
    transport,
    &result,
    field("serverInfo")?,
    version,
  )?;
  host.notify(transport, "notifications/initialized").await?;
  // A26: servers send what is not tied to one of our requests (their own requests
  // included) on the GET stream, so the listener runs for the connection's lifetime; the
  // connect waits for its GET to be answered. A40: the v12 agent started none.
  if !request.features.v12 {
    let _ = host.listen(transport).await;
  }
  Ok(connection)
}

/// N3: the stateless era: no `initialize` and no session; `server/discover` tells who the
/// server is, and every request carries the `_meta` envelope.
async fn discover<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  version: &str,
) -> Result<H::Value, H::Value> {
  let meta = handshake::stateless_meta(&request.client, request.features.capabilities(), version);
  if !host.set_stateless(transport, Some((version, &meta))) {
    return Err(host.error(&format!(
      "MCP server \"{}\": protocol version {version} needs one of mcp-native's own transports",
      request.name
    )));
  }
  let options = request_options(host, request)?;
  let result = host
    .request(
      transport,
      "server/discover",
      host.json("{}")?,
      Some(options),
    )
    .await?;
  let meta = field_of(host, &result, "_meta")?;
  let from_meta = field_of(host, &meta, handshake::META_SERVER_INFO)?;
  let server_info = if host.is_nullish(&from_meta) {
    field_of(host, &result, "serverInfo")?
  } else {
    from_meta
  };
  let connection = connection_object(
    host,
    request,
    transport,
    &result,
    server_info,
    host.string(version),
  )?;
  // N7: what the GET stream gave in the handshake era comes from a subscription now: to
  // every list change the server says it may announce.
  let capabilities = json_of(host, &field_of(host, &result, "capabilities")?)?;
  if let Some(filter) = capabilities
    .as_ref()
    .and_then(subscriptions::advertised_changes)
  {
    host.start_listener(transport, Some(&host.json(&filter.to_string())?));
  }
  Ok(connection)
}

/// `value[name]`, `undefined` for a value that is not an object.
fn field_of<H: Transports>(host: &H, value: &H::Value, name: &str) -> Result<H::Value, H::Value> {
  if host.is_object(value) {
    host.field(value, name)
  } else {
    Ok(host.undefined())
  }
}

/// The connection object of an `initialize` or `server/discover` result.
fn connection_object<H: Transports + Callbacks>(
  host: &H,
  request: &ConnectRequest<H::Value>,
  transport: &H::Value,
  result: &H::Value,
  server_info: H::Value,
  version: H::Value,
) -> Result<H::Value, H::Value> {
  let capabilities = field_of(host, result, "capabilities")?;
  let capabilities = if host.is_nullish(&capabilities) {
    host.object(Vec::new())?
  } else {
    capabilities
  };
  let mut fields = vec![
    ("name", host.string(&request.name)),
    ("config", request.config.clone()),
    ("transport", transport.clone()),
    ("serverInfo", server_info),
    ("capabilities", capabilities),
    ("protocolVersion", version),
  ];
  let instructions = field_of(host, result, "instructions")?;
  if !host.is_nullish(&instructions) {
    fields.push(("instructions", instructions));
  }
  // P5: the caller tells the server its roots changed.
  let (notifier, notified) = (host.clone(), transport.clone());
  let notify: HostFn<H::Value> =
    std::rc::Rc::new(move |_| notifier.notify(&notified, features::ROOTS_LIST_CHANGED));
  fields.push((
    "notifyRootsChanged",
    host.function("notifyRootsChanged", notify)?,
  ));
  let connection = host.object(fields)?;
  host.attach_connection(transport, &connection);
  Ok(connection)
}
