// The command line: options, which positionals are the target and which the operands, and
// the shell-like splitting of --stdio.
import { parseArgs } from "node:util";
import { usageError } from "./errors.mjs";

export const USAGE = `mcp-native: connect to MCP servers, inspect them and call their tools

Usage
  mcp-native servers [--config <file>]        connect every configured server, show their status
  mcp-native tools     [target]               list the tools
  mcp-native inspect   [target]               server info, protocol, capabilities, instructions, counts
  mcp-native call      [target] <tool> [json] call a tool; arguments are one JSON object
  mcp-native ping      [target]               measure a round trip
  mcp-native resources [target]               list the resources
  mcp-native read      [target] <uri>         print a resource
  mcp-native prompts   [target]               list the prompts
  mcp-native login     [target]               sign in to an OAuth-protected HTTP server
  mcp-native logout    [target]               forget that sign-in
  mcp-native help                             this text

Target (default: the example server bundled with mcp-native, also called "example")
  <name>                   a server from --config, else from ./.mcp.json
  --stdio "<cmd> [args…]"  spawn a stdio server (split like a shell: quotes, backslashes)
  --url <url>              a Streamable HTTP server; add --sse for a legacy HTTP+SSE one
  --header K=V             HTTP header, repeatable ("K: V" works too)
  --env K=V                environment variable for a stdio server, repeatable
  --timeout <ms>           connect and per-request timeout (default 30000; 0 = none)
  -c, --config <file>      the config file (default ./.mcp.json)

Output
  --json                   one JSON document on stdout, for scripts
  -v, --verbose            connection details and the server's stderr, on stderr

Exit codes
  0    success
  1    the tool ran and returned isError: true
  2    usage error: bad arguments, unknown server or tool, invalid JSON, bad config file
  3    connection or protocol failure: cannot spawn, refused, timeout, JSON-RPC error,
       the server exited; for servers, at least one server failed
  130  interrupted (Ctrl-C): the call was aborted and every server stopped

Examples
  mcp-native inspect
  mcp-native call echo '{"text":"hello"}'
  mcp-native tools --stdio "npx -y @modelcontextprotocol/server-everything"
  mcp-native call --url http://127.0.0.1:3001/mcp --header "Authorization=Bearer $TOKEN" search '{"q":"mcp"}'
  mcp-native servers --json | jq '.servers[] | select(.status != "connected")'
`;

const OPTIONS = {
  config: { type: "string", short: "c" },
  stdio: { type: "string" },
  url: { type: "string" },
  sse: { type: "boolean" },
  header: { type: "string", multiple: true, default: [] },
  env: { type: "string", multiple: true, default: [] },
  timeout: { type: "string" },
  json: { type: "boolean", default: false },
  verbose: { type: "boolean", short: "v", default: false },
  help: { type: "boolean", short: "h" },
};

// operands: what follows the optional target; a trailing "?" marks an optional one.
const COMMANDS = {
  servers: { target: false, operands: [] },
  tools: { target: true, operands: [] },
  inspect: { target: true, operands: [] },
  call: { target: true, operands: ["tool", "json?"] },
  ping: { target: true, operands: [] },
  resources: { target: true, operands: [] },
  read: { target: true, operands: ["uri"] },
  prompts: { target: true, operands: [] },
  login: { target: true, operands: [] },
  logout: { target: true, operands: [] },
};

/**
 * → `{ command: "help" }` or `{ command, targetName, operands, options }` where `options`
 * holds the parsed flags (`timeout` as a number, `header`/`env` as [key, value] pairs).
 */
export function parseCommandLine(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageError(error.message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === "help") return { command: "help" };
  if (command === undefined) throw usageError("no command given; see mcp-native --help");
  const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!spec) throw usageError(`unknown command "${command}"; commands: ${Object.keys(COMMANDS).join(", ")}`);

  const options = {
    config: values.config,
    stdio: values.stdio === undefined ? undefined : splitCommand(values.stdio),
    url: values.url,
    sse: values.sse ?? false,
    header: values.header.map((h) => keyValue("--header", h, /[=:]/)),
    env: values.env.map((e) => keyValue("--env", e, /=/)),
    timeout: values.timeout === undefined ? undefined : milliseconds(values.timeout),
    json: values.json,
    verbose: values.verbose,
  };
  if (!spec.target) {
    const given = { stdio: options.stdio, url: options.url, sse: options.sse || undefined, header: options.header[0], env: options.env[0] };
    const misplaced = Object.keys(given).find((name) => given[name] !== undefined);
    if (misplaced) throw usageError(`--${misplaced} does not apply to ${command}`);
  }
  if (options.stdio && options.url) throw usageError("give either --stdio or --url, not both");
  if (options.sse && !options.url) throw usageError("--sse needs --url");
  if (options.stdio?.length === 0) throw usageError("--stdio needs a command");
  if (options.stdio && options.header.length) throw usageError("--header applies to HTTP servers (--url), not --stdio");
  if (options.url && options.env.length) throw usageError("--env applies to stdio servers, not --url");

  const { targetName, operands } = assignPositionals(command, spec, rest, Boolean(options.stdio || options.url));
  return { command, targetName, operands, options };
}

// The target name is optional and comes first, so it is there exactly when the command got
// one argument more than it needs. Only `call` has an optional operand, and there the JSON
// (which starts with "{") tells `call <tool> <json>` from `call <target> <tool>`.
function assignPositionals(command, spec, rest, flagTarget) {
  const required = spec.operands.filter((o) => !o.endsWith("?"));
  const max = spec.operands.length + (spec.target && !flagTarget ? 1 : 0);
  if (rest.length > max) throw usageError(`too many arguments for ${command}: ${rest.slice(max).join(" ")}`);
  let hasTarget = false;
  if (spec.target && !flagTarget) {
    if (rest.length === max) hasTarget = true;
    else if (rest.length > required.length) hasTarget = !rest[rest.length - 1].trimStart().startsWith("{");
  }
  const operands = hasTarget ? rest.slice(1) : rest;
  if (operands.length < required.length) {
    const missing = required.slice(operands.length).map((o) => `<${o}>`).join(" ");
    throw usageError(`${command} needs ${missing}; see mcp-native --help`);
  }
  return { targetName: hasTarget ? rest[0] : undefined, operands };
}

function keyValue(flag, text, separator) {
  const at = text.search(separator);
  if (at <= 0) throw usageError(`${flag} expects KEY=VALUE, got "${text}"`);
  return [text.slice(0, at).trim(), text.slice(at + 1).trim()];
}

function milliseconds(text) {
  if (!/^\d+$/.test(text)) throw usageError(`--timeout expects milliseconds (a whole number), got "${text}"`);
  return Number(text);
}

/**
 * Splits a command line the way a POSIX shell would for words and quoting (no expansion):
 * whitespace separates words, '…' is literal, "…" honours \" \\ \$ \`, and a backslash
 * outside quotes escapes the next character.
 */
export function splitCommand(line) {
  const words = [];
  let word = null; // null between words, so that "" still yields an (empty) word
  let quote = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === "\\" && '"\\$`'.includes(line[i + 1] ?? "")) word += line[++i];
      else word += c;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word ??= "";
      if (c === "'" || c === '"') quote = c;
      else if (c === "\\") {
        if (i + 1 === line.length) throw usageError("--stdio ends with a lone backslash");
        word += line[++i];
      } else word += c;
    }
  }
  if (quote) throw usageError(`--stdio has an unterminated ${quote === "'" ? "single" : "double"} quote`);
  if (word !== null) words.push(word);
  return words;
}
