//! §5/§6: `createTransport`, `connectToServer`, `listTools`, `callTool`, `disconnectServer`,
//! `serverSupportsTools`. They drive `connection.transport` through its JS methods, so any
//! object implementing `MCPTransport` works (C5); native transports answer those calls
//! without leaving Rust for the I/O.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use napi::{sys, Env};
use napi_derive::napi;

use super::args;
use super::http::create_http_transport;
use super::js::{ErrorKind, Js, JsArg, JsRaw, Thrown, Value};
use super::js_async::{after, when_settled, Timer};
use super::js_error;
use super::stdio::create_stdio_transport;
use super::transport_class::finish;
use crate::client::{connect_timeout_message, initialize_params, ClientOptions};

fn reject_type_error(js: Js, message: &str) -> Result<Value, Thrown> {
  js.rejected(js_error::type_error(js, message))
}

/// §5: the transport for a config: stdio when `type` is omitted or "stdio", HTTP for
/// "http"/"sse", else `Error("Unknown server type: <type>")`.
fn create_transport_value(env: Env, js: Js, config: Value) -> Result<Value, Thrown> {
  if !js.is_record(config) {
    return reject_type_error(js, "The \"config\" argument must be an object");
  }
  let kind = js.get(config, "type")?;
  let kind_text = if js.is_nullish(kind) {
    None
  } else {
    Some(
      js.rust_string(kind)
        .unwrap_or_else(|| js.json_stringify(kind).ok().flatten().unwrap_or_default()),
    )
  };
  let created = match kind_text.as_deref() {
    None | Some("stdio") => create_stdio_transport(env, JsArg(config)),
    Some("http") | Some("sse") => create_http_transport(env, JsArg(config)),
    Some(other) => {
      let error = js.error(ErrorKind::Error, &format!("Unknown server type: {other}"));
      return js.rejected(error);
    }
  };
  created.map(|raw| raw.0).map_err(|_| {
    let mut exception = std::ptr::null_mut();
    unsafe { sys::napi_get_and_clear_last_exception(js.env, &mut exception) };
    Thrown(exception)
  })
}

/// Creates and connects the transport a config asks for (§5).
#[napi(
  js_name = "createTransport",
  ts_args_type = "config: MCPServerConfig",
  ts_return_type = "Promise<MCPTransport>"
)]
pub fn create_transport(env: Env, config: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  finish(js, create_transport_value(env, js, config.0))
}

/// C4: `capabilities.tools !== undefined`.
#[napi(
  js_name = "serverSupportsTools",
  ts_args_type = "capabilities: MCPServerCapabilities"
)]
pub fn server_supports_tools(env: Env, capabilities: JsArg) -> bool {
  let js = Js::new(env.raw());
  if js.type_of(capabilities.0) != sys::ValueType::napi_object {
    return false;
  }
  js.get(capabilities.0, "tools")
    .map(|tools| js.type_of(tools) != sys::ValueType::napi_undefined)
    .unwrap_or(false)
}

/// A napi reference deleted when dropped (always on the JS thread here).
pub(crate) struct Held {
  env: sys::napi_env,
  reference: sys::napi_ref,
}

impl Held {
  pub(crate) fn new(js: Js, value: Value) -> Self {
    Held {
      env: js.env,
      reference: js.new_ref(value, 1),
    }
  }

  /// A reference that does not keep `value` alive (`get` is then `undefined` once collected).
  pub(crate) fn weak(js: Js, value: Value) -> Self {
    Held {
      env: js.env,
      reference: js.new_ref(value, 0),
    }
  }

  pub(crate) fn env(&self) -> sys::napi_env {
    self.env
  }

  pub(crate) fn get(&self, js: Js) -> Value {
    js.ref_value(self.reference)
      .unwrap_or_else(|| js.undefined())
  }
}

impl Drop for Held {
  fn drop(&mut self) {
    Js::new(self.env).delete_ref(self.reference);
  }
}

/// Calls `object[method](...args)`.
pub(crate) fn call_method(
  js: Js,
  object: Value,
  method: &str,
  args: &[Value],
) -> Result<Value, Thrown> {
  let function = js.get(object, method)?;
  if !js.is_function(function) {
    let error = js_error::type_error(js, &format!("The transport has no \"{method}\" method"));
    return Err(Thrown(error));
  }
  js.call(function, object, args)
}

