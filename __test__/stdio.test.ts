// SPEC §3 (S1–S8): the stdio transport's process handling, against real child processes.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as timers from "node:timers";
import { describe, expect, it, vi } from "vitest";
import { alive, callText, closingAfterEach, fixture, native, server, sleep, waitFor } from "./helpers";
import { issueFromContinuations } from "./fixtures/continuation-chains";
import { scriptedServer } from "./fixtures/scripted-server";

const { open, connect } = closingAfterEach();

describe("S1 spawn", () => {
  it("S1: the child gets the host environment overlaid with config.env, and config.cwd", async () => {
    process.env.MCP_NATIVE_FROM_HOST = "host-value";
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cwd-")));
    const t = await connect([], { env: { MCP_NATIVE_OVERLAY: "overlay-value" }, cwd: dir });
    expect(JSON.parse(await callText(t, "env", { name: "MCP_NATIVE_FROM_HOST" }))).toEqual({ value: "host-value", cwd: dir });
    expect(JSON.parse(await callText(t, "env", { name: "MCP_NATIVE_OVERLAY" })).value).toBe("overlay-value");
    delete process.env.MCP_NATIVE_FROM_HOST;
  });

  it("S1: without cwd the child runs in process.cwd(); a second connect() is a no-op", async () => {
    const t = await connect();
    expect(JSON.parse(await callText(t, "env", { name: "PATH" })).cwd).toBe(process.cwd());
    const pid = t.pid;
    await t.connect();
    expect(t.pid).toBe(pid);
    expect(t.connected).toBe(true);
  });

  it("S1: a command that cannot be spawned rejects naming the command and the OS error, with code", async () => {
    const missing: any = await native.createStdioTransport({ command: "mcp-native-no-such-command" }).catch((e) => e);
    expect(missing).toBeInstanceOf(Error);
    expect(missing.code).toBe("ENOENT");
    expect(missing.message).toContain("mcp-native-no-such-command");
    expect(missing.message).toContain("No such file or directory");
    const file = join(mkdtempSync(join(tmpdir(), "mcp-native-")), "not-executable.sh");
    writeFileSync(file, "#!/bin/sh\n");
    chmodSync(file, 0o644);
    const t = new native.StdioTransport({ command: file });
    const denied: any = await t.connect().catch((e) => e);
    expect(denied.code).toBe("EACCES");
    expect(denied.message).toContain(file);
    expect(t.connected).toBe(false);
  });
});

