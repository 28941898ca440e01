// Issue 8: the fault-injection matrix. Each case breaks one server (real processes and
// 127.0.0.1 servers) and asserts the precise error of SPEC §2–§4/§9, that nothing hangs
// (every await is raced against a bound), that the host survives, that other requests on
// the same transport and other transports keep working, and (after each case) that no
// process it spawned is left behind, zombie or orphan.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { alive, fixture, init, native, server, sleep } from "./helpers";
import { marked, mib, rssBytes, stillThere, zombieChildren, type Proc } from "./proc";

type Stdio = import("../index.js").StdioTransport;
type Http = import("../index.js").HttpTransport;
type AnyTransport = Stdio | Http;

const faultStdio = fixture("fault-stdio.mjs");
/** Every server this file spawns carries it in its argv and (inherited by grandchildren) its env. */
const MARK = `mcp-native-fault-${randomUUID()}`;
/** The default bound on each await (a few big transfers get more): a fault must never leave a caller hanging. */
const BOUND = 10_000;

// ---- bounded awaits ----

type Outcome<T> = { ok: true; value: T } | { ok: false; error: any };

async function settle<T>(promise: Promise<T>, ms = BOUND, what = "the call"): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((r) => (timer = setTimeout(() => r("hung"), ms)));
  const outcome = await Promise.race([
    promise.then(
      (value) => ({ ok: true as const, value }),
      (error) => ({ ok: false as const, error }),
    ),
    hung,
  ]);
  clearTimeout(timer);
  if (outcome === "hung") throw new Error(`${what} did not settle within ${ms} ms`);
  return outcome;
}

async function resolved<T>(promise: Promise<T>, ms = BOUND, what?: string): Promise<T> {
  const outcome = await settle(promise, ms, what);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

async function rejected(promise: Promise<unknown>, ms = BOUND, what?: string): Promise<any> {
  const outcome = await settle(promise, ms, what);
  if (outcome.ok) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(Error); // E1
  return outcome.error;
}

/** Marks a promise that is awaited later as handled now, so that its rejection is not "unhandled" meanwhile. */
function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

async function until(check: () => boolean | Promise<boolean>, ms = BOUND, what = "the condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms`);
    await sleep(20);
  }
}

// ---- transports, processes, cleanup ----

const opened: AnyTransport[] = [];
const spawned = new Map<string, Proc>(); // pid:start → the process, while it was alive

function noteProcesses() {
  for (const p of marked(MARK)) spawned.set(`${p.pid}:${p.start}`, p);
}

afterEach(async () => {
  const closing = opened.splice(0).map((t) => settle(t.close(), BOUND, "close()"));
  for (const outcome of await Promise.all(closing)) expect(outcome.ok).toBe(true);
  // Hygiene: every process of the case is gone (not even a zombie), and nothing of ours is
  // still unreaped. Reparented grandchildren are reaped by init, hence the short wait.
  const seen = [...spawned.values()];
  spawned.clear();
  await until(() => stillThere(seen).length === 0 && marked(MARK).length === 0, 5000, "the servers' exit").catch(() => {});
  expect(stillThere(seen)).toEqual([]);
  expect(marked(MARK)).toEqual([]);
  expect(zombieChildren()).toEqual([]);
});

async function openStdio(script: string, args: string[] = [], config: Record<string, unknown> = {}): Promise<Stdio> {
  const t = await resolved(
    native.createStdioTransport({ command: process.execPath, args: [script, ...args, `--mark=${MARK}`], env: { MCP_NATIVE_FAULT_MARK: MARK }, ...config }),
  );
  opened.push(t);
  await resolved(t.request("initialize", init));
  noteProcesses();
  expect([...spawned.values()].some((p) => p.pid === t.pid)).toBe(true); // the scan sees our servers
  return t;
}

async function openHttp(url: string, config: Record<string, unknown> = {}): Promise<Http> {
  const t = await resolved(native.createHttpTransport({ type: "http", url, ...config } as any));
  opened.push(t);
  return t;
}

type ToolResult = { content: { text: string }[] };
const call = (t: AnyTransport, name: string, args: Record<string, unknown> = {}, options?: { signal?: AbortSignal }) =>
  t.request<ToolResult>("tools/call", { name, arguments: args }, options).then((r) => r.content[0].text);

