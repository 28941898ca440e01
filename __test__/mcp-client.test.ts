// SPEC §6 C6: MCPClient, against the fixture (pagination) and server-everything.
import { afterEach, describe, expect, it } from "vitest";
import { everything, history, native, server } from "./helpers";

const clients: InstanceType<typeof native.MCPClient>[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
async function connect(config: any, options?: any) {
  const client = await native.MCPClient.connect("fixture", config, options);
  clients.push(client);
  return client;
}

describe("C6 MCPClient", () => {
  it("C6: connect, connection, and every list* followed to the last page", async () => {
    const client = await connect({ command: process.execPath, args: [server, "--all-capabilities", "--page-size=2"] });
    expect(client).toBeInstanceOf(native.MCPClient);
    expect(client.connection.serverInfo.name).toBe("fixture-stdio");
    const tools = await client.listTools();
    expect(client.connection.tools).toBe(tools);
    const resources = await client.listResources();
    expect(resources.map((r: any) => r.name)).toEqual(["r0", "r1", "r2", "r3", "r4", "r5", "r6"]);
    expect(await client.listResourceTemplates()).toEqual([{ uriTemplate: "fixture://r/{n}", name: "r" }]);
    const prompts = await client.listPrompts();
    expect(prompts.map((p: any) => p.name)).toEqual(["p0", "p1", "p2", "p3", "p4"]);
    const seen = await history(client.connection.transport as any);
    const resourcePages = seen.filter((m) => m.method === "resources/list").map((m) => m.params);
    expect(resourcePages).toEqual([{}, { cursor: "2" }, { cursor: "4" }, { cursor: "6" }]);
  });

  it("C6: readResource, getPrompt, complete, setLoggingLevel, ping, callTool, and the onNotification passthrough", async () => {
    const client = await connect({ command: process.execPath, args: [server, "--all-capabilities"] });
    await expect(client.readResource("fixture://r/3")).resolves.toEqual({
      contents: [{ uri: "fixture://r/3", mimeType: "text/plain", text: "contents of fixture://r/3" }],
    });
    await expect(client.getPrompt("p1", { who: "ada" })).resolves.toEqual({
      messages: [{ role: "user", content: { type: "text", text: "p1 for ada" } }],
    });
    await expect(client.complete({ type: "ref/prompt", name: "p1" }, { name: "who", value: "a" })).resolves.toEqual({
      completion: { values: ["a1", "a2"], total: 2, hasMore: false },
    });
    const notes: [string, unknown][] = [];
    const handler = (method: string, params: unknown) => notes.push([method, params]);
    client.onNotification = handler;
    expect(client.onNotification).toBe(handler);
    expect(client.connection.transport.onNotification).toBe(handler);
    await expect(client.setLoggingLevel("debug")).resolves.toBeUndefined();
    expect(notes).toEqual([["notifications/message", { level: "debug", data: "level set" }]]);
    await expect(client.ping()).resolves.toEqual({});
    await expect(client.callTool("echo", { text: "via client" })).resolves.toEqual({ content: [{ type: "text", text: "via client" }] });
    const seen = await history(client.connection.transport as any);
    expect(seen.find((m) => m.method === "prompts/get").params).toEqual({ name: "p1", arguments: { who: "ada" } });
    expect(seen.find((m) => m.method === "completion/complete").params).toEqual({ ref: { type: "ref/prompt", name: "p1" }, argument: { name: "who", value: "a" } });
  });

  it("C6: close() closes the transport; new MCPClient(connection) wraps an existing connection", async () => {
    const connection = await native.connectToServer("wrapped", { command: process.execPath, args: [server] });
    const client = new native.MCPClient(connection);
    expect(client.connection).toBe(connection);
    await expect(client.callTool("echo", { text: "w" })).resolves.toEqual({ content: [{ type: "text", text: "w" }] });
    await client.close();
    expect(connection.transport.connected).toBe(false);
    expect(() => new native.MCPClient({} as any)).toThrow(TypeError);
  });

  it("C6: a failed connect rejects like connectToServer", async () => {
    await expect(native.MCPClient.connect("broken", { command: process.execPath, args: [server, "--init-error"] })).rejects.toThrow(
      "MCP error -32603: Initialization refused",
    );
  });

  it("C6 over server-everything (stdio): resources, prompts, tools, ping", async () => {
    const client = await connect({ command: process.execPath, args: [everything, "stdio"] });
    const resources = await client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const first: any = resources[0];
    const read: any = await client.readResource(first.uri);
    expect(read.contents[0].uri).toBe(first.uri);
    expect((await client.listResourceTemplates()).length).toBeGreaterThan(0);
    const prompts = await client.listPrompts();
    const simple: any = prompts.find((p: any) => !p.arguments?.some((a: any) => a.required)) ?? prompts[0];
    const prompt: any = await client.getPrompt(simple.name, {});
    expect(prompt.messages.length).toBeGreaterThan(0);
    const tools = await client.listTools();
    expect(tools.map((t: any) => t.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
    const sum: any = await client.callTool("get-sum", { a: 1, b: 2 });
    expect(sum.content[0].text).toContain("3");
    await expect(client.ping()).resolves.toEqual({});
  });
});
