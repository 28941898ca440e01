// `npm run bench [-- --quick] [-- --out results.json] [-- --rounds N] [-- --workloads a,b]
//   [-- --contenders a,b] [-- --baseline <another checkout, built>]`
// Runs mcp-native side by side with the official SDK and a hand-written raw client (plus a
// second raw run as an A/A noise control), under Node and Bun, in fresh worker processes,
// rounds interleaved in a shuffled order. Ratios are computed per round, then the median.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { makeCa } from "../__test__/fixtures/tls-ca.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const outIndex = argv.indexOf("--out");
const out = outIndex >= 0 ? argv[outIndex + 1] : undefined;
const roundsIndex = argv.indexOf("--rounds");
const rounds = roundsIndex >= 0 ? Number(argv[roundsIndex + 1]) : quick ? 1 : 5;
const onlyIndex = argv.indexOf("--workloads");
const only = onlyIndex >= 0 ? new Set(argv[onlyIndex + 1].split(",")) : undefined;
const contendersIndex = argv.indexOf("--contenders");
const onlyContenders = contendersIndex >= 0 ? new Set(argv[contendersIndex + 1].split(",")) : undefined;
// An A/B: another build of the addon (an older commit's checkout) runs as `native-base`
// (and `native-base-bun`), against the same servers in the same shuffled rounds.
const baselineIndex = argv.indexOf("--baseline");
const baseline = baselineIndex >= 0 ? argv[baselineIndex + 1] : undefined;

const settings = quick
  ? { warmup: 50, seq: 500, conc: 5000, inFlight: 64, bigWarmup: 1, big1mCalls: 3, big10mCalls: 2, notifications: 5000 }
  : { warmup: 200, seq: 2000, conc: 20000, inFlight: 64, bigWarmup: 3, big1mCalls: 20, big10mCalls: 10, notifications: 20000 };

console.error("building the bench server (cargo build --release -p mcp-native-bench-server)…");
execFileSync("cargo", ["build", "--release", "--quiet", "-p", "mcp-native-bench-server"], { cwd: root, stdio: "inherit" });
settings.server = `${root}target/release/bench-server`;
// The TLS workloads' test CA and the 127.0.0.1 certificate it signed (openssl CLI). Ours
// trusts the CA through its `ca` option; every worker of a TLS workload also gets it as
// NODE_EXTRA_CA_CERTS, which is how Node's and Bun's fetch (raw, raw-bun) can trust it.
const ca = makeCa();
settings.tls = { cert: join(ca.dir, "leaf.pem"), key: join(ca.dir, "leaf.key"), ca: ca.caPath };
process.on("exit", () => rmSync(ca.dir, { recursive: true, force: true }));

