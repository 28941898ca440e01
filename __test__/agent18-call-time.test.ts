// SPEC-AGENT18 A29: the client functions and the manager look up the transport's
// `request`/`notify`/`close` when they call them, on our own transports too, so a method the
// agent (or its test) replaced after connecting is the one used; params go through as given.
import { afterEach, describe, expect, it } from "vitest";
import { native, server } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

const config = { command: process.execPath, args: [server] };

describe("A29 methods looked up at call time", () => {
  it("A29: a request, notify and close replaced on a native transport after connecting are the ones called", async () => {
    const connection = await native.connectToServer("late", config);
    const transport = connection.transport as any;
    cleanups.push(() => native.disconnectServer(connection));
    const seen: unknown[] = [];
    const request = transport.request.bind(transport);
    transport.request = (method: string, params: any, options: unknown) => {
      seen.push(["request", method, params]);
      return request(method, params, options);
    };
    const args = { text: "through" };
    const result = await native.callTool(connection, "echo", args);
    expect(result.content).toEqual([{ type: "text", text: "through" }]);
    const [[kind, method, params]] = seen as any[];
    expect([kind, method]).toEqual(["request", "tools/call"]);
    // Params pass through: the arguments object is the caller's own.
    expect(params.arguments).toBe(args);
    const tools = await native.listTools(connection);
    expect(tools.map((t) => t.name)).toContain("echo");
    expect((seen as any[]).map((s) => s[1])).toEqual(["tools/call", "tools/list"]);

    const close = transport.close.bind(transport);
    let closed = 0;
    transport.close = () => {
      closed++;
      return close();
    };
    await native.disconnectServer(connection);
    expect(closed).toBe(1);
    expect(transport.connected).toBe(false);
  });

  it("A29: a manager's tool calls the request its connection's transport has now", async () => {
    const manager = new native.MCPManager(process.cwd());
    cleanups.push(() => manager.disconnectAll());
    const report = await manager.connectServers({ late: { type: "stdio", ...config } }, {});
    expect(report.connectedServers).toEqual(["late"]);
    const transport = manager.getConnection("late")!.transport as any;
    const methods: string[] = [];
    const request = transport.request.bind(transport);
    transport.request = (method: string, params: unknown, options: unknown) => {
      methods.push(method);
      return request(method, params, options);
    };
    const echo: any = manager.getTools().find((t: any) => t.name.endsWith("_echo"));
    const result = await echo.execute({ text: "via manager" });
    expect(JSON.stringify(result)).toContain("via manager");
    expect(methods).toEqual(["tools/call"]);
  });
});