pub(crate) fn connection_transport(js: Js, connection: Value) -> Result<Value, Value> {
  if js.type_of(connection) != sys::ValueType::napi_object {
    return Err(js_error::type_error(
      js,
      "The \"connection\" argument must be an object",
    ));
  }
  let transport = js.get(connection, "transport").map_err(|t| t.0)?;
  if js.type_of(transport) != sys::ValueType::napi_object {
    return Err(js_error::type_error(
      js,
      "The \"connection.transport\" field must be an MCPTransport",
    ));
  }
  Ok(transport)
}

/// `options.client` of connectToServer, read through JSON.
fn client_options(js: Js, options: Option<Value>) -> Result<ClientOptions, String> {
  let Some(options) = options.filter(|o| !js.is_nullish(*o)) else {
    return Ok(ClientOptions::default());
  };
  if js.type_of(options) != sys::ValueType::napi_object {
    return Err("The \"options\" argument must be an object".into());
  }
  let client = js
    .get(options, "client")
    .map_err(|_| "The \"options.client\" field could not be read")?;
  if js.is_nullish(client) {
    return Ok(ClientOptions::default());
  }
  let text = js
    .json_stringify(client)
    .ok()
    .flatten()
    .ok_or("The \"options.client\" field must be an object")?;
  let value: serde_json::Value =
    serde_json::from_str(&text).map_err(|_| "The \"options.client\" field must be an object")?;
  let Some(object) = value.as_object() else {
    return Err("The \"options.client\" field must be an object".into());
  };
  Ok(ClientOptions {
    client_info: object.get("clientInfo").cloned(),
    protocol_version: object
      .get("protocolVersion")
      .and_then(|v| v.as_str())
      .map(str::to_string),
    capabilities: object
      .get("capabilities")
      .and_then(|c| c.as_object())
      .cloned(),
  })
}

/// The state of one connectToServer call; it settles exactly once.
struct Connect {
  env: sys::napi_env,
  deferred: Cell<Option<sys::napi_deferred>>,
  name: String,
  config: Held,
  transport: RefCell<Option<Held>>,
  deadline: Option<(Instant, f64)>,
  timer: RefCell<Option<Timer>>,
  abort: RefCell<Option<(Held, Held)>>,
}

impl Connect {
  fn js(&self) -> Js {
    Js::new(self.env)
  }

  fn take(&self) -> Option<sys::napi_deferred> {
    let deferred = self.deferred.take()?;
    if let Some(timer) = self.timer.borrow_mut().take() {
      timer.cancel();
    }
    let hook = self.abort.borrow_mut().take();
    if let Some((signal, listener)) = hook {
      let js = self.js();
      let (signal, listener) = (signal.get(js), listener.get(js));
      let _ = call_method(
        js,
        signal,
        "removeEventListener",
        &[js.string("abort"), listener],
      );
    }
    Some(deferred)
  }

  fn timeout_error(&self, ms: f64) -> Value {
    let js = self.js();
    js.error(ErrorKind::Error, &connect_timeout_message(&self.name, ms))
  }

  /// C1: once the connect deadline has passed, its message wins over any other failure
  /// (the initialize request's own timeout expires at the same moment).
  fn fail(self: &Rc<Self>, reason: Value) {
    let reason = match self.deadline {
      Some((deadline, ms)) if Instant::now() >= deadline => self.timeout_error(ms),
      _ => reason,
    };
    self.reject(reason);
  }

  fn reject(self: &Rc<Self>, reason: Value) {
    let js = self.js();
    let Some(deferred) = self.take() else { return };
    let transport = self.transport.borrow_mut().take();
    let Some(transport) = transport else {
      return js.reject(deferred, reason);
    };
    // C1: the transport is closed before the rejection.
    let reason = Held::new(js, reason);
    let closing =
      call_method(js, transport.get(js), "close", &[]).unwrap_or_else(|_| js.undefined());
    when_settled(js, closing, move |js, _| {
      js.reject(deferred, reason.get(js));
      drop(transport);
    });
  }

  fn succeed(self: &Rc<Self>, connection: Value) {
    if let Some(deferred) = self.take() {
      self.js().resolve(deferred, connection);
    }
  }

