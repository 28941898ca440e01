// SPEC-AGENT18 A27/A28: resources, templates and prompts as the v18 agent's client module
// exports them, against the stdio fixture: listings kept on the caller's connection,
// reads, prompts, resource subscriptions, the capability checks.
import { afterEach, describe, expect, it } from "vitest";
import { history, native, server } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

async function connect(...flags: string[]) {
  const connection = await native.connectToServer("fixture", { command: process.execPath, args: [server, ...flags] });
  cleanups.push(() => native.disconnectServer(connection));
  return connection;
}

const methods = async (connection: any) => (await history(connection.transport)).map((m: any) => m.method).filter(Boolean);

describe("A27 listings kept on the connection", () => {
  it("A27: every page once, kept on the caller's object and returned as that same array; a list_changed drops it (P6)", async () => {
    const connection = await connect("--all-capabilities", "--page-size=3");
    const resources = await native.listResources(connection);
    expect(resources.map((r) => r.uri)).toEqual(Array.from({ length: 7 }, (_, i) => `fixture://r/${i}`));
    expect(connection.resources).toBe(resources);
    expect(await native.listResources(connection)).toBe(resources);
    const prompts = await native.listPrompts(connection);
    expect(prompts.map((p) => p.name)).toEqual(["p0", "p1", "p2", "p3", "p4"]);
    expect(connection.prompts).toBe(prompts);
    const templates = await native.listResourceTemplates(connection);
    expect(templates).toEqual([{ uriTemplate: "fixture://r/{n}", name: "r" }]);
    expect(connection.resourceTemplates).toBe(templates);
    expect((await methods(connection)).filter((m: string) => m === "resources/list")).toHaveLength(3);
    await native.callTool(connection, "send_notification", { method: "notifications/resources/list_changed" });
    expect(connection.resources).toBeUndefined();
    expect(connection.resourceTemplates).toBeUndefined();
    expect(connection.prompts).toBe(prompts);
    expect(await native.listResources(connection)).not.toBe(resources);
  });

  it("A27: [] without the capability (nothing asked); templates answered -32601 are [] and kept; other errors propagate, nothing kept", async () => {
    const bare = await connect();
    expect(await native.listResources(bare)).toEqual([]);
    expect(await native.listPrompts(bare)).toEqual([]);
    expect((await methods(bare)).some((m: string) => m.startsWith("resources/") || m.startsWith("prompts/"))).toBe(false);
    const old = await connect("--all-capabilities", "--no-templates");
    const none = await native.listResourceTemplates(old);
    expect(none).toEqual([]);
    expect(old.resourceTemplates).toBe(none);
    // A transport of the caller's own that fails otherwise.
    const failing: any = {
      ...old,
      resourceTemplates: undefined,
      transport: { request: async () => { throw new Error("HTTP 500: boom"); }, notify: async () => {}, close: async () => {}, connected: true },
    };
    await expect(native.listResourceTemplates(failing)).rejects.toThrow("HTTP 500: boom");
    expect(failing.resourceTemplates).toBeUndefined();
  });
});

describe("A28 reads, prompts and subscriptions", () => {
  it("A28: readResource and getPrompt; arguments go along (the caller's object) only when there are some", async () => {
    const connection = await connect("--all-capabilities");
    await expect(native.readResource(connection, "fixture://r/2")).resolves.toEqual({
      contents: [{ uri: "fixture://r/2", mimeType: "text/plain", text: "contents of fixture://r/2" }],
    });
    const seen: any[] = [];
    const spy: any = { ...connection, transport: { ...connection.transport, request: (method: string, params: any) => (seen.push(params), connection.transport.request(method, params)) } };
    const args = { who: "Ada" };
    await expect(native.getPrompt(spy, "p1", args)).resolves.toMatchObject({ messages: [{ content: { text: "p1 for Ada" } }] });
    await native.getPrompt(spy, "p2", {});
    await native.getPrompt(spy, "p3");
    expect(seen[0].arguments).toBe(args);
    expect(seen.slice(1)).toEqual([{ name: "p2" }, { name: "p3" }]);
    await expect(native.readResource(connection, 7 as any)).rejects.toBeInstanceOf(TypeError);
  });

  it("A28: subscribe/unsubscribe: one request per URI at once, failures to logger.warn, never rejects; nothing without URIs or the capability", async () => {
    const connection = await connect("--subscribe");
    const warned: string[] = [];
    const logger = { warn: (message: string) => warned.push(message) };
    await expect(native.subscribeToResources(connection, ["fixture://r/1", "fixture://bad", "fixture://r/2"], { logger })).resolves.toBeUndefined();
    await native.unsubscribeFromResources(connection, ["fixture://r/1"], { logger });
    await native.subscribeToResources(connection, [], { logger });
    const received = await history(connection.transport as any);
    const asked = received.filter((m: any) => m.method?.startsWith("resources/")).map((m: any) => `${m.method} ${m.params.uri}`);
    expect(asked).toEqual([
      "resources/subscribe fixture://r/1",
      "resources/subscribe fixture://bad",
      "resources/subscribe fixture://r/2",
      "resources/unsubscribe fixture://r/1",
    ]);
    expect(warned).toEqual(["Failed to subscribe to MCP resource fixture://bad: MCP error -32602: No such resource: fixture://bad"]);
    const unable = await connect("--all-capabilities");
    await native.subscribeToResources(unable, ["fixture://r/1"]);
    expect((await methods(unable)).includes("resources/subscribe")).toBe(false);
  });

  it("A28: the capability checks", () => {
    expect(native.serverSupportsResources({ resources: {} })).toBe(true);
    expect(native.serverSupportsResources({ tools: {} })).toBe(false);
    expect(native.serverSupportsPrompts({ prompts: {} })).toBe(true);
    expect(native.serverSupportsPrompts({})).toBe(false);
    expect(native.serverSupportsResourceSubscriptions({ resources: { subscribe: true } })).toBe(true);
    expect(native.serverSupportsResourceSubscriptions({ resources: { subscribe: "yes" } } as any)).toBe(false);
    expect(native.serverSupportsResourceSubscriptions({ resources: {} })).toBe(false);
  });
});
