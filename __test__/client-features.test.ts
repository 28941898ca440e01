// SPEC-PROTOCOL P5: roots, sampling and elicitation handlers on connectToServer, MCPClient and
// the manager; the capabilities they advertise; SEP-1034 form defaults; notifyRootsChanged.
// P6: the notifications the client acts on (list_changed, the server's cancellations).
import { pathToFileURL } from "node:url";
import { basename } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { everything, native, server, startEverything, waitFor } from "./helpers";

type Connection = import("../index.js").MCPServerConnection;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

async function connect(config: Record<string, unknown>, options: Record<string, unknown> = {}, name = "peer"): Promise<Connection> {
  const connection = await native.connectToServer(name, config as any, options as any);
  cleanups.push(() => connection.transport.close());
  return connection;
}
const fixtureConfig = { command: process.execPath, args: [server] };
const everythingConfig = { command: process.execPath, args: [everything, "stdio"] };

/** What the stdio fixture's client requests sent in `initialize`. */
async function received(connection: Connection): Promise<any[]> {
  const result: any = await connection.transport.request("tools/call", { name: "history", arguments: {} });
  return JSON.parse(result.content[0].text);
}
async function initializeParams(connection: Connection) {
  return (await received(connection)).find((m) => m.method === "initialize").params;
}
async function askClient(connection: Connection, method: string, params: unknown = {}) {
  const result: any = await connection.transport.request("tools/call", { name: "ask_client", arguments: { method, params } });
  return JSON.parse(result.content[0].text);
}
const text = (result: any) => result.content.map((c: any) => c.text ?? "").join("\n");

const form = {
  message: "Who are you?",
  requestedSchema: {
    type: "object",
    properties: {
      name: { type: "string", default: "John Doe" },
      age: { type: "integer", default: 30 },
      score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive"], default: "active" },
      verified: { type: "boolean", default: true },
      nickname: { type: "string" },
    },
  },
};

