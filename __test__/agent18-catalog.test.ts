// SPEC-AGENT18 A35/A36 against the stdio fixture: notification listeners with the early
// buffer and the refresh before fan-out, resources, templates and prompts kept per server,
// resource subscriptions with their epochs, and the change callbacks.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { MCPManager, MCPStdioServerConfig } from "../index.js";
import { native, server, sleep, waitFor } from "./helpers";

const managers: MCPManager<any>[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.disconnectAll()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const fx = (...flags: string[]): MCPStdioServerConfig => ({ command: process.execPath, args: [server, "--all-capabilities", ...flags] });
async function connected(config: MCPStdioServerConfig = fx(), options: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-a36-"));
  dirs.push(dir);
  const manager = new native.MCPManager(dir, null, { startupTimeoutMs: 10_000, ...options });
  managers.push(manager);
  await manager.connectServers({ s: config }, {});
  const connection = manager.getConnection("s")!;
  const call = (name: string, args: Record<string, unknown> = {}) => connection.transport.request("tools/call", { name, arguments: args });
  return { manager, connection, call, dir };
}
const history = async (call: (n: string) => Promise<any>) => JSON.parse((await call("history")).content[0].text) as any[];

describe("A35 notification listeners", () => {
  it("A35: before any listener the last 100 notifications wait, oldest dropped; the first listener drains them in order, later ones do not", async () => {
    const { manager, call } = await connected();
    for (let i = 0; i < 105; i++) await call("send_notification", { method: "notifications/custom", params: { i } });
    const first: number[] = [];
    const second: number[] = [];
    const remove = manager.addNotificationListener((server, method, params: any) => {
      if (server === "s" && method === "notifications/custom") first.push(params.i);
    });
    expect(first).toEqual(Array.from({ length: 100 }, (_, n) => n + 5));
    manager.addNotificationListener(() => {
      throw new Error("a listener that throws");
    });
    manager.addNotificationListener((_s, method, params: any) => method === "notifications/custom" && second.push(params.i));
    expect(second).toEqual([]);
    await call("send_notification", { method: "notifications/custom", params: { i: 200 } });
    expect(await waitFor(() => second.includes(200), 3000)).toBe(true);
    expect(first.at(-1)).toBe(200);
    // `() => void`: the remover returns nothing (no promise to leave unhandled).
    expect(remove()).toBeUndefined();
    await call("send_notification", { method: "notifications/custom", params: { i: 201 } });
    expect(await waitFor(() => second.includes(201), 3000)).toBe(true);
    expect(first.at(-1)).toBe(200);
  });

  it("A64: what a server sends right after notifications/initialized reaches the early buffer, once", async () => {
    const { manager, call } = await connected(fx("--notify-when-initialized"));
    await call("send_notification", { method: "notifications/custom", params: { i: 1 } });
    const heard: number[] = [];
    manager.addNotificationListener((server, method, params: any) => {
      if (server === "s" && method === "notifications/custom") heard.push(params.i);
    });
    expect(heard).toEqual([-1, 1]);
  });

  it("A35: a list_changed refreshes through the manager before the listeners hear it", async () => {
    const { manager, call } = await connected();
    const order: string[] = [];
    // The catalog loaded after the connect first.
    await waitFor(() => (manager.getServerPrompts("s") ?? []).length === 5, 3000);
    manager.setOnPromptsChanged((name) => order.push(`prompts changed ${name}`));
    order.length = 0;
    manager.addNotificationListener((_s, method) => {
      if (method === "notifications/tools/list_changed") {
        order.push(`listener tools ${manager.getTools().some((t: any) => t.name === "mcp__s_extra")}`);
      }
      if (method === "notifications/prompts/list_changed") order.push("listener prompts");
    });
    await call("toggle_extra");
    await call("send_notification", { method: "notifications/prompts/list_changed" });
    expect(await waitFor(() => order.length === 3, 3000)).toBe(true);
    await sleep(50);
    expect(order).toEqual(["listener tools true", "prompts changed s", "listener prompts"]);
  });
});

describe("A36 resources and prompts", () => {
  it("A31/A36: while its tools are still listing a server counts as connected for its catalog too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-a36-"));
    dirs.push(dir);
    const manager = new native.MCPManager(dir, null, { startupTimeoutMs: 10_000 });
    managers.push(manager);
    const connecting = manager.connectServers({ s: fx("--tools-delay=1500") }, {});
    expect(await waitFor(() => manager.getConnection("s") !== undefined, 5000)).toBe(true);
    expect(manager.getConnectionStatus("s")).toBe("connected");
    expect(manager.getTools()).toEqual([]);
    await manager.ensureServerResources("s");
    expect(manager.getServerResources("s")!.resources).toHaveLength(7);
    expect(manager.getTools()).toEqual([]);
    await connecting;
    expect(manager.getTools().length).toBeGreaterThan(0);
  });

  it("A36: after connect the server's resources, templates and prompts are kept; read, execute and instructions work; undefined when not connected", async () => {
    const { manager } = await connected(fx("--instructions=use the tools"));
    await manager.ensureServerResources("s");
    const catalog = manager.getServerResources("s")!;
    expect(catalog.resources.map((r) => r.uri)).toEqual(Array.from({ length: 7 }, (_, i) => `fixture://r/${i}`));
    expect(catalog.templates).toEqual([{ uriTemplate: "fixture://r/{n}", name: "r" }]);
    expect(await waitFor(() => (manager.getServerPrompts("s") ?? []).length === 5, 3000)).toBe(true);
    const read = await manager.readServerResource("s", "fixture://r/3");
    expect(read?.contents[0]).toMatchObject({ uri: "fixture://r/3", text: "contents of fixture://r/3" });
    const prompt = await manager.executePrompt("s", "p1", { who: "me" });
    expect(prompt?.messages[0].content).toEqual({ type: "text", text: "p1 for me" });
    expect(manager.getServerInstructions()).toEqual(new Map([["s", "use the tools"]]));
    // A61: `instructions: false` leaves the guidance out, the tools stay.
    await manager.connectServers({ quiet: { ...fx("--instructions=ignore me"), instructions: false } }, {});
    expect(manager.getConnectionStatus("quiet")).toBe("connected");
    expect(manager.getTools().some((t: any) => t.name.startsWith("mcp__quiet_"))).toBe(true);
    expect(manager.getServerInstructions()).toEqual(new Map([["s", "use the tools"]]));
    expect(manager.getServerResources("nobody")).toBeUndefined();
    expect(manager.getServerPrompts("nobody")).toBeUndefined();
    expect(await manager.readServerResource("nobody", "fixture://r/1")).toBeUndefined();
    expect(await manager.executePrompt("nobody", "p1")).toBeUndefined();
    const a = manager.refreshServerResources("s");
    expect(manager.refreshServerResources("s")).toBe(a);
    await a;
  });

  it("A36: a server without templates has none; setOnPromptsChanged replays servers with prompts", async () => {
    const { manager } = await connected(fx("--no-templates"));
    await manager.ensureServerResources("s");
    expect(manager.getServerResources("s")!.templates).toEqual([]);
    await waitFor(() => (manager.getServerPrompts("s") ?? []).length > 0, 3000);
    const heard: string[] = [];
    manager.setOnPromptsChanged((name) => heard.push(name));
    expect(heard).toEqual(["s"]);
  });

  it("A27/A36: a templates listing that fails outright keeps the resources; templates read as []", async () => {
    const { manager } = await connected(fx("--templates-error=-32603"));
    await manager.ensureServerResources("s");
    const kept = manager.getServerResources("s")!;
    expect(kept.resources.length).toBeGreaterThan(0);
    expect(kept.templates).toEqual([]);
    // Nothing was stored for the templates, so a later refresh asks again.
    expect(manager.getConnection("s")!.resourceTemplates).toBeUndefined();
  });

  it("A36: notifications on subscribes the listed resources; resources/updated on one reaches onResourcesChanged; off unsubscribes", async () => {
    const { manager, call } = await connected(fx("--subscribe"));
    await manager.ensureServerResources("s");
    const changed: string[] = [];
    manager.setOnResourcesChanged((name, uri) => changed.push(`${name} ${uri}`));
    manager.setNotificationsEnabled(true);
    expect(await waitFor(() => manager.getNotificationState().subscriptions.get("s")?.size === 7, 3000)).toBe(true);
    expect(manager.getNotificationState().enabled).toBe(true);
    await call("send_notification", { method: "notifications/resources/updated", params: { uri: "fixture://r/2" } });
    await call("send_notification", { method: "notifications/resources/updated", params: { uri: "fixture://elsewhere" } });
    expect(await waitFor(() => changed.length > 0, 3000)).toBe(true);
    await sleep(50);
    expect(changed).toEqual(["s fixture://r/2"]);
    manager.setNotificationsEnabled(false);
    expect(manager.getNotificationState()).toEqual({ enabled: false, subscriptions: new Map() });
    const unsubscribed = async () => (await history(call)).filter((m) => m.method === "resources/unsubscribe").length;
    expect(await waitFor(() => false, 300)).toBe(false);
    expect(await unsubscribed()).toBe(7);
  });

  it("A30/A36: switched off before the subscriptions answer, they are rolled back and not kept", async () => {
    const { manager, call } = await connected(fx("--subscribe"));
    await manager.ensureServerResources("s");
    manager.setNotificationsEnabled(true);
    manager.setNotificationsEnabled(false);
    await sleep(300);
    expect(manager.getNotificationState().subscriptions.size).toBe(0);
    const methods = (await history(call)).map((m) => m.method).filter((m) => m?.startsWith("resources/"));
    expect(methods.filter((m) => m === "resources/subscribe")).toHaveLength(7);
    expect(methods.filter((m) => m === "resources/unsubscribe")).toHaveLength(7);
  });

  it("A36: disconnectServer unsubscribes what it subscribed and tells prompt users", async () => {
    const { manager, connection } = await connected(fx("--subscribe"));
    await manager.ensureServerResources("s");
    await waitFor(() => (manager.getServerPrompts("s") ?? []).length > 0, 3000);
    manager.setNotificationsEnabled(true);
    await waitFor(() => manager.getNotificationState().subscriptions.has("s"), 3000);
    const heard: string[] = [];
    manager.setOnPromptsChanged((name) => heard.push(name));
    heard.length = 0;
    const sent: string[] = [];
    const request = connection.transport.request.bind(connection.transport);
    connection.transport.request = (method: string, ...rest: any[]) => {
      sent.push(method);
      return request(method, ...rest);
    };
    await manager.disconnectServer("s");
    expect(heard).toEqual(["s"]);
    expect(sent.filter((m) => m === "resources/unsubscribe")).toHaveLength(7);
    expect(manager.getNotificationState().subscriptions.has("s")).toBe(false);
  });

  it("A36: the server's ping and roots/list (the manager's cwd) are answered", async () => {
    const { call, dir } = await connected();
    const roots = JSON.parse((await call("ask_client", { method: "roots/list" })).content[0].text);
    expect(roots).toEqual({ roots: [{ uri: pathToFileURL(dir).href, name: dir.split("/").at(-1) }] });
    expect(JSON.parse((await call("ping_client")).content[0].text)).toEqual({});
  });
});
