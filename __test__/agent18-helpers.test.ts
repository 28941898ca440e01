// SPEC-AGENT18 A1, A3, A4, A16, A20, A24, A30: the agent's constants and pure helpers, as v18
// exports them.
import { describe, expect, it } from "vitest";
import { native } from "./helpers";

describe("A1 constants", () => {
  it("A1: MCP_PROTOCOL_VERSION, MCP_CONFIG_SCHEMA_URL and MCPNotificationMethods", () => {
    expect(native.MCP_PROTOCOL_VERSION).toBe("2025-11-25");
    expect(native.MCP_CONFIG_SCHEMA_URL).toBe(
      "https://raw.githubusercontent.com/can1357/oh-my-pi/main/packages/coding-agent/src/config/mcp-schema.json",
    );
    expect({ ...native.MCPNotificationMethods }).toEqual({
      TOOLS_LIST_CHANGED: "notifications/tools/list_changed",
      RESOURCES_LIST_CHANGED: "notifications/resources/list_changed",
      PROMPTS_LIST_CHANGED: "notifications/prompts/list_changed",
      RESOURCES_UPDATED: "notifications/resources/updated",
    });
  });
});

describe("A3 toJsonRpcError", () => {
  it("A3: an Error keeps its message and numeric code, else -32603", () => {
    expect(native.toJsonRpcError(Object.assign(new Error("gone"), { code: -32001 }))).toEqual({ code: -32001, message: "gone" });
    expect(native.toJsonRpcError(new TypeError("bad"))).toEqual({ code: -32603, message: "bad" });
    expect(native.toJsonRpcError(Object.assign(new Error("x"), { code: "ENOENT" }))).toEqual({ code: -32603, message: "x" });
  });

  it("A3: {code: number, message: string} is taken as it is; anything else is Internal error", () => {
    expect(native.toJsonRpcError({ code: 7, message: "seven", data: 1 })).toEqual({ code: 7, message: "seven" });
    for (const other of [{ code: 7 }, { message: "m" }, { code: "7", message: "m" }, "text", 42, null, undefined]) {
      expect(native.toJsonRpcError(other)).toEqual({ code: -32603, message: "Internal error" });
    }
  });
});

describe("A4 redactUrlForLog", () => {
  it("A4: values of key/token/secret/auth parameters become [redacted]; text that is not a URL loses its query", () => {
    expect(native.redactUrlForLog("https://api.example/mcp?apiKey=abc&q=x y&ACCESS_TOKEN=t&Authorization=z&page=2")).toBe(
      "https://api.example/mcp?apiKey=%5Bredacted%5D&q=x+y&ACCESS_TOKEN=%5Bredacted%5D&Authorization=%5Bredacted%5D&page=2",
    );
    // Compared with what URLSearchParams writes, as the agent's would.
    const url = new URL("https://api.example/mcp?client_secret=1&x=2");
    url.searchParams.set("client_secret", "[redacted]");
    expect(native.redactUrlForLog("https://api.example/mcp?client_secret=1&x=2")).toBe(url.toString());
    expect(native.redactUrlForLog("https://api.example/mcp?page=2")).toBe("https://api.example/mcp?page=2");
    expect(native.redactUrlForLog("no url here?token=secret")).toBe("no url here");
  });
});

describe("A16 writeFrame", () => {
  it("A16: writes then flushes; false when either throws, no flush after a failed write; rejections are swallowed", async () => {
    const calls: string[] = [];
    const sink = (write: () => unknown, flush: () => unknown) => ({
      write: (chunk: string) => (calls.push(`write ${chunk}`), write()),
      flush: () => (calls.push("flush"), flush()),
    });
    expect(native.writeFrame(sink(() => 5, () => undefined), "a\n")).toBe(true);
    expect(calls.splice(0)).toEqual(["write a\n", "flush"]);
    expect(native.writeFrame(sink(() => { throw new Error("EPIPE"); }, () => undefined), "b\n")).toBe(false);
    expect(calls.splice(0)).toEqual(["write b\n"]);
    expect(native.writeFrame(sink(() => undefined, () => { throw new Error("closed"); }), "c\n")).toBe(false);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      expect(native.writeFrame(sink(() => Promise.reject(new Error("w")), () => Promise.reject(new Error("f"))), "d\n")).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(native.writeFrame({} as any, "e\n")).toBe(false);
  });
});