describe("S2/S3 framing", () => {
  it("S2: a 20 MB response line arrives whole", async () => {
    const t = await connect();
    const text = await callText(t, "big", { bytes: 20_000_000 });
    expect(text.length).toBe(20_000_000);
  });

  it("S2: many lines per read and CRLF endings are handled", async () => {
    const script = `process.stdin.once("data", () => process.stdout.write(${JSON.stringify(
      '{"jsonrpc":"2.0","method":"a","params":{}}\r\n{"jsonrpc":"2.0","method":"b"}\n{"jsonrpc":"2.0","id":1,"result":{"ok":1}}\r\n',
    )}))`;
    const t = await native.createStdioTransport({ command: process.execPath, args: ["-e", script] });
    open.push(t);
    const seen: string[] = [];
    t.onNotification = (m) => seen.push(m);
    await expect(t.request("x")).resolves.toEqual({ ok: 1 });
    expect(seen).toEqual(["a", "b"]);
  });

  it("S3: a notification whose params are not JSON is skipped, inside a run of messages and alone", async () => {
    const lines = [
      // One read: a run of notifications and a result, delivered together.
      '{"jsonrpc":"2.0","method":"a","params":{"n":1}}\n{"jsonrpc":"2.0","method":"bad","params":{"x":tru}}\n' +
        '{"jsonrpc":"2.0","method":"b","params":[{"]":"["}]}\n{"jsonrpc":"2.0","method":"bad","params":{"a":1]}\n' +
        '{"jsonrpc":"2.0","id":1,"result":{"ok":1}}\n',
      // The next: a bad one alone between two answers that are not part of a run.
      '{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"first"}}\n{"jsonrpc":"2.0","method":"bad","params":[1,}\n' +
        '{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"second"}}\n{"jsonrpc":"2.0","method":"c","params":{}}\n',
    ];
    const script = scriptedServer({ 1: lines[0], 3: lines[1] });
    const t = await native.createStdioTransport({ command: process.execPath, args: ["-e", script] });
    open.push(t);
    const seen: unknown[] = [];
    const errors: Error[] = [];
    t.onNotification = (m, p) => seen.push([m, p]);
    t.onError = (e) => errors.push(e);
    await expect(t.request("x")).resolves.toEqual({ ok: 1 });
    const second = t.request("y").catch((e) => e.message);
    const third = t.request("z").catch((e) => e.message);
    expect([await second, await third]).toEqual(["MCP error -1: first", "MCP error -1: second"]);
    expect(seen).toEqual([
      ["a", { n: 1 }],
      ["b", [{ "]": "[" }]],
      ["c", {}],
    ]);
    expect(errors).toEqual([]);
  });

  it("S3: an answer whose result is not JSON is skipped and its call waits for a good one; odd but valid results settle", async () => {
    const deep = `${"[".repeat(80)}1${"]".repeat(80)}`;
    const bad = ['{"a":01}', '{"a":"x\u0001"}', "[1,]", '{"a":tru}', '{"a":"\\q"}', '{"a" :1', "-", '"open'];
    // Each bad answer for id 1 comes before the good one, in one read.
    const first = bad.map((result) => `{"jsonrpc":"2.0","id":1,"result":${result}}\n`).join("") + '{"jsonrpc":"2.0","id":1,"result":{"ok":1}}\n';
    const odd = [
      ["escapes", '{"a":"\\u00e9\\n\\"","b":"\\ud83d\\ude00"}', { a: 'é\n"', b: "😀" }],
      ["spaces", '{ "a" : [ 1 , 2 ] }', { a: [1, 2] }],
      ["deep", deep, JSON.parse(deep)],
      ["numbers", '[-0,1.5e+300,0.25,-12E-3]', [-0, 1.5e300, 0.25, -12e-3]],
    ] as const;
    const replies: Record<number, string> = { 1: first };
    odd.forEach(([, result], i) => (replies[i + 2] = `{"jsonrpc":"2.0","id":${i + 2},"result":${result}}\n`));
    const t = await native.createStdioTransport({ command: process.execPath, args: ["-e", scriptedServer(replies)] });
    open.push(t);
    await expect(t.request("x")).resolves.toEqual({ ok: 1 });
    for (const [name, , expected] of odd) expect([name, await t.request(name)]).toEqual([name, expected]);
  });

  it("S3: a stdout banner and other non-JSON-RPC lines are skipped", async () => {
    const t = await connect(["--banner"]);
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    await expect(callText(t, "echo", { text: "works" })).resolves.toBe("works");
    expect(errors).toEqual([]);
  });
});

describe("S4 server ends", () => {
  it("S4/S5/A49: a crash rejects pending requests with its exit code, carrying stderr, then onClose fires once", async () => {
    const t = await connect();
    const order: string[] = [];
    t.onClose = () => order.push("close");
    const pending = t.request("tools/call", { name: "never" }).catch((e) => {
      order.push("reject");
      return e;
    });
    const crash = t.request("tools/call", { name: "crash", arguments: { stderr: "fatal: disk on fire\n" } }).catch((e) => e);
    const error: any = await pending;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("MCP subprocess exited with code 3 before responding");
    expect([error.failure, error.stage, error.retryable, error.code]).toEqual(["eof", "receive", true, 3]);
    expect(error.stderr).toContain("fatal: disk on fire");
    expect((await crash).message).toBe(error.message);
    await waitFor(() => order.includes("close"));
    expect(order).toEqual(["reject", "close"]);
    expect(t.connected).toBe(false);
    await t.close();
    await sleep(50);
    expect(order).toEqual(["reject", "close"]);
  });

  it("S4: stdout closed while the process lives on: the transport closes and the process is stopped", async () => {
    const t = await connect();
    const pid = t.pid!;
    let closes = 0;
    t.onClose = () => closes++;
    await expect(t.request("tools/call", { name: "close_stdout" })).rejects.toThrow("MCP subprocess closed stdout before responding");
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(alive(pid)).toBe(false);
  });
});

