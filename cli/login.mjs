// O7: signing in to OAuth-protected HTTP servers. `login` runs the library's OAuth flow with
// a redirect listener on 127.0.0.1 (or, for a config whose `oauth` names a machine grant,
// with no browser at all) and keeps the tokens in the user's cache directory (a
// FileTokenStore); the other commands use them for servers signed in to.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";
import { FileTokenStore } from "../index.js";
import { splitCommand } from "./args.mjs";
import { CliError, EXIT } from "./errors.mjs";

/** Where the tokens live: `$MCP_NATIVE_TOKENS`, else the platform's cache directory. */
export function tokenStorePath(env = process.env, platform = process.platform, home = homedir()) {
  if (env.MCP_NATIVE_TOKENS) return env.MCP_NATIVE_TOKENS;
  const cache =
    platform === "win32"
      ? env.LOCALAPPDATA ?? join(home, "AppData", "Local")
      : platform === "darwin"
        ? join(home, "Library", "Caches")
        : env.XDG_CACHE_HOME || join(home, ".cache");
  return join(cache, "mcp-native", "tokens.json");
}

export const tokenStore = () => new FileTokenStore(tokenStorePath());

/** The key the library stores a server's credential under: its canonical URL. */
export function credentialKey(url) {
  if (!URL.canParse(url)) return null;
  const parsed = new URL(url);
  parsed.hash = "";
  parsed.search = "";
  const text = parsed.toString();
  return parsed.pathname === "/" ? text.replace(/\/$/, "") : text;
}

export const isHttp = (config) => config.type === "http" || config.type === "sse";

/** O5, SEP-1933, SEP-990: grants that need no browser; the config's own `oauth` is used. */
const MACHINE_GRANTS = new Set(["client_credentials", "jwt_bearer", "enterprise_managed"]);
export const isMachineGrant = (config) => MACHINE_GRANTS.has(config.oauth?.grantType);

/**
 * For a command other than `login`: the stored credential is used (and refreshed) when
 * there is one; a server that wants the user to sign in again says how.
 */
export async function withStoredLogin(config, loginCommand) {
  const key = isHttp(config) ? credentialKey(config.url) : null;
  if (key === null) return config;
  const store = tokenStore();
  // No user to ask: tokens are obtained (and obtained again) as they are needed.
  if (isMachineGrant(config)) return { ...config, oauth: { ...config.oauth, store } };
  if (!(await store.get(key))) return config;
  const redirect = async () => {
    throw new Error(`the sign-in has expired; run \`${loginCommand}\``);
  };
  return { ...config, oauth: { store, redirect } };
}

/**
 * A loopback redirect listener (RFC 8252 §7.3) on 127.0.0.1: `redirect(url)` shows the URL,
 * opens it in a browser, and resolves with the callback URL once the browser comes back.
 */
export async function loopbackLogin({ out, signal, label }) {
  // The authorization under way: only a callback with its `state` completes it, so a stray
  // request (or one from an earlier round) cannot.
  let current = null;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback" || !current || url.searchParams.get("state") !== current.state) {
      res.writeHead(url.pathname === "/callback" ? 400 : 404, { "Content-Type": "text/plain" });
      return res.end(url.pathname === "/callback" ? "no sign-in is waiting for this callback" : "not found");
    }
    const failed = url.searchParams.get("error");
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
    res.end(
      `<!doctype html><meta charset="utf-8"><title>mcp-native</title><p>${
        failed ? "Sign-in failed. You can close this tab." : "Signed in. You can close this tab and return to the terminal."
      }</p>`,
    );
    const { resolve } = current;
    current = null;
    resolve(`http://127.0.0.1:${port}${req.url}`);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const port = server.address().port;
  const redirect = async (authorizationUrl) => {
    const state = new URL(authorizationUrl).searchParams.get("state");
    out.note(`Open this URL in your browser to sign in to ${label}:\n  ${authorizationUrl}`);
    const callback = new Promise((resolve, reject) => {
      current = { state, resolve };
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    openBrowser(authorizationUrl, out);
    const stop = out.progress(`waiting for the browser to finish signing in to ${label}… (Ctrl-C to cancel)`);
    try {
      return await callback;
    } finally {
      stop();
    }
  };
  const close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { redirectUri: `http://127.0.0.1:${port}/callback`, redirect, close };
}

/** `$MCP_NATIVE_BROWSER` (a command line; `none` opens nothing), else the platform's opener. */
function openBrowser(url, out) {
  const configured = process.env.MCP_NATIVE_BROWSER;
  if (configured === "none") return;
  const [command, ...args] = configured
    ? [...splitCommand(configured), url]
    : process.platform === "darwin"
      ? ["open", url]
      : process.platform === "win32"
        ? // Not through cmd, which would read `&` and `%` in the URL.
          ["rundll32", "url.dll,FileProtocolHandler", url]
        : ["xdg-open", url];
  try {
    const child = spawn(command, args, { stdio: "ignore", detached: process.platform !== "win32" });
    child.on("error", () => out.verbose(`could not start ${command}; open the URL yourself`));
    child.unref();
  } catch {
    out.verbose(`could not start ${command}; open the URL yourself`);
  }
}

export function notHttp(command, label) {
  return new CliError(`${command} applies to HTTP servers (--url, or an http/sse server in the config); ${label} is stdio`, EXIT.USAGE);
}
