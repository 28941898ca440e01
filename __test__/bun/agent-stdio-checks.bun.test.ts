// The v18 agent's own StdioTransport checks, replayed on Bun against mcp-native (T10, S4,
// S6, A13): notify before connect and after close, a server that exits mid-handshake, and
// close() after the server already ended — no unhandled rejection, onClose exactly once.
import { afterEach, describe, expect, it, setDefaultTimeout } from "bun:test";
import { checkRequestReceivers } from "../receiver-checks";
import { native, sleep } from "./support";

setDefaultTimeout(20_000);
let transport: InstanceType<typeof native.StdioTransport> | undefined;
afterEach(async () => {
  await transport?.close().catch(() => {});
  transport = undefined;
});

function trackUnhandled() {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on("unhandledRejection", listener);
  return { seen, release: () => process.off("unhandledRejection", listener) };
}

const bunScript = (source: string) => ({ type: "stdio" as const, command: process.execPath, args: ["-e", source] });

describe("StdioTransport as the agent checks it, on Bun", () => {
  it("T2: params of every length arrive intact, a multi-byte character at any place included", async () => {
    // The server echoes each request's params; around the 1 KiB a string is first read into.
    transport = new native.StdioTransport(
      bunScript(
        "for await (const line of console) { const m = JSON.parse(line); console.log(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: m.params })); }",
      ),
    );
    await transport.connect();
    for (let n = 990; n <= 1030; n++) {
      for (const c of ["é", "€", "😀"]) {
        const text = "a".repeat(n) + c + "z";
        expect(await transport.request("echo", { text })).toEqual({ text });
      }
    }
  });

  it("T2: request runs only on its own class's objects (Bun checks no receiver itself); params' toJSON may use the transport's setters", async () => {
    transport = new native.StdioTransport(
      bunScript(
        "for await (const line of console) { const m = JSON.parse(line); console.log(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: m.params })); }",
      ),
    );
    await transport.connect();
    await checkRequestReceivers(native, transport, "echo", (r) => r, expect);
  });

  it("T10: notify before connect() and after close() rejects 'Transport not connected'", async () => {
    transport = new native.StdioTransport(bunScript("await Bun.sleep(60_000)"));
    await expect(transport.notify("noop")).rejects.toThrow("Transport not connected");
    await transport.connect();
    await transport.close();
    await expect(transport.notify("noop")).rejects.toThrow("Transport not connected");
  });

  it("S4/A13: a server that exits right after answering initialize: no unhandled rejection, onClose, not connected", async () => {
    const script = [
      'let buf = "";',
      'process.stdin.on("data", (chunk) => {',
      "  buf += chunk;",
      '  const nl = buf.indexOf("\\n");',
      "  if (nl < 0) return;",
      "  const msg = JSON.parse(buf.slice(0, nl));",
      '  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: {} }) + "\\n");',
      "  process.exit(0);",
      "});",
    ].join("\n");
    const tracker = trackUnhandled();
    transport = new native.StdioTransport(bunScript(script));
    let closed = false;
    transport.onClose = () => (closed = true);
    try {
      await transport.connect();
      await transport.request("initialize", {});
      for (let i = 0; i < 5; i++) await transport.notify("notifications/initialized").catch(() => {});
      const until = Date.now() + 3000;
      while (!closed && Date.now() < until) await sleep(10);
      await sleep(50);
      expect(tracker.seen).toEqual([]);
      expect(closed).toBe(true);
      expect(transport.connected).toBe(false);
    } finally {
      tracker.release();
    }
  });

  it("S6: close() after the server ended, and again, never fires onClose twice", async () => {
    transport = new native.StdioTransport(bunScript("process.exit(0)"));
    let closes = 0;
    transport.onClose = () => closes++;
    await transport.connect();
    for (let i = 0; i < 100 && transport.connected; i++) await sleep(10);
    expect(transport.connected).toBe(false);
    expect(closes).toBe(1);
    await transport.close();
    await transport.close();
    expect(closes).toBe(1);
  });

  it("S6: repeated close() calls fire onClose exactly once", async () => {
    transport = new native.StdioTransport(bunScript("await Bun.sleep(60_000)"));
    let closes = 0;
    transport.onClose = () => closes++;
    await transport.connect();
    await transport.close();
    await transport.close();
    await transport.close();
    expect(closes).toBe(1);
    expect(transport.connected).toBe(false);
  });
});
