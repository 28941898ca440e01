// SPEC-AGENT18 A7 (request ids) and A9 (the timeout resolver), against the stdio fixture and
// the HTTP fixture on 127.0.0.1.
import { afterEach, describe, expect, it } from "vitest";
import { callText, history, init, native, server, sleep } from "./helpers";
import { startHttpFixture } from "./fixtures/http-server";

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  native.setTimeoutResolver(null);
  while (closers.length) await closers.pop()!().catch(() => {});
});

async function stdio(flags: string[] = [], config: Record<string, unknown> = {}) {
  const t = await native.createStdioTransport({ command: process.execPath, args: [server, ...flags], ...config });
  closers.push(() => t.close());
  return t;
}

async function http(config: Record<string, unknown> = {}) {
  const f = await startHttpFixture();
  closers.push(() => f.close());
  const t = await native.createHttpTransport({ type: "http", url: f.url, ...config });
  closers.push(() => t.close());
  return { f, t };
}

const isHexId = (id: unknown) => typeof id === "string" && /^[0-9a-f]{16}$/.test(id);

describe("A7 request ids", () => {
  it("A7: requests are numbered 1, 2, 3… however many notifications go between", async () => {
    const t = await stdio();
    await t.request("initialize", init);
    await t.notify("notifications/initialized");
    await t.notify("notifications/other");
    await t.request("ping");
    const seen = await history(t);
    expect(seen.filter((m) => m.method !== undefined && m.id !== undefined).map((m) => m.id)).toEqual([1, 2, 3]);
  });

  it('A7: requestIdFormat "string" sends unique 16-character lowercase hex ids, and their answers arrive', async () => {
    const t = await stdio([], { requestIdFormat: "string" });
    await t.request("initialize", init);
    await Promise.all([t.request("ping"), t.request("ping"), t.request("ping")]);
    expect(await callText(t, "echo", { text: "still matched" })).toBe("still matched");
    const ids = (await history(t)).filter((m) => m.method !== undefined && m.id !== undefined).map((m) => m.id);
    expect(ids.length).toBe(6);
    expect(ids.every(isHexId)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("A7: over HTTP too; a cancellation names the string id", async () => {
    const { f, t } = await http({ requestIdFormat: "string" });
    await t.request("initialize", init);
    const abort = new AbortController();
    const slow = t.request("slow/json", { ms: 2000 }, { signal: abort.signal });
    await sleep(100);
    abort.abort();
    await expect(slow).rejects.toThrow();
    await sleep(100);
    const posted = f.posted();
    const slowId = posted.find((m) => m.method === "slow/json").id;
    expect(isHexId(slowId)).toBe(true);
    expect(posted.find((m) => m.method === "notifications/cancelled")?.params.requestId).toBe(slowId);
  });

  it('A7: requestIdFormat must be "string" or "number"', async () => {
    await expect(native.createStdioTransport({ command: process.execPath, args: [server], requestIdFormat: "uuid" } as any)).rejects.toThrow(
      new TypeError('The "requestIdFormat" field must be "string" or "number"'),
    );
    const t = await stdio([], { requestIdFormat: "number" });
    await t.request("initialize", init);
    expect((await history(t))[0].id).toBe(1);
  });
});

describe("A9 setTimeoutResolver", () => {
  it("A9: the resolver's answer replaces timeout ?? 30000, given the config's timeout", async () => {
    const asked: unknown[][] = [];
    native.setTimeoutResolver((...args: unknown[]) => {
      asked.push(args);
      return asked.length === 1 ? 5000 : 150;
    });
    const t = await stdio(["--hang-on-unknown"]);
    await t.request("initialize", init);
    const started = Date.now();
    await expect(t.request("never/answered")).rejects.toThrow("Request timeout after 150ms");
    expect(Date.now() - started).toBeLessThan(1500);
    const timed = await stdio(["--hang-on-unknown"], { timeout: 5000 });
    await expect(timed.request("never/answered")).rejects.toThrow("Request timeout after 150ms");
    expect(asked[0]).toEqual([]);
    expect(asked.at(-1)).toEqual([5000]);
  });

  it("A9: it is read as each request starts, 0 means none, and null restores the config's rule", async () => {
    let ms = 5000;
    native.setTimeoutResolver(() => ms);
    const t = await stdio(["--hang-on-unknown"], { timeout: 60 });
    await t.request("initialize", init);
    ms = 100;
    await expect(t.request("never/answered")).rejects.toThrow("Request timeout after 100ms");
    ms = 0;
    const untimed = t.request("never/answered");
    const outcome = await Promise.race([untimed.then(() => "answered", (e) => String(e)), sleep(400).then(() => "still waiting")]);
    expect(outcome).toBe("still waiting");
    native.setTimeoutResolver(null);
    await expect(t.request("never/answered")).rejects.toThrow("Request timeout after 60ms");
  });

  it("A9: a resolver that throws rejects the request with what it threw", async () => {
    const t = await stdio();
    await t.request("initialize", init);
    native.setTimeoutResolver(() => {
      throw new RangeError("no timeouts today");
    });
    await expect(t.request("ping")).rejects.toThrow(new RangeError("no timeouts today"));
  });

  it("A9: connectToServer's deadline comes from it", async () => {
    native.setTimeoutResolver(() => 200);
    const started = Date.now();
    await expect(
      native.connectToServer("silent", { command: process.execPath, args: [server, "--no-init-answer"], timeout: 20_000 }),
    ).rejects.toThrow(/200ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("A9: over HTTP it times requests and notifies", async () => {
    let ms = 5000;
    native.setTimeoutResolver(() => ms);
    const { t } = await http({ timeout: 20_000 });
    await t.request("initialize", init);
    ms = 150;
    await expect(t.request("slow/json", { ms: 1500 })).rejects.toThrow("Request timeout after 150ms");
    await expect(t.notify("notifications/slow", { ms: 1500 })).rejects.toThrow("Notify timeout after 150ms");
  });

  it("A9: only a function or null is taken", () => {
    expect(() => native.setTimeoutResolver(42 as any)).toThrow('The "resolver" argument must be a function or null');
  });
});
