// Issue 8 / E4 / S6 / S8: open/close cycles leak no fds, threads or memory, and no process
// outlives its transport or its host. CYCLES (default 500) sets the number of cycles;
// `CYCLES=10000 npx vitest run __test__/resources.test.ts` is the full leak check.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixture, init, native, server, sleep } from "./helpers";
import { fdCount, marked, mib, rssBytes, stillThere, threadCount, zombieChildren, type Proc } from "./proc";

const CYCLES = Number(process.env.CYCLES ?? 500);
const WARMUP = 50;
// Fixed bounds, whatever CYCLES is, so a longer run catches a finer leak: at 10 000 cycles,
// 3 fds or threads in all, or 3.3 KiB of RSS per cycle over the second half. RSS is judged
// on the second half because the allocator's arenas and V8's heap settle during the first
// thousands of cycles (10 000 stdio cycles: +37 MiB in the first half, +3.5 in the second);
// a leak keeps growing. The whole run gets a looser bound.
const FD_SLACK = 2;
const THREAD_SLACK = 2;
const RSS_SLACK = 16 << 20;
const RSS_TOTAL_SLACK = 64 << 20;
const cycleTimeout = 60_000 + CYCLES * 60;

// Without a collection the V8 heap alone makes RSS wander by tens of MiB. (fds and threads
// are counted before it: E4 wants them released by close(), not by the garbage collector.)
setFlagsFromString("--expose-gc");
const gc: () => void = runInNewContext("gc");
const collect = async () => {
  // Twice, with pauses: napi finalizers run in later ticks.
  for (let i = 0; i < 2; i++) {
    gc();
    await sleep(100);
  }
};

interface Sample {
  fds: number;
  threads: number;
  rss: number;
}
async function sample(): Promise<Sample> {
  await sleep(100); // a closed socket's or pipe's last event
  const fds = fdCount();
  const threads = threadCount();
  await collect();
  return { fds, threads, rss: rssBytes() };
}

async function measure(label: string, cycle: (i: number) => Promise<void>) {
  for (let i = 0; i < WARMUP; i++) await cycle(i);
  const before = await sample();
  const started = Date.now();
  let half: Sample | undefined;
  for (let i = 0; i < CYCLES; i++) {
    await cycle(i);
    if (i === Math.floor(CYCLES / 2)) half = await sample();
  }
  const ms = Date.now() - started;
  const after = await sample();
  console.info(
    `[figures] ${label}: ${CYCLES} cycles in ${(ms / 1000).toFixed(1)} s (${(ms / CYCLES).toFixed(2)} ms each); ` +
      `fds ${before.fds} → ${half!.fds} → ${after.fds}; threads ${before.threads} → ${half!.threads} → ${after.threads}; ` +
      `RSS ${mib(before.rss)} → ${mib(half!.rss)} → ${mib(after.rss)} MiB`,
  );
  expect(after.fds - before.fds, `${label}: fds still open after ${CYCLES} closed transports`).toBeLessThanOrEqual(FD_SLACK);
  expect(after.threads - before.threads, `${label}: threads added`).toBeLessThanOrEqual(THREAD_SLACK);
  expect(after.rss - half!.rss, `${label}: RSS growth over the second half, in bytes`).toBeLessThan(RSS_SLACK);
  expect(after.rss - before.rss, `${label}: RSS growth in bytes`).toBeLessThan(RSS_TOTAL_SLACK);
}