/** Another transport, untouched by the fault: it must keep answering. */
async function expectHealthy(...peers: AnyTransport[]) {
  for (const peer of peers) {
    if (peer instanceof native.HttpTransport) expect(await resolved(peer.request("echo", { still: "here" }))).toEqual({ echo: { still: "here" } });
    else expect(await resolved(call(peer, "echo", { text: "still here" }))).toBe("still here");
  }
}

function closeCounter(t: AnyTransport) {
  const counter = { closes: 0 };
  t.onClose = () => counter.closes++;
  return counter;
}

function recordErrors(t: AnyTransport) {
  const errors: string[] = [];
  t.onError = (e) => errors.push(e.message);
  return errors;
}

const figures = (line: string) => console.info(`[figures] ${line}`);

// ---- stdio ----

describe("stdio faults", () => {
  it("SIGKILL mid-request: every pending request rejects 'MCP subprocess closed stdout before responding' (A49: a signal leaves no exit code), onClose fires once, the peer is unaffected", async () => {
    const t = await openStdio(server, ["--grandchild"]);
    const peer = await openStdio(server);
    expect(marked(MARK).filter((p) => p.ppid === t.pid)).toHaveLength(1); // the grandchild, for afterEach to find gone
    const counter = closeCounter(t);
    const peerInFlight = later(call(peer, "slow", { ms: 300 }));
    const pending = [...Array.from({ length: 5 }, () => call(t, "never")), call(t, "slow", { ms: 5000 })].map(later);
    await sleep(100);
    process.kill(t.pid!, "SIGKILL");
    for (const p of pending) {
      const error = await rejected(p);
      expect(error.message).toBe("MCP subprocess closed stdout before responding");
      expect(typeof error.stderr).toBe("string");
    }
    await until(() => counter.closes === 1, BOUND, "onClose");
    expect(t.connected).toBe(false);
    expect((await rejected(call(t, "echo"))).message).toBe("Transport not connected");
    await resolved(t.close());
    expect(counter.closes).toBe(1);
    expect(await resolved(peerInFlight)).toBe("slow done");
    await expectHealthy(peer);
  });

  it("SIGSTOP: requests time out with 'Request timeout after 300ms'; close() still completes and the group is gone", async () => {
    const t = await openStdio(server, ["--grandchild"], { timeout: 300 });
    const peer = await openStdio(server);
    const counter = closeCounter(t);
    const pid = t.pid!;
    const peerInFlight = later(call(peer, "slow", { ms: 500 }));
    process.kill(pid, "SIGSTOP");
    const started = Date.now();
    const errors = await Promise.all([call(t, "echo", { text: "a" }), call(t, "never"), t.request("ping")].map((p) => rejected(p)));
    for (const error of errors) expect(error.message).toBe("Request timeout after 300ms");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(t.connected).toBe(true); // stopped is not dead
    const closing = Date.now();
    await resolved(t.close());
    // The SIGTERM stays pending on a stopped process: only the SIGKILL after the 2 s grace ends it.
    expect(Date.now() - closing).toBeLessThan(5000);
    expect(counter.closes).toBe(1);
    expect(alive(pid)).toBe(false);
    expect(await resolved(peerInFlight)).toBe("slow done");
    await expectHealthy(peer);
  });

  it("stdout closed while the process lives on (and ignores SIGTERM): 'MCP subprocess closed stdout before responding' (A49), then the process is killed", async () => {
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const counter = closeCounter(t);
    const pid = t.pid!;
    const hanging = later(call(t, "hang"));
    const closer = later(call(t, "close_stdout", { ignoreTerm: true }));
    expect((await rejected(hanging)).message).toBe("MCP subprocess closed stdout before responding");
    expect((await rejected(closer)).message).toBe("MCP subprocess closed stdout before responding");
    await until(() => counter.closes === 1, BOUND, "onClose");
    await until(() => !alive(pid), 5000, "the SIGKILL after the grace period");
    await expectHealthy(peer);
  });

  it("partial line then exit: A49's exit message with the stderr tail; the cut frame is dropped silently", async () => {
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    const notes: string[] = [];
    t.onNotification = (m) => notes.push(m);
    const hanging = later(call(t, "hang"));
    const cut = await rejected(call(t, "partial_then_exit"));
    expect(cut.message).toMatch(/^MCP subprocess exited with code \d+ before responding$/);
    expect(cut.stderr).toContain("fault: cut off mid-line");
    expect((await rejected(hanging)).message).toBe(cut.message);
    expect(notes).toEqual([]);
    expect(errors).toEqual([]);
    await expectHealthy(peer);
  });

  it("invalid UTF-8: a line that is not UTF-8 is skipped (S3) and the stream goes on; an answer in such a line never arrives", async () => {
    const t = await openStdio(faultStdio, [], { timeout: 500 });
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    const notes: unknown[] = [];
    t.onNotification = (m, p) => notes.push([m, p]);
    expect(await resolved(call(t, "invalid_utf8"))).toMatch(/^answered \d+$/);
    expect(notes).toEqual([["notifications/good", { s: "héllo ✓ 🎉" }]]);
    expect((await rejected(call(t, "invalid_utf8_answer"))).message).toBe("Request timeout after 500ms");
    expect(errors).toEqual([]);
    expect(await resolved(call(t, "echo", { text: "ünïcode" }))).toBe("ünïcode");
    await expectHealthy(peer);
  });

  it("a 100 MB line with the default maxMessageBytes (64 MiB): one onError report, the answer after it arrives", async () => {
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    const notes: string[] = [];
    t.onNotification = (m) => notes.push(m);
    const alongside = later(call(t, "slow", { ms: 100, text: "alongside" }));
    const started = Date.now();
    expect(await resolved(call(t, "big_line", { bytes: 100_000_000 }), 30_000)).toBe("after the big line");
    figures(`100 MB line discarded in ${Date.now() - started} ms`);
    expect(errors).toEqual([`Discarded an incoming message larger than maxMessageBytes (${64 << 20} bytes)`]);
    expect(notes).toEqual([]);
    expect(await resolved(alongside)).toBe("alongside");
    expect(await resolved(call(t, "echo", { text: "usable" }))).toBe("usable");
    await expectHealthy(peer);
  });

  it("a line that never ends: while 200 MB stream in, RSS grows by less than maxMessageBytes + 48 MiB; close() ends it", async () => {
    const limit = 64 << 20;
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    let stderr = "";
    t.onStderr = (chunk) => (stderr += chunk);
    const before = rssBytes();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes())), 25);
    const endless = later(call(t, "endless", { bytes: 200_000_000 }));
    try {
      // The fixture writes synchronously into the pipe: when it says so, we have read it all.
      await until(() => stderr.includes("streamed 200000000"), 30_000, "200 MB streamed");
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssBytes());
    figures(`endless line: 200 MB read, RSS ${mib(before)} → peak ${mib(peak)} MiB (+${mib(peak - before)} MiB)`);
    expect(peak - before).toBeLessThan(limit + (48 << 20));
    expect(errors).toEqual([`Discarded an incoming message larger than maxMessageBytes (${limit} bytes)`]);
    await resolved(t.close());
    expect((await rejected(endless)).message).toBe("Transport closed");
    await expectHealthy(peer);
  });

  it("a 100 000-notification flood: all delivered in order before the answer (T3); a request made during it answers", async () => {
    const count = 100_000;
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const seqs: number[] = [];
    t.onNotification = (_m, p: any) => seqs.push(p.seq);
    const started = Date.now();
    let atAnswer = -1;
    const flood = later(call(t, "flood", { count, pauseMs: 10 }).then((r) => ((atAnswer = seqs.length), r)));
    await until(() => seqs.length > 0, BOUND, "the first notification");
    let duringFlood = -1;
    expect(await resolved(call(t, "echo", { text: "mid-flood" }).then((r) => ((duringFlood = seqs.length), r)))).toBe("mid-flood");
    expect(await resolved(flood, 30_000)).toBe(`flooded ${count}`);
    figures(`100 000 notifications in ${Date.now() - started} ms; the mid-flood request answered after ${duringFlood}`);
    expect(duringFlood).toBeLessThan(count);
    expect(atAnswer).toBe(count);
    expect(seqs.length).toBe(count);
    expect(seqs.every((seq, i) => seq === i)).toBe(true);
    await expectHealthy(t, peer);
  });

  it("a storm of server→client requests: 10 000 pings and 2 000 roots/list, every one answered", async () => {
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    t.onRequest = (method, params: any) => ({ roots: [{ uri: `file:///root/${params.n}` }], method });
    const started = Date.now();
    const pings = later(call(t, "ping_storm", { count: 10_000 }));
    const roots = later(call(t, "roots_storm", { count: 2_000 }));
    expect(await resolved(call(t, "echo", { text: "during the storm" }))).toBe("during the storm");
    expect(await resolved(pings, 30_000)).toBe("10000");
    expect(await resolved(roots, 30_000)).toBe("2000");
    figures(`10 000 server pings + 2 000 roots/list answered in ${Date.now() - started} ms`);
    await expectHealthy(t, peer);
  });

  it("the host aborts 10 000 requests: each rejects with its own reason, the server gets 10 000 notifications/cancelled", async () => {
    const count = 10_000;
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const stats = async () => JSON.parse(await call(t, "stats")) as { hanging: number[]; cancelled: [number, string][] };
    const inFlight = later(call(t, "slow", { ms: 1000, text: "unaffected" }));
    const controllers = Array.from({ length: count }, () => new AbortController());
    const requests = controllers.map((c) => call(t, "hang", {}, { signal: c.signal }).then(
      () => "resolved",
      (e) => e,
    ));
    await until(async () => (await stats()).hanging.length === count, 20_000, "all requests at the server");
    const started = Date.now();
    const reasons = controllers.map((c, i) => {
      const reason = new Error(`abort ${i}`);
      c.abort(reason);
      return reason;
    });
    const outcomes = await resolved(Promise.all(requests));
    figures(`10 000 aborts settled in ${Date.now() - started} ms`);
    expect(outcomes.every((e, i) => e === reasons[i])).toBe(true);
    await until(async () => (await stats()).cancelled.length === count, 20_000, "10 000 notifications/cancelled");
    const { hanging, cancelled } = await stats();
    expect(new Set(cancelled.map(([id]) => id))).toEqual(new Set(hanging));
    const reasonOf = new Map(cancelled);
    expect(hanging.every((id, i) => reasonOf.get(id) === `abort ${i}`)).toBe(true);
    expect(await resolved(inFlight)).toBe("unaffected");
    await expectHealthy(t, peer);
  });

  // S7/S6/E1: a notify whose frame is still queued (the server stopped reading, the pipe is
  // full) must settle when the transport goes away, like the requests queued with it.
  it("notifies queued behind a full pipe reject when the server is killed", async () => {
    const t = await openStdio(server);
    const peer = await openStdio(server);
    process.kill(t.pid!, "SIGSTOP");
    const big = "b".repeat(4 << 20);
    // The first frame is half written when the pipe breaks; the others wait behind it.
    const writing = later(t.notify("notifications/message", { big }));
    const request = later(t.request("ping", { big }));
    const queued = later(t.notify("notifications/message", { big }));
    await sleep(200);
    process.kill(t.pid!, "SIGKILL");
    // A49 when the end of stdout is seen first; `Transport closed` when A13's broken notify
    // closed the transport first.
    const gone = /^(MCP subprocess closed stdout before responding|Transport closed|Failed to write to MCP server: Broken pipe.*)$/;
    expect((await rejected(request)).message).toMatch(gone);
    // A13: a notify that met the broken pipe says so, and closes the transport.
    const notifyGone = /^(MCP subprocess closed stdout before responding|Transport closed|Transport closed while sending notification "notifications\/message")$/;
    const outcomes = await Promise.all([
      settle(writing, 5000, "the notify being written").catch((e) => e),
      settle(queued, 5000, "the notify queued").catch((e) => e),
    ]);
    expect(outcomes.map((o) => (o instanceof Error ? o.message : o.ok ? "resolved" : o.error.message))).toEqual([
      expect.stringMatching(notifyGone),
      expect.stringMatching(notifyGone),
    ]);
    await expectHealthy(peer);
  });

  it("a notify queued behind a full pipe rejects 'Transport closed' when close() is called", async () => {
    const t = await openStdio(server);
    const peer = await openStdio(server);
    process.kill(t.pid!, "SIGSTOP");
    const notify = later(t.notify("notifications/message", { big: "b".repeat(4 << 20) }));
    await sleep(200);
    await resolved(t.close());
    expect((await rejected(notify, 5000, "the queued notify")).message).toBe("Transport closed");
    await expectHealthy(peer);
  });

  it("answers with the wrong id are ignored (T5, no onError): the right answer resolves, or the timeout fires", async () => {
    const t = await openStdio(faultStdio, [], { timeout: 400 });
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    expect(await resolved(call(t, "wrong_id"))).toBe("right id");
    expect((await rejected(call(t, "wrong_id_only"))).message).toBe("Request timeout after 400ms");
    expect(errors).toEqual([]);
    expect(await resolved(call(t, "echo", { text: "next" }))).toBe("next");
    await expectHealthy(peer);
  });

  it("duplicate responses for one id: the first wins, a late copy does not touch the next request", async () => {
    const t = await openStdio(faultStdio);
    const peer = await openStdio(server);
    const errors = recordErrors(t);
    expect(await resolved(call(t, "duplicate", { lateMs: 100 }))).toBe("first");
    // Pending while the late copy (100 ms) arrives.
    expect(await resolved(call(t, "slow", { ms: 300, text: "mine" }))).toBe("mine");
    expect(errors).toEqual([]);
    expect(await resolved(call(t, "echo", { text: "next" }))).toBe("next");
    await expectHealthy(peer);
  });
});

