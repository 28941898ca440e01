// What to connect to: a server named in a config file, an ad-hoc --stdio or --url server, or
// the bundled example server. Each becomes an MCPServerConfig, as the agent would write it.
import { readFile } from "node:fs/promises";
import { basename, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { MCPManager, redactSecrets } from "../index.js";
import { usageError } from "./errors.mjs";

export const EXAMPLE_SERVER = fileURLToPath(new URL("../example/server.mjs", import.meta.url));
export const EXAMPLE_NAME = "example";
export const DEFAULT_CONFIG = ".mcp.json";

/**
 * Reads a `.mcp.json`-style file → `{ path, servers, disabled }`: the enabled servers, and
 * the names of those the manager's own discovery skips (`disabledServers`, `enabled: false`);
 * `null` when the file does not exist and `required` is false.
 */
export async function loadConfigFile(file, { required }) {
  const path = resolve(file);
  let text;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error.code === "ENOENT" && !required) return null;
    throw usageError(`cannot read config file ${path}: ${error.code === "ENOENT" ? "no such file" : error.message}`);
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usageError(`config file ${path} is not valid JSON: ${error.message}`);
  }
  const all = parsed?.mcpServers ?? {};
  if (typeof all !== "object" || Array.isArray(all)) throw usageError(`config file ${path}: "mcpServers" must be an object`);
  const disabled = new Set(Array.isArray(parsed.disabledServers) ? parsed.disabledServers : []);
  const isDisabled = ([name, config]) => disabled.has(name) || config?.enabled === false;
  const entries = Object.entries(all);
  return {
    path,
    servers: Object.fromEntries(entries.filter((entry) => !isDisabled(entry))),
    disabled: entries.filter(isDisabled).map(([name]) => name),
  };
}

/** → `{ name, label, config }`: the connection name, how messages call it, and its config. */
export async function resolveTarget(targetName, options) {
  if (options.stdio) {
    const [command, ...args] = options.stdio;
    const config = { command, args, ...(options.env.length ? { env: Object.fromEntries(options.env) } : {}) };
    const line = shellJoin(options.stdio);
    return withTimeout({ name: line, label: `\`${line}\``, config }, options);
  }
  if (options.url) {
    const config = { type: options.sse ? "sse" : "http", url: options.url, ...(options.header.length ? { headers: Object.fromEntries(options.header) } : {}) };
    // The URL names the connection in messages and output: without its secrets.
    const shown = redactSecrets(options.url);
    return withTimeout({ name: shown, label: shown, config }, options);
  }
  if (targetName === undefined) return exampleTarget(options);

  const file = await loadConfigFile(options.config ?? DEFAULT_CONFIG, { required: options.config !== undefined });
  const configured = file && Object.hasOwn(file.servers, targetName) ? file.servers[targetName] : undefined;
  if (!configured) {
    if (targetName === EXAMPLE_NAME) return exampleTarget(options);
    const where = file ? file.path : resolve(DEFAULT_CONFIG);
    const known = file ? Object.keys(file.servers) : [];
    if (file?.disabled.includes(targetName)) throw usageError(`server "${targetName}" is disabled in ${where}`);
    throw usageError(
      `unknown server "${targetName}"`,
      [file ? `servers in ${where}: ${known.length ? known.join(", ") : "none"}` : `no config file: ${where} does not exist (give one with --config)`],
    );
  }
  // The same value resolution as the manager (`!command`, environment variable names) for
  // what the file says; values typed on the command line are taken literally, so they go on after.
  let prepared;
  try {
    prepared = await new MCPManager(process.cwd()).prepareConfig(configured);
  } catch (error) {
    throw usageError(`invalid config for server "${targetName}" in ${file.path}: ${error.message}`);
  }
  const isHttp = prepared.type === "http" || prepared.type === "sse";
  if (isHttp && options.env.length) throw usageError(`--env applies to stdio servers; "${targetName}" is ${prepared.type}`);
  if (!isHttp && options.header.length) throw usageError(`--header applies to HTTP servers; "${targetName}" is stdio`);
  const config = { ...prepared };
  if (options.env.length) config.env = { ...prepared.env, ...Object.fromEntries(options.env) };
  if (options.header.length) config.headers = { ...prepared.headers, ...Object.fromEntries(options.header) };
  return withTimeout({ name: targetName, label: `"${targetName}"`, config }, options);
}

function exampleTarget(options) {
  const config = { command: process.execPath, args: [EXAMPLE_SERVER], ...(options.env.length ? { env: Object.fromEntries(options.env) } : {}) };
  if (options.header.length) throw usageError("--header applies to HTTP servers; the example server is stdio");
  return withTimeout({ name: EXAMPLE_NAME, label: "the example server", config }, options);
}

function withTimeout(target, options) {
  if (options.timeout !== undefined) target.config.timeout = options.timeout;
  return target;
}

/** One line saying how a config is reached, for people (paths shortened, args quoted). */
export function describeConfig(config) {
  if (config.type === "http" || config.type === "sse") return `${config.type} ${redactSecrets(config.url)}`;
  const command = config.command === process.execPath ? basename(process.execPath) : config.command;
  const cwd = process.cwd() + sep;
  const args = (config.args ?? []).map((arg) => (arg.startsWith(cwd) ? relative(process.cwd(), arg) : arg));
  return `stdio ${shellJoin([command, ...args])}`;
}

const shellJoin = (words) => words.map(quote).join(" ");
const quote = (word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);
