// `node bench/flood.mjs [floods]`: the bench server floods 100 000 notifications at a stdio
// transport, `floods` times (5); prints notifications/s and the event loop's worst stall
// (perf_hooks) per flood. Runs under Bun as well: `bun bench/flood.mjs`.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
execFileSync("cargo", ["build", "--release", "--quiet", "-p", "mcp-native-bench-server"], { cwd: root, stdio: "inherit" });
const { createStdioTransport } = createRequire(import.meta.url)(join(root, "index.js"));
const floods = Number(process.argv[2] ?? 5);

const t = await createStdioTransport({ command: join(root, "target", "release", "bench-server") });
await t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "flood", version: "1" } });
let seen = 0;
t.onNotification = () => seen++;
for (let flood = 0; flood < floods; flood++) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const before = seen;
  const started = performance.now();
  await t.request("tools/call", { name: "notify", arguments: { count: 100_000 } });
  const ms = performance.now() - started;
  delay.disable();
  console.log(`flood ${flood + 1}: ${Math.round(((seen - before) / ms) * 1000)} notifications/s, worst stall ${(delay.max / 1e6).toFixed(1)} ms`);
}
await t.close();