describe("E4 open/close cycles", () => {
  it(`StdioTransport: ${CYCLES} cycles (spawn, one round trip, close) keep fds, threads and RSS flat`, { timeout: cycleTimeout }, async () => {
    // `cat` is the cheapest real server: it sends every frame back, so a notification makes
    // a full round trip through both pipes and the JS callback.
    await measure("stdio", async (i) => {
      const t = await native.createStdioTransport({ command: "cat" });
      t.onClose = () => {};
      const echoed = new Promise<unknown>((resolve) => (t.onNotification = (_m, params) => resolve(params)));
      await t.notify("notifications/cycle", { i });
      expect(await echoed).toEqual({ i });
      await t.close();
    });
    expect(zombieChildren()).toEqual([]);
  });

  describe("HttpTransport", () => {
    let httpServer: ChildProcess;
    let url = "";
    beforeAll(async () => {
      httpServer = spawn(process.execPath, [fixture("fault-http.mjs"), "--session"], { stdio: ["pipe", "pipe", "inherit"] });
      const { port } = await new Promise<{ port: number }>((resolve, reject) => {
        httpServer.stdout!.once("data", (d) => resolve(JSON.parse(String(d))));
        httpServer.once("exit", (code) => reject(new Error(`fault-http.mjs exited ${code}`)));
      });
      url = `http://127.0.0.1:${port}/mcp`;
    });
    afterAll(() => {
      httpServer.kill("SIGKILL");
    });

    it(`HttpTransport: ${CYCLES} cycles (initialize with a session, close with DELETE) keep fds, threads and RSS flat`, { timeout: cycleTimeout }, async () => {
      const stats = async () => {
        const t = await native.createHttpTransport({ type: "http", url });
        const s = await t.request<{ deletes: number }>("stats");
        await t.close();
        return s;
      };
      const deletesBefore = (await stats()).deletes;
      await measure("http", async () => {
        const t = await native.createHttpTransport({ type: "http", url });
        t.onNotification = () => {};
        t.onClose = () => {};
        await t.request("initialize", init);
        expect(t.sessionId).not.toBeNull();
        await t.close();
      });
      // Every close() really ended its session (H9), so every cycle opened and closed a connection.
      expect((await stats()).deletes - deletesBefore).toBe(WARMUP + CYCLES);
    });

    it("E4/H9: close() releases the connection at once, even while the caller still holds the transport", async () => {
      const held: unknown[] = [];
      // Earlier tests' closed transports, once collected, must not make room for these.
      let before = -1;
      for (let i = 0; i < 30 && before !== fdCount(); i++) {
        before = fdCount();
        await collect();
      }
      for (let i = 0; i < 20; i++) {
        const t = await native.createHttpTransport({ type: "http", url });
        await t.request("initialize", init);
        await t.close();
        held.push(t); // a manager's old connection objects, say
      }
      await sleep(300);
      expect(fdCount() - before, "fds of 20 closed (but referenced) transports").toBeLessThanOrEqual(FD_SLACK);
      expect(held).toHaveLength(20);
    });
  });

  it("E4: a closed transport is garbage-collectable even when its callbacks refer to it (stdio and HTTP)", async () => {
    let finalized = 0;
    const registry = new FinalizationRegistry(() => finalized++);
    const count = 40;
    // The usual way to write callbacks: they mention the transport, so transport → callback →
    // transport is a cycle, which the garbage collector frees unless something roots it.
    const openAndClose = async (i: number) => {
      const t =
        i % 2 === 0
          ? await native.createStdioTransport({ command: "cat" })
          : await native.createHttpTransport({ type: "http", url: "http://127.0.0.1:9/mcp" });
      t.onNotification = (method) => void [t.connected, method];
      t.onClose = () => void t.connected;
      t.onError = () => void t.connected;
      registry.register(t, i);
      await t.close();
    };
    for (let i = 0; i < count; i++) await openAndClose(i);
    for (let i = 0; i < 5 && finalized < count; i++) await collect();
    expect(finalized, `closed transports collected, of ${count}`).toBe(count);
  });

  it("E4: large results the caller drops are collected without an explicit GC (40 × 8 MiB, RSS grows < 160 MiB)", { timeout: 60_000 }, async () => {
    const t = await native.createStdioTransport({ command: process.execPath, args: [server] });
    try {
      await t.request("initialize", init);
      const bytes = 8 << 20;
      await t.request("tools/call", { name: "big", arguments: { bytes } });
      await collect();
      const before = rssBytes();
      let peak = before;
      for (let i = 0; i < 40; i++) {
        const result = await t.request<any>("tools/call", { name: "big", arguments: { bytes } });
        expect(result.content[0].text.length).toBe(bytes);
        peak = Math.max(peak, rssBytes());
      }
      console.log(`[figures] 40 × 8 MiB results dropped: RSS ${mib(before)} → peak ${mib(peak)} MiB`);
      // The strings live outside the V8 heap; unless the engine is told what they hold, nothing
      // prompts a collection and all 320 MiB stay.
      expect(peak - before).toBeLessThan(160 << 20);
    } finally {
      await t.close();
    }
  });
});

