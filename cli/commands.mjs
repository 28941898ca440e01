// The subcommands, each a short script over the library's public API: MCPClient for one
// server, MCPManager for the configured set. Each returns its exit code.
import { performance } from "node:perf_hooks";
import { MCPClient, MCPManager, redactSecrets } from "../index.js";
import { connectError, EXIT, requestError, usageError } from "./errors.mjs";
import { describeConfig, loadConfigFile, resolveTarget } from "./targets.mjs";
import { credentialKey, isHttp, isMachineGrant, loopbackLogin, notHttp, tokenStore, withStoredLogin } from "./login.mjs";

/**
 * ctx: { targetName, operands, options, out, signal, onCleanup(fn) }. `signal` aborts on
 * Ctrl-C; every library call gets it, so an interrupted call rejects with its reason.
 */
export const COMMANDS = { servers, tools, inspect, call, ping, resources, read, prompts, login, logout };

/** How to run `login` for the target the user named, for messages. */
const loginCommand = (ctx, target) =>
  `mcp-native login ${ctx.targetName ?? `--url ${target.config.url}${target.config.type === "sse" ? " --sse" : ""}`}`;

async function connect(ctx) {
  const target = await resolveTarget(ctx.targetName, ctx.options);
  // O7: a server signed in to with `login` gets its stored (and refreshed) tokens.
  target.config = await withStoredLogin(target.config, loginCommand(ctx, target));
  const { out, signal } = ctx;
  out.verbose(`connecting to ${target.label}: ${describeConfig(target.config)}`);
  const stopProgress = out.progress(`connecting to ${target.label}…`);
  let client;
  try {
    client = await MCPClient.connect(target.name, target.config, { signal });
  } catch (error) {
    throw connectError(target.label, error);
  } finally {
    stopProgress();
  }
  ctx.onCleanup(() => client.close());
  const { serverInfo, protocolVersion, transport } = client.connection;
  const pid = transport.pid === undefined ? "" : `, pid ${transport.pid}`;
  out.verbose(`connected: ${serverInfo?.name} ${serverInfo?.version}, protocol ${protocolVersion}${pid}`);
  if ("onStderr" in transport) transport.onStderr = out.serverStderr;
  // Requests share the error wording; `what` names the request in the message.
  const ask = async (what, call) => {
    try {
      return await call({ signal });
    } catch (error) {
      throw requestError(what, error);
    }
  };
  return { client, target, ask };
}

const offers = (client, capability) => client.connection.capabilities?.[capability] !== undefined;

async function tools(ctx) {
  const { client, ask } = await connect(ctx);
  const list = await ask("tools/list", (o) => client.listTools(o));
  if (ctx.out.json) ctx.out.document(list);
  else printTools(ctx.out, list);
  return EXIT.OK;
}

function printTools(out, list) {
  if (!list.length) return out.line("(no tools)");
  out.table(
    ["NAME", "ARGUMENTS", "DESCRIPTION"],
    list.map((tool) => [tool.name, toolArguments(tool.inputSchema), tool.description ?? ""]),
  );
}

// `name` required, `name?` optional, in schema order.
function toolArguments(schema) {
  const required = new Set(schema?.required ?? []);
  return Object.keys(schema?.properties ?? {})
    .map((name) => (required.has(name) ? name : `${name}?`))
    .join(", ");
}

async function inspect(ctx) {
  const { client, target, ask } = await connect(ctx);
  const { serverInfo, protocolVersion, capabilities, instructions } = client.connection;
  // Only what the server advertises is asked for, as MCP clients should.
  const [toolList, resourceList, promptList] = await Promise.all([
    offers(client, "tools") ? ask("tools/list", (o) => client.listTools(o)) : null,
    offers(client, "resources") ? ask("resources/list", (o) => client.listResources(o)) : null,
    offers(client, "prompts") ? ask("prompts/list", (o) => client.listPrompts(o)) : null,
  ]);
  const counts = { tools: toolList?.length ?? null, resources: resourceList?.length ?? null, prompts: promptList?.length ?? null };
  const era = describeEra(client.connection);
  const { out } = ctx;
  if (out.json) {
    out.document({
      name: target.name,
      transport: describeConfig(target.config),
      serverInfo,
      protocolVersion,
      era,
      capabilities,
      instructions: instructions ?? null,
      counts,
      tools: (toolList ?? []).map(({ name, description }) => ({ name, description: description ?? null })),
    });
    return EXIT.OK;
  }
  const count = (n) => (n === null ? out.colors.dim("not offered") : String(n));
  out.fields([
    ["server", `${serverInfo?.name} ${serverInfo?.version}`],
    ["protocol", protocolVersion],
    ["era", `${era.name}, ${ERA_FOUND[era.detection] ?? era.detection}`],
    ["transport", describeConfig(target.config)],
    ["capabilities", describeCapabilities(capabilities) || out.colors.dim("none")],
    ["tools", count(counts.tools)],
    ["resources", count(counts.resources)],
    ["prompts", count(counts.prompts)],
    ...(instructions ? [["instructions", instructions.trim()]] : []),
  ]);
  if (toolList?.length) {
    out.line();
    printTools(out, toolList);
  }
  return EXIT.OK;
}

