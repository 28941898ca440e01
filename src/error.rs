//! Failures the contract makes observable. `Display` is the exact text the JS `Error` gets.
use std::time::Duration;

use thiserror::Error;

use crate::transport_error::{self, Code, Data, Diagnostic, Failure, Stage, Thrown, TransportKind};

#[derive(Debug, Clone, Error, PartialEq)]
pub enum CoreError {
  /// T10: the transport was never connected or is closed.
  #[error("Transport not connected")]
  NotConnected,
  /// A13: a notification could not be written to the server's stdin; the transport closes.
  #[error("Transport closed while sending notification \"{0}\"")]
  NotifyUnwritable(String),
  /// S4/S6: the transport closed while the request was pending.
  #[error("Transport closed")]
  TransportClosed {
    /// S5: the last 8 KiB of stderr when the close was caused by the process ending.
    stderr: Option<String>,
  },
  /// A49: the server's stdout ended with the request pending: the process exited (with
  /// `exit_code` once it is known) or closed its stdout. S5: `stderr` is its last 8 KiB.
  #[error("{}", server_ended_message(*.exit_code))]
  ServerEnded {
    exit_code: Option<i32>,
    stderr: Option<String>,
  },
  /// A48: `close()` of an HTTP transport aborted what was in flight; JS gets an
  /// `AbortError` `DOMException` with this message, as the agent's transports reject.
  #[error("{}", .0.message())]
  Aborted(ClosedTransport),
  /// T7
  #[error("Request timeout after {}ms", .0.as_millis())]
  RequestTimeout(Duration),
  /// T4: a JSON-RPC error response. `data` is raw JSON text.
  #[error("MCP error {code}: {message}")]
  Rpc {
    code: i64,
    message: String,
    data: Option<String>,
  },
  /// S1: the command could not be started.
  #[error("Failed to start MCP server \"{command}\": {reason} ({code})")]
  Spawn {
    command: String,
    reason: String,
    code: String,
  },
  /// S7: the frame could not be written to the server.
  /// A12: a command line that cmd.exe cannot carry (the text names what is wrong).
  #[error("{0}")]
  CommandLine(String),