describe("S5 stderr", () => {
  it("S5: onStderr receives stderr text; a stderr flood never blocks the server", async () => {
    const t = await connect(["--stderr-at-start=hello from stderr\n"]);
    let text = "";
    t.onStderr = (chunk) => (text += chunk);
    await expect(callText(t, "stderr_flood", { kib: 8192 })).resolves.toBe("flooded");
    await waitFor(() => text.length >= 8192 * 1024);
    expect(text.length).toBeGreaterThanOrEqual(8192 * 1024);
  });

  it("S5: without onStderr a flood is drained and discarded; the tail is kept (8 KiB)", async () => {
    const t = await connect();
    await expect(callText(t, "stderr_flood", { kib: 8192 })).resolves.toBe("flooded");
    const error: any = await t.request("tools/call", { name: "crash", arguments: { stderr: "last words\n" } }).catch((e) => e);
    expect(error.stderr.endsWith("last words\n")).toBe(true);
    expect(error.stderr.length).toBe(8192);
  });
});

describe("A13 spawn", () => {
  it.runIf(process.platform === "linux")("A13: the server leads a session of its own (detached), so its process group is its pid", async () => {
    const t = await connect();
    const pid = t.pid!;
    // /proc/<pid>/stat: "pid (comm) state ppid pgrp session ..."; comm may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [, , pgrp, session] = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
    expect({ pgrp, session }).toEqual({ pgrp: pid, session: pid });
  });
});

describe("S6 close", () => {
  it("S6: close() rejects pending with 'Transport closed', stops the process group, fires onClose exactly once", async () => {
    const t = await connect(["--grandchild"]);
    const grandchild = Number(await callText(t, "grandchild_pid"));
    const pid = t.pid!;
    expect(alive(grandchild)).toBe(true);
    let closes = 0;
    t.onClose = () => closes++;
    const pending = t.request("tools/call", { name: "never" }).catch((e) => e);
    const closing = [t.close(), t.close(), t.close()];
    expect(t.connected).toBe(false);
    const error = await pending;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("Transport closed");
    await Promise.all(closing);
    expect(closes).toBe(1);
    expect(alive(pid)).toBe(false);
    // The grandchild ignores SIGTERM: it needed the group-wide SIGKILL.
    expect(await waitFor(() => !alive(grandchild), 1000)).toBe(true);
    await t.close();
    expect(closes).toBe(1);
  });

  it("S6/A14: a server that ignores SIGTERM is killed after 1 s, and close() resolves within 0.5 s more", async () => {
    const t = await connect(["--ignore-sigterm"]);
    const pid = t.pid!;
    const started = Date.now();
    await t.close();
    const took = Date.now() - started;
    expect(alive(pid)).toBe(false);
    // Was 2 s before A14; scheduling noise gets the remaining margin.
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(1900);
  });

  it("S6: close() on a transport that never connected resolves", async () => {
    const t = new native.StdioTransport({ command: process.execPath, args: [server] });
    await expect(t.close()).resolves.toBeUndefined();
  });
});