// ---- process hygiene ----

describe("S6/S8 process hygiene: no zombie or orphan survives a transport or its host", () => {
  const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

  /** All of `seen`, and anything else carrying `mark`, is gone (not even a zombie) within `ms`. */
  async function expectGone(mark: string, seen: Proc[], ms = 6000) {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && (stillThere(seen).length > 0 || marked(mark).length > 0)) await sleep(25);
    expect(stillThere(seen)).toEqual([]);
    expect(marked(mark)).toEqual([]);
    expect(zombieChildren()).toEqual([]);
  }

  it("an sh -c wrapper with a server and a grandchild that ignores SIGTERM: close() leaves nothing", async () => {
    const mark = `mcp-native-hygiene-${randomUUID()}`;
    const t = await native.createStdioTransport({
      command: "sh",
      args: ["-c", `${shellQuote(process.execPath)} ${shellQuote(fixture("fault-stdio.mjs"))} --grandchild --mark=${mark}; exit $?`, "wrapper"],
      env: { MCP_NATIVE_FAULT_MARK: mark },
    });
    await t.request("initialize", init);
    const seen = marked(mark);
    expect(seen.map((p) => p.cmdline.split(" ")[0])).toEqual(expect.arrayContaining(["sh", process.execPath]));
    expect(seen).toHaveLength(3); // sh, the server, the grandchild
    await t.close();
    await expectGone(mark, seen);
  });

  it("the wrapper killed first (its server lives on, holding the pipes): the transport still works, close() leaves nothing", async () => {
    const mark = `mcp-native-hygiene-${randomUUID()}`;
    const t = await native.createStdioTransport({
      command: "sh",
      args: ["-c", `${shellQuote(process.execPath)} ${shellQuote(server)} --grandchild --mark=${mark}; exit $?`, "wrapper"],
      env: { MCP_NATIVE_FAULT_MARK: mark },
    });
    await t.request("initialize", init);
    const seen = marked(mark);
    expect(seen).toHaveLength(3);
    process.kill(t.pid!, "SIGKILL");
    await sleep(200);
    // The orphaned server still holds stdin and stdout: nothing has ended for the transport.
    const answer = await t.request<{ content: { text: string }[] }>("tools/call", { name: "echo", arguments: { text: "orphan" } });
    expect(answer.content[0].text).toBe("orphan");
    await t.close();
    await expectGone(mark, seen);
  });

  function startHost(mark: string, mode: "wait" | "graceful") {
    return new Promise<{ host: ChildProcess; pids: number[] }>((resolve, reject) => {
      const host = spawn(process.execPath, [fixture("fault-host.mjs"), mark, mode], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      host.stdout!.on("data", (d) => {
        out += d;
        if (out.includes("\n")) resolve({ host, pids: JSON.parse(out).pids });
      });
      host.on("exit", (code, signal) => reject(new Error(`host exited early: ${code ?? signal}`)));
    });
  }
  const exitOf = (host: ChildProcess) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      if (host.exitCode !== null || host.signalCode !== null) resolve({ code: host.exitCode, signal: host.signalCode });
      else host.once("exit", (code, signal) => resolve({ code, signal }));
    });

  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    it(`the host killed with ${signal} (no handler of its own): every server tree it spawned is gone`, async () => {
      const mark = `mcp-native-hygiene-${randomUUID()}`;
      const { host } = await startHost(mark, "wait");
      const seen = marked(mark);
      // The host, and: sh + server + grandchild; server + grandchild; the SIGTERM-proof server.
      expect(seen).toHaveLength(7);
      host.kill(signal);
      expect(await exitOf(host)).toEqual({ code: null, signal });
      await expectGone(mark, seen);
    });
  }

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`the host handles ${signal} itself and closes its transports: nothing is left`, async () => {
      const mark = `mcp-native-hygiene-${randomUUID()}`;
      const { host } = await startHost(mark, "graceful");
      const seen = marked(mark);
      expect(seen).toHaveLength(7);
      host.kill(signal);
      expect(await exitOf(host)).toEqual({ code: 0, signal: null });
      await expectGone(mark, seen);
    });
  }
});
