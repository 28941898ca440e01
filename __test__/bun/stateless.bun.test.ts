// SPEC-PROTOCOL N2/N3/N4/N6/N7 on Bun: the stateless era's envelope, headers, input-required
// retries, the stdio probe and subscriptions cross Bun's event loop as on Node
// (__test__/stateless.test.ts, __test__/stateless-streams.test.ts).
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);
const cleanups = cleanupsAfterEach();

describe("the stateless era on Bun", () => {
  it("N3/N4/N6: discover, the envelope and headers, one input round", async () => {
    const seen: any[] = [];
    const server = createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      const body = JSON.parse(text);
      seen.push({ method: req.headers["mcp-method"], name: req.headers["mcp-name"], body });
      const result = (value: object) => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, result: value }));
      };
      if (body.method === "server/discover") return result({ capabilities: { tools: {} }, _meta: { "io.modelcontextprotocol/serverInfo": { name: "bun-stateless", version: "1" } } });
      if (!body.params.inputResponses) {
        return result({ resultType: "input_required", inputRequests: { a: { method: "elicitation/create", params: { message: "ok?", requestedSchema: { type: "object" } } } }, requestState: "s-1" });
      }
      return result({ content: [{ type: "text", text: `${body.params.requestState} ${body.params.inputResponses.a.action}` }] });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const url = `http://127.0.0.1:${(server.address() as any).port}/mcp`;
    const client = await native.MCPClient.connect("bun", { type: "http", url }, {
      client: { protocolVersion: "2026-07-28" },
      elicitation: async () => ({ action: "accept", content: {} }),
    } as any);
    cleanups.push(() => client.close());
    expect(client.connection.serverInfo).toEqual({ name: "bun-stateless", version: "1" });
    const result: any = await client.callTool("go", {});
    expect(result.content[0].text).toBe("s-1 accept");
    expect(seen.map((r) => [r.method, r.name ?? null])).toEqual([
      ["server/discover", null],
      ["tools/call", "go"],
      ["tools/call", "go"],
    ]);
    expect(seen.every((r) => r.body.params._meta["io.modelcontextprotocol/protocolVersion"] === "2026-07-28")).toBe(true);
  });

  it("N2/N7: auto probes a stateless stdio server (spawned from Bun); its subscription delivers list changes; a respawn for one that exits", async () => {
    const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
    const config = { command: "node", args: [server, "--stateless"], env: { N2_CASE: `bun-${Date.now()}` } };
    const client = await native.MCPClient.connect("bun-stdio", config, { client: { protocolVersion: "auto" } } as any);
    cleanups.push(() => client.close());
    expect(client.connection.eraDetection).toBe("probe");
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    const seen: string[] = [];
    client.connection.transport.onNotification = (method: string) => seen.push(method);
    await client.callTool("toggle_extra", {});
    await client.callTool("echo", { text: "after" });
    expect(seen).toEqual(["notifications/tools/list_changed"]);
    const old = { command: "node", args: [server, "--exit-on-unknown-first"], env: { N2_CASE: `bun-exit-${Date.now()}` } };
    const legacy = await native.MCPClient.connect("bun-old", old, { client: { protocolVersion: "auto" } } as any);
    cleanups.push(() => legacy.close());
    expect(legacy.connection.eraDetection).toBe("respawn");
  });
});