describe("P5 handlers over stdio (our fixture)", () => {
  it('P5/A26: without handlers only roots is advertised, roots/list answers the cwd, the rest is -32601 (v12: "Method not found")', async () => {
    const connection = await connect(fixtureConfig, { compat: "v12" });
    expect((await initializeParams(connection)).capabilities).toEqual({ roots: { listChanged: false } });
    expect(await askClient(connection, "roots/list")).toEqual({
      roots: [{ uri: pathToFileURL(process.cwd()).href, name: basename(process.cwd()) }],
    });
    expect(await askClient(connection, "sampling/createMessage", { messages: [], maxTokens: 1 })).toEqual({
      error: { code: -32601, message: "Method not found" },
    });
    expect(await askClient(connection, "elicitation/create", form)).toEqual({ error: { code: -32601, message: "Method not found" } });
    // A26 (v18, the default): the message names the method.
    const v18 = await connect(fixtureConfig);
    expect(await askClient(v18, "sampling/createMessage", { messages: [], maxTokens: 1 })).toEqual({
      error: { code: -32601, message: "Unsupported server request: sampling/createMessage" },
    });
    expect(await askClient(v18, "ping")).toEqual({});
  });

  it("A26: onNotification is on the transport before initialize; setProtocolVersion hears the negotiated version", async () => {
    const heard: string[] = [];
    const connection = await connect({ ...fixtureConfig, args: [server, "--instructions=hi"] }, { onNotification: (method: string) => heard.push(method) });
    expect(connection.transport.onNotification).toBeTypeOf("function");
    await connection.transport.request("tools/call", { name: "send_notification", arguments: { method: "notifications/x" } });
    expect(heard).toContain("notifications/x");
    expect(connection.instructions).toBe("hi");
    // Our HttpTransport is told too: the prototype's method is looked up when it is called.
    const { startHttpFixture } = await import("./fixtures/http-server");
    const f = await startHttpFixture();
    cleanups.push(() => f.close());
    const proto = native.HttpTransport.prototype as any;
    const original = proto.setProtocolVersion;
    const versions: string[] = [];
    proto.setProtocolVersion = function (this: unknown, v: string) {
      versions.push(v);
      return original.call(this, v);
    };
    cleanups.push(() => (proto.setProtocolVersion = original));
    const http = await connect({ type: "http", url: f.url });
    expect(versions).toEqual([http.protocolVersion]);
  });

  it("P5: each handler advertises its capability; elicitation gets (params, {serverName}) and form defaults fill what it left out", async () => {
    const calls: unknown[] = [];
    const connection = await connect(
      fixtureConfig,
      {
        roots: [{ uri: "file:///work", name: "work" }],
        sampling: async () => ({ role: "assistant", model: "m", content: { type: "text", text: "hi" } }),
        elicitation: async (params: unknown, extra: unknown) => {
          calls.push([params, extra]);
          return { action: "accept", content: { name: "Ada", nickname: "ada" } };
        },
      },
      "people",
    );
    expect((await initializeParams(connection)).capabilities).toEqual({
      roots: { listChanged: true },
      sampling: {},
      elicitation: { form: { applyDefaults: true }, url: {} },
    });
    expect(await askClient(connection, "elicitation/create", form)).toEqual({
      action: "accept",
      content: { name: "Ada", nickname: "ada", age: 30, score: 95.5, status: "active", verified: true },
    });
    expect(calls).toEqual([[form, { serverName: "people", signal: expect.any(AbortSignal) }]]);
    expect(await askClient(connection, "roots/list")).toEqual({ roots: [{ uri: "file:///work", name: "work" }] });
    expect(await askClient(connection, "sampling/createMessage", { messages: [], maxTokens: 1 })).toEqual({
      role: "assistant",
      model: "m",
      content: { type: "text", text: "hi" },
    });
  });

  it("P5: a declined elicitation and a URL-mode one are passed through untouched", async () => {
    const answers = [{ action: "decline" }, { action: "accept" }];
    const connection = await connect(fixtureConfig, { elicitation: async () => answers.shift() });
    expect(await askClient(connection, "elicitation/create", form)).toEqual({ action: "decline" });
    const url = { mode: "url", message: "Sign in", url: "https://example.com/auth", elicitationId: "e1" };
    expect(await askClient(connection, "elicitation/create", url)).toEqual({ action: "accept" });
  });

  it("P5/T11: onRequest gets every other method with (method, params, extra); a thrown error's code and message are sent", async () => {
    const seen: unknown[] = [];
    const connection = await connect(fixtureConfig, {
      onRequest: async (method: string, params: unknown, extra: unknown) => {
        seen.push([method, params, extra]);
        if (method === "x/fail") throw Object.assign(new Error("no way"), { code: -32042 });
        return { handled: method };
      },
    });
    expect(await askClient(connection, "x/custom", { a: 1 })).toEqual({ handled: "x/custom" });
    expect(await askClient(connection, "x/fail")).toEqual({ error: { code: -32042, message: "no way" } });
    expect(await askClient(connection, "roots/list")).toEqual({ handled: "roots/list" });
    expect(seen[0]).toEqual(["x/custom", { a: 1 }, { serverName: "peer", signal: expect.any(AbortSignal) }]);
  });

  it("P5: roots as a function is asked each time; notifyRootsChanged sends notifications/roots/list_changed", async () => {
    let roots = [{ uri: "file:///a", name: "a" }];
    const connection = await connect(fixtureConfig, { roots: async () => roots });
    expect(await askClient(connection, "roots/list")).toEqual({ roots });
    roots = [{ uri: "file:///b", name: "b" }];
    await connection.notifyRootsChanged!();
    expect(await askClient(connection, "roots/list")).toEqual({ roots });
    const history = await received(connection);
    expect(history.map((m) => m.method)).toContain("notifications/roots/list_changed");
  });

  it("E2: handlers of the wrong kind are a TypeError", async () => {
    await expect(native.connectToServer("x", fixtureConfig as any, { sampling: 5 } as any)).rejects.toThrow(
      new TypeError('The "options.sampling" field must be a function'),
    );
    await expect(native.connectToServer("x", fixtureConfig as any, { roots: "file:///" } as any)).rejects.toThrow(
      new TypeError('The "options.roots" field must be an array or a function'),
    );
  });
});

describe("P5 against server-everything", () => {
  const handlers = (log: string[]) => ({
    roots: () => {
      log.push("roots");
      return [{ uri: "file:///workspace", name: "workspace" }];
    },
    sampling: async (params: any) => ({
      role: "assistant",
      model: "test-model",
      content: { type: "text", text: `sampled ${params.messages[0].content.text}` },
    }),
    elicitation: async () => ({ action: "accept", content: { name: "Ada", check: true, email: "ada@example.com" } }),
  });

  it("P5 over stdio: its sampling, elicitation and roots tools reach our handlers; roots change is picked up", async () => {
    const log: string[] = [];
    const connection = await connect(everythingConfig, handlers(log));
    const notes: string[] = [];
    connection.transport.onNotification = (method, params: any) => notes.push(`${method} ${params?.data ?? ""}`);
    const tools = await native.listTools(connection);
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"]));

    const sampled = await native.callTool(connection, "trigger-sampling-request", { prompt: "the sea", maxTokens: 20 });
    expect(text(sampled)).toContain("sampled Resource trigger-sampling-request context: the sea");
    const elicited = await native.callTool(connection, "trigger-elicitation-request", {});
    // The server echoes what it got: our content plus the defaults it declared.
    expect(text(elicited)).toContain('"name": "Ada"');
    expect(text(elicited)).toContain('"firstLine": "It was a dark and stormy night."');
    expect(text(elicited)).toContain('"integer": 42');
    const roots = await native.callTool(connection, "get-roots-list", {});
    expect(text(roots)).toContain("file:///workspace");

    const before = log.length;
    await connection.notifyRootsChanged!();
    expect(await waitFor(() => log.length > before)).toBe(true);
  });

  it("P5 over Streamable HTTP: requests on the POST stream reach the handlers and are answered by POST", async () => {
    const { proc, port } = await startEverything("streamableHttp");
    cleanups.push(() => proc.kill());
    const connection = await connect({ type: "http", url: `http://127.0.0.1:${port}/mcp` }, handlers([]));
    const sampled = await native.callTool(connection, "trigger-sampling-request", { prompt: "http", maxTokens: 5 });
    expect(text(sampled)).toContain("sampled Resource trigger-sampling-request context: http");
    const elicited = await native.callTool(connection, "trigger-elicitation-request", {});
    expect(text(elicited)).toContain('"integer": 42');
  });
});