  #[error("Failed to write to MCP server: {0}")]
  Write(String),
  /// S4: reading the server's stdout failed (not EOF).
  #[error("Failed to read from MCP server: {0}")]
  Read(String),
  /// T7/H7
  #[error("Notify timeout after {}ms", .0.as_millis())]
  NotifyTimeout(Duration),
  /// H4/H7: a non-2xx answer. Requests list the auth hints in the message, notifications
  /// only as properties (as the agent does).
  #[error("HTTP {status}: {body}{}", auth_hint(*.hint_in_message, .www_authenticate, .mcp_auth_server))]
  Http {
    status: u16,
    body: String,
    www_authenticate: Option<String>,
    mcp_auth_server: Option<String>,
    hint_in_message: bool,
  },
  /// H5/H6: a body or event payload that is not JSON. The JS side rethrows V8's own
  /// `SyntaxError` for this text, so the message matches `JSON.parse`.
  #[error("Invalid JSON in response")]
  InvalidJson(String),
  /// H6: the SSE stream ended before the answer.
  #[error("No response received for request ID {0}")]
  NoResponse(String),
  /// A19: the GET that would resume a request's stream was refused (`body` is the server's
  /// text, or `auth refresh failed` when `onAuthError` had no new headers).
  #[error("HTTP {status} resuming MCP SSE stream: {body}")]
  ResumeRefused { status: u16, body: String },
  /// A19: the resuming GET was answered, but not with an event stream.
  #[error("MCP SSE resume returned unsupported Content-Type: {}", if .0.is_empty() { "(missing)" } else { .0.as_str() })]
  ResumeNotEventStream(String),
  /// A50: a JSON body answering a request with neither `result` nor `error`, or with an
  /// `error` that is not `{code, message}`; the text is the agent's.
  #[error("{0}")]
  MalformedAnswer(&'static str),
  /// E3 over HTTP: a JSON body over `maxMessageBytes`.
  #[error("Response body larger than maxMessageBytes ({limit} bytes)")]
  BodyTooLarge { limit: usize },
  /// The request never got an HTTP answer (W8: the OS words stay in the message).
  #[error("{message}")]
  Network {
    message: String,
    code: Option<String>,
  },
  /// A46: a 2xx answer whose body broke off: the server accepted the request and may have
  /// run it, so it is never replayed.
  #[error("{message}")]
  Interrupted {
    message: String,
    code: Option<String>,
  },
  /// H3: the server's `Mcp-Session-Id` holds something other than visible ASCII.
  #[error("Invalid Mcp-Session-Id from server: only visible ASCII (0x21-0x7E) is allowed")]
  InvalidSessionId,
  /// O4: an OAuth step failed; the message names the step and the server's words.
  #[error("OAuth: {message}")]
  OAuth { step: OAuthStep, message: String },
  /// N4: `tools/list` named a tool whose `x-mcp-header` annotations are invalid; it was
  /// left out of the list.
  #[error("MCP server tool \"{tool}\" was left out: {reason}")]
  ToolDropped { tool: String, reason: String },
  /// O1: the caller's `authProvider` was sent to authorize; `finishAuth` completes it.
  #[error("Unauthorized")]
  Unauthorized,
  /// E3: one incoming message was larger than the limit and was discarded.
  #[error("Discarded an incoming message larger than maxMessageBytes ({limit} bytes)")]
  MessageTooLarge { limit: usize },
  /// A24: an origin-locked fetch met a redirect it does not follow.
  #[error(transparent)]
  Redirect(#[from] crate::protocol::redirects::RedirectError),
  /// A22/H11: a legacy server's `endpoint` event named no URL, or one on another origin.
  #[error(transparent)]
  Endpoint(#[from] crate::protocol::destination::EndpointError),
  /// A22/A23: the legacy HTTP+SSE transport's own failures.
  #[error(transparent)]
  LegacySse(#[from] LegacySseError),
}

impl CoreError {
  /// The JS `Error`'s message: `Display` with every secret redacted (URLs with userinfo or
  /// secret parameters, credentials a server echoed back).
  pub fn message(&self) -> String {
    crate::redaction::redact_secrets(&self.to_string())
  }

  /// The properties the JS `Error` carries besides its message, in the order they are set.
  pub fn properties(&self) -> Vec<(&'static str, ErrorProperty<'_>)> {
    let mut properties = Vec::new();
    match self {
      // T4: the agent sets both, `data` even when the server sent none.
      CoreError::Rpc { code, data, .. } => {
        properties.push(("code", ErrorProperty::Number(*code as f64)));
        properties.push(("data", ErrorProperty::Json(data.as_deref())));
      }
      // S5
      CoreError::TransportClosed {
        stderr: Some(stderr),
      }
      | CoreError::ServerEnded {
        stderr: Some(stderr),
        ..
      } => properties.push(("stderr", ErrorProperty::Text(stderr))),
      // H4/H7
      CoreError::Http {
        status,
        www_authenticate,
        mcp_auth_server,
        ..
      } => {
        properties.push(("status", ErrorProperty::Number(f64::from(*status))));
        if let Some(v) = www_authenticate {
          properties.push(("wwwAuthenticate", ErrorProperty::Text(v)));
        }
        if let Some(v) = mcp_auth_server {
          properties.push(("mcpAuthServer", ErrorProperty::Text(v)));
        }
      }
      // O1: the name the TS SDK's `UnauthorizedError` has.
      CoreError::Unauthorized => {
        properties.push(("name", ErrorProperty::Text("UnauthorizedError")))
      }
      _ => {}
    }
    if let Some(code) = self.string_code() {
      properties.push(("code", ErrorProperty::Text(code)));
    }
    properties
  }

  /// The `code` property of the JS error, where the contract gives one as a string.
  pub fn string_code(&self) -> Option<&str> {
    match self {
      CoreError::Spawn { code, .. } => Some(code),
      CoreError::OAuth { step, .. } => Some(step.code()),
      CoreError::Unauthorized => Some("OAUTH_UNAUTHORIZED"),
      CoreError::Network {
        code: Some(code), ..
      }
      | CoreError::Interrupted {
        code: Some(code), ..
      } => Some(code),
      _ => None,
    }
  }
}

impl CoreError {
  /// A45/A46: the class the agent's own transports give this failure (`None` for what is no
  /// transport failure: O1's `Unauthorized` is the TS SDK's signal to authorize).
  pub fn diagnostic(&self, transport: TransportKind) -> Option<Diagnostic> {
    use Failure::*;
    let message = self.message();
    let fixed = |stage, failure, retryable| {
      Some(Diagnostic::new(
        transport, stage, failure, &message, retryable,
      ))
    };
    let classified = |stage, code: Option<&str>| {
      let thrown = Thrown {
        message: message.clone(),
        code: code.map(|c| Code::Text(c.to_string())),
        syntax_error: false,
      };
      transport_error::classify(&thrown, transport, stage, None)
    };
    match self {
      // Not a failure of the transport: the caller closed it (an AbortError).
      CoreError::Unauthorized | CoreError::Aborted(_) => None,
      CoreError::NotConnected => fixed(Stage::Connect, Closed, true),
      CoreError::TransportClosed { .. } => fixed(Stage::Receive, Closed, true),
      CoreError::ServerEnded { exit_code, .. } => {
        let mut diagnostic = Diagnostic::new(transport, Stage::Receive, Eof, &message, true);
        diagnostic.code = exit_code.map(|code| Code::Number(f64::from(code)));
        Some(diagnostic)
      }
      // The frame never reached the server: writing again cannot run anything twice.
      CoreError::NotifyUnwritable(_) | CoreError::Write(_) => fixed(Stage::Send, Eof, true),
      CoreError::RequestTimeout(_) | CoreError::LegacySse(LegacySseError::ResponseTimeout(_)) => {
        fixed(Stage::Receive, Timeout, false)
      }
      CoreError::NotifyTimeout(_) => fixed(Stage::Send, Timeout, false),
      CoreError::Rpc {
        code,
        message,
        data,
      } => {
        let data = data
          .as_deref()
          .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
          .map(|value| Data::from_json(&value));
        Some(transport_error::json_rpc(
          transport,
          Some(&Code::Number(*code as f64)),
          message,
          data.as_ref(),
          None,
        ))
      }
      CoreError::Http { status, .. } => {
        let mut diagnostic = Diagnostic::new(
          transport,
          Stage::Receive,
          HttpStatus,
          &message,
          matches!(status, 404 | 502 | 503),
        );
        diagnostic.code = Some(Code::Number(f64::from(*status)));
        Some(diagnostic)
      }
      CoreError::InvalidJson(_)
      | CoreError::MalformedAnswer(_)
      | CoreError::MessageTooLarge { .. }
      | CoreError::BodyTooLarge { .. }
      | CoreError::LegacySse(LegacySseError::NonJson(_)) => {
        fixed(Stage::Decode, MalformedResponse, false)
      }
      // A46: the server accepted the request; whatever broke after that is not replayed.
      CoreError::NoResponse(_) => fixed(Stage::Receive, Eof, false),
      CoreError::Interrupted { code, .. } => {
        let reset = code.as_deref() == Some("ECONNRESET");
        let failure = if reset { Reset } else { Eof };
        let mut diagnostic = Diagnostic::new(transport, Stage::Receive, failure, &message, false);
        diagnostic.code = code.clone().map(Code::Text);
        Some(diagnostic)
      }
      CoreError::ResumeRefused { .. } | CoreError::ResumeNotEventStream(_) => Some(Diagnostic {
        retryable: false,
        ..classified(Stage::Receive, None)
      }),
      CoreError::Network { code, .. } => Some(classified(Stage::Send, code.as_deref())),
      CoreError::Spawn { code, .. } => Some(classified(Stage::Connect, Some(code))),
      CoreError::CommandLine(_)
      | CoreError::OAuth { .. }
      | CoreError::Redirect(_)
      | CoreError::Endpoint(_)
      | CoreError::LegacySse(_) => Some(classified(Stage::Connect, self.string_code())),
      CoreError::Read(_) | CoreError::InvalidSessionId => Some(classified(Stage::Receive, None)),
      CoreError::ToolDropped { .. } => Some(classified(Stage::Protocol, None)),
    }
  }
}

/// A48: which transport's `close()` aborted a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosedTransport {
  Http,
  LegacySse,
}

impl ClosedTransport {
  pub fn message(self) -> &'static str {
    match self {
      ClosedTransport::Http => "MCP HTTP transport closed",
      ClosedTransport::LegacySse => "MCP legacy SSE transport closed",
    }
  }
}

/// A property of a JS error, as the contract gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ErrorProperty<'a> {
  Number(f64),
  Text(&'a str),
  /// JSON text to parse; `None` (or text that does not parse) is `undefined`.
  Json(Option<&'a str>),
}

/// O4: the step an OAuth failure happened in; the JS error's `code` is `OAUTH_<STEP>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthStep {
  Discovery,
  Metadata,
  Registration,
  Authorization,
  Token,
  Refresh,
  Store,
}

impl OAuthStep {
  pub fn code(self) -> &'static str {
    match self {
      OAuthStep::Discovery => "OAUTH_DISCOVERY",
      OAuthStep::Metadata => "OAUTH_METADATA",
      OAuthStep::Registration => "OAUTH_REGISTRATION",
      OAuthStep::Authorization => "OAUTH_AUTHORIZATION",
      OAuthStep::Token => "OAUTH_TOKEN",
      OAuthStep::Refresh => "OAUTH_REFRESH",
      OAuthStep::Store => "OAUTH_STORE",
    }
  }
}

/// A22/A23: the failures only the legacy HTTP+SSE protocol has; `Display` is the contract's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LegacySseError {
  /// A22: a 2xx answer to the GET that fetch would give a null body (204, 205).
  #[error("Legacy SSE response did not include a body")]
  NoBody,
  /// A25: the GET was answered, but not with an event stream (a Streamable HTTP server).
  #[error("Legacy SSE response is not an event stream: {0}")]
  NotEventStream(String),
  /// A22: the stream ended before its `endpoint` event.
  #[error("Legacy SSE endpoint event not received")]
  NoEndpoint,
  #[error("Legacy SSE endpoint timeout after {}ms", .0.as_millis())]
  EndpointTimeout(Duration),
  /// A23: it ends the stream.
  #[error("Legacy SSE message event contained non-JSON data: {0}")]
  NonJson(String),
  /// A23: the POST was accepted, the answer did not come on the stream in time.
  #[error("Legacy SSE response timeout after {}ms", .0.as_millis())]
  ResponseTimeout(Duration),
  /// A23: the server ended the stream: nothing can be answered any more.
  #[error("Transport closed: legacy SSE stream closed")]
  StreamClosed,
}