// "tools, resources (subscribe, listChanged)": each capability with its enabled flags.
function describeCapabilities(capabilities = {}) {
  return Object.entries(capabilities)
    .map(([name, value]) => {
      const flags = value && typeof value === "object" ? Object.keys(value).filter((flag) => value[flag] === true) : [];
      return flags.length ? `${name} (${flags.join(", ")})` : name;
    })
    .join(", ");
}

async function call(ctx) {
  const [toolName, json] = ctx.operands;
  // Bad arguments are found before anything is spawned.
  const args = parseArguments(json);
  const { client, target, ask } = await connect(ctx);
  const known = await ask("tools/list", (o) => client.listTools(o));
  if (!known.some((tool) => tool.name === toolName)) {
    const names = known.map((tool) => tool.name);
    throw usageError(`unknown tool "${toolName}" on ${target.label}`, [names.length ? `its tools: ${names.join(", ")}` : "it offers no tools"]);
  }
  ctx.out.verbose(`calling ${toolName} ${JSON.stringify(args)}`);
  // P4: the server's progress shows on the terminal, and keeps a long call from timing out.
  let reported = "";
  const onProgress = ({ progress, total, message }) => {
    reported = `${total ? `${progress}/${total}` : progress}${message ? ` ${message}` : ""}`;
    ctx.out.verbose(`progress ${reported}`);
  };
  const stopProgress = ctx.out.progress(() => `calling ${toolName}…${reported ? ` ${reported}` : ""}`);
  let result;
  try {
    result = await ask(`tools/call ${toolName}`, (o) =>
      client.callTool(toolName, args, { ...o, onProgress, resetTimeoutOnProgress: true }),
    );
  } finally {
    stopProgress();
  }
  if (ctx.out.json) ctx.out.document(result);
  else ctx.out.content(result.content, result.structuredContent);
  if (result.isError) {
    if (!ctx.out.json) ctx.out.note(`${toolName} returned an error (isError)`);
    return EXIT.TOOL_ERROR;
  }
  return EXIT.OK;
}

/** The call's JSON arguments; a syntax error shows where it is. */
export function parseArguments(json) {
  if (json === undefined) return {};
  let value;
  try {
    value = JSON.parse(json);
  } catch (error) {
    // V8 names the offset for most errors ("… at position 9"); a truncated text ends at its end.
    const position = Number(/position (\d+)/.exec(error.message)?.[1] ?? json.length);
    const start = Math.max(0, position - 40);
    const excerpt = json.slice(start, position + 40).replace(/\s/g, " ");
    throw usageError(`invalid JSON arguments at position ${position}: ${error.message}`, [
      `${start > 0 ? "…" : ""}${excerpt}`,
      `${" ".repeat(position - start + (start > 0 ? 1 : 0))}^`,
    ]);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
    throw usageError(`tool arguments must be a JSON object like '{"key":"value"}', got ${kind}`);
  }
  return value;
}

async function ping(ctx) {
  const { client, ask } = await connect(ctx);
  const started = performance.now();
  await ask("ping", (o) => client.ping(o));
  const ms = Math.round((performance.now() - started) * 1000) / 1000;
  const { serverInfo } = client.connection;
  if (ctx.out.json) ctx.out.document({ ok: true, ms });
  else ctx.out.line(`pong from ${serverInfo?.name} ${serverInfo?.version} in ${ms.toFixed(2)} ms`);
  return EXIT.OK;
}

async function resources(ctx) {
  const { client, ask } = await connect(ctx);
  const list = offers(client, "resources") ? await ask("resources/list", (o) => client.listResources(o)) : [];
  const { out } = ctx;
  if (out.json) out.document(list);
  else if (!list.length) out.line(offers(client, "resources") ? "(no resources)" : "(the server does not offer resources)");
  else out.table(["URI", "NAME", "TYPE", "DESCRIPTION"], list.map((r) => [r.uri, r.name, r.mimeType ?? "", r.description ?? ""]));
  return EXIT.OK;
}

