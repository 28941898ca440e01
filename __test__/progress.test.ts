// SPEC-PROTOCOL P4: onProgress, per-request timeout, resetTimeoutOnProgress and
// maxTotalTimeout on request, callTool, MCPClient and the manager's tool execute.
import { afterEach, describe, expect, it } from "vitest";
import { startHttpFixture } from "./fixtures/http-server";
import { everything, native, server } from "./helpers";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});
const config = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [server], ...extra });
async function connect(extra: Record<string, unknown> = {}) {
  const connection = await native.connectToServer("progress", config(extra) as any);
  cleanups.push(() => connection.transport.close());
  return connection;
}
const call = (steps: number, ms: number, more: Record<string, unknown> = {}) => ({
  name: "progress",
  arguments: { steps, ms, ...more },
});

describe("P4 progress", () => {
  it("P4: onProgress gets each notification without the token; the request carries a unique _meta.progressToken", async () => {
    const connection = await connect();
    const seen: unknown[] = [];
    const notified: unknown[] = [];
    connection.transport.onNotification = (method, params) => notified.push([method, params]);
    const result: any = await connection.transport.request("tools/call", { ...call(3, 5), _meta: { trace: "t1" } }, {
      onProgress: (p) => seen.push(p),
    });
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));
    const meta = JSON.parse(result.content[0].text.slice("done ".length));
    expect(meta.trace).toBe("t1");
    expect(typeof meta.progressToken).toBe("number");
    // Also to onNotification, as before.
    expect(notified).toHaveLength(3);
    expect((notified[0] as any)[1].progressToken).toBe(meta.progressToken);
    const second: any = await connection.transport.request("tools/call", call(1, 1), { onProgress: () => {} });
    expect(JSON.parse(second.content[0].text.slice(5)).progressToken).not.toBe(meta.progressToken);
  });

  it("P4: without onProgress no token is sent", async () => {
    const connection = await connect();
    const result: any = await connection.transport.request("tools/call", call(1, 1));
    expect(result.content[0].text).toBe("done null");
  });

  it("P4: options.timeout overrides the transport's; resetTimeoutOnProgress keeps a long call alive", async () => {
    const connection = await connect({ timeout: 60_000 });
    const short = await connection.transport.request("tools/call", call(5, 100), { timeout: 150 }).catch((e) => e);
    expect(short.message).toBe("Request timeout after 150ms");
    // 6 steps of 100 ms: 600 ms in all, never 250 ms without progress.
    const kept: any = await connection.transport.request("tools/call", call(6, 100), {
      timeout: 250,
      resetTimeoutOnProgress: true,
      onProgress: () => {},
    });
    expect(kept.content[0].text).toMatch(/^done /);
  });

  it("P4: maxTotalTimeout bounds the request even while progress keeps coming", async () => {
    const connection = await connect();
    const started = performance.now();
    const error = await connection.transport
      .request("tools/call", call(50, 50), { timeout: 200, resetTimeoutOnProgress: true, maxTotalTimeout: 500, onProgress: () => {} })
      .catch((e) => e);
    expect(error.message).toBe("Request timeout after 500ms");
    expect(performance.now() - started).toBeGreaterThanOrEqual(480);
    // The server is told (T9).
    const history: any = await connection.transport.request("tools/call", { name: "history", arguments: {} });
    const messages = JSON.parse(history.content[0].text);
    expect(messages.some((m: any) => m.method === "notifications/cancelled" && m.params.reason === "Request timeout after 500ms")).toBe(true);
  });

  it("P4: without resetTimeoutOnProgress progress does not extend the timeout", async () => {
    const connection = await connect();
    const error = await connection.transport
      .request("tools/call", call(10, 50), { timeout: 200, onProgress: () => {} })
      .catch((e) => e);
    expect(error.message).toBe("Request timeout after 200ms");
  });

  it("E2: options of the wrong kind are a TypeError", async () => {
    const connection = await connect();
    await expect(connection.transport.request("ping", {}, { onProgress: 1 } as any)).rejects.toThrow(
      new TypeError('The "options.onProgress" field must be a function'),
    );
    await expect(connection.transport.request("ping", {}, { timeout: -1 } as any)).rejects.toThrow(
      new TypeError('The "options.timeout" field must be a non-negative number'),
    );
  });

  it("P4: callTool, MCPClient.callTool and the manager's execute pass progress options through", async () => {
    const connection = await connect();
    const viaCallTool: unknown[] = [];
    await native.callTool(connection, "progress", { steps: 2, ms: 1 }, { onProgress: (p) => viaCallTool.push(p) });
    expect(viaCallTool).toHaveLength(2);

    const client = await native.MCPClient.connect("c", config() as any);
    cleanups.push(() => client.close());
    const viaClient: unknown[] = [];
    await client.callTool("progress", { steps: 2, ms: 1 }, { onProgress: (p) => viaClient.push(p) });
    expect(viaClient).toHaveLength(2);

    const manager = new native.MCPManager(process.cwd(), null, {});
    cleanups.push(() => manager.disconnectAll());
    const { tools } = await manager.connectServers({ fixture: config() as any }, {});
    const tool = tools.find((t) => t.mcpToolName === "progress")!;
    const viaManager: unknown[] = [];
    await tool.execute({ steps: 2, ms: 1 }, undefined, { onProgress: (p) => viaManager.push(p) });
    expect(viaManager).toHaveLength(2);
    const timedOut = await tool.execute({ steps: 5, ms: 100 }, undefined, { timeout: 120 }).catch((e) => e);
    expect(timedOut.message).toBe("Request timeout after 120ms");
  });
});

describe("P4 against server-everything", () => {
  it("P4: its long-running operation reports each step to onProgress", async () => {
    const connection = await native.connectToServer("everything", { command: process.execPath, args: [everything, "stdio"] } as any);
    cleanups.push(() => connection.transport.close());
    const seen: any[] = [];
    const result: any = await native.callTool(connection, "trigger-long-running-operation", { duration: 0.3, steps: 3 }, {
      onProgress: (p) => seen.push(p),
      timeout: 5000,
      resetTimeoutOnProgress: true,
    });
    expect(seen.map((p) => [p.progress, p.total])).toEqual([[1, 3], [2, 3], [3, 3]]);
    expect(JSON.stringify(result.content)).toContain("completed");
  });
});

describe("P4 over HTTP", () => {
  it("P4: options.timeout is applied to an HTTP request instead of the config's phases", async () => {
    const f = await startHttpFixture();
    cleanups.push(f.close);
    const t = await native.createHttpTransport({ type: "http", url: f.url, timeout: 60_000 });
    cleanups.push(() => t.close());
    const error = await t.request("slow/json", { ms: 1000 }, { timeout: 150 }).catch((e) => e);
    expect(error.message).toBe("Request timeout after 150ms");
    expect(await t.request("slow/json", { ms: 50 }, { timeout: 1000 })).toEqual({ slow: true });
  });
});