  fn initialize(self: &Rc<Self>, options: &ClientOptions, signal: Option<Value>) {
    let js = self.js();
    let Some(transport) = self.transport.borrow().as_ref().map(|t| t.get(js)) else {
      return;
    };
    let params = js.json_parse(&initialize_params(options));
    let request_options = js.json_parse("{}");
    let sent = params.and_then(|params| {
      let request_options = request_options?;
      if let Some(signal) = signal {
        js.set(request_options, "signal", signal);
      }
      call_method(
        js,
        transport,
        "request",
        &[js.string("initialize"), params, request_options],
      )
    });
    let flow = self.clone();
    match sent {
      Err(Thrown(error)) => flow.fail(error),
      Ok(pending) => when_settled(js, pending, move |js, result| match result {
        Err(error) => flow.fail(error),
        Ok(result) => flow.initialized(js, result),
      }),
    }
  }

  /// Builds the connection, then sends `notifications/initialized`.
  fn initialized(self: &Rc<Self>, js: Js, result: Value) {
    let built = (|| {
      let Some(transport) = self.transport.borrow().as_ref().map(|t| t.get(js)) else {
        return Ok(None);
      };
      let is_object = js.type_of(result) == sys::ValueType::napi_object;
      let field = |name: &str| {
        if is_object {
          js.get(result, name).unwrap_or_else(|_| js.undefined())
        } else {
          js.undefined()
        }
      };
      let connection = js.json_parse("{}")?;
      js.set(connection, "name", js.string(&self.name));
      js.set(connection, "config", self.config.get(js));
      js.set(connection, "transport", transport);
      js.set(connection, "serverInfo", field("serverInfo"));
      let capabilities = field("capabilities");
      let capabilities = if js.is_nullish(capabilities) {
        js.json_parse("{}")?
      } else {
        capabilities
      };
      js.set(connection, "capabilities", capabilities);
      js.set(connection, "protocolVersion", field("protocolVersion"));
      let instructions = field("instructions");
      if !js.is_nullish(instructions) {
        js.set(connection, "instructions", instructions);
      }
      let notified = call_method(
        js,
        transport,
        "notify",
        &[js.string("notifications/initialized")],
      )?;
      Ok::<_, Thrown>(Some((connection, notified)))
    })();
    match built {
      Err(Thrown(error)) => self.fail(error),
      Ok(None) => {}
      Ok(Some((connection, notified))) => {
        let connection = Held::new(js, connection);
        let flow = self.clone();
        when_settled(js, notified, move |js, result| match result {
          Err(error) => flow.fail(error),
          Ok(_) => flow.succeed(connection.get(js)),
        });
      }
    }
  }
}

unsafe extern "C" fn on_connect_abort(env: sys::napi_env, info: sys::napi_callback_info) -> Value {
  let js = Js::new(env);
  // SAFETY: data is the Weak<Connect> given to js.function.
  let (_, data) = unsafe { js.args::<0>(info) };
  let flow = unsafe { &*(data as *const std::rc::Weak<Connect>) };
  if let Some(flow) = flow.upgrade() {
    let signal = flow.abort.borrow().as_ref().map(|(s, _)| s.get(js));
    if let Some(signal) = signal {
      flow.fail(super::calls::abort_reason(js, signal).0);
    }
  }
  js.undefined()
}

