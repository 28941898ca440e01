// SPEC-PROTOCOL P4/P5/P2 on Bun (the agent runs on Bun): progress and its timers, the
// server-request handlers, and HTTP stream resumption, as the Vitest suites check on Node;
// and S3/T1 for notifications that reach Bun's stream reader in one chunk.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { fileURLToPath } from "node:url";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native } from "./support";
import { scriptedServer } from "../fixtures/scripted-server";

setDefaultTimeout(20_000);
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const config = { command: process.execPath, args: [server] };

const cleanups = cleanupsAfterEach();

describe("on Bun", () => {
  it("P4: onProgress, resetTimeoutOnProgress and maxTotalTimeout", async () => {
    const connection = await native.connectToServer("bun", config as any);
    cleanups.push(() => connection.transport.close());
    const seen: unknown[] = [];
    const kept: any = await native.callTool(connection, "progress", { steps: 4, ms: 80 }, {
      onProgress: (p) => seen.push(p),
      timeout: 150,
      resetTimeoutOnProgress: true,
    });
    expect(kept.content[0].text).toStartWith("done ");
    expect(seen).toEqual([1, 2, 3, 4].map((i) => ({ progress: i, total: 4, message: `step ${i}` })));
    const started = performance.now();
    const error = await native
      .callTool(connection, "progress", { steps: 50, ms: 40 }, { onProgress: () => {}, timeout: 150, resetTimeoutOnProgress: true, maxTotalTimeout: 400 })
      .catch((e) => e);
    expect(error.message).toBe("Request timeout after 400ms");
    expect(performance.now() - started).toBeGreaterThanOrEqual(380);
  });

  it("P5/P6: handlers answer the server, get {serverName, signal}; a cancelled request is not answered", async () => {
    let aborted = false;
    const connection = await native.connectToServer("bun", config as any, {
      elicitation: async () => ({ action: "accept", content: {} }),
      sampling: (_params: unknown, extra: any) =>
        new Promise((resolve) => extra.signal.addEventListener("abort", () => ((aborted = true), resolve({})))),
    });
    cleanups.push(() => connection.transport.close());
    const asked: any = await native.callTool(connection, "ask_client", {
      method: "elicitation/create",
      params: { message: "?", requestedSchema: { type: "object", properties: { n: { type: "integer", default: 7 } } } },
    });
    expect(JSON.parse(asked.content[0].text)).toEqual({ action: "accept", content: { n: 7 } });
    const cancelled: any = await native.callTool(connection, "ask_then_cancel", { ms: 30, wait: 100 });
    expect(aborted).toBe(true);
    expect(JSON.parse(cancelled.content[0].text)).toEqual({ answered: false });
  });

  it("P2: a dropped SSE answer is resumed with Last-Event-ID after the server's retry", async () => {
    const f = await startHttpFixture();
    cleanups.push(f.close);
    const t = await native.createHttpTransport({ type: "http", url: f.url });
    cleanups.push(() => t.close());
    expect(await t.request("resume/drop", { retry: 200, how: "break" })).toEqual({ resumed: true });
    const get = f.received.find((r) => r.method === "GET")!;
    expect(get.headers["last-event-id"]).toMatch(/^r\d+-0$/);
    expect(get.at - f.dropTimes[0]).toBeGreaterThanOrEqual(180);
  });

  it("S3/T1: a notification whose params are not JSON is skipped, in a run and alone; a callback assigned mid-run takes the next one", async () => {
    const lines = [
      '{"jsonrpc":"2.0","method":"a","params":{"n":1}}\n{"jsonrpc":"2.0","method":"bad","params":{"x":tru}}\n' +
        '{"jsonrpc":"2.0","method":"b","params":[{"]":"["}]}\n{"jsonrpc":"2.0","method":"switch","params":{}}\n' +
        '{"jsonrpc":"2.0","method":"c","params":{}}\n{"jsonrpc":"2.0","id":1,"result":{"ok":1}}\n',
      '{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"first"}}\n{"jsonrpc":"2.0","method":"bad","params":[1,}\n' +
        '{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"second"}}\n{"jsonrpc":"2.0","method":"d","params":{}}\n',
    ];
    const script = scriptedServer({ 1: lines[0], 3: lines[1] });
    const t = new native.StdioTransport({ type: "stdio", command: process.execPath, args: ["-e", script] } as any);
    cleanups.push(() => t.close());
    await t.connect();
    const first: unknown[] = [];
    const second: unknown[] = [];
    t.onNotification = (m, p) => {
      first.push([m, p]);
      if (m === "switch") t.onNotification = (m2, p2) => second.push([m2, p2]);
    };
    expect(await t.request("x")).toEqual({ ok: 1 });
    const rejected = await Promise.all([t.request("y"), t.request("z")].map((p) => p.catch((e: Error) => e.message)));
    expect(rejected).toEqual(["MCP error -1: first", "MCP error -1: second"]);
    expect(first).toEqual([["a", { n: 1 }], ["b", [{ "]": "[" }]], ["switch", {}]]);
    expect(second).toEqual([["c", {}], ["d", {}]]);
  });
});
