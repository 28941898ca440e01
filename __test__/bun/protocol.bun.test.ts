// SPEC-PROTOCOL P4/P5/P2 on Bun (the agent runs on Bun): progress and its timers, the
// server-request handlers, and HTTP stream resumption, as the Vitest suites check on Node.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { fileURLToPath } from "node:url";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native } from "./support";

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
});
