// A52–A54 on Bun: callMCP with Bun's fetch and readMcpJsonRpcResponse over Bun's Response
// streams, as __test__/json-rpc.test.ts on Node.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { native } from "./support";

let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { id: string; method: string };
      if (body.method === "refuse") return new Response("slow down", { status: 429 });
      // An answer after a notification, on a stream that stays open.
      const stream = new ReadableStream({
        start(controller) {
          const enc = new TextEncoder();
          controller.enqueue(enc.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message" })}\n\n`));
          controller.enqueue(enc.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", id: body.id, result: { ua: request.headers.get("user-agent") } })}\n\n`));
        },
      });
      return new Response(stream, { headers: { "Content-Type": "text/event-stream" } });
    },
  });
});
afterAll(() => server.stop(true));

describe("A52–A54 on Bun", () => {
  it("A53/A54: the answer on an open stream, through our client and through Bun's fetch", async () => {
    const url = `http://127.0.0.1:${server.port}/mcp`;
    const signal = AbortSignal.timeout(5000);
    expect((await native.callMCP(url, "x", {}, { signal, headers: { "User-Agent": "omp" } })).result).toEqual({ ua: "omp" });
    expect((await native.callMCP(url, "x", {}, { signal, fetch, headers: { "User-Agent": "bun" } })).result).toEqual({ ua: "bun" });
    const error: any = await native
      .callMCP(url, "refuse", {}, { fetch, onHttpError: (r: Response, body: string) => new RangeError(`${r.status} ${body}`) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toBe("429 slow down");
  });

  it("A53: readMcpJsonRpcResponse over a Bun Response; malformed data is a SyntaxError", async () => {
    const response = await fetch(`http://127.0.0.1:${server.port}/`, { method: "POST", body: JSON.stringify({ id: "q", method: "x" }) });
    expect(await native.readMcpJsonRpcResponse(response, "q")).toEqual({ jsonrpc: "2.0", id: "q", result: { ua: expect.any(String) } });
    const bad = new Response("data: nope\n\n", { headers: { "Content-Type": "text/event-stream" } });
    const error: any = await native.readMcpJsonRpcResponse(bad, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toBe("Malformed JSON-RPC message");
  });
});