/// C1: creates the transport, runs the `initialize` handshake and `notifications/initialized`,
/// all bounded by `config.timeout ?? 30000`.
#[napi(
  js_name = "connectToServer",
  ts_args_type = "name: string, config: MCPServerConfig, options?: MCPConnectOptions",
  ts_return_type = "Promise<MCPServerConnection>"
)]
pub fn connect_to_server(
  env: Env,
  name: JsArg,
  config: JsArg,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let Some(name) = js.rust_string(name.0) else {
      return reject_type_error(js, "The \"name\" argument must be a string");
    };
    if !js.is_record(config.0) {
      return reject_type_error(js, "The \"config\" argument must be an object");
    }
    let options = options.map(|o| o.0);
    let client = match client_options(js, options) {
      Ok(c) => c,
      Err(message) => return reject_type_error(js, &message),
    };
    let signal = match args::signal(js, options) {
      Ok(s) => s,
      Err(message) => return reject_type_error(js, &message),
    };
    if let Some(signal) = signal {
      if js.truthy(js.get(signal, "aborted")?) {
        return js.rejected(super::calls::abort_reason(js, signal).0);
      }
    }
    let timeout = args::timeout(js, config.0).map_err(|m| Thrown(js_error::type_error(js, &m)));
    let timeout = match timeout {
      Ok(t) => t,
      Err(Thrown(e)) => return js.rejected(e),
    };
    let (deferred, promise) = js.create_promise()?;
    let flow = Rc::new(Connect {
      env: js.env,
      deferred: Cell::new(Some(deferred)),
      name,
      config: Held::new(js, config.0),
      transport: RefCell::new(None),
      deadline: timeout.map(|t| (Instant::now() + t, t.as_secs_f64() * 1000.0)),
      timer: RefCell::new(None),
      abort: RefCell::new(None),
    });
    if let Some(limit) = timeout {
      let weak = Rc::downgrade(&flow);
      let ms = limit.as_secs_f64() * 1000.0;
      let timer = after(js, limit, move |_| {
        if let Some(flow) = weak.upgrade() {
          flow.reject(flow.timeout_error(ms));
        }
      });
      *flow.timer.borrow_mut() = timer;
    }
    if let Some(signal) = signal {
      let listener = js.function("onAbort", on_connect_abort, Rc::downgrade(&flow))?;
      call_method(
        js,
        signal,
        "addEventListener",
        &[js.string("abort"), listener],
      )?;
      *flow.abort.borrow_mut() = Some((Held::new(js, signal), Held::new(js, listener)));
    }
    let created = create_transport_value(env, js, config.0)?;
    let step = flow.clone();
    when_settled(js, created, move |js, result| match result {
      Err(error) => step.fail(error),
      Ok(transport) => {
        if step.deferred.get().is_none() {
          // Settled already (timeout or abort while spawning): do not keep the transport.
          let _ = call_method(js, transport, "close", &[]);
          return;
        }
        *step.transport.borrow_mut() = Some(Held::new(js, transport));
        let signal = step.abort.borrow().as_ref().map(|(s, _)| s.get(js));
        step.initialize(&client, signal);
      }
    });
    Ok(promise)
  })();
  finish(js, result)
}

/// One paginated listing: pages of `method` following `nextCursor`, items under `key`.
pub(crate) struct Paginate {
  deferred: Cell<Option<sys::napi_deferred>>,
  method: &'static str,
  key: &'static str,
  transport: Held,
  options: Option<Held>,
  items: Held,
  /// C2: `listTools` stores the full list in `connection.tools`.
  store_in: Option<Held>,
}

impl Paginate {
  /// Starts the listing; the promise resolves with every item of every page.
  pub(crate) fn start(
    js: Js,
    transport: Value,
    method: &'static str,
    key: &'static str,
    options: Option<Value>,
    store_in: Option<Value>,
  ) -> Result<Value, Thrown> {
    let (deferred, promise) = js.create_promise()?;
    let flow = Rc::new(Paginate {
      deferred: Cell::new(Some(deferred)),
      method,
      key,
      transport: Held::new(js, transport),
      options: options
        .filter(|o| !js.is_nullish(*o))
        .map(|o| Held::new(js, o)),
      items: Held::new(js, js.json_parse("[]")?),
      store_in: store_in.map(|c| Held::new(js, c)),
    });
    flow.page(js, None);
    Ok(promise)
  }

  fn page(self: Rc<Self>, js: Js, cursor: Option<Value>) {
    let sent = (|| {
      let params = js.json_parse("{}")?;
      if let Some(cursor) = cursor {
        js.set(params, "cursor", cursor);
      }
      let mut args = vec![js.string(self.method), params];
      if let Some(options) = &self.options {
        args.push(options.get(js));
      }
      call_method(js, self.transport.get(js), "request", &args)
    })();
    match sent {
      Err(Thrown(error)) => self.fail(js, error),
      Ok(pending) => when_settled(js, pending, move |js, result| match result {
        Err(error) => self.fail(js, error),
        Ok(page) => self.received(js, page),
      }),
    }
  }

