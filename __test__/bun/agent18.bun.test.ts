// SPEC-AGENT18 on Bun, where the v18 agent runs: A16's writeFrame on Bun's own FileSink,
// A14's close timing for a server spawned from Bun, A27's listings kept on the connection,
// A15's terminateStdioProcess on Bun's own Subprocess.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);
const server = fileURLToPath(new URL("../fixtures/stdio-server.mjs", import.meta.url));
const cleanups = cleanupsAfterEach();

describe("the v18 agent's helpers on Bun", () => {
  it("A16: writeFrame writes and flushes a Bun FileSink", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-bun-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "frames.jsonl");
    const sink = Bun.file(path).writer();
    expect(native.writeFrame(sink, '{"jsonrpc":"2.0","method":"a"}\n')).toBe(true);
    expect(native.writeFrame(sink, '{"jsonrpc":"2.0","method":"b"}\n')).toBe(true);
    await sink.end();
    expect(readFileSync(path, "utf8")).toBe('{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}\n');
  });

  it("A14: a server spawned from Bun that ignores SIGTERM is killed after 1 s; A27: listings are kept on the connection", async () => {
    const connection = await native.connectToServer("bun", { command: "node", args: [server, "--all-capabilities"] });
    cleanups.push(() => native.disconnectServer(connection));
    const resources = await native.listResources(connection);
    expect(resources).toHaveLength(7);
    expect(await native.listResources(connection)).toBe(connection.resources!);
    const stubborn = await native.createStdioTransport({ command: "node", args: [server, "--ignore-sigterm"] });
    // Answering means it runs, its SIGTERM handler installed.
    await stubborn.request("ping");
    const started = Date.now();
    await stubborn.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(1900);
  });
});

/** The first line a Bun subprocess writes to its piped stdout. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text.trim();
}

/** Gone, or a zombie nobody has reaped yet. */
const gone = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
};

describe("A15 terminateStdioProcess on Bun", () => {
  const ignoreTerm = "process.on('SIGTERM', () => {})";

  it("A15: a Bun Subprocess ignoring SIGTERM gets SIGKILL through its kill() after termGraceMs", async () => {
    const child = Bun.spawn(["node", "-e", `${ignoreTerm}; console.log("ready"); setInterval(() => {}, 1000)`], { stdout: "pipe" });
    cleanups.push(() => child.kill("SIGKILL"));
    expect(await firstLine(child.stdout)).toBe("ready");
    const started = Date.now();
    await native.terminateStdioProcess(child, false, undefined, 300);
    const took = Date.now() - started;
    await child.exited;
    expect(child.signalCode).toBe("SIGKILL");
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1300);
  });

  it("A15: a detached Bun Subprocess is stopped with its whole process group", async () => {
    const leader = Bun.spawn(
      [
        "node",
        "-e",
        `const g = require("node:child_process").spawn(process.execPath, ["-e", "${ignoreTerm}; setInterval(() => {}, 1000)"], { stdio: "ignore" }); console.log(g.pid); setInterval(() => {}, 1000)`,
      ],
      { stdout: "pipe", detached: true },
    );
    cleanups.push(() => leader.kill("SIGKILL"));
    const grandchild = Number(await firstLine(leader.stdout));
    expect(gone(grandchild)).toBe(false);
    cleanups.push(() => {
      if (!gone(grandchild)) process.kill(grandchild, "SIGKILL");
    });
    await native.terminateStdioProcess(leader, true, process.platform, 2000);
    await leader.exited;
    expect(leader.signalCode).toBe("SIGTERM");
    const until = Date.now() + 2000;
    while (!gone(grandchild) && Date.now() < until) await Bun.sleep(20);
    expect(gone(grandchild)).toBe(true);
  });
});

describe("A13 stdio on Bun", () => {
  const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bun", version: "0" } };

  it.if(process.platform === "linux")("A13: a server spawned from Bun leads its own session; an unwritable notify closes the transport", async () => {
    const t = await native.createStdioTransport({ command: process.execPath, args: [server] });
    cleanups.push(() => t.close());
    await t.request("initialize", init);
    const pid = t.pid!;
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [, , pgrp, session] = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
    expect({ pgrp, session }).toEqual({ pgrp: pid, session: pid });
    let closes = 0;
    t.onClose = () => closes++;
    await t.request("tools/call", { name: "close_stdin", arguments: {} });
    const error: any = await t.notify("notifications/x").catch((e) => e);
    expect(error.message).toBe('Transport closed while sending notification "notifications/x"');
    const until = Date.now() + 5000;
    while (closes === 0 && Date.now() < until) await Bun.sleep(10);
    expect(closes).toBe(1);
    expect(t.connected).toBe(false);
  });
});