describe("P5 through MCPClient and the manager", () => {
  it("P5: MCPClient.connect takes the same handlers; MCPClient#notifyRootsChanged", async () => {
    const client = await native.MCPClient.connect("c", fixtureConfig as any, {
      elicitation: async () => ({ action: "accept", content: {} }),
    });
    cleanups.push(() => client.close());
    await client.notifyRootsChanged();
    expect((await received(client.connection)).map((m) => m.method)).toContain("notifications/roots/list_changed");
    expect(await askClient(client.connection, "elicitation/create", form)).toEqual({
      action: "accept",
      content: { name: "John Doe", age: 30, score: 95.5, status: "active", verified: true },
    });
  });

  it("P5: the manager's handlers reach every server, with its name", async () => {
    const asked: unknown[] = [];
    const manager = new native.MCPManager(process.cwd(), null, {
      elicitation: async (_params: unknown, extra: unknown) => {
        asked.push(extra);
        return { action: "cancel" };
      },
    });
    cleanups.push(() => manager.disconnectAll());
    await manager.connectServers({ alpha: fixtureConfig as any, beta: fixtureConfig as any }, {});
    for (const name of ["alpha", "beta"]) {
      const connection = manager.getConnection(name)!;
      expect(await askClient(connection, "elicitation/create", form)).toEqual({ action: "cancel" });
    }
    expect(asked).toEqual(["alpha", "beta"].map((serverName) => ({ serverName, signal: expect.any(AbortSignal) })));
  });
});

describe("P6 notifications the client acts on", () => {
  it("P6: tools/list_changed clears connection.tools; the next listTools asks the server again", async () => {
    const connection = await connect(fixtureConfig);
    const first = await native.listTools(connection);
    expect(connection.tools).toBe(first);
    const seen: string[] = [];
    connection.transport.onNotification = (method) => seen.push(method);
    await native.callTool(connection, "send_notification", { method: "notifications/tools/list_changed" });
    expect(await waitFor(() => seen.length === 1)).toBe(true);
    expect(connection.tools).toBeUndefined();
    const again = await native.listTools(connection);
    expect(again).not.toBe(first);
    expect(again.map((t) => t.name)).toEqual(first.map((t) => t.name));
    // Other notifications leave the list alone; notifications/message reaches onNotification.
    await native.callTool(connection, "send_notification", { method: "notifications/message", params: { level: "info", data: "x" } });
    expect(await waitFor(() => seen.length === 2)).toBe(true);
    expect(seen[1]).toBe("notifications/message");
    expect(connection.tools).toBe(again);
  });

  it("P6: the manager with autoRefreshTools lists again after tools/list_changed", async () => {
    const manager = new native.MCPManager(process.cwd(), null, { compat: "v12", autoRefreshTools: true });
    cleanups.push(() => manager.disconnectAll());
    await manager.connectServers({ fixture: fixtureConfig as any }, {});
    const connection = manager.getConnection("fixture")!;
    const before = connection.tools;
    await native.callTool(connection, "send_notification", { method: "notifications/tools/list_changed" });
    expect(await waitFor(() => connection.tools !== undefined && connection.tools !== before)).toBe(true);
  });

  it("P6: notifications/cancelled for a server request aborts the handler's signal, and it is not answered", async () => {
    let aborted: unknown;
    const connection = await connect(fixtureConfig, {
      sampling: (_params: unknown, extra: any) =>
        new Promise((resolve) => {
          extra.signal.addEventListener("abort", () => {
            aborted = true;
            // Too late: the server no longer wants this answer.
            resolve({ role: "assistant", model: "m", content: { type: "text", text: "late" } });
          });
        }),
    });
    const result = await native.callTool(connection, "ask_then_cancel", { ms: 50, wait: 200 });
    expect(aborted).toBe(true);
    expect(JSON.parse((result as any).content[0].text)).toEqual({ answered: false });
  });

  it("P6/T11: the transport's own onRequest gets {signal} as its third argument", async () => {
    const t = await native.createStdioTransport(fixtureConfig as any);
    cleanups.push(() => t.close());
    await t.request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } });
    let signal: AbortSignal | undefined;
    t.onRequest = (_method, _params, extra) => {
      signal = extra.signal;
      return new Promise(() => {});
    };
    const result: any = await t.request("tools/call", { name: "ask_then_cancel", arguments: { method: "x/slow", ms: 30, wait: 50 } });
    expect(signal?.aborted).toBe(true);
    expect(JSON.parse(result.content[0].text)).toEqual({ answered: false });
  });
});
