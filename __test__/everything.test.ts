// Third-party peer: @modelcontextprotocol/server-everything over stdio (T2–T11, S1–S6).
import { afterEach, describe, expect, it } from "vitest";
import { alive, everything, native, waitFor, type Transport } from "./helpers";

let t: Transport | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe("server-everything over stdio", () => {
  it("T2/T3/T11: initialize, initialized, tools/list, tools/call, and its server→client requests answered", async () => {
    t = await native.createStdioTransport({ command: process.execPath, args: [everything, "stdio"] });
    const serverRequests: string[] = [];
    t.onRequest = async (method, params: any) => {
      serverRequests.push(method);
      if (method === "roots/list") return { roots: [{ uri: "file:///workspace", name: "workspace" }] };
      if (method === "sampling/createMessage") {
        return { role: "assistant", model: "test-model", content: { type: "text", text: `sampled: ${params.messages[0].content.text}` } };
      }
      throw new Error(`unexpected ${method}`);
    };
    const notifications: string[] = [];
    t.onNotification = (method) => notifications.push(method);

    const init = await t.request<any>("initialize", {
      protocolVersion: "2025-03-26",
      capabilities: { roots: { listChanged: false }, sampling: {} },
      clientInfo: { name: "mcp-native-tests", version: "0.0.0" },
    });
    expect(init.serverInfo.name).toContain("everything");
    expect(init.capabilities.tools).toBeDefined();
    await t.notify("notifications/initialized");

    const { tools } = await t.request<any>("tools/list");
    const names = tools.map((tool: any) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "trigger-sampling-request"]));

    const echo = await t.request<any>("tools/call", { name: "echo", arguments: { message: "hello native" } });
    expect(echo.content[0]).toEqual({ type: "text", text: "Echo: hello native" });
    const sum = await t.request<any>("tools/call", { name: "get-sum", arguments: { a: 2, b: 40 } });
    expect(sum.content[0].text).toContain("42");

    const sampled = await t.request<any>("tools/call", { name: "trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 5 } });
    expect(JSON.stringify(sampled)).toContain("sampled: ");
    expect(serverRequests).toContain("sampling/createMessage");
    // The server asks for roots once the client says it has them.
    expect(await waitFor(() => serverRequests.includes("roots/list"))).toBe(true);

    await expect(t.request("ping")).resolves.toEqual({});
    // This SDK version reports an unknown tool as a tool result with isError.
    const unknown: any = await t.request("tools/call", { name: "no-such-tool" });
    expect(unknown.isError).toBe(true);

    const pid = t.pid!;
    await t.close();
    expect(alive(pid)).toBe(false);
  });
});
