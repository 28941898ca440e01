// SPEC-AGENT18 A1 and A3: the agent's constants and toJsonRpcError, as v18 exports them.
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