describe("S2 large results", () => {
  it("S2: multi-megabyte strings arrive exactly, whether plain ASCII, escaped or non-ASCII", async () => {
    const t = await connect();
    const unit = 1 << 20;
    const texts = [
      "a".repeat(2 * unit),
      `line one\n${"tab\t\"quoted\" \\ ".repeat(unit / 16)}\u0001end`,
      `${"é漢🙂".repeat(unit / 8)}tail`,
    ];
    for (const text of texts) {
      const result = await t.request<any>("tools/call", { name: "echo", arguments: { text } });
      expect(result.content[0].text.length).toBe(text.length);
      expect(result.content[0].text === text).toBe(true);
      expect(Object.keys(result.content[0])).toEqual(["type", "text"]);
    }
  });

  it("S2: a large answer read across many reads parses as JSON.parse reads it, however it is spelled", async () => {
    const t = await connect();
    const spelled = [
      `{ "jsonrpc" : "2.0" , "id" : ID , "result" : { "content" : [ { "type" : "text" , "text" : "BLOB" } ] , "n" : [ -0.5e3 , 0 , 1E2 , -0 , 18446744073709551617 , true , false , null , [ ] , { } ] , "dup" : 1 , "dup" : 2 , "" : "" } }`,
      `{"result":{"text":"BLOB","id":"inner"},"jsonrpc":"2.0","error":null,"id":ID}`,
      `{"jsonrpc":"2.0","id":ID,"result":{"text":"BLOB",	"tab":"outside strings"}}`,
      `{"jsonrpc":"2.0","id":ID,"result":{"text":"BLOB","escaped":"a\\b\u00e9"}}`,
      `{"jsonrpc":"2.0","id":ID,"result":["BLOB",{"deep":${"[".repeat(80)}${"]".repeat(80)}}]}`,
    ];
    for (const line of spelled) {
      const bytes = 2 << 20;
      const result = await t.request<any>("tools/call", { name: "spelled_line", arguments: { line, bytes, piece: 300_000 } });
      const expected = JSON.parse(line.replace("ID", "0").replace("BLOB", "x".repeat(bytes))).result;
      expect(JSON.stringify(result) === JSON.stringify(expected), line).toBe(true);
    }
    const error = `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"BLOB"}}`;
    const failed = t.request("tools/call", { name: "spelled_line", arguments: { line: error, bytes: 2 << 20, piece: 300_000 } });
    // A45: a message is bounded to 1 000 characters.
    await expect(failed).rejects.toThrow(/^MCP error -32000: x{982}$/);
    const notices: unknown[] = [];
    t.onNotification = (method, params) => notices.push({ method, params });
    const notice = `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"BLOB"}}`;
    const after = await callText(t, "spelled_line", { line: notice, bytes: 2 << 20, piece: 300_000, then: "after" });
    expect(after).toBe("after");
    expect(notices).toEqual([{ method: "notifications/message", params: { data: "x".repeat(2 << 20) } }]);
  });
});

