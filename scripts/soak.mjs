#!/usr/bin/env node
// Issue 8 soak test (`npm run soak`; not part of CI): an MCPManager with reconnect on, over
// stdio fixture servers, each under a constant load of concurrent tool calls, while one
// server after another is killed with SIGKILL. Every call is tracked until it settles; a
// call still unsettled at the end is "lost" and fails the run, as does an answer that
// belongs to another call.
//
//   node scripts/soak.mjs [--minutes 10] [--servers 10] [--concurrency 50] [--kill-every 20]
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const require = createRequire(import.meta.url);
const native = require("../index.js");
const fixture = fileURLToPath(new URL("../__test__/fixtures/stdio-server.mjs", import.meta.url));

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    servers: { type: "string", default: "10" },
    concurrency: { type: "string", default: "50" },
    "kill-every": { type: "string", default: "20" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log("usage: node scripts/soak.mjs [--minutes 10] [--servers 10] [--concurrency 50] [--kill-every <seconds, 20>]");
  process.exit(0);
}
const minutes = Number(values.minutes);
const serverCount = Number(values.servers);
const concurrency = Number(values.concurrency);
const killEveryMs = Number(values["kill-every"]) * 1000;
for (const [name, value] of Object.entries({ minutes, servers: serverCount, concurrency, "kill-every": killEveryMs })) {
  if (!(value > 0)) {
    console.error(`soak: --${name} must be a positive number`);
    process.exit(2);
  }
}
const REQUEST_TIMEOUT = 15_000;
// After the run, calls in flight get this long to settle before they count as lost: longer
// than any request timeout, so a call the addon still tracks has settled by then.
const DRAIN_MS = REQUEST_TIMEOUT + 10_000;
// What a worker waits after a failed call (a server being reconnected fails calls at once, M11).
const FAILURE_PAUSE_MS = 50;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes) => (bytes / (1 << 20)).toFixed(1);
const fds = () => readdirSync("/proc/self/fd").length;
const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))[1]);
async function resources() {
  for (let i = 0; i < 2; i++) {
    gc();
    await sleep(100);
  }
  return { fds: fds(), threads: threads(), rss: process.memoryUsage().rss };
}

// Tool names keep only [a-z_] of a server name (M5): letters only, so names stay distinct.
const serverName = (i) => `srv${String.fromCharCode(97 + Math.floor(i / 26))}${String.fromCharCode(97 + (i % 26))}`;
const names = Array.from({ length: serverCount }, (_, i) => serverName(i));

const logged = new Map(); // manager log lines by level
const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const logger = Object.fromEntries(["debug", "info", "warn", "error"].map((level) => [level, () => count(logged, level)]));
const manager = new native.MCPManager(process.cwd(), null, {
  reconnect: { maxAttempts: 10, initialDelayMs: 100, maxDelayMs: 2000 },
  logger,
});
const configs = Object.fromEntries(names.map((name) => [name, { command: process.execPath, args: [fixture], timeout: REQUEST_TIMEOUT }]));
const connectStarted = Date.now();
const loaded = await manager.connectServers(configs, {});
if (loaded.errors.size > 0) {
  console.error("soak: servers failed to connect:", Object.fromEntries(loaded.errors));
  process.exit(1);
}
const connectMs = Date.now() - connectStarted;
const before = await resources();

// ---- the load ----

const stats = { made: 0, succeeded: 0, failed: new Map(), wrong: 0 };
const inFlight = new Map(); // call number → {server, started}
let nextCall = 0;
let running = true;

const toolByName = () => new Map(manager.getTools().map((t) => [t.name, t]));
let tools = toolByName();
// Tool objects survive a reconnect (M10) but are removed when a server gives up: refresh often.
const toolRefresh = setInterval(() => (tools = toolByName()), 250);

function call(server, worker, n) {
  const echo = n % 5 !== 0;
  const tool = tools.get(`mcp_${server}_${echo ? "echo" : "slow"}`);
  const text = `${server}/${worker}/${n}`;
  const expected = echo ? text : "slow done";
  const id = nextCall++;
  stats.made++;
  inFlight.set(id, { server, started: Date.now() });
  const settled = (async () => {
    if (!tool) throw new Error(`no tool for ${server} (server gave up)`);
    const result = await tool.execute(echo ? { text } : { ms: 1 + (n % 30) });
    const got = result?.content?.[0]?.text;
    if (got !== expected) {
      stats.wrong++;
      throw new Error("answer of another call");
    }
  })();
  return settled.then(
    () => {
      stats.succeeded++;
      return true;
    },
    (error) => {
      count(stats.failed, String(error?.message ?? error).split("\n")[0]);
      return false;
    },
  ).finally(() => inFlight.delete(id));
}

async function worker(server, index) {
  for (let n = 0; running; n++) {
    if (!(await call(server, index, n))) await sleep(FAILURE_PAUSE_MS);
  }
}

// ---- the crashes ----

