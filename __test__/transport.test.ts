// SPEC §2 (T1–T11) over stdio, against the scriptable fixture server.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { callText, closingAfterEach, history, init, native, server, sleep, waitFor } from "./helpers";
import { checkRequestReceivers } from "./receiver-checks";

const { open, connect } = closingAfterEach();

describe("T1 callbacks", () => {
  it("T1: callbacks are assignable properties; the last assigned is called; the getter returns it", async () => {
    const t = await connect();
    const calls: string[] = [];
    const first = () => calls.push("first");
    const second = (method: string) => calls.push(`second:${method}`);
    expect(t.onNotification).toBeUndefined();
    t.onNotification = first;
    expect(t.onNotification).toBe(first);
    t.onNotification = second;
    expect(t.onNotification).toBe(second);
    await callText(t, "notify_then_answer", { count: 1 });
    expect(calls).toEqual(["second:notifications/message"]);
    t.onNotification = undefined;
    expect(t.onNotification).toBeUndefined();
    await callText(t, "notify_then_answer", { count: 1 });
    expect(calls).toHaveLength(1);
  });
});

describe("T2 outgoing frames", () => {
  it("T2: params of every length arrive intact, a multi-byte character at any place included", async () => {
    const t = await connect();
    // Around the 1 KiB a string is first read into: a cut there must never go unnoticed.
    for (let n = 990; n <= 1030; n++) {
      for (const c of ["é", "€", "😀"]) {
        const text = "a".repeat(n) + c + "z";
        expect(await t.request("echo/params", { text })).toEqual({ params: { text } });
      }
    }
  });

  it("T2: requests carry jsonrpc, a unique id, method and params ({} when omitted); notifications have no id", async () => {
    const t = await connect();
    await t.notify("notifications/initialized");
    await t.request("echo/params");
    await t.request("echo/params", { a: 1 });
    const seen = await history(t);
    expect(seen[0]).toMatchObject({ jsonrpc: "2.0", method: "initialize", params: init });
    expect(seen[1]).toEqual({ jsonrpc: "2.0", method: "notifications/initialized", params: {} });
    expect(seen[2]).toMatchObject({ jsonrpc: "2.0", method: "echo/params", params: {} });
    expect(seen[3]).toMatchObject({ jsonrpc: "2.0", method: "echo/params", params: { a: 1 } });
    const ids = seen.filter((m) => m.id !== undefined).map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("T2 the receiver", () => {
  it("T2: request runs only on its own class's objects; params' toJSON may use the transport's setters", async () => {
    await checkRequestReceivers(native, await connect(), "echo/params", (r) => r.params, expect);
  });
});

describe("T3 ordering", () => {
  it("T3: notifications sent before a response reach onNotification before the promise settles", async () => {
    const t = await connect();
    const order: string[] = [];
    t.onNotification = (_m, params: any) => order.push(params.data);
    await t.request("tools/call", { name: "notify_then_answer", arguments: { count: 50 } }).then(() => order.push("response"));
    expect(order).toEqual([...Array.from({ length: 50 }, (_, i) => `n${i}`), "response"]);
  });
});

describe("T4 responses", () => {
  it("T4: an error response rejects with 'MCP error <code>: <message>' carrying code and data", async () => {
    const t = await connect();
    const error: any = await t.request("tools/call", { name: "rpc_error" }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP error -32042: Custom failure");
    expect(error.code).toBe(-32042);
    // A45: `data` as the agent's bounded, redacted JSON text.
    expect(error.data).toBe('{"detail":7}');
    const notFound: any = await t.request("no/such/method").catch((e) => e);
    expect(notFound.message).toBe("MCP error -32601: Method not found");
    expect("data" in notFound).toBe(true);
  });

  it("T4: a null result resolves with null", async () => {
    const t = await connect();
    await expect(t.request("tools/call", { name: "null_result" })).resolves.toBeNull();
  });
});

describe("T5/T6 unsolicited messages", () => {
  it("T5: responses with unknown ids are ignored, without rejection or onError", async () => {
    const t = await connect();
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    await expect(callText(t, "unknown_id_first")).resolves.toBe("real answer");
    expect(errors).toEqual([]);
  });

  it("T6: notifications without a handler are dropped", async () => {
    const t = await connect();
    await expect(callText(t, "notify_then_answer", { count: 3 })).resolves.toBe("after notifications");
  });
});

describe("T6/T11 params as sent", () => {
  it("T6/T11: params null reaches the handlers as null, absent params as undefined", async () => {
    const t = await connect();
    const notified: unknown[][] = [];
    const asked: unknown[][] = [];
    t.onNotification = (method, params) => notified.push([method, params]);
    t.onRequest = (method, params) => {
      asked.push([method, params]);
      return {};
    };
    const lines = [
      '{"jsonrpc":"2.0","method":"n/null","params":null}',
      '{"jsonrpc":"2.0","method":"n/absent"}',
      '{"jsonrpc":"2.0","id":"q1","method":"r/null","params":null}',
      '{"jsonrpc":"2.0","id":"q2","method":"r/absent"}',
    ];
    await expect(callText(t, "send_raw", { lines })).resolves.toBe("sent");
    await waitFor(() => asked.length === 2);
    expect(notified).toEqual([
      ["n/null", null],
      ["n/absent", undefined],
    ]);
    expect(asked).toEqual([
      ["r/null", null],
      ["r/absent", undefined],
    ]);
  });
});

describe("T7 timeouts", () => {
  it("T7/T9: a request times out with 'Request timeout after <ms>ms' and the server is told", async () => {
    // Long enough for a loaded machine to start the fixture and answer initialize.
    const t = await connect([], { timeout: 1000 });
    const error: any = await t.request("tools/call", { name: "never" }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("Request timeout after 1000ms");
    const seen = await history(t);
    const call = seen.find((m) => m.params?.name === "never");
    const cancelled = seen.find((m) => m.method === "notifications/cancelled");
    expect(cancelled).toEqual({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: call.id, reason: "Request timeout after 1000ms" },
    });
  });

  it("T7: timeout 0 disables the timeout", async () => {
    const t = await connect([], { timeout: 0 });
    await expect(callText(t, "slow", { ms: 300 })).resolves.toBe("slow done");
  });

  it("T9: initialize is never cancelled", async () => {
    const t = await native.createStdioTransport({ command: process.execPath, args: ["-e", "process.stdin.on('data', d => process.stderr.write(d))"], timeout: 100 });
    open.push(t);
    const seen: string[] = [];
    t.onStderr = (chunk) => seen.push(chunk);
    await expect(t.request("initialize", init)).rejects.toThrow("Request timeout after 100ms");
    await expect(t.request("tools/list")).rejects.toThrow("Request timeout after 100ms");
    await sleep(100);
    const text = seen.join("");
    expect(text).toContain('"method":"tools/list"');
    expect(text.match(/notifications\/cancelled/g)).toHaveLength(1);
  });
});

describe("T8 abort", () => {
  it("T8: an already aborted signal rejects at once with its reason and nothing is sent", async () => {
    const t = await connect();
    const reason = new Error("stop before start");
    const error = await t.request("tools/call", { name: "echo", arguments: { text: "nope" } }, { signal: AbortSignal.abort(reason) }).catch((e) => e);
    expect(error).toBe(reason);
    expect((await history(t)).some((m) => m.params?.arguments?.text === "nope")).toBe(false);
  });

  it("T8/T9: aborting later rejects with the reason object itself and sends notifications/cancelled", async () => {
    const t = await connect();
    const controller = new AbortController();
    const pending = t.request("tools/call", { name: "never" }, { signal: controller.signal });
    const reason = new Error("user gave up");
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    const seen = await history(t);
    const call = seen.find((m) => m.params?.name === "never");
    expect(seen.find((m) => m.method === "notifications/cancelled")?.params).toEqual({ requestId: call.id, reason: "user gave up" });
  });

  it("T8: a reason that is not an Error becomes Error('Aborted'); a DOMException reason is kept", async () => {
    const t = await connect();
    const c1 = new AbortController();
    const p1 = t.request("tools/call", { name: "never" }, { signal: c1.signal });
    c1.abort("just a string");
    const e1 = await p1.catch((e) => e);
    expect(e1).toBeInstanceOf(Error);
    expect(e1.message).toBe("Aborted");
    const c2 = new AbortController();
    const p2 = t.request("tools/call", { name: "never" }, { signal: c2.signal });
    c2.abort();
    const e2 = await p2.catch((e) => e);
    expect(e2).toBe(c2.signal.reason);
    expect(e2.name).toBe("AbortError");
  });

  it("T8: the abort listener is removed when a request settles (a long-lived signal does not leak)", async () => {
    const t = await connect();
    const controller = new AbortController();
    for (let i = 0; i < 300; i++) {
      await t.request("tools/call", { name: "echo", arguments: { text: String(i) } }, { signal: controller.signal });
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    const pending = t.request("tools/call", { name: "slow", arguments: { ms: 50 } }, { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    await pending;
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("T10 not connected", () => {
  it("T10: request and notify before connect and after close reject with 'Transport not connected'", async () => {
    const t = new native.StdioTransport({ command: process.execPath, args: [server] });
    expect(t.connected).toBe(false);
    await expect(t.request("ping")).rejects.toThrow(/^Transport not connected$/);
    await expect(t.notify("x")).rejects.toThrow(/^Transport not connected$/);
    await t.connect();
    expect(t.connected).toBe(true);
    await t.close();
    expect(t.connected).toBe(false);
    const error = await t.request("ping").catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("Transport not connected");
    await expect(t.notify("x")).rejects.toThrow("Transport not connected");
  });
});

describe("T11 server requests", () => {
  it("T11: ping is answered {} automatically", async () => {
    const t = await connect();
    expect(JSON.parse(await callText(t, "ping_client"))).toEqual({});
  });

  it("T11: without onRequest, other methods get -32601 Method not found", async () => {
    const t = await connect();
    expect(JSON.parse(await callText(t, "ask_client", { method: "roots/list" }))).toEqual({
      error: { code: -32601, message: "Method not found" },
    });
  });

  it("T11: onRequest's value (sync or async) is the result; a thrown error becomes a JSON-RPC error", async () => {
    const t = await connect();
    const seen: [string, unknown][] = [];
    t.onRequest = (method, params) => {
      seen.push([method, params]);
      if (method === "roots/list") return { roots: [{ uri: "file:///work" }] };
      if (method === "sampling/createMessage") return Promise.resolve({ role: "assistant", content: { type: "text", text: "hi" } });
      if (method === "elicitation/create") return Promise.reject(Object.assign(new Error("declined"), { code: -1 }));
      throw new Error("boom");
    };
    expect(JSON.parse(await callText(t, "ask_client", { method: "roots/list" }))).toEqual({ roots: [{ uri: "file:///work" }] });
    expect(JSON.parse(await callText(t, "ask_client", { method: "sampling/createMessage", params: { maxTokens: 5 } }))).toMatchObject({ role: "assistant" });
    expect(JSON.parse(await callText(t, "ask_client", { method: "elicitation/create" }))).toEqual({ error: { code: -1, message: "declined" } });
    expect(JSON.parse(await callText(t, "ask_client", { method: "other/thing" }))).toEqual({ error: { code: -32603, message: "boom" } });
    expect(seen[1]).toEqual(["sampling/createMessage", { maxTokens: 5 }]);
  });

  it("T11/S4: a throwing callback never crashes the host or stops the reader; onError hears of it", async () => {
    const t = await connect();
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    t.onNotification = () => {
      throw new Error("callback bug");
    };
    await expect(callText(t, "notify_then_answer", { count: 2 })).resolves.toBe("after notifications");
    expect(errors.map((e) => e.message)).toEqual(["callback bug", "callback bug"]);
    t.onError = () => {
      throw new Error("even onError throws");
    };
    await expect(callText(t, "notify_then_answer", { count: 2 })).resolves.toBe("after notifications");
  });
});
