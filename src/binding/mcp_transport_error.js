// A45/A47: the agent's error classes, real subclasses of `Error` (their stack, `cause`,
// `instanceof` and subclassing behave as the agent's own; their fields come in the same
// order). What they say is decided natively: `sanitize` bounds and redacts a message,
// `connectTimeout` and `legacyTimeout` give the options of A47's two timeouts.
(function (sanitize, connectTimeout, legacyTimeout) {
  class MCPTransportError extends Error {
    transport;
    stage;
    failure;
    retryable;
    code;
    data;
    traceId;

    constructor(options) {
      super(
        sanitize(String(options.message)),
        options.cause === undefined ? undefined : { cause: options.cause },
      );
      this.name = "MCPTransportError";
      this.transport = options.transport;
      this.stage = options.stage;
      this.failure = options.failure;
      this.retryable = options.retryable;
      this.code = options.code;
      this.data = options.data;
      this.traceId = options.traceId;
    }
  }

  // A transport failure too (A45), so the agent's retry policy classifies it.
  class MCPConnectionTimeoutError extends MCPTransportError {
    serverName;
    timeoutMs;

    constructor(serverName, timeoutMs) {
      super(connectTimeout(String(serverName), Number(timeoutMs)));
      this.name = "MCPConnectionTimeoutError";
      this.serverName = serverName;
      this.timeoutMs = timeoutMs;
    }
  }

  class LegacySseConnectionTimeoutError extends MCPTransportError {
    constructor(timeoutMs) {
      super(legacyTimeout(Number(timeoutMs)));
      this.name = "LegacySseConnectionTimeoutError";
    }
  }

  return { MCPTransportError, MCPConnectionTimeoutError, LegacySseConnectionTimeoutError };
})
