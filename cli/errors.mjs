// Exit codes and the failures the CLI reports itself. Anything else that reaches the top is
// an error from the library after a connection was made, i.e. a connection or protocol
// failure (exit 3).

export const EXIT = {
  OK: 0,
  TOOL_ERROR: 1,
  USAGE: 2,
  CONNECTION: 3,
  INTERRUPTED: 130, // 128 + SIGINT, what shells report for Ctrl-C
  TERMINATED: 143, // 128 + SIGTERM
};

export class CliError extends Error {
  constructor(message, exitCode, { detail, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.exitCode = exitCode;
    /** Extra lines printed indented under the message. */
    this.detail = detail;
  }
}

export const usageError = (message, detail) => new CliError(message, EXIT.USAGE, { detail });

/** The abort reason of a signal: library calls reject with it, so it arrives here intact. */
export const interrupted = (signal) =>
  new CliError("interrupted", signal === "SIGTERM" ? EXIT.TERMINATED : EXIT.INTERRUPTED);

/**
 * Turns a failure to connect into a message that says what to do about it. The library's
 * own words (which carry the OS error codes people search for) stay in the detail.
 */
export function connectError(label, error) {
  if (error instanceof CliError) return error;
  // The library rejects a config it cannot use with a TypeError naming the field (E2).
  if (error instanceof TypeError) return usageError(`invalid server config for ${label}: ${error.message}`);
  const hints = {
    ECONNREFUSED: "connection refused (is the server running?)",
    ENOENT: "command not found",
    EACCES: "permission denied",
  };
  let reason = hints[error.code];
  const detail = reason ? [error.message] : [];
  if (!reason && serverEnded(error)) reason = `the server ${serverEnded(error)} during the handshake`;
  if (isTimeout(error)) {
    // The library's words repeat the server name the message already starts with.
    const ms = /after (\d+) ?ms/.exec(error.message)?.[1];
    if (ms) reason = `timed out after ${ms} ms`;
    detail.push(TIMEOUT_HINT);
  }
  detail.push(...stderrTail(error));
  return new CliError(`cannot connect to ${label}: ${reason ?? error.message}`, EXIT.CONNECTION, { detail, cause: error });
}

/** A request failed after the connection was up. */
export function requestError(what, error) {
  if (error instanceof CliError) return error;
  const detail = isTimeout(error) ? [TIMEOUT_HINT] : [];
  if (error.message === "Transport closed") detail.push("the server exited");
  if (serverEnded(error)) detail.push(...stderrTail(error));
  return new CliError(`${what} failed: ${error.message}`, EXIT.CONNECTION, { detail, cause: error });
}

/** How a stdio server ended under a request (S4, A49), in words; undefined if it did not. */
function serverEnded(error) {
  if (error.message === "Transport closed") return "exited";
  if (error.message === "MCP subprocess closed stdout before responding") return "closed its stdout";
  const code = /^MCP subprocess exited with code (-?\d+) before responding$/.exec(error.message)?.[1];
  return code === undefined ? undefined : `exited with code ${code}`;
}

const TIMEOUT_HINT = "--timeout <ms> waits longer (default 30000), --timeout 0 waits forever";
const isTimeout = (error) => /timed out|timeout after/i.test(error.message);

// A server that dies says why on stderr; the library keeps its last 8 KiB on the error (S5).
function stderrTail(error) {
  if (typeof error.stderr !== "string" || !error.stderr.trim()) return [];
  const lines = error.stderr.trimEnd().split("\n").slice(-10);
  return ["server stderr:", ...lines.map((line) => `  ${line}`)];
}
