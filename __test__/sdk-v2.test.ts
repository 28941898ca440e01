// SPEC-PROTOCOL N1–N9 against a third-party 2026-07-28 server: the TypeScript SDK v2's
// `@modelcontextprotocol/server` (its stateless HTTP handler and its stdio server), which
// checks the envelope and the SEP-2243 headers strictly.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { fixture, native, waitFor } from "./helpers";

const sdkServer = fixture("sdk-v2-server.mjs");
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

/** The SDK server over HTTP: its URL, and what it wrote on stderr. */
async function startHttp(...flags: string[]) {
  const child: ChildProcess = spawn(process.execPath, [sdkServer, "http", ...flags], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c) => (stderr += c));
  cleanups.push(() => child.kill());
  const url: string = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the SDK server exited (${code}): ${stderr}`)));
  });
  return { url, stderr: () => stderr, notify: (kind: string) => fetch(`${url.replace(/\/mcp$/, "")}/_notify/${kind}`, { method: "POST" }) };
}

async function connect(config: object, options: object = {}) {
  const client = await native.MCPClient.connect("sdk-v2", config as any, { client: { protocolVersion: "auto" }, ...options } as any);
  cleanups.push(() => client.close());
  return client;
}

const elicitation = async () => ({ action: "accept" as const, content: { name: "Ada" } });

describe("the TypeScript SDK v2 server, stateless over HTTP", () => {
  it("N2/N3/N4: found by the probe; calls pass the SDK's strict header checks; N6 input rounds; prompts and resources", async () => {
    const s = await startHttp("--stateless-only");
    const client = await connect({ type: "http", url: s.url }, { elicitation });
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    expect(client.connection.eraDetection).toBe("probe");
    expect(client.connection.serverInfo).toEqual({ name: "sdk-v2-fixture", version: "2.4.0" });
    expect((await client.listTools()).map((t) => t.name)).toEqual(["echo", "ask_name", "slow", "announce"]);
    await expect(client.callTool("echo", { text: "hi" })).resolves.toMatchObject({ content: [{ text: "echo: hi" }] });
    await expect(client.callTool("ask_name", {})).resolves.toMatchObject({ content: [{ text: "hello Ada (round-1)" }] });
    await expect(client.getPrompt("greet", { who: "Bob" })).resolves.toMatchObject({ messages: [{ content: { text: "Say hello to Bob" } }] });
    await expect(client.readResource("test://hello")).resolves.toMatchObject({ contents: [{ text: "hello resource" }] });
    await expect(client.ping()).resolves.toEqual(expect.any(Object));
  });

  it("N7: the connect's subscription delivers the SDK's change notifications; N5: an abort closes the stream and the SDK sees it", async () => {
    const s = await startHttp("--stateless-only");
    const client = await connect({ type: "http", url: s.url });
    const seen: string[] = [];
    client.connection.transport.onNotification = (method) => seen.push(method);
    // The subscription is open once a change reaches it.
    expect(await waitFor(() => (void s.notify("tools"), seen.length > 0), 5000)).toBe(true);
    expect(seen.every((m) => m === "notifications/tools/list_changed")).toBe(true);
    const controller = new AbortController();
    const call = client.callTool("slow", { ms: 3000 }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await expect(call).rejects.toThrow();
    expect(await waitFor(() => s.stderr().includes("slow: cancelled"), 5000)).toBe(true);
  });

  it("N1: connectToServer keeps the handshake, which the SDK's default handler still serves", async () => {
    const s = await startHttp();
    const connection = await native.connectToServer("sdk-v2", { type: "http", url: s.url });
    cleanups.push(() => connection.transport.close());
    expect(connection.protocolVersion).toBe("2025-11-25");
    const result: any = await connection.transport.request("tools/call", { name: "echo", arguments: { text: "old" } });
    expect(result.content[0].text).toBe("echo: old");
  });
});

describe("the TypeScript SDK v2 server over stdio", () => {
  it("N2: a stateless-only stdio server is found by the probe; N7: its announcements arrive on the subscription; N6", async () => {
    const client = await connect({ command: process.execPath, args: [sdkServer, "stdio", "--stateless-only"] }, { elicitation });
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    expect(client.connection.eraDetection).toBe("probe");
    const seen: string[] = [];
    client.connection.transport.onNotification = (method) => seen.push(method);
    await expect(client.callTool("echo", { text: "pipe" })).resolves.toMatchObject({ content: [{ text: "echo: pipe" }] });
    await client.callTool("announce", { kind: "tools" });
    await client.callTool("announce", { kind: "prompts" });
    expect(await waitFor(() => seen.length === 2)).toBe(true);
    expect(seen).toEqual(["notifications/tools/list_changed", "notifications/prompts/list_changed"]);
    await expect(client.callTool("ask_name", {})).resolves.toMatchObject({ content: [{ text: "hello Ada (round-1)" }] });
  });

  it("N2: a stdio server that speaks both eras is taken in the stateless one; connectToServer keeps the handshake with it", async () => {
    const config = { command: process.execPath, args: [sdkServer, "stdio"] };
    const client = await connect(config);
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    const connection = await native.connectToServer("sdk-v2-handshake", config);
    cleanups.push(() => connection.transport.close());
    expect(connection.protocolVersion).toBe("2025-11-25");
    const result: any = await connection.transport.request("tools/call", { name: "echo", arguments: { text: "both" } });
    expect(result.content[0].text).toBe("echo: both");
  });
});