const bun = `${root}node_modules/.bin/bun`;
const haveBun = existsSync(bun);
// `fast-*`: the same workloads against the server in its spinning mode (the warm-CPU
// regime, where a round trip takes ~10–20 µs instead of ~70 µs on an idle VM).
const stdioWorkloads = ["init", "seq", "conc", "big-1m", "big-10m", "notif", "fast-seq", "fast-conc", "fast-notif"];
const httpWorkloads = ["http-json-seq", "http-json-conc", "http-sse-seq", "http-sse-conc"];
// 2026-07-28 (stateless) over HTTP, for ours and the raw floor (the SDK v1 does not speak
// it). Its envelope and routing headers cost bytes on both sides whatever the client does,
// so ours is held to its own handshake-era calls carrying the same (the `padded` workloads).
const statelessWorkloads = ["http-2026-seq", "http-2026-conc"];
const paddedWorkloads = ["http-padded-seq", "http-padded-conc"];
// Over TLS on 127.0.0.1: the first answer (handshake + initialize), seq and conc, against a
// server offering HTTP/1.1 only (`https-*`) and one offering HTTP/2 as well (`h2-*`: ours
// negotiates it; Node's and Bun's fetch stay on HTTP/1.1).
const tlsWorkloads = ["https-init", "https-seq", "https-conc", "h2-init", "h2-seq", "h2-conc"];
const isTls = (workload) => workload.startsWith("https-") || workload.startsWith("h2-");
const nativeWorkloads = [...stdioWorkloads, ...httpWorkloads, ...statelessWorkloads, ...paddedWorkloads, ...tlsWorkloads];
const baseEnv = baseline ? { MCP_NATIVE_BENCH_ADDON: baseline } : undefined;
const contenders = [
  { name: "native", runtime: process.execPath, workloads: nativeWorkloads },
  ...(baseline ? [{ name: "native-base", runtime: process.execPath, workloads: nativeWorkloads, env: baseEnv }] : []),
  { name: "sdk", runtime: process.execPath, workloads: [...stdioWorkloads, ...httpWorkloads] },
  { name: "raw", runtime: process.execPath, workloads: [...stdioWorkloads, ...httpWorkloads, ...statelessWorkloads, ...tlsWorkloads] },
  { name: "raw-aa", runtime: process.execPath, workloads: [...stdioWorkloads, ...httpWorkloads, ...tlsWorkloads] },
  ...(haveBun
    ? [
        { name: "native-bun", runtime: bun, workloads: nativeWorkloads },
        ...(baseline ? [{ name: "native-base-bun", runtime: bun, workloads: nativeWorkloads, env: baseEnv }] : []),
        { name: "raw-bun", runtime: bun, workloads: [...stdioWorkloads, ...httpWorkloads, ...statelessWorkloads, ...tlsWorkloads] },
        // The A/A control of the Bun HTTP rows: raw-aa (Node's fetch, a few thousand calls/s)
        // barely loads the machine, so its spread says nothing of theirs at ~50 000.
        { name: "raw-aa-bun", runtime: bun, workloads: [...httpWorkloads, ...statelessWorkloads, ...tlsWorkloads] },
      ]
    : []),
].filter((c) => !onlyContenders || onlyContenders.has(c.name));

function runWorker(contender, workload) {
  return new Promise((resolve) => {
    const args = [`${root}bench/worker.mjs`, contender.name, workload, JSON.stringify(settings)];
    // NODE_NO_WARNINGS: the SDK's HTTP client leaks abort listeners (MaxListenersExceededWarning).
    const env = { ...process.env, NODE_NO_WARNINGS: "1", ...contender.env, ...(isTls(workload) && { NODE_EXTRA_CA_CERTS: settings.tls.ca }) };
    const child = spawn(contender.runtime, args, { stdio: ["ignore", "pipe", "inherit"], cwd: root, env });
    let text = "";
    child.stdout.on("data", (d) => (text += d));
    const killer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("exit", () => {
      clearTimeout(killer);
      try {
        resolve(JSON.parse(text.trim().split("\n").pop()));
      } catch {
        resolve({ contender: contender.name, workload, error: `worker printed ${JSON.stringify(text.slice(0, 200))}` });
      }
    });
  });
}

