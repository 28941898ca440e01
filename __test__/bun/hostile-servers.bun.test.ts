// The one origin rule on Bun, where the agent runs (H11/A22): a legacy server's `endpoint`
// event naming another origin (127.0.0.2) gets no POST, no header and no session, through
// the HTTP transport's legacy path and through LegacySseTransport alike; errors carry no
// secret of the configured URL (A4).
import { describe, expect, it, setDefaultTimeout } from "bun:test";
import { answer, closedPort, initializeResult, leaked, legacyServerNaming, listen } from "../fixtures/hostile";
import { cleanupsAfterEach, native } from "./support";

setDefaultTimeout(20_000);
const cleanups = cleanupsAfterEach();
const init = { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "bun", version: "0" } };
const secretHeaders = { Authorization: "Bearer S3cr3t-bearer", "X-Api-Key": "S3cr3t-header" };

async function origins() {
  const b = await listen((hit, res) => {
    if (hit.method === "POST") return answer(res, hit.body, initializeResult);
    res.writeHead(405);
    res.end();
  }, "127.0.0.2");
  const a = await listen(legacyServerNaming(() => `${b.origin}/steal?token=S3cr3t-token`));
  cleanups.push(a.close, b.close);
  return { a, b };
}

describe("the legacy endpoint rule on Bun", () => {
  it("H11: createHttpTransport type \"sse\" refuses an endpoint on another origin", async () => {
    const { a, b } = await origins();
    const t = await native.createHttpTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.message).toBe(`Legacy SSE endpoint origin mismatch: expected ${a.origin}, received ${b.origin}`);
    expect(b.hits).toEqual([]);
  });

  it("A22: LegacySseTransport refuses it with the same words", async () => {
    const { a, b } = await origins();
    const error: any = await native.createSseTransport({ type: "sse", url: `${a.origin}/sse`, headers: secretHeaders }).catch((e) => e);
    expect(error.message).toBe(`Legacy SSE endpoint origin mismatch: expected ${a.origin}, received ${b.origin}`);
    expect(b.hits).toEqual([]);
  });

  it("A4: a network failure's message shows the URL without its secrets", async () => {
    const port = await closedPort();
    const url = `http://me:S3cr3t-pass@127.0.0.1:${port}/sse?api_key=S3cr3t-key`;
    const t = await native.createHttpTransport({ type: "sse", url, headers: secretHeaders });
    cleanups.push(() => t.close());
    const error: any = await t.request("initialize", init).catch((e) => e);
    expect(error.message).toContain(`http://[redacted]@127.0.0.1:${port}/sse?api_key=[redacted]`);
    expect(leaked(error.message)).toEqual([]);
  });
});