describe("A24 header policy", () => {
  it("A24: mergeMCPHeaders: configured minus the generated names in any case, then generated, in a new object", () => {
    const generated = { "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25" };
    const configured = { "content-type": "text/plain", "X-Team": "a", "mcp-protocol-version": "1999-01-01" };
    const merged = native.mergeMCPHeaders({ generated, configured });
    expect(merged).toEqual({ "X-Team": "a", "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25" });
    expect(Object.keys(merged)).toEqual(["X-Team", "Content-Type", "MCP-Protocol-Version"]);
    expect(merged).not.toBe(generated);
    expect(native.mergeMCPHeaders({ generated })).toEqual(generated);
  });

  it("A24: setGeneratedHeader replaces every case variant in place; withoutHeader copies only when there is one", () => {
    const headers: Record<string, string> = { authorization: "old", AUTHORIZATION: "older", Accept: "x" };
    expect(native.setGeneratedHeader(headers, "Authorization", "Bearer t")).toBeUndefined();
    expect(headers).toEqual({ Accept: "x", Authorization: "Bearer t" });
    expect(native.withoutHeader(headers, "x-none")).toBe(headers);
    const without = native.withoutHeader(headers, "ACCEPT");
    expect(without).toEqual({ Authorization: "Bearer t" });
    expect(headers).toEqual({ Accept: "x", Authorization: "Bearer t" });
    expect(native.withoutHeader(undefined, "Accept")).toBeUndefined();
  });
});

describe("A30 manager helpers and A20's listener timeout", () => {
  it("A30: sortMCPToolsByName sorts in place in UTF-16 order, stable, and returns the same array", () => {
    const tools = [{ name: "b" }, { name: "B" }, { name: "a", n: 1 }, { name: "\u{1F600}" }, { name: "\uFF5E" }, { name: "a", n: 2 }];
    const expected = [...tools].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    expect(native.sortMCPToolsByName(tools)).toBe(tools);
    expect(tools).toEqual(expected);
    expect(tools.map((t: any) => t.n ?? t.name)).toEqual(["B", 1, 2, "b", "\u{1F600}", "\uFF5E"]);
  });

  it("A30: resolveSubscriptionPostAction: off → rollback, another epoch → ignore, else apply", () => {
    expect(native.resolveSubscriptionPostAction(false, 1, 1)).toBe("rollback");
    expect(native.resolveSubscriptionPostAction(true, 2, 1)).toBe("ignore");
    expect(native.resolveSubscriptionPostAction(true, 3, 3)).toBe("apply");
  });

  it("A20: resolveSSEConnectTimeoutMs: 0 when off, else a quarter of the timeout within 1 and 1000 ms", () => {
    expect([0, 2, 10, 1001, 30000].map((t) => native.resolveSSEConnectTimeoutMs(t))).toEqual([0, 1, 2, 250, 1000]);
    // No timeout given: the default 30 s.
    expect(native.resolveSSEConnectTimeoutMs()).toBe(1000);
  });

  it("A9/A20: resolveSSEConnectTimeoutMs asks the timeout resolver, as the agent's does through OMP_MCP_TIMEOUT_MS", () => {
    const asked: unknown[] = [];
    native.setTimeoutResolver((configTimeout?: number) => {
      asked.push(configTimeout);
      return configTimeout === undefined ? 0 : 200;
    });
    try {
      expect(native.resolveSSEConnectTimeoutMs(undefined)).toBe(0);
      expect(native.resolveSSEConnectTimeoutMs(30_000)).toBe(50);
      expect(asked).toEqual([undefined, 30_000]);
    } finally {
      native.setTimeoutResolver(null);
    }
  });
});