// ---- HTTP ----

describe("HTTP faults", () => {
  let httpServer: ChildProcess;
  let url = "";
  let silentUrl = "";

  beforeAll(async () => {
    httpServer = spawn(process.execPath, [fixture("fault-http.mjs")], { stdio: ["pipe", "pipe", "inherit"] });
    const ports = await resolved(
      new Promise<{ port: number; silentPort: number }>((resolve, reject) => {
        httpServer.stdout!.once("data", (d) => resolve(JSON.parse(String(d))));
        httpServer.once("exit", (code) => reject(new Error(`fault-http.mjs exited ${code}`)));
      }),
    );
    url = `http://127.0.0.1:${ports.port}/mcp`;
    silentUrl = `http://127.0.0.1:${ports.silentPort}/mcp`;
  });
  afterAll(() => {
    httpServer.kill("SIGKILL");
  });

  it("connection reset mid-SSE: that request rejects with the network error (ECONNRESET); others on the transport go on", async () => {
    const t = await openHttp(url, { timeout: 5000 });
    const peer = await openHttp(url);
    const stdioPeer = await openStdio(server);
    const notes: unknown[] = [];
    t.onNotification = (_m, p: any) => notes.push(p.data);
    const inFlight = later(t.request("hold", { ms: 300 }));
    const reset = await rejected(t.request("reset_mid_sse"));
    expect(reset.message).toMatch(new RegExp(`^fetch failed: ${url}: Connection reset by peer`));
    expect(reset.message).not.toContain("os error");
    expect(reset.code).toBe("ECONNRESET");
    expect(notes).toEqual(["before the cut"]);
    // A FIN in the middle of a chunked body is a truncated body, not a clean end of stream.
    const cut = await rejected(t.request("close_mid_sse"));
    expect(cut.message.startsWith(`fetch failed: ${url}: `)).toBe(true);
    expect(await resolved(inFlight)).toEqual({ held: 300 });
    expect(t.connected).toBe(true);
    await expectHealthy(t, peer, stdioPeer);
  });

  it("a server that accepts and never answers: 'Request timeout after 300ms', 'Notify timeout after 300ms'; close() completes", async () => {
    const t = await openHttp(silentUrl, { timeout: 300 });
    const peer = await openHttp(url);
    const silent = async () => (await peer.request<{ silentOpen: number }>("stats")).silentOpen;
    const openBefore = await silent();
    const counter = closeCounter(t);
    const peerInFlight = later(peer.request("hold", { ms: 400 }));
    const errors = await Promise.all([t.request("initialize", init), t.request("echo"), t.request("echo")].map((p) => rejected(p)));
    for (const error of errors) expect(error.message).toBe("Request timeout after 300ms");
    expect((await rejected(t.notify("notifications/initialized"))).message).toBe("Notify timeout after 300ms");
    await resolved(t.close());
    expect(counter.closes).toBe(1);
    expect(await resolved(peerInFlight)).toEqual({ held: 400 });
    // T7/E4: the timed-out exchanges dropped their connections.
    await until(async () => (await silent()) === openBefore, 5000, "the silent server's sockets to close");
    await expectHealthy(peer);
  });

  // H9/E4: close() must release every exchange in flight, not only requests: a notify, and
  // the best-effort notifications/cancelled of an aborted request, both held by a server
  // that never answers (timeout 0, so no timer would ever end them).
  it("H9/E4/A48: a notify and a cancellation in flight at close() are dropped: the notify rejects with the close's AbortError, no socket stays open", async () => {
    const t = await openHttp(silentUrl, { timeout: 0 });
    const peer = await openHttp(url);
    const silent = async () => await peer.request<{ silentOpen: number; silentSeen: number }>("stats");
    const before = await silent();
    const request = later(t.request("echo"));
    const notify = later(t.notify("notifications/initialized"));
    const controller = new AbortController();
    const aborted = later(t.request("echo", {}, { signal: controller.signal }));
    await until(async () => (await silent()).silentOpen === before.silentOpen + 3, 5000, "three exchanges to connect");
    controller.abort(new Error("never mind"));
    expect((await rejected(aborted)).message).toBe("never mind");
    // The aborted exchange is dropped (T8) and its notifications/cancelled takes its place.
    await until(async () => {
      const now = await silent();
      return now.silentSeen === before.silentSeen + 4 && now.silentOpen === before.silentOpen + 3;
    }, 5000, "the cancellation to connect");
    await resolved(t.close());
    expect((await rejected(request)).message).toBe("MCP HTTP transport closed");
    const dropped = await rejected(notify, 5000, "the notify in flight at close()");
    expect([dropped.name, dropped.message]).toEqual(["AbortError", "MCP HTTP transport closed"]);
    await until(async () => (await silent()).silentOpen === before.silentOpen, 5000, "the silent server's sockets to close");
    await expectHealthy(peer);
  });

  it("slow-loris SSE (one byte per 100 ms): the answer arrives within the timeout; the request's one deadline fires otherwise (T7, A50)", async () => {
    const patient = await openHttp(url, { timeout: 9000 });
    const impatient = await openHttp(url, { timeout: 1500 });
    const peer = await openHttp(url);
    const started = Date.now();
    const [slow, cut] = await Promise.all([resolved(patient.request("slowloris", { ms: 100 })), rejected(impatient.request("slowloris", { ms: 100 }))]);
    figures(`slow-loris answer (~43 bytes at 100 ms each) after ${Date.now() - started} ms`);
    expect(slow).toEqual({});
    // One total deadline (A50): bytes trickling in do not extend it.
    expect(cut.message).toBe("Request timeout after 1500ms");
    await expectHealthy(patient, impatient, peer);
  });

  it("5xx bursts: each request of the burst rejects 'HTTP <status>: <body>' with status; later requests succeed", async () => {
    const t = await openHttp(url);
    const stdioPeer = await openStdio(server);
    for (const status of [500, 502, 503]) {
      await resolved(t.request("burst", { count: 20, status }));
      const errors = await Promise.all([
        ...Array.from({ length: 19 }, (_, i) => t.request("echo", { i })),
        t.notify("notifications/initialized"),
      ].map((p) => rejected(p)));
      for (const error of errors) {
        expect(error.message).toMatch(new RegExp(`^HTTP ${status}: overloaded \\(\\d+ to go\\)$`));
        expect(error.status).toBe(status);
      }
      const after = await resolved(Promise.all(Array.from({ length: 20 }, (_, i) => t.request("echo", { i }))));
      expect(after).toEqual(Array.from({ length: 20 }, (_, i) => ({ echo: { i } })));
    }
    await expectHealthy(t, stdioPeer);
  });

  it("answers with the wrong id on a stream are ignored: the right one resolves; without it 'No response received for request ID <id>'; A18: a JSON body is the answer whatever its id", async () => {
    const t = await openHttp(url, { timeout: 5000 });
    const errors = recordErrors(t);
    expect(await resolved(t.request("sse_wrong_id"))).toEqual({ right: true });
    const sseOnly = await rejected(t.request("sse_wrong_id", { only: true }));
    expect(sseOnly.message).toMatch(/^No response received for request ID \d+$/);
    expect(await resolved(t.request("json_wrong_id"))).toEqual({ wrong: true });
    expect(errors).toEqual([]);
    await expectHealthy(t);
  });

  it("duplicate responses in one SSE stream: the first wins; the next request is unaffected", async () => {
    const t = await openHttp(url);
    const errors = recordErrors(t);
    expect(await resolved(t.request("sse_duplicate"))).toEqual({ copy: "first" });
    expect(errors).toEqual([]);
    await expectHealthy(t);
  });
});