  fn received(self: Rc<Self>, js: Js, page: Value) {
    let appended = (|| {
      if js.type_of(page) != sys::ValueType::napi_object {
        return Ok(None);
      }
      let items = js.get(page, self.key)?;
      let all = self.items.get(js);
      if js.is_array(items) {
        let push = js.get(all, "push")?;
        for i in 0..js.array_length(items) {
          js.call(push, all, &[js.element(items, i)?])?;
        }
      }
      let cursor = js.get(page, "nextCursor")?;
      Ok::<_, Thrown>((!js.is_nullish(cursor)).then_some(cursor))
    })();
    match appended {
      Err(Thrown(error)) => self.fail(js, error),
      Ok(Some(cursor)) => self.page(js, Some(cursor)),
      Ok(None) => {
        let all = self.items.get(js);
        if let Some(connection) = &self.store_in {
          js.set(connection.get(js), "tools", all);
        }
        if let Some(deferred) = self.deferred.take() {
          js.resolve(deferred, all);
        }
      }
    }
  }

  fn fail(&self, js: Js, error: Value) {
    if let Some(deferred) = self.deferred.take() {
      js.reject(deferred, error);
    }
  }
}

/// C2: `[]` without the tools capability; `connection.tools` when already listed; else
/// every page of `tools/list`, stored in `connection.tools`.
#[napi(
  js_name = "listTools",
  ts_args_type = "connection: MCPServerConnection, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPToolDefinition[]>"
)]
pub fn list_tools(env: Env, connection: JsArg, options: Option<JsArg>) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match connection_transport(js, connection.0) {
      Ok(t) => t,
      Err(error) => return js.rejected(error),
    };
    let capabilities = js.get(connection.0, "capabilities")?;
    let supports = js.type_of(capabilities) == sys::ValueType::napi_object
      && js.type_of(js.get(capabilities, "tools")?) != sys::ValueType::napi_undefined;
    if !supports {
      return js.resolved(js.json_parse("[]")?);
    }
    let cached = js.get(connection.0, "tools")?;
    if js.truthy(cached) {
      return js.resolved(cached);
    }
    let options = options.map(|o| o.0);
    Paginate::start(
      js,
      transport,
      "tools/list",
      "tools",
      options,
      Some(connection.0),
    )
  })();
  finish(js, result)
}

/// C3: `tools/call {name, arguments}`; the result is passed through untouched.
#[napi(
  js_name = "callTool",
  ts_args_type = "connection: MCPServerConnection, toolName: string, args?: Record<string, unknown>, options?: MCPRequestOptions",
  ts_return_type = "Promise<MCPToolCallResult>"
)]
pub fn call_tool(
  env: Env,
  connection: JsArg,
  tool_name: JsArg,
  arguments: Option<JsArg>,
  options: Option<JsArg>,
) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match connection_transport(js, connection.0) {
      Ok(t) => t,
      Err(error) => return js.rejected(error),
    };
    if js.rust_string(tool_name.0).is_none() {
      return reject_type_error(js, "The \"toolName\" argument must be a string");
    }
    let arguments = match arguments.map(|a| a.0).filter(|a| !js.is_nullish(*a)) {
      Some(a) => a,
      None => js.json_parse("{}")?,
    };
    let params = js.json_parse("{}")?;
    js.set(params, "name", tool_name.0);
    js.set(params, "arguments", arguments);
    let mut args = vec![js.string("tools/call"), params];
    if let Some(options) = options {
      args.push(options.0);
    }
    match call_method(js, transport, "request", &args) {
      Ok(pending) => Ok(pending),
      Err(Thrown(error)) => js.rejected(error),
    }
  })();
  finish(js, result)
}

/// C4: closes the connection's transport.
#[napi(
  js_name = "disconnectServer",
  ts_args_type = "connection: MCPServerConnection",
  ts_return_type = "Promise<void>"
)]
pub fn disconnect_server(env: Env, connection: JsArg) -> napi::Result<JsRaw> {
  let js = Js::new(env.raw());
  let result = (|| {
    let transport = match connection_transport(js, connection.0) {
      Ok(t) => t,
      Err(error) => return js.rejected(error),
    };
    match call_method(js, transport, "close", &[]) {
      Ok(closing) => {
        let (deferred, promise) = js.create_promise()?;
        when_settled(js, closing, move |js, result| match result {
          Ok(_) => js.resolve(deferred, js.undefined()),
          Err(error) => js.reject(deferred, error),
        });
        Ok(promise)
      }
      Err(Thrown(error)) => js.rejected(error),
    }
  })();
  finish(js, result)
}
