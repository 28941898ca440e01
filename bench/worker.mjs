// One measurement: `worker.mjs <contender> <workload> <json settings>` prints one JSON line.
// Runs under Node or Bun; each (contender, workload, round) gets a fresh process.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";

const [contenderName, workload, settingsText] = process.argv.slice(2);
// `fast-<workload>`: the same workload against a server that keeps its CPU awake between
// messages (`bench-server stdio --spin`), so round trips run in the warm-CPU regime.
const fastServer = workload.startsWith("fast-");
const kind = fastServer ? workload.slice("fast-".length) : workload;
const settings = JSON.parse(settingsText);
const contender = await import(`./contenders/${contenderName.replace(/-.*$/, "")}.mjs`);
const now = () => Number(process.hrtime.bigint()) / 1e6; // ms

/**
 * Event-loop delay: perf_hooks' histogram where the runtime has it, else a 1 ms timer's
 * lateness. Either way the gap still open at the stop counts too: the histogram only
 * records a delay once its timer fires again, so a flood that ends in one long block (Bun's
 * `data` events do, 5–11 ms for raw-bun) would otherwise not show at all.
 */
function loopDelay() {
  let intervalMax = 0;
  let last = now();
  const timer = setInterval(() => {
    const t = now();
    intervalMax = Math.max(intervalMax, t - last - 1);
    last = t;
  }, 1);
  let histogram;
  try {
    histogram = monitorEventLoopDelay({ resolution: 1 });
    histogram.enable();
  } catch {
    histogram = undefined;
  }
  return {
    stop: () => {
      const open = Math.max(0, now() - last - 1);
      clearInterval(timer);
      histogram?.disable();
      const sampled = histogram ? histogram.max / 1e6 : intervalMax;
      return { max: Math.max(sampled, open), open };
    },
    method: histogram ? "monitorEventLoopDelay" : "interval",
  };
}

/** The bench server over HTTP; `tls`: over https with the run's test certificate, HTTP/2
 * offered too when `tls === "h2"`. */