async function read(ctx) {
  const [uri] = ctx.operands;
  const { client, ask } = await connect(ctx);
  const result = await ask(`resources/read ${uri}`, (o) => client.readResource(uri, o));
  const { out } = ctx;
  if (out.json) {
    out.document(result);
    return EXIT.OK;
  }
  for (const item of result.contents ?? []) {
    if (item.text !== undefined) out.text(item.text);
    else out.line(out.colors.dim(`[blob: ${item.uri}${item.mimeType ? ` (${item.mimeType})` : ""}, base64 ${item.blob?.length ?? 0} chars]`));
  }
  return EXIT.OK;
}

async function prompts(ctx) {
  const { client, ask } = await connect(ctx);
  const list = offers(client, "prompts") ? await ask("prompts/list", (o) => client.listPrompts(o)) : [];
  const { out } = ctx;
  if (out.json) out.document(list);
  else if (!list.length) out.line(offers(client, "prompts") ? "(no prompts)" : "(the server does not offer prompts)");
  else {
    const args = (p) => (p.arguments ?? []).map((a) => (a.required ? a.name : `${a.name}?`)).join(", ");
    out.table(["NAME", "ARGUMENTS", "DESCRIPTION"], list.map((p) => [p.name, args(p), p.description ?? ""]));
  }
  return EXIT.OK;
}

// --timeout applies to every configured server. The manager resolves each config through
// `this.prepareConfig` (W1), so a subclass is the place to add it.
class CliManager extends MCPManager {
  constructor(cwd, timeout) {
    // The table reports every server's final state: v12's gate waits for each of them
    // (M4) and hands its third argument the names being connected.
    super(cwd, null, { compat: "v12", startupTimeoutMs: timeout || 30_000 });
    this.timeoutOverride = timeout;
  }

  async prepareConfig(config) {
    const prepared = await super.prepareConfig(config);
    const timed = this.timeoutOverride === undefined ? prepared : { ...prepared, timeout: this.timeoutOverride };
    return withStoredLogin(timed, "mcp-native login <server>");
  }
}

async function servers(ctx) {
  const { options, out } = ctx;
  const manager = new CliManager(process.cwd(), options.timeout);
  ctx.onCleanup(() => manager.disconnectAll());
  let connecting = [];
  const onConnecting = (names) => {
    connecting = names;
    out.verbose(`connecting ${names.join(", ")}`);
  };
  const stopProgress = out.progress(() => progressLine(manager, connecting));
  let result;
  let configPath = null;
  let configs = {}; // known only with --config; discovery keeps them inside the manager
  try {
    if (options.config !== undefined) {
      const file = await loadConfigFile(options.config, { required: true });
      configPath = file.path;
      configs = file.servers;
      const source = { provider: "mcp-native", providerName: "mcp-native CLI", path: file.path, level: "project" };
      const sources = Object.fromEntries(Object.keys(file.servers).map((name) => [name, source]));
      result = await untilAborted(manager.connectServers(file.servers, sources, onConnecting), ctx.signal);
    } else {
      result = await untilAborted(
        manager.discoverAndConnect({ onConnecting }).catch((error) => {
          // Connect failures land in `errors`; a rejection means the config file itself is bad.
          throw usageError(error.message);
        }),
        ctx.signal,
      );
    }
  } finally {
    stopProgress();
  }

  const names = [...new Set([...manager.getAllServerNames(), ...result.errors.keys()])].sort();
  const rows = names.map((name) => {
    const connection = manager.getConnection(name);
    const failure = result.errors.get(name);
    const error = failure === undefined ? null : redactSecrets(String(failure));
    const toolNames = (connection?.tools ?? []).map((tool) => tool.name);
    return {
      name,
      status: error ? "failed" : manager.getConnectionStatus(name),
      type: typeOf(connection?.config ?? configs[name]),
      serverInfo: connection?.serverInfo ?? null,
      protocolVersion: connection?.protocolVersion ?? null,
      toolCount: connection ? toolNames.length : null,
      tools: toolNames,
      error,
    };
  });
  const failed = rows.some((row) => row.status !== "connected");

  if (out.json) out.document({ config: configPath, servers: rows });
  else if (!rows.length) out.line(`(no MCP servers configured in ${configPath ?? `${process.cwd()}/.mcp.json`})`);
  else {
    const { green, red } = out.colors;
    out.table(
      ["NAME", "STATUS", "TYPE", "SERVER", "PROTOCOL", "TOOLS", "ERROR"],
      rows.map((row) => [
        row.name,
        { text: row.status, style: row.status === "connected" ? green : red },
        row.type ?? "",
        row.serverInfo ? `${row.serverInfo.name} ${row.serverInfo.version}` : "",
        row.protocolVersion ?? "",
        row.toolCount ?? "",
        row.error ?? "",
      ]),
    );
  }
  return failed ? EXIT.CONNECTION : EXIT.OK;
}

