// Under Node, a stdio server's stdout is read on the JS thread's own event loop (a libuv
// poll handle) rather than on a runtime thread. These check what that must not change: a
// worker thread's loop ends cleanly with transports still open (S8: their servers stop),
// answers interleave with the host's timers, every transport gets its own handle, and the
// loop's polling for quick answers stops while an answer is slow.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { alive, closingAfterEach, server, sleep, waitFor } from "./helpers";

const { connect } = closingAfterEach();
const index = fileURLToPath(new URL("../index.js", import.meta.url));

describe("stdout read on the host loop", () => {
  it("S8: a worker thread that ends with an open transport exits cleanly and its server stops", async () => {
    const script = `
      const { Worker } = require("node:worker_threads");
      const worker = new Worker(\`
        const { parentPort } = require("node:worker_threads");
        const { createStdioTransport } = require(${JSON.stringify(index)});
        (async () => {
          const t = await createStdioTransport({ command: process.execPath, args: [${JSON.stringify(server)}] });
          const result = await t.request("tools/call", { name: "echo", arguments: { text: "from a worker" } });
          parentPort.postMessage({ pid: t.pid, text: result.content[0].text });
        })();
      \`, { eval: true });
      worker.on("message", (m) => console.log(JSON.stringify(m)));
      worker.on("exit", (code) => console.log("worker exit " + code));
    `;
    const out = execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 20_000 });
    const lines = out.trim().split("\n");
    const { pid, text } = JSON.parse(lines[0]);
    expect(text).toBe("from a worker");
    expect(lines[1]).toBe("worker exit 0");
    await waitFor(() => !alive(pid), 5000);
  });

  it("the loop polls only briefly for an answer: a call pending on a slow server costs no CPU", async () => {
    const t = await connect();
    // Quick answers first, so polling for the next one is on.
    for (let i = 0; i < 50; i++) await t.request("tools/call", { name: "echo", arguments: { text: "warm" } });
    const before = process.cpuUsage();
    await t.request("tools/call", { name: "slow", arguments: { ms: 400 } });
    const used = process.cpuUsage(before);
    // A loop that kept polling would burn the whole 400 ms.
    expect((used.user + used.system) / 1000).toBeLessThan(150);
  });

  it("T3: a timer set while answers stream in runs between them, and answers stay in order", async () => {
    const t = await connect();
    const order: string[] = [];
    setTimeout(() => order.push("timer"), 0);
    const calls = Array.from({ length: 2000 }, (_, i) =>
      t.request("tools/call", { name: "echo", arguments: { text: String(i) } }).then((r: any) => order.push(r.content[0].text)),
    );
    await Promise.all(calls);
    const answers = order.filter((x) => x !== "timer");
    expect(answers).toEqual(Array.from({ length: 2000 }, (_, i) => String(i)));
    expect(order.indexOf("timer")).toBeGreaterThan(-1);
    expect(order.indexOf("timer")).toBeLessThan(order.length - 1);
  });

  it("S2: long lines (received on a runtime thread) arrive whole, interleaved with short answers", async () => {
    const t = await connect();
    const calls = [20_000_000, 0, 3_000_000, 0, 300_000, 150_000, 0].map((bytes, i) =>
      bytes
        ? t.request("tools/call", { name: "big", arguments: { bytes } }).then((r: any) => r.content[0].text.length)
        : t.request("tools/call", { name: "echo", arguments: { text: `short${i}` } }).then((r: any) => r.content[0].text),
    );
    expect(await Promise.all(calls)).toEqual([20_000_000, "short1", 3_000_000, "short3", 300_000, 150_000, "short6"]);
    const seen: string[] = [];
    t.onNotification = (_m: string, params: any) => seen.push(params.pad ? `huge:${params.pad.length}` : "other");
    const after = await t.request("tools/call", { name: "huge_line_then_ok", arguments: { bytes: 2_000_000 } });
    expect(after.content[0].text).toBe("still alive");
    expect(seen).toEqual(["huge:2000000"]);
  });

  it("S4: two transports read side by side; closing one leaves the other answering", async () => {
    const a = await connect();
    const b = await connect();
    const echo = (t: any, text: string) =>
      t.request("tools/call", { name: "echo", arguments: { text } }).then((r: any) => r.content[0].text);
    expect(await Promise.all([echo(a, "a"), echo(b, "b")])).toEqual(["a", "b"]);
    await a.close();
    await sleep(20);
    expect(await echo(b, "still here")).toBe("still here");
  });
});