async function startHttpServer(sse, tls) {
  const tlsArgs = tls ? ["--tls", settings.tls.cert, settings.tls.key, ...(tls === "h2" ? ["--h2"] : [])] : [];
  const child = spawn(settings.server, ["http", ...(sse ? ["--sse"] : []), ...tlsArgs], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await new Promise((resolve) => createInterface({ input: child.stdout }).once("line", (l) => resolve([l])));
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${line.split(" ")[1]}/mcp`, stop: () => child.kill() };
}

/**
 * CPU time spent so far, in µs: the JS thread's (Linux: its schedstat, read from the JS
 * thread itself; NaN elsewhere) and the whole process's (`process.cpuUsage()`: the JS
 * thread, the runtime's and the addon's threads; the server is another process).
 */
function cpuNow() {
  let thread = NaN;
  try {
    thread = Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1000;
  } catch {}
  const usage = process.cpuUsage();
  return { thread, process: usage.user + usage.system };
}

/** CPU per unit of work since `before`: `js_cpu_us` (the JS thread), `cpu_us` (the process). */
function cpuPer(before, count) {
  const after = cpuNow();
  return { js_cpu_us: (after.thread - before.thread) / count, cpu_us: (after.process - before.process) / count };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function sequential(client, count) {
  for (let i = 0; i < settings.warmup; i++) await client.call("echo", { text: "warm" });
  const latencies = [];
  const cpu = cpuNow();
  for (let i = 0; i < count; i++) {
    const t = now();
    await client.call("echo", { text: "hello" });
    latencies.push((now() - t) * 1000);
  }
  const perCall = cpuPer(cpu, count);
  latencies.sort((a, b) => a - b);
  return { p50_us: percentile(latencies, 50), p99_us: percentile(latencies, 99), ...perCall };
}

async function concurrent(client, total, inFlight) {
  for (let i = 0; i < settings.warmup; i++) await client.call("echo", { text: "warm" });
  let started = 0;
  const cpu = cpuNow();
  const t = now();
  const lane = async () => {
    while (started < total) {
      started++;
      await client.call("echo", { text: "hello" });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { calls_per_s: total / ((now() - t) / 1000), ...cpuPer(cpu, total) };
}

async function big(client, bytes, calls) {
  // A fresh process's first large calls pay for its heap and allocator growing; a few calls
  // first, so the median is the steady cost per call.
  for (let i = 0; i < (settings.bigWarmup ?? 1); i++) await client.call("blob", { bytes });
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const delay = loopDelay();
  const times = [];
  let rssPeak = rssBefore;
  for (let i = 0; i < calls; i++) {
    const t = now();
    const result = await client.call("blob", { bytes });
    times.push(now() - t);
    if (result.content[0].text.length !== bytes) throw new Error("short blob");
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
  }
  const loop = delay.stop();
  times.sort((a, b) => a - b);
  return { ms_per_call: percentile(times, 50), loop_max_ms: loop.max, loop_open_ms: loop.open, rss_growth_mb: (rssPeak - rssBefore) / 2 ** 20, loop_probe: delay.method };
}

async function notifications(client, count) {
  let received = 0;
  client.onNotification(() => {
    received++;
  });
  await client.call("notify", { count: 100 });
  received = 0;
  const delay = loopDelay();
  const cpu = cpuNow();
  const t = now();
  await client.call("notify", { count });
  const seconds = (now() - t) / 1000;
  const perNotification = cpuPer(cpu, count);
  const loop = delay.stop();
  if (received !== count) throw new Error(`received ${received} of ${count} notifications`);
  return { notifications_per_s: count / seconds, loop_max_ms: loop.max, loop_open_ms: loop.open, loop_probe: delay.method, ...perNotification };
}

let httpServer;
let result;
const started = now();
try {
  // `https-*`: TLS, HTTP/1.1 only; `h2-*`: TLS, the server offering HTTP/2 too.
  const tls = workload.startsWith("https-") ? "http1" : workload.startsWith("h2-") ? "h2" : undefined;
  if (workload.startsWith("http-") || tls) httpServer = await startHttpServer(workload.startsWith("http-sse"), tls);
  const t = now();
  const serverArgs = fastServer ? ["stdio", "--spin"] : ["stdio"];
  const client = await contender.open({
    server: settings.server,
    serverArgs,
    url: httpServer?.url,
    ca: tls ? settings.tls.ca : undefined,
    stateless: workload.startsWith("http-2026"),
    padded: workload.startsWith("http-padded"),
  });
  const initMs = now() - t;
  switch (kind) {
    case "init":
    case "https-init":
    case "h2-init":
      result = { ms: initMs };
      break;
    case "seq":
    case "http-json-seq":
    case "http-sse-seq":
    case "http-2026-seq":
    case "http-padded-seq":
    case "https-seq":
    case "h2-seq":
      result = await sequential(client, settings.seq);
      break;
    case "conc":
    case "http-json-conc":
    case "http-sse-conc":
    case "http-2026-conc":
    case "http-padded-conc":
    case "https-conc":
    case "h2-conc":
      result = await concurrent(client, settings.conc, settings.inFlight);
      break;
    case "big-1m":
      result = await big(client, 1 << 20, settings.big1mCalls);
      break;
    case "big-10m":
      result = await big(client, 10 << 20, settings.big10mCalls);
      break;
    case "notif":
      result = await notifications(client, settings.notifications);
      break;
    default:
      throw new Error(`unknown workload ${workload}`);
  }
  await client.close();
} catch (error) {
  result = { error: String(error?.message ?? error) };
} finally {
  httpServer?.stop();
}
process.stdout.write(JSON.stringify({ contender: contenderName, workload, wall_ms: now() - started, ...result }) + "\n");
process.exit(0);