const typeOf = (config) => (config ? (config.type ?? "stdio") : null);

function progressLine(manager, names) {
  if (!names.length) return "reading the config…";
  const marks = { connected: "✓", connecting: "…", disconnected: "✗" };
  const statuses = names.map((name) => [name, manager.getConnectionStatus(name)]);
  const done = statuses.filter(([, status]) => status !== "connecting").length;
  return `connecting ${done}/${names.length}: ${statuses.map(([name, status]) => `${name} ${marks[status]}`).join("  ")}`;
}

// connectServers takes no signal; the manager's disconnectAll (a cleanup) aborts what is
// still connecting.
function untilAborted(promise, signal) {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

// O7: runs the OAuth flow with a loopback redirect, keeping the tokens for the other commands.
async function login(ctx) {
  const { out, signal } = ctx;
  const target = await resolveTarget(ctx.targetName, ctx.options);
  if (!isHttp(target.config)) throw notHttp("login", target.label);
  const key = credentialKey(target.config.url);
  if (key === null) throw usageError(`invalid server config for ${target.label}: not a URL`);
  const store = tokenStore();
  // A new sign-in, not a refresh of the old one.
  await store.delete(key);
  let config;
  if (isMachineGrant(target.config)) {
    // SEP-1933/SEP-990/O5: a workload token or an enterprise IdP signs in; no browser.
    config = { ...target.config, oauth: { ...target.config.oauth, store } };
  } else {
    const listener = await loopbackLogin({ out, signal, label: target.label });
    ctx.onCleanup(listener.close);
    config = {
      ...target.config,
      oauth: { store, redirect: listener.redirect, redirectUri: listener.redirectUri, clientName: "mcp-native CLI" },
    };
  }
  out.verbose(`connecting to ${target.label}: ${describeConfig(config)}`);
  let client;
  try {
    client = await MCPClient.connect(target.name, config, { signal });
  } catch (error) {
    throw connectError(target.label, error);
  }
  ctx.onCleanup(() => client.close());
  const credential = await store.get(key);
  if (!credential) {
    // The server let us in without asking: nothing to keep.
    if (out.json) out.document({ ok: true, signedIn: false });
    else out.line(`${target.label} did not ask for a sign-in; nothing stored`);
    return EXIT.OK;
  }
  const expiresAt = credential.tokens?.expiresAt ? new Date(credential.tokens.expiresAt).toISOString() : null;
  const scopes = credential.tokens?.scope ?? credential.scopes?.join(" ") ?? "";
  if (out.json) {
    out.document({ ok: true, signedIn: true, issuer: credential.issuer, resource: credential.resource, scopes, expiresAt, store: store.path });
  } else {
    out.line(`signed in to ${target.label} through ${credential.issuer}${scopes ? ` (scopes: ${scopes})` : ""}`);
    out.verbose(`tokens kept in ${store.path}${expiresAt ? `, access token valid until ${expiresAt}` : ""}`);
  }
  return EXIT.OK;
}

// O7: forgets what `login` stored for the target.
async function logout(ctx) {
  const { out } = ctx;
  const target = await resolveTarget(ctx.targetName, ctx.options);
  if (!isHttp(target.config)) throw notHttp("logout", target.label);
  const key = credentialKey(target.config.url);
  if (key === null) throw usageError(`invalid server config for ${target.label}: not a URL`);
  const store = tokenStore();
  const credential = await store.get(key);
  if (credential) await store.delete(key);
  if (out.json) out.document({ ok: true, signedOut: Boolean(credential) });
  else out.line(credential ? `signed out of ${target.label}` : `not signed in to ${target.label}`);
  return EXIT.OK;
}

// N2: how `inspect` says the era was found (the connection's `eraDetection`).
const ERA_FOUND = {
  requested: "as requested",
  probe: "found by a server/discover probe",
  remembered: "remembered from an earlier probe in this process",
  refused: "the server refused the server/discover probe",
  timeout: "no answer to the server/discover probe within 3 s",
  respawn: "the server exited on the server/discover probe and was started again",
  "unsupported-version": "the server named the versions it speaks (-32022)",
};

function describeEra(connection) {
  const stateless = connection.protocolVersion === "2026-07-28";
  return { name: stateless ? "stateless" : "handshake", detection: connection.eraDetection ?? "requested" };
}
