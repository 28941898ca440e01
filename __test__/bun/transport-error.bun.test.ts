// SPEC-AGENT183 A45 on Bun (JavaScriptCore): `MCPTransportError` is a real Error subclass
// there too, and a real server's failures reject with instances of it.
import { describe, expect, it } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { cleanupsAfterEach, native } from "./support";

const cleanups = cleanupsAfterEach();
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const init = { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "bun", version: "0" } };

describe("A45 on Bun", () => {
  it("the class: name, stack, cause, instanceof, subclassing, sanitized message", () => {
    const cause = new Error("root");
    const error = new native.MCPTransportError({ transport: "stdio", stage: "send", failure: "eof", message: " token=abc ", retryable: true, cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("MCPTransportError");
    expect(error.message).toBe("token=[redacted]");
    expect(String(error.stack)).toContain("token=[redacted]");
    expect(error.cause).toBe(cause);
    class Mine extends native.MCPTransportError {}
    expect(new Mine({ transport: "http", stage: "send", failure: "eof", message: "m", retryable: true })).toBeInstanceOf(native.MCPTransportError);
    expect(native.normalizeMCPTransportError(Object.assign(new Error("x"), { code: "ECONNRESET" }), { transport: "http", stage: "send" }).failure).toBe("reset");
  });

  it("a stdio server's JSON-RPC error and a 503 are instances, classified as the agent does", async () => {
    const t = await native.createStdioTransport({ command: process.execPath, args: [server] });
    cleanups.push(() => t.close());
    await t.request("initialize", init);
    const rpc: any = await t.request("tools/call", { name: "rpc_error", arguments: {} }).catch((e) => e);
    expect(rpc).toBeInstanceOf(native.MCPTransportError);
    expect([rpc.transport, rpc.failure, rpc.retryable, rpc.code, rpc.data]).toEqual(["stdio", "json_rpc", false, -32042, '{"detail":7}']);

    const http = createServer((_req, res) => res.writeHead(503).end("busy"));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => http.close(resolve)));
    const h = await native.createHttpTransport({ type: "http", url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` });
    cleanups.push(() => h.close());
    const busy: any = await h.request("ping").catch((e) => e);
    expect(busy).toBeInstanceOf(native.MCPTransportError);
    expect([busy.message, busy.transport, busy.failure, busy.retryable, busy.code, busy.status]).toEqual(["HTTP 503: busy", "http", "http_status", true, 503, 503]);
  });
});
