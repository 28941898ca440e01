// A45: the agent's `MCPTransportError`, a real subclass of `Error` (its stack, `cause`,
// `instanceof` and subclassing behave as the agent's own class; its fields come in the same
// order). The message is bounded and its credentials redacted by the package's native rules,
// passed in as `sanitize`.
(function (sanitize) {
  return class MCPTransportError extends Error {
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
  };
})
