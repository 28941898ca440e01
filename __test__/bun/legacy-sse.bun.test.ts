// SPEC-AGENT18 A22/A23 on Bun, where the v18 agent runs: the legacy HTTP+SSE transport
// against the scriptable fixture in legacy mode, as __test__/legacy-sse.test.ts does on Node.
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);
const init = { protocolVersion: "2024-11-05", capabilities: {}, clientInfo: { name: "bun", version: "0" } };
const cleanups = cleanupsAfterEach();

async function legacy() {
  const f = await startHttpFixture({ legacy: true });
  cleanups.push(f.close);
  const t = await native.createSseTransport({ type: "sse", url: f.url });
  cleanups.push(() => t.close());
  return { f, t };
}

describe("LegacySseTransport on Bun", () => {
  it("A22/A23: connect, then requests POSTed to the endpoint and answered on the stream", async () => {
    const { f, t } = await legacy();
    expect(t.connected).toBe(true);
    const notes: unknown[] = [];
    t.onNotification = (_method, params: any) => notes.push(params.data);
    const initResult: any = await t.request("initialize", init);
    expect(initResult.serverInfo.name).toBe("fixture-legacy");
    await t.notify("notifications/initialized");
    const answers = await Promise.all([1, 2, 3].map((n) => t.request("sse/echo", { n })));
    expect(answers).toEqual([1, 2, 3].map((n) => ({ params: { n } })));
    expect(notes).toEqual(["legacy note", "legacy note", "legacy note"]);
    expect(f.received.every((r) => r.path === "/messages?sessionId=legacy-1")).toBe(true);
  });

  it("A23: the server ending the stream rejects pending requests and fires onClose once", async () => {
    const { t } = await legacy();
    let closes = 0;
    t.onClose = () => closes++;
    const pending = t.request("slow/json", { ms: 1 }); // never answered on the legacy stream
    const ending = t.request("legacy/end");
    const outcomes = await Promise.allSettled([pending, ending]);
    const closed = "Transport closed: legacy SSE stream closed";
    expect(outcomes.map((o) => o.status === "rejected" && o.reason.message)).toEqual([closed, closed]);
    await new Promise((r) => setTimeout(r, 50));
    expect(closes).toBe(1);
    expect(t.connected).toBe(false);
    await expect(t.request("tools/list")).rejects.toThrow("Transport not connected");
  });
});

describe("H11 on Bun: the HTTP transport's legacy fallback reads the stream by A23's rules", () => {
  it("H11/A23: [DONE] is skipped; non-JSON goes to onError, rejects what is pending and ends the stream", async () => {
    const f = await startHttpFixture({ legacy: true });
    cleanups.push(f.close);
    const t = await native.createHttpTransport({ type: "sse", url: f.url });
    cleanups.push(() => t.close());
    const errors: string[] = [];
    t.onError = (e: Error) => errors.push(e.message);
    let closes = 0;
    t.onClose = () => closes++;
    await t.request("initialize", init);
    await expect(t.request("legacy/raw", { text: "data: [DONE]\n\n" })).resolves.toEqual({});
    await expect(t.request("sse/echo", { after: "done" })).resolves.toEqual({ params: { after: "done" } });
    const message = "Legacy SSE message event contained non-JSON data: not json";
    await expect(t.request("legacy/raw", { text: "data: not json\n\n" })).rejects.toThrow(message);
    expect(errors).toContain(message);
    await Bun.sleep(20);
    expect(closes).toBe(1);
  });
});