function shuffle(items) {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

const results = []; // {round, contender, workload, ...metrics}
const jobs = contenders.flatMap((c) => c.workloads.filter((w) => !only || only.has(w)).map((w) => [c, w]));
// The runs a ratio compares go back to back, in a shuffled order: every contender of a
// workload, and the 2026-07-28 workloads with the handshake-era ones that carry their bytes.
// Shuffled as one list, the two runs of a ratio were up to minutes apart, and this VM's
// speed drifts over minutes: one round's A/A ratio ranged 0.74–1.66×.
const groupOf = (workload) => workload.replace("padded", "2026");
const groups = new Map();
for (const job of jobs) groups.set(groupOf(job[1]), [...(groups.get(groupOf(job[1])) ?? []), job]);
const startedAt = Date.now();
for (let round = 0; round < rounds; round++) {
  for (const [contender, workload] of shuffle([...groups.values()]).flatMap(shuffle)) {
    const result = await runWorker(contender, workload);
    results.push({ round, ...result });
    if (result.error) console.error(`  round ${round + 1}: ${contender.name} ${workload}: ${result.error}`);
  }
  console.error(`round ${round + 1}/${rounds} done (${((Date.now() - startedAt) / 1000).toFixed(0)} s)`);
}

const median = (values) => {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
const value = (contender, workload, field, round) =>
  results.find((r) => r.contender === contender && r.workload === workload && r.round === round)?.[field];
const medianOf = (contender, workload, field) =>
  median(Array.from({ length: rounds }, (_, round) => value(contender, workload, field, round)));
const perRound = (a, b, workload, field) =>
  Array.from({ length: rounds }, (_, round) => value(a, workload, field, round) / value(b, workload, field, round));
const ratio = (a, b, workload, field) => median(perRound(a, b, workload, field));
// A target's per-round spread: on a noisy machine, how far one round's ratio may land.
const spread = (ratios) => {
  const finite = ratios.filter(Number.isFinite);
  return finite.length > 1 ? `rounds ${fmt(Math.min(...finite))}–${fmt(Math.max(...finite))}×` : "";
};
// The A/A control of a comparison with `b`: the same client as `b`, run again.
const controlOf = { raw: "raw-aa", "raw-bun": "raw-aa-bun" };
// One contender, two workloads of the same round.

// [label, workload, field, unit, better]
const metrics = [
  ["spawn + initialize", "init", "ms", "ms", "lower"],
  ["seq p50", "seq", "p50_us", "µs", "lower"],
  ["seq p99", "seq", "p99_us", "µs", "lower"],
  ["conc (64 in flight)", "conc", "calls_per_s", "calls/s", "higher"],
  ["1 MiB result", "big-1m", "ms_per_call", "ms", "lower"],
  ["10 MiB result", "big-10m", "ms_per_call", "ms", "lower"],
  ["10 MiB event-loop max delay", "big-10m", "loop_max_ms", "ms", "lower"],
  ["RSS growth during 10 MiB", "big-10m", "rss_growth_mb", "MiB", "lower"],
  ["seq: JS-thread CPU per call", "seq", "js_cpu_us", "µs", "lower"],
  ["seq: process CPU per call", "seq", "cpu_us", "µs", "lower"],
  ["conc: JS-thread CPU per call", "conc", "js_cpu_us", "µs", "lower"],
  ["conc: process CPU per call", "conc", "cpu_us", "µs", "lower"],
  ["notifications", "notif", "notifications_per_s", "/s", "higher"],
  ["notifications: JS-thread CPU each", "notif", "js_cpu_us", "µs", "lower"],
  ["notifications: process CPU each", "notif", "cpu_us", "µs", "lower"],
  ["notifications event-loop max delay", "notif", "loop_max_ms", "ms", "lower"],
  ["fast server: seq p50", "fast-seq", "p50_us", "µs", "lower"],
  ["fast server: seq p99", "fast-seq", "p99_us", "µs", "lower"],
  ["fast server: conc (64 in flight)", "fast-conc", "calls_per_s", "calls/s", "higher"],
  ["fast server: notifications", "fast-notif", "notifications_per_s", "/s", "higher"],
  ["fast server: notifications event-loop max delay", "fast-notif", "loop_max_ms", "ms", "lower"],
  ["HTTP JSON seq p50", "http-json-seq", "p50_us", "µs", "lower"],
  ["HTTP JSON conc", "http-json-conc", "calls_per_s", "calls/s", "higher"],
  ["HTTP SSE seq p50", "http-sse-seq", "p50_us", "µs", "lower"],
  ["HTTP SSE conc", "http-sse-conc", "calls_per_s", "calls/s", "higher"],
  ["HTTP 2026-07-28 seq p50", "http-2026-seq", "p50_us", "µs", "lower"],
  ["HTTP 2026-07-28 conc", "http-2026-conc", "calls_per_s", "calls/s", "higher"],
  ["HTTP handshake + 2026 bytes seq p50", "http-padded-seq", "p50_us", "µs", "lower"],
  ["HTTP handshake + 2026 bytes conc", "http-padded-conc", "calls_per_s", "calls/s", "higher"],
  ["HTTPS first answer (TLS + initialize)", "https-init", "ms", "ms", "lower"],
  ["HTTPS seq p50", "https-seq", "p50_us", "µs", "lower"],
  ["HTTPS conc", "https-conc", "calls_per_s", "calls/s", "higher"],
  ["HTTPS, server offers HTTP/2: first answer", "h2-init", "ms", "ms", "lower"],
  ["HTTPS, server offers HTTP/2: seq p50", "h2-seq", "p50_us", "µs", "lower"],
  ["HTTPS, server offers HTTP/2: conc", "h2-conc", "calls_per_s", "calls/s", "higher"],
];

// [label, a, b, workload, field, op, bound]
const targets = [
  ["seq p50 ≤ 1.0× raw", "native", "raw", "seq", "p50_us", "<=", 1.0],
  ["seq p50 ≤ 0.5× sdk", "native", "sdk", "seq", "p50_us", "<=", 0.5],
  ["conc ≥ 1.2× raw", "native", "raw", "conc", "calls_per_s", ">=", 1.2],
  ["10 MiB time ≤ 0.7× raw", "native", "raw", "big-10m", "ms_per_call", "<=", 0.7],
  ["10 MiB loop delay ≤ 0.5× raw", "native", "raw", "big-10m", "loop_max_ms", "<=", 0.5],
  ["notifications/s ≥ 1.0× raw", "native", "raw", "notif", "notifications_per_s", ">=", 1.0],
  // Issue 41: with free cores, the JS thread's cost per call sets throughput.
  ["conc: JS-thread CPU per call ≤ 0.7× raw", "native", "raw", "conc", "js_cpu_us", "<=", 0.7],
  ["conc: process CPU per call ≤ 1.0× raw", "native", "raw", "conc", "cpu_us", "<=", 1.0],
  ["notifications loop delay ≤ 1.0× raw", "native", "raw", "notif", "loop_max_ms", "<=", 1.0],
  ["fast server: seq p50 ≤ 1.0× raw", "native", "raw", "fast-seq", "p50_us", "<=", 1.0],
  ["fast server: conc ≥ 1.2× raw", "native", "raw", "fast-conc", "calls_per_s", ">=", 1.2],
  ["fast server: notifications loop delay ≤ 1.0× raw", "native", "raw", "fast-notif", "loop_max_ms", "<=", 1.0],
  ["HTTP JSON calls/s ≥ 2× sdk", "native", "sdk", "http-json-conc", "calls_per_s", ">=", 2.0],
  ["HTTP SSE calls/s ≥ 2× sdk", "native", "sdk", "http-sse-conc", "calls_per_s", ">=", 2.0],
  ["RSS growth (10 MiB) ≤ raw's", "native", "raw", "big-10m", "rss_growth_mb", "<=", 1.0],
  ["HTTPS first answer ≤ 1.0× raw", "native", "raw", "https-init", "ms", "<=", 1.0],
  ["HTTPS conc ≥ 1.2× raw", "native", "raw", "https-conc", "calls_per_s", ">=", 1.2],
  ["HTTPS (HTTP/2 offered) conc ≥ 1.2× raw", "native", "raw", "h2-conc", "calls_per_s", ">=", 1.2],
  ...(haveBun
    ? [
        ["Bun: seq p50 ≤ 1.0× raw-bun", "native-bun", "raw-bun", "seq", "p50_us", "<=", 1.0],
        ["Bun: conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "conc", "calls_per_s", ">=", 1.2],
        ["Bun: 10 MiB time ≤ 0.7× raw-bun", "native-bun", "raw-bun", "big-10m", "ms_per_call", "<=", 0.7],
        ["Bun: 10 MiB loop delay ≤ 0.5× raw-bun", "native-bun", "raw-bun", "big-10m", "loop_max_ms", "<=", 0.5],
        ["Bun: notifications/s ≥ 1.0× raw-bun", "native-bun", "raw-bun", "notif", "notifications_per_s", ">=", 1.0],
        ["Bun: conc: JS-thread CPU per call ≤ 0.7× raw-bun", "native-bun", "raw-bun", "conc", "js_cpu_us", "<=", 0.7],
        ["Bun: conc: process CPU per call ≤ 1.0× raw-bun", "native-bun", "raw-bun", "conc", "cpu_us", "<=", 1.0],
        ["Bun: notifications loop delay ≤ 1.0× raw-bun", "native-bun", "raw-bun", "notif", "loop_max_ms", "<=", 1.0],
        ["Bun: fast server: seq p50 ≤ 1.0× raw-bun", "native-bun", "raw-bun", "fast-seq", "p50_us", "<=", 1.0],
        ["Bun: fast server: conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "fast-conc", "calls_per_s", ">=", 1.2],
        ["Bun: fast server: notifications loop delay ≤ 1.0× raw-bun", "native-bun", "raw-bun", "fast-notif", "loop_max_ms", "<=", 1.0],
        ["Bun: RSS growth (10 MiB) ≤ raw-bun's", "native-bun", "raw-bun", "big-10m", "rss_growth_mb", "<=", 1.0],
        // Issue 38: Bun's own fetch is the bar for HTTP under Bun.
        ["Bun: HTTP JSON seq p50 ≤ 1.0× raw-bun", "native-bun", "raw-bun", "http-json-seq", "p50_us", "<=", 1.0],
        ["Bun: HTTP JSON conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "http-json-conc", "calls_per_s", ">=", 1.2],
        ["Bun: HTTP SSE seq p50 ≤ 1.0× raw-bun", "native-bun", "raw-bun", "http-sse-seq", "p50_us", "<=", 1.0],
        ["Bun: HTTP SSE conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "http-sse-conc", "calls_per_s", ">=", 1.2],
        ["Bun: HTTP 2026-07-28 seq p50 ≤ 1.0× raw-bun", "native-bun", "raw-bun", "http-2026-seq", "p50_us", "<=", 1.0],
        ["Bun: HTTP 2026-07-28 conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "http-2026-conc", "calls_per_s", ">=", 1.2],
        ["Bun: HTTPS first answer ≤ 1.0× raw-bun", "native-bun", "raw-bun", "https-init", "ms", "<=", 1.0],
        ["Bun: HTTPS conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "https-conc", "calls_per_s", ">=", 1.2],
        ["Bun: HTTPS (HTTP/2 offered) conc ≥ 1.2× raw-bun", "native-bun", "raw-bun", "h2-conc", "calls_per_s", ">=", 1.2],
      ]
    : []),
];

// [label, contender, workload, baseline workload, field, op, bound]: one contender, two
// workloads of the same round.
const eraTargets = [
  ["2026-07-28 seq p50 ≤ 1.1× handshake with its bytes", "native", "http-2026-seq", "http-padded-seq", "p50_us", "<=", 1.1],
  ["2026-07-28 calls/s ≥ 0.9× handshake with its bytes", "native", "http-2026-conc", "http-padded-conc", "calls_per_s", ">=", 0.9],
  ...(haveBun
    ? [
        ["Bun: 2026-07-28 seq p50 ≤ 1.1× handshake with its bytes", "native-bun", "http-2026-seq", "http-padded-seq", "p50_us", "<=", 1.1],
        ["Bun: 2026-07-28 calls/s ≥ 0.9× handshake with its bytes", "native-bun", "http-2026-conc", "http-padded-conc", "calls_per_s", ">=", 0.9],
      ]
    : []),
];

const fmt = (x) => (!Number.isFinite(x) ? "—" : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
const names = contenders.map((c) => c.name);
const abColumns = baseline ? ["native×native-base", ...(haveBun ? ["native-bun×native-base-bun"] : [])] : [];
const bunColumns = haveBun ? ["native-bun×raw-bun", "raw-aa-bun×raw-bun"] : [];
const table = [["metric", "unit", ...names, "native×raw", "native×sdk", "raw-aa×raw", ...bunColumns, ...abColumns]];
const summary = { metrics: {}, targets: [] };
for (const [label, workload, field, unit] of metrics) {
  if (only && !only.has(workload)) continue;
  const medians = Object.fromEntries(names.map((n) => [n, medianOf(n, workload, field)]));
  const ratios = {
    "native×raw": ratio("native", "raw", workload, field),
    "native×sdk": ratio("native", "sdk", workload, field),
    "raw-aa×raw": ratio("raw-aa", "raw", workload, field),
    ...Object.fromEntries(bunColumns.map((column) => [column, ratio(...column.split("×"), workload, field)])),
    ...Object.fromEntries(abColumns.map((column) => [column, ratio(...column.split("×"), workload, field)])),
  };
  summary.metrics[label] = { unit, medians, ratios };
  table.push([label, unit, ...names.map((n) => fmt(medians[n])), ...Object.values(ratios).map((r) => `${fmt(r)}×`)]);
}
for (const [label, a, b, workload, field, op, bound] of targets) {
  if (only && !only.has(workload)) continue;
  // RSS growth compares the medians (a ratio of two near-zero growths means nothing).
  const rss = field === "rss_growth_mb";
  const byRound = rss ? [] : perRound(a, b, workload, field);
  const measured = rss ? medianOf(a, workload, field) - medianOf(b, workload, field) : median(byRound);
  const met = rss ? measured <= 0 : op === "<=" ? measured <= bound : measured >= bound;
  const shown = rss ? `${measured >= 0 ? "+" : ""}${fmt(measured)} MiB vs ${b}` : `${fmt(measured)}×`;
  // The same comparison of the control against `b`, round by round: how far this run's
  // noise alone moves the ratio.
  const control = rss || !controlOf[b] ? [] : perRound(controlOf[b], b, workload, field).filter(Number.isFinite);
  const noise = control.length > 1 ? ` · A/A ${fmt(Math.min(...control))}–${fmt(Math.max(...control))}×` : "";
  summary.targets.push({ label, measured, met, rounds: byRound, ...(control.length > 1 && { control }) });
  table.push([`target: ${label}`, "", shown, met ? "met" : "NOT MET", spread(byRound) + noise]);
}

for (const [label, contender, workload, baseline, field, op, bound] of eraTargets) {
  if (only && !(only.has(workload) && only.has(baseline))) continue;
  const byRound = Array.from(
    { length: rounds },
    (_, round) => value(contender, workload, field, round) / value(contender, baseline, field, round),
  );
  const measured = median(byRound);
  const met = op === "<=" ? measured <= bound : measured >= bound;
  summary.targets.push({ label, measured, met, rounds: byRound });
  table.push([`target: ${label}`, "", `${fmt(measured)}×`, met ? "met" : "NOT MET", spread(byRound)]);
}

const widths = table[0].map((_, i) => Math.max(...table.map((row) => String(row[i] ?? "").length)));
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
console.log(`mcp-native bench — ${new Date().toISOString().slice(0, 10)} — ${machine} — ${rounds} round(s)${quick ? ", --quick" : ""}`);
for (const row of table) console.log(row.map((cell, i) => String(cell ?? "").padEnd(widths[i])).join("  ").trimEnd());
if (out) {
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), machine, rounds, quick, settings, summary, results }, null, 2));
  console.error(`results written to ${out}`);
}