describe("S7 writes", () => {
  it("S7: frames leave in call order, whole", async () => {
    const t = await connect();
    const texts = Array.from({ length: 500 }, (_, i) => `${i}:${"p".repeat(i * 37)}`);
    const results = await Promise.all(texts.map((text) => callText(t, "echo", { text })));
    expect(results).toEqual(texts);
    const seen = JSON.parse(await callText(t, "history")) as any[];
    const echoed = seen.filter((m) => m.params?.name === "echo").map((m) => m.params.arguments.text);
    expect(echoed).toEqual(texts);
  });

  it("S7: requests and notifications issued from the continuations of answers (held, then written together) leave in issue order", async () => {
    const { issued, seen, wrong } = await issueFromContinuations(await connect());
    expect(wrong).toEqual([]);
    expect(seen).toEqual(issued);
  });

  it("S7: with queueMicrotask faked (vi.useFakeTimers), requests held during a delivery still go out", async () => {
    const t = await connect();
    vi.useFakeTimers({ toFake: ["queueMicrotask", "setTimeout", "setImmediate", "setInterval"] });
    try {
      const chain = async (w: number) => {
        for (let i = 0; i < 5; i++) {
          const r: any = await t.request("tools/call", { name: "gather", arguments: { count: 8, text: `${w}:${i}` } });
          expect(r.content[0].text).toBe(`${w}:${i}`);
        }
      };
      // Fewer held requests than are written at once: only the release can write them.
      const done = Promise.all(Array.from({ length: 8 }, (_, w) => chain(w)));
      const timeout = new Promise((_, reject) => timers.setTimeout(() => reject(new Error("held requests never written")), 5000));
      await Promise.race([done, timeout]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("S7: writes to a server that stopped reading queue up without blocking the JS thread", async () => {
    const t = await connect();
    const stalled = callText(t, "stall_reading", { ms: 1500 });
    await sleep(100);
    const big = "b".repeat(1 << 20);
    const started = Date.now();
    // 32 MiB against a 64 KiB pipe: with blocking writes this loop would wait for the server.
    const calls = Array.from({ length: 32 }, () => callText(t, "echo", { text: big }));
    expect(Date.now() - started).toBeLessThan(1000);
    await stalled;
    expect((await Promise.all(calls)).every((r) => r.length === big.length)).toBe(true);
  });

  it("S7: a request written to a process that closed its stdin rejects with an Error; the transport stays", async () => {
    const t = await native.createStdioTransport({ command: "sh", args: ["-c", "exec 0<&-; sleep 30"] });
    open.push(t);
    await sleep(100);
    const error: any = await t.request("tools/call", { name: "echo" }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/^Failed to write to MCP server: Broken pipe/);
    expect(t.connected).toBe(true);
  });

  it("A13: an unwritable notify rejects 'Transport closed while sending notification \"<method>\"' and closes the transport", async () => {
    const t = await connect();
    const pid = t.pid!;
    let closes = 0;
    t.onClose = () => closes++;
    expect(await callText(t, "close_stdin")).toBe("stdin closed");
    const error: any = await t.notify("notifications/x").catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('Transport closed while sending notification "notifications/x"');
    expect(await waitFor(() => closes === 1)).toBe(true);
    expect(t.connected).toBe(false);
    // S4/S6: the server, still running when its stdin went, is stopped.
    expect(await waitFor(() => !alive(pid))).toBe(true);
  });

  it("A13: a request to a server that stopped reading is not held back by the full pipe: its timeout runs", async () => {
    const t = await connect([], { timeout: 300 });
    const stalled = callText(t, "stall_reading", { ms: 1500 }).catch((e) => e);
    await sleep(50);
    const big = "b".repeat(1 << 20);
    const started = performance.now();
    const error: any = await callText(t, "echo", { text: big.repeat(4) }).catch((e) => e);
    expect(error.message).toBe("Request timeout after 300ms");
    expect(performance.now() - started).toBeLessThan(1200);
    await stalled;
  });
});

describe("S8 host exit", () => {
  function host(mode: string): Promise<{ proc: ReturnType<typeof spawn>; pids: { server: number; grandchild: number } }> {
    return new Promise((resolve, reject) => {
      const proc = spawn(process.execPath, [fixture("exit-host.mjs"), mode], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      proc.stdout!.on("data", (d) => {
        out += d;
        if (out.includes("\n")) resolve({ proc, pids: JSON.parse(out) });
      });
      proc.on("error", reject);
    });
  }
  const exited = (proc: ReturnType<typeof spawn>) =>
    new Promise<{ code: number | null; signal: string | null }>((r) => {
      if (proc.exitCode !== null || proc.signalCode !== null) r({ code: proc.exitCode, signal: proc.signalCode });
      else proc.on("exit", (code, signal) => r({ code, signal }));
    });

  it("§0/S8: a script that never calls close() still exits, and its server is stopped", async () => {
    const { proc, pids } = await host("exit");
    expect(await exited(proc)).toEqual({ code: 0, signal: null });
    expect(await waitFor(() => !alive(pids.server) && !alive(pids.grandchild), 4000)).toBe(true);
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`S8: on ${signal} the host's servers and their process groups are terminated`, async () => {
      const { proc, pids } = await host("wait");
      expect(alive(pids.server)).toBe(true);
      proc.kill(signal);
      expect((await exited(proc)).signal).toBe(signal);
      expect(await waitFor(() => !alive(pids.server) && !alive(pids.grandchild), 4000)).toBe(true);
    });
  }
});