const kills = []; // {server, pid, at, back (ms until connected again with a new pid) | null}
let killIndex = 0;
async function killOne() {
  const server = names[killIndex++ % names.length];
  const pid = manager.getConnection(server)?.transport?.pid;
  if (manager.getConnectionStatus(server) !== "connected" || !pid) return;
  const kill = { server, pid, at: Date.now(), back: null };
  kills.push(kill);
  process.kill(pid, "SIGKILL");
  while (running || Date.now() - kill.at < 20_000) {
    const now = manager.getConnection(server)?.transport?.pid;
    if (manager.getConnectionStatus(server) === "connected" && now && now !== pid) {
      kill.back = Date.now() - kill.at;
      return;
    }
    if (manager.getConnectionStatus(server) === "disconnected") return;
    await sleep(10);
  }
}
const killers = [];
const killTimer = setInterval(() => killers.push(killOne()), killEveryMs);

// ---- run ----

const runMs = minutes * 60_000;
const started = Date.now();
let peakRss = before.rss;
const progress = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  const failed = [...stats.failed.values()].reduce((a, b) => a + b, 0);
  console.error(
    `[${((Date.now() - started) / 1000).toFixed(0)} s] calls ${stats.made}, ok ${stats.succeeded}, failed ${failed}, ` +
      `in flight ${inFlight.size}, kills ${kills.length}, RSS ${mib(process.memoryUsage().rss)} MiB`,
  );
}, 30_000);

console.error(`soak: ${minutes} min, ${serverCount} servers × ${concurrency} concurrent calls, SIGKILL every ${killEveryMs / 1000} s`);
const workers = names.flatMap((server) => Array.from({ length: concurrency }, (_, i) => worker(server, i)));
await sleep(runMs);
running = false;
clearInterval(killTimer);

// Every call is tracked until it settles; what is still in flight after the drain is lost.
const drainStarted = Date.now();
while (inFlight.size > 0 && Date.now() - drainStarted < DRAIN_MS) await sleep(50);
const lost = [...inFlight.values()];
const drainMs = Date.now() - drainStarted;
clearInterval(progress);
clearInterval(toolRefresh);
await Promise.race([Promise.all(killers), sleep(1000)]);
const statusAtEnd = Object.fromEntries(names.map((n) => [n, manager.getConnectionStatus(n)]));
await manager.disconnectAll();
if (lost.length === 0) await Promise.all(workers);
peakRss = Math.max(peakRss, process.memoryUsage().rss);
const after = await resources();

// ---- report ----

const failedTotal = [...stats.failed.values()].reduce((a, b) => a + b, 0);
const back = kills.map((k) => k.back).filter((ms) => ms !== null).sort((a, b) => a - b);
const pct = (p) => (back.length ? back[Math.min(back.length - 1, Math.floor((p / 100) * back.length))] : "-");
const elapsed = (Date.now() - started) / 1000;
const lines = [
  `mcp-native soak: ${minutes} min, ${serverCount} stdio servers × ${concurrency} concurrent tool calls, ` +
    `reconnect {maxAttempts: 10, initialDelayMs: 100, maxDelayMs: 2000}, one SIGKILL every ${killEveryMs / 1000} s`,
  `  connect           ${serverCount} servers in ${connectMs} ms`,
  `  calls made        ${stats.made}  (${Math.round(stats.made / (runMs / 1000))}/s)`,
  `    succeeded       ${stats.succeeded}`,
  `    failed          ${failedTotal}`,
  ...[...stats.failed.entries()].sort((a, b) => b[1] - a[1]).map(([message, n]) => `      ${String(n).padStart(8)}  ${message}`),
  `    lost            ${lost.length}${lost.length ? `  (oldest started ${Math.round((Date.now() - Math.min(...lost.map((l) => l.started))) / 1000)} s ago)` : ""}`,
  `    wrong answers   ${stats.wrong}`,
  `  drain             ${drainMs} ms for the calls in flight at the end`,
  `  kills             ${kills.length}, reconnected ${back.length}; time to connected again: median ${pct(50)} ms, p90 ${pct(90)} ms, max ${back.at(-1) ?? "-"} ms`,
  `  status at end     ${Object.entries(Object.values(statusAtEnd).reduce((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {})).map(([s, n]) => `${n} ${s}`).join(", ")}`,
  `  manager log       ${[...logged.entries()].map(([level, n]) => `${level} ${n}`).join(", ") || "nothing"}`,
  `  fds               ${before.fds} before the load, ${after.fds} after disconnectAll()`,
  `  threads           ${before.threads} before, ${after.threads} after`,
  `  RSS               ${mib(before.rss)} MiB before, ${mib(after.rss)} MiB after, peak ${mib(peakRss)} MiB`,
  `  wall time         ${elapsed.toFixed(0)} s`,
];
console.log(lines.join("\n"));
process.exitCode = lost.length === 0 && stats.wrong === 0 ? 0 : 1;
if (lost.length > 0) setTimeout(() => process.exit(process.exitCode), 100).unref();