fn server_ended_message(exit_code: Option<i32>) -> String {
  match exit_code {
    Some(code) => format!("MCP subprocess exited with code {code} before responding"),
    None => "MCP subprocess closed stdout before responding".to_string(),
  }
}

fn auth_hint(
  in_message: bool,
  www_authenticate: &Option<String>,
  mcp_auth_server: &Option<String>,
) -> String {
  if !in_message {
    return String::new();
  }
  let parts: Vec<String> = [
    ("WWW-Authenticate", www_authenticate),
    ("Mcp-Auth-Server", mcp_auth_server),
  ]
  .into_iter()
  .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name}: {v}")))
  .collect();
  if parts.is_empty() {
    String::new()
  } else {
    format!(" [{}]", parts.join("; "))
  }
}

/// The symbolic name Node uses for an errno (`ENOENT`, …), so JS callers can branch on `code`.
pub fn errno_name(errno: i32) -> String {
  match crate::sys::errno::name(errno) {
    Some(name) => name.to_string(),
    None => format!("E{errno}"),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn messages_match_the_contract() {
    assert_eq!(
      CoreError::NotConnected.to_string(),
      "Transport not connected"
    );
    assert_eq!(
      CoreError::TransportClosed { stderr: None }.to_string(),
      "Transport closed"
    );
    assert_eq!(
      CoreError::RequestTimeout(Duration::from_millis(1500)).to_string(),
      "Request timeout after 1500ms"
    );
    let rpc = CoreError::Rpc {
      code: -32601,
      message: "Method not found".into(),
      data: None,
    };
    assert_eq!(rpc.to_string(), "MCP error -32601: Method not found");
    let http = |hint| CoreError::Http {
      status: 401,
      body: "denied".into(),
      www_authenticate: Some("Bearer realm=\"x\"".into()),
      mcp_auth_server: Some("https://auth".into()),
      hint_in_message: hint,
    };
    assert_eq!(
      http(true).to_string(),
      "HTTP 401: denied [WWW-Authenticate: Bearer realm=\"x\"; Mcp-Auth-Server: https://auth]"
    );
    assert_eq!(http(false).to_string(), "HTTP 401: denied");
    assert_eq!(
      CoreError::ServerEnded {
        exit_code: Some(3),
        stderr: None
      }
      .to_string(),
      "MCP subprocess exited with code 3 before responding"
    );
    assert_eq!(
      CoreError::ServerEnded {
        exit_code: None,
        stderr: None
      }
      .to_string(),
      "MCP subprocess closed stdout before responding"
    );
    assert_eq!(
      CoreError::NoResponse("3".to_string()).to_string(),
      "No response received for request ID 3"
    );
  }

  #[test]
  fn t4_h4_s5_o1_the_js_error_carries_the_contract_s_properties() {
    let rpc = CoreError::Rpc {
      code: -32601,
      message: "Method not found".into(),
      data: None,
    };
    assert_eq!(
      rpc.properties(),
      [
        ("code", ErrorProperty::Number(-32601.0)),
        ("data", ErrorProperty::Json(None))
      ]
    );
    let http = CoreError::Http {
      status: 401,
      body: String::new(),
      www_authenticate: Some("Bearer".into()),
      mcp_auth_server: None,
      hint_in_message: false,
    };
    assert_eq!(
      http.properties(),
      [
        ("status", ErrorProperty::Number(401.0)),
        ("wwwAuthenticate", ErrorProperty::Text("Bearer"))
      ]
    );
    assert_eq!(
      CoreError::Unauthorized.properties(),
      [
        ("name", ErrorProperty::Text("UnauthorizedError")),
        ("code", ErrorProperty::Text("OAUTH_UNAUTHORIZED"))
      ]
    );
    assert!(CoreError::NotConnected.properties().is_empty());
  }

  #[test]
  fn a45_a46_each_failure_is_classified_as_the_agents_transports_do() {
    let class = |error: CoreError| {
      let d = error.diagnostic(TransportKind::Http).unwrap();
      (d.stage, d.failure, d.retryable)
    };
    assert_eq!(
      class(CoreError::NotConnected),
      (Stage::Connect, Failure::Closed, true)
    );
    assert_eq!(
      class(CoreError::Write("Broken pipe".into())),
      (Stage::Send, Failure::Eof, true)
    );
    assert_eq!(
      class(CoreError::RequestTimeout(Duration::from_millis(5))),
      (Stage::Receive, Failure::Timeout, false)
    );
    let http = |status| CoreError::Http {
      status,
      body: String::new(),
      www_authenticate: None,
      mcp_auth_server: None,
      hint_in_message: true,
    };
    assert_eq!(
      class(http(503)),
      (Stage::Receive, Failure::HttpStatus, true)
    );
    assert_eq!(
      class(http(401)),
      (Stage::Receive, Failure::HttpStatus, false)
    );
    let refused = CoreError::Network {
      message: "fetch failed: http://127.0.0.1:9/: Connection refused (ECONNREFUSED)".into(),
      code: Some("ECONNREFUSED".into()),
    };
    assert_eq!(class(refused), (Stage::Connect, Failure::Connect, true));
    // A46: the same reset before an answer may be replayed, after a 2xx answer not.
    let reset = |accepted: bool| {
      let (message, code) = (
        "fetch failed: http://h/: reset (ECONNRESET)".to_string(),
        Some("ECONNRESET".to_string()),
      );
      if accepted {
        CoreError::Interrupted { message, code }
      } else {
        CoreError::Network { message, code }
      }
    };
    assert_eq!(class(reset(false)), (Stage::Send, Failure::Reset, true));
    assert_eq!(class(reset(true)), (Stage::Receive, Failure::Reset, false));
    assert_eq!(
      class(CoreError::NoResponse("1".into())),
      (Stage::Receive, Failure::Eof, false)
    );
    assert_eq!(
      class(CoreError::ResumeRefused {
        status: 503,
        body: "x".into()
      }),
      (Stage::Receive, Failure::Unknown, false)
    );
    assert_eq!(
      class(CoreError::InvalidJson("{".into())),
      (Stage::Decode, Failure::MalformedResponse, false)
    );
    let rpc = CoreError::Rpc {
      code: -32000,
      message: "no".into(),
      data: Some(r#"{"apiKey":"k","traceId":"t-9"}"#.into()),
    }
    .diagnostic(TransportKind::Stdio)
    .unwrap();
    assert_eq!(rpc.failure, Failure::JsonRpc);
    assert_eq!(
      rpc.data.as_deref(),
      Some(r#"{"apiKey":"[redacted]","traceId":"t-9"}"#)
    );
    assert_eq!(rpc.trace_id.as_deref(), Some("t-9"));
    assert_eq!(
      CoreError::Unauthorized.diagnostic(TransportKind::Http),
      None
    );
  }

  #[test]
  fn errno_names_follow_node() {
    #[cfg(unix)]
    assert_eq!(errno_name(libc::ENOENT), "ENOENT");
    assert_eq!(errno_name(99_999), "E99999");
  }
}
