// Bun smoke run of the main stdio flow (the agent runs on Bun): load, connect, request,
// ordered notifications, server requests, abort, timeout, close, clean exit.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { createStdioTransport } = require("../index.js");
const server = fileURLToPath(new URL("./fixtures/stdio-server.mjs", import.meta.url));
const runtime = typeof Bun === "undefined" ? `node ${process.version}` : `bun ${Bun.version}`;

let passed = 0;
let failed = 0;
async function check(name, body) {
  try {
    await body();
    passed++;
    console.log(`  ok  ${name}`);
  } catch (error) {
    failed++;
    console.log(`  FAIL ${name}: ${error?.stack ?? error}`);
  }
}
function assert(condition, message) {
  if (!condition) throw new Error(message);
}
const text = (result) => result.content[0].text;

console.log(`mcp-native smoke on ${runtime}`);
const t = await createStdioTransport({ command: process.execPath, args: [server], timeout: 2000 });

await check("S1/T2: connect and initialize", async () => {
  assert(t.connected === true, "not connected");
  const init = await t.request("initialize", { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "bun", version: "1" } });
  assert(init.serverInfo.name === "fixture-stdio", JSON.stringify(init));
  await t.notify("notifications/initialized");
});

await check("T3: notifications before the response", async () => {
  const order = [];
  t.onNotification = (_method, params) => order.push(params.data);
  await t.request("tools/call", { name: "notify_then_answer", arguments: { count: 3 } }).then(() => order.push("response"));
  assert(JSON.stringify(order) === JSON.stringify(["n0", "n1", "n2", "response"]), JSON.stringify(order));
});

await check("T4: error responses", async () => {
  const error = await t.request("tools/call", { name: "rpc_error" }).catch((e) => e);
  assert(error instanceof Error && error.message === "MCP error -32042: Custom failure" && error.code === -32042, String(error));
});

await check("T11: onRequest answers server requests", async () => {
  t.onRequest = async (method) => ({ roots: [{ uri: "file:///bun" }], method });
  const answer = JSON.parse(text(await t.request("tools/call", { name: "ask_client", arguments: { method: "roots/list" } })));
  assert(answer.roots[0].uri === "file:///bun", JSON.stringify(answer));
});

await check("T8: abort rejects with the reason", async () => {
  const controller = new AbortController();
  const pending = t.request("tools/call", { name: "never" }, { signal: controller.signal });
  const reason = new Error("bun abort");
  controller.abort(reason);
  assert((await pending.catch((e) => e)) === reason, "wrong rejection");
});

await check("T7: timeout", async () => {
  const error = await t.request("tools/call", { name: "slow", arguments: { ms: 5000 } }).catch((e) => e);
  assert(error.message === "Request timeout after 2000ms", error.message);
});

await check("S6: close fires onClose once and stops the server", async () => {
  let closes = 0;
  t.onClose = () => closes++;
  const pid = t.pid;
  await Promise.all([t.close(), t.close()]);
  assert(closes === 1, `onClose fired ${closes} times`);
  assert(t.connected === false, "still connected");
  let running = true;
  try {
    process.kill(pid, 0);
  } catch {
    running = false;
  }
  assert(!running, "server still running");
  const error = await t.request("ping").catch((e) => e);
  assert(error.message === "Transport not connected", error.message);
});

console.log(`smoke: ${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
