// Third-party peers over HTTP (H1–H11 with T3/T11): the official SDK's server transports,
// and @modelcontextprotocol/server-everything in streamableHttp and sse modes, all bound
// to 127.0.0.1.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSdkPeers } from "./fixtures/sdk-peers";
import { init, native, startEverything, waitFor } from "./helpers";

type Http = import("../index.js").HttpTransport;

const open: Http[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});
async function connect(type: "http" | "sse", url: string) {
  const t = await native.createHttpTransport({ type, url });
  open.push(t);
  return t;
}
const initWithRoots = { ...init, capabilities: { roots: { listChanged: false } } };

describe("the TypeScript SDK's server transports", () => {
  let peers: Awaited<ReturnType<typeof startSdkPeers>>;
  beforeAll(async () => {
    peers = await startSdkPeers();
  });
  afterAll(() => peers.close());

  it("StreamableHTTPServerTransport: session, SSE answers with notifications first, server requests, DELETE", async () => {
    const t = await connect("http", peers.streamableUrl);
    const result: any = await t.request("initialize", initWithRoots);
    expect(result.serverInfo.name).toBe("sdk-peer");
    expect(t.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    await t.notify("notifications/initialized");
    const { tools }: any = await t.request("tools/list");
    expect(tools.map((tool: any) => tool.name)).toEqual(["echo", "log_then_answer", "ask_roots"]);
    await expect(t.request("tools/call", { name: "echo", arguments: { text: "hi" } })).resolves.toMatchObject({
      content: [{ type: "text", text: "echo: hi" }],
    });
    const order: string[] = [];
    t.onNotification = (_m, p: any) => order.push(p.data);
    await t.request("tools/call", { name: "log_then_answer", arguments: {} }).then(() => order.push("answer"));
    expect(order).toEqual(["log 0", "log 1", "log 2", "answer"]);
    t.onRequest = (method) => (method === "roots/list" ? { roots: [{ uri: "file:///sdk" }] } : {});
    const asked: any = await t.request("tools/call", { name: "ask_roots", arguments: {} });
    expect(JSON.parse(asked.content[0].text)).toEqual({ roots: [{ uri: "file:///sdk" }] });
    await expect(t.request("ping")).resolves.toEqual({});
    const sessionId = t.sessionId;
    await t.close();
    expect(peers.deleted).toContain(sessionId);
  });

  it("SSEServerTransport (2024-11-05): type 'sse' finds the endpoint and gets answers on the stream", async () => {
    const t = await connect("sse", peers.sseUrl);
    const result: any = await t.request("initialize", initWithRoots);
    expect(result.serverInfo.name).toBe("sdk-peer");
    await t.notify("notifications/initialized");
    const order: string[] = [];
    t.onNotification = (_m, p: any) => order.push(p.data);
    await t.request("tools/call", { name: "log_then_answer", arguments: {} }).then(() => order.push("answer"));
    expect(order).toEqual(["log 0", "log 1", "log 2", "answer"]);
    t.onRequest = () => ({ roots: [{ uri: "file:///legacy" }] });
    const asked: any = await t.request("tools/call", { name: "ask_roots", arguments: {} });
    expect(JSON.parse(asked.content[0].text).roots[0].uri).toBe("file:///legacy");
    await expect(t.request("tools/call", { name: "echo", arguments: { text: "legacy" } })).resolves.toMatchObject({
      content: [{ text: "echo: legacy" }],
    });
  });
});


describe("server-everything over HTTP", () => {
  for (const [mode, type, path] of [
    ["streamableHttp", "http", "/mcp"],
    ["sse", "sse", "/sse"],
  ] as const) {
    it(`${mode}: initialize, tools/list, echo, get-sum, ping, roots answered`, async () => {
      const { proc, port } = await startEverything(mode);
      try {
        const t = await connect(type, `http://127.0.0.1:${port}${path}`);
        const asked: string[] = [];
        t.onRequest = (method) => {
          asked.push(method);
          return { roots: [{ uri: "file:///everything" }] };
        };
        const result: any = await t.request("initialize", initWithRoots);
        expect(result.serverInfo.name).toContain("everything");
        await t.notify("notifications/initialized");
        if (type === "http") void t.startSSEListener();
        const { tools }: any = await t.request("tools/list");
        expect(tools.map((tool: any) => tool.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
        await expect(t.request("tools/call", { name: "echo", arguments: { message: "over http" } })).resolves.toMatchObject({
          content: [{ type: "text", text: "Echo: over http" }],
        });
        const sum: any = await t.request("tools/call", { name: "get-sum", arguments: { a: 19, b: 23 } });
        expect(sum.content[0].text).toContain("42");
        await expect(t.request("ping")).resolves.toEqual({});
        expect(await waitFor(() => asked.includes("roots/list"))).toBe(true);
      } finally {
        proc.kill();
      }
    });
  }
});
