// SPEC §9 (E1–E4): errors, argument validation, resource bounds, leaks.
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { callText, closingAfterEach, native, sleep } from "./helpers";

const { connect } = closingAfterEach();

/** Calls `f`, failing the test if it throws synchronously (E2), and returns its rejection. */
function rejectionOf(f: () => Promise<unknown>): Promise<any> {
  let promise: Promise<unknown>;
  try {
    promise = f();
  } catch (error) {
    throw new Error(`threw synchronously: ${error}`);
  }
  return promise.then(
    () => {
      throw new Error("resolved");
    },
    (e) => e,
  );
}

describe("E2 bad arguments", () => {
  it("E2: createStdioTransport rejects bad configs with a TypeError naming the field, never a sync throw", async () => {
    const cases: [unknown, string][] = [
      [undefined, "config"],
      [null, "config"],
      ["node server.js", "config"],
      [{}, "command"],
      [{ command: "" }, "command"],
      [{ command: 42 }, "command"],
      [{ command: "node", args: "server.js" }, "args"],
      [{ command: "node", args: [1] }, "args"],
      [{ command: "node", env: "A=1" }, "env"],
      [{ command: "node", cwd: 7 }, "cwd"],
      [{ command: "node", timeout: -1 }, "timeout"],
      [{ command: "node", maxMessageBytes: 0 }, "maxMessageBytes"],
    ];
    for (const [config, field] of cases) {
      const error = await rejectionOf(() => native.createStdioTransport(config as any));
      expect(error, JSON.stringify(config)).toBeInstanceOf(TypeError);
      expect(error.message).toContain(`"${field}"`);
    }
  });

  it("E2: the constructor throws a TypeError for a bad config (constructors are synchronous)", () => {
    expect(() => new native.StdioTransport({} as any)).toThrow(TypeError);
    expect(() => new native.StdioTransport({} as any)).toThrow('"command"');
  });

  it("E2: request and notify reject non-string methods and non-object params with TypeErrors", async () => {
    const t = await connect();
    const cases: [() => Promise<unknown>, string][] = [
      [() => t.request(42 as any), "method"],
      [() => t.request(undefined as any), "method"],
      [() => t.request("x", "params" as any), "params"],
      [() => t.request("x", [1, 2] as any), "params"],
      [() => t.request("x", 5 as any), "params"],
      // What goes out must be a JSON object as well.
      [() => t.request("x", new Date(0) as any), "params"],
      [() => t.request("x", { toJSON: () => [1] } as any), "params"],
      [() => t.notify("x", { toJSON: () => "text" } as any), "params"],
      [() => t.request("x", {}, "signal" as any), "options"],
      [() => t.request("x", {}, { signal: {} as any }), "options.signal"],
      [() => t.notify(null as any), "method"],
      [() => t.notify("x", "y" as any), "params"],
    ];
    for (const [call, field] of cases) {
      const error = await rejectionOf(call);
      expect(error).toBeInstanceOf(TypeError);
      expect(error.message).toContain(`"${field}"`);
    }
    // A cycle cannot become JSON: the engine's own error, as a rejection.
    const cyclic: any = {};
    cyclic.self = cyclic;
    expect(await rejectionOf(() => t.request("x", cyclic))).toBeInstanceOf(TypeError);
    expect(await callText(t, "echo", { text: "still fine" })).toBe("still fine");
  });

  it("E1: every rejection is an Error instance", async () => {
    const t = await connect([], { timeout: 1000 });
    const errors = await Promise.all([
      rejectionOf(() => t.request("tools/call", { name: "rpc_error" })),
      rejectionOf(() => t.request("tools/call", { name: "never" })),
      rejectionOf(() => native.createStdioTransport({ command: "/nonexistent/mcp" })),
      rejectionOf(() => new native.StdioTransport({ command: "node" }).request("x")),
    ]);
    for (const e of errors) expect(e).toBeInstanceOf(Error);
  });
});

describe("E3 message size", () => {
  it("E3: a message over maxMessageBytes is discarded with an onError report; the connection stays usable", async () => {
    const t = await connect([], { maxMessageBytes: 1 << 20 });
    const errors: Error[] = [];
    const huge: string[] = [];
    t.onError = (e) => errors.push(e);
    t.onNotification = (m) => huge.push(m);
    await expect(callText(t, "huge_line_then_ok", { bytes: 3 << 20 })).resolves.toBe("still alive");
    expect(huge).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(Error);
    expect(errors[0].message).toContain("maxMessageBytes");
    expect(errors[0].message).toContain(String(1 << 20));
    await expect(callText(t, "huge_line_then_ok", { bytes: 1000 })).resolves.toBe("still alive");
    expect(huge).toEqual(["notifications/huge"]);
  });

  it("E3: memory stays bounded against a server that never sends a newline", async () => {
    const t = await connect([], { maxMessageBytes: 1 << 20 });
    const errors: Error[] = [];
    t.onError = (e) => errors.push(e);
    const before = process.memoryUsage().rss;
    const endless = t.request("tools/call", { name: "endless_line" }, { signal: AbortSignal.timeout(2500) }).catch(() => {});
    await sleep(2000);
    const grown = process.memoryUsage().rss - before;
    expect(errors.length).toBe(1);
    // The server has pushed hundreds of MiB by now; the reader keeps ~1 MiB of it.
    expect(grown).toBeLessThan(64 << 20);
    await endless;
  });
});

describe("E4 leaks", () => {
  const fds = () => readdirSync("/proc/self/fd").length;

  it("E4: 1000 open/close cycles leak neither file descriptors nor memory", async () => {
    const cycle = async () => {
      const t = await native.createStdioTransport({ command: "cat" });
      await t.close();
    };
    for (let i = 0; i < 50; i++) await cycle();
    (globalThis as any).gc?.();
    const fdBefore = fds();
    const rssBefore = process.memoryUsage().rss;
    for (let i = 0; i < 1000; i++) await cycle();
    await sleep(100);
    (globalThis as any).gc?.();
    expect(fds()).toBeLessThanOrEqual(fdBefore);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(32 << 20);
  });

  it("E4: hundreds of timeouts and aborts on one transport leave it usable", async () => {
    const t = await connect([], { timeout: 1000 });
    const controller = new AbortController();
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) {
      work.push(t.request("tools/call", { name: "echo", arguments: { text: String(i) } }, { signal: controller.signal }));
      work.push(t.request("tools/call", { name: "never" }).catch((e) => e));
      const c = new AbortController();
      work.push(t.request("tools/call", { name: "never" }, { signal: c.signal }).catch((e) => e));
      c.abort();
    }
    await Promise.all(work);
    expect(await callText(t, "echo", { text: "done" })).toBe("done");
  });
});
