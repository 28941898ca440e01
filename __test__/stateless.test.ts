// SPEC-PROTOCOL N1, N3, N4 (the 2026-07-28 stateless era, explicit selection): against a
// stateless server of ours on 127.0.0.1 that checks the envelope and the headers.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startExampleHttp } from "./fixtures/cli-http-server.mjs";
import { history, native, server, waitFor } from "./helpers";

const indexJs = fileURLToPath(new URL("../index.js", import.meta.url));

/** A new process's manager (its own era verdicts), with a FileToolCache at `cachePath`,
 *  connecting `servers`: how each one's era was found, and the first request it saw. */
function managerProcess(cachePath: string, servers: Record<string, object>, options: object = {}): Promise<Record<string, any>> {
  const script = `
    const native = require(${JSON.stringify(indexJs)});
    (async () => {
      const manager = new native.MCPManager(process.cwd(), new native.FileToolCache(${JSON.stringify(cachePath)}), ${JSON.stringify(options)});
      const servers = ${JSON.stringify(servers)};
      await manager.connectServers(servers, {});
      const out = {};
      for (const name of Object.keys(servers)) {
        const connection = await manager.waitForConnection(name);
        const answer = await connection.transport.request("tools/call", { name: "history", arguments: {} });
        const first = JSON.parse(answer.content[0].text).find((m) => m.id !== undefined && m.method);
        out[name] = { detection: connection.eraDetection, version: connection.protocolVersion, first: first.method };
      }
      // The era is written beside the tools, after the connect.
      await new Promise((r) => setTimeout(r, 200));
      await manager.disconnectAll();
      console.log(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout!.on("data", (c) => (out += c));
    child.stderr!.on("data", (c) => (err += c));
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});

const META = "io.modelcontextprotocol/";

/** A stateless MCP server speaking `versions`; every POST is recorded. */
async function statelessServer(versions: string[]) {
  const seen: { headers: Record<string, any>; body: any }[] = [];
  const others: string[] = [];
  let lists = 0;
  const server = createServer(async (req, res) => {
    if (req.method !== "POST") {
      others.push(req.method!);
      res.writeHead(405);
      return res.end();
    }
    let text = "";
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    seen.push({ headers: req.headers, body });
    const reply = (status: number, message: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(message));
    };
    const version = req.headers["mcp-protocol-version"];
    if (body.method === "initialize") {
      // A handshake server's answer, for the fallback.
      return reply(200, { jsonrpc: "2.0", id: body.id, result: { protocolVersion: body.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "handshake", version: "1" } } });
    }
    if (body.id === undefined) {
      res.writeHead(202);
      return res.end();
    }
    if (!versions.includes(String(version)) || body.params?._meta?.[`${META}protocolVersion`] !== version) {
      return reply(400, { jsonrpc: "2.0", id: body.id, error: { code: -32022, message: "Unsupported protocol version", data: { supported: versions, requested: version } } });
    }
    const result = (value: object) => reply(200, { jsonrpc: "2.0", id: body.id, result: { resultType: "complete", ...value } });
    if (body.method === "server/discover") {
      return result({ supportedVersions: versions, capabilities: { tools: {} }, instructions: "be stateless", _meta: { [`${META}serverInfo`]: { name: "stateless", version: "2" } } });
    }
    if (body.method === "tools/list") {
      lists++;
      // "moved" mirrors its region only from the second listing on (a server that changed).
      const moved = { name: "moved", inputSchema: { type: "object", properties: { region: { type: "string", ...(lists > 1 && { "x-mcp-header": "Region" }) } } } };
      return result({
        ttlMs: 300,
        tools: [
          { name: "add", inputSchema: { type: "object" } },
          { name: "weather", inputSchema: { type: "object", properties: { city: { type: "string", "x-mcp-header": "City" }, days: { type: "integer", "x-mcp-header": "Days" }, units: { type: "string" } } } },
          { name: "broken", inputSchema: { type: "object", properties: { when: { type: "number", "x-mcp-header": "When" } } } },
          moved,
        ],
      });
    }
    if (body.method === "tools/call" && body.params.name === "weather") return result({ content: [{ type: "text", text: "sunny" }] });
    if (body.method === "tools/call" && body.params.name === "moved") {
      if (req.headers["mcp-param-region"] !== body.params.arguments.region) {
        return reply(400, { jsonrpc: "2.0", id: body.id, error: { code: -32020, message: "Header mismatch: Mcp-Param-Region" } });
      }
      return result({ content: [{ type: "text", text: `moved to ${body.params.arguments.region}` }] });
    }
    if (body.method === "tools/call" && body.params.name === "confirm") {
      // N6: asks once (with an opaque state), then answers with what it was given.
      if (!body.params.inputResponses) {
        return result({
          resultType: "input_required",
          inputRequests: { ok: { method: "elicitation/create", params: { message: "Sure?", requestedSchema: { type: "object", properties: { sure: { type: "boolean" } } } } } },
          requestState: '{"n": 1,  "spaced":true}',
        });
      }
      return result({ content: [{ type: "text", text: JSON.stringify({ responses: body.params.inputResponses, state: body.params.requestState }) }] });
    }
    if (body.method === "tools/call" && body.params.name === "nag") {
      return result({ resultType: "input_required", inputRequests: { again: { method: "elicitation/create", params: { message: "Again?", requestedSchema: { type: "object" } } } } });
    }
    if (body.method === "tools/call") return result({ content: [{ type: "text", text: `sum ${body.params.arguments.a + body.params.arguments.b}` }] });
    return reply(404, { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "Method not found" } });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as any).port}/mcp`, seen, others };
}

describe("N1/N3/N4 the stateless era", () => {
  it("N3: server/discover instead of initialize; every request carries the _meta envelope; N4 headers", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await native.MCPClient.connect("stateless", { type: "http", url: s.url }, {
      client: { protocolVersion: "2026-07-28", clientInfo: { name: "tests", version: "0" } },
    });
    cleanups.push(() => client.close());
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    expect(client.connection.serverInfo).toEqual({ name: "stateless", version: "2" });
    expect(client.connection.instructions).toBe("be stateless");
    await expect(client.callTool("add", { a: 2, b: 3 })).resolves.toMatchObject({ content: [{ text: "sum 5" }] });
    expect(s.seen.map((r) => r.body.method)).toEqual(["server/discover", "tools/call"]);
    for (const { headers, body } of s.seen) {
      expect(headers["mcp-protocol-version"]).toBe("2026-07-28");
      expect(headers["mcp-session-id"]).toBeUndefined();
      expect(headers["mcp-method"]).toBe(body.method);
      expect(body.params._meta).toMatchObject({
        [`${META}protocolVersion`]: "2026-07-28",
        [`${META}clientCapabilities`]: expect.any(Object),
        [`${META}clientInfo`]: { name: "tests", version: "0" },
      });
    }
    expect(s.seen[1].headers["mcp-name"]).toBe("add");
  });

  it("N3: -32022 naming only handshake versions falls back to the handshake with the newest we speak", async () => {
    const s = await statelessServer(["2025-06-18", "2025-03-26"]);
    const client = await native.MCPClient.connect("fallback", { type: "http", url: s.url }, { client: { protocolVersion: "2026-07-28" } });
    cleanups.push(() => client.close());
    expect(client.connection.protocolVersion).toBe("2025-06-18");
    expect(client.connection.serverInfo).toEqual({ name: "handshake", version: "1" });
    const initialize = s.seen.find((r) => r.body.method === "initialize")!;
    expect(initialize.body.params.protocolVersion).toBe("2025-06-18");
    expect(initialize.body.params._meta).toBeUndefined();
    expect(initialize.headers["mcp-method"]).toBeUndefined();
  });

  it("N4: x-mcp-header parameters become Mcp-Param-* headers; a tool with invalid annotations is dropped and reported", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await native.MCPClient.connect("headers", { type: "http", url: s.url }, { client: { protocolVersion: "2026-07-28" } });
    cleanups.push(() => client.close());
    const errors: string[] = [];
    (client.connection.transport as any).onError = (e: Error) => errors.push(e.message);
    const tools = await client.listTools();
    expect(tools.map((t: any) => t.name)).toEqual(["add", "weather", "moved"]);
    expect(errors).toEqual([
      'MCP server tool "broken" was left out: x-mcp-header of "when" is on a number parameter, not a string, integer or boolean',
    ]);
    await client.callTool("weather", { city: "Zürich", days: 3, units: "metric" });
    const call = s.seen.find((r) => r.body.method === "tools/call")!;
    expect(call.headers["mcp-name"]).toBe("weather");
    expect(call.headers["mcp-param-city"]).toBe(`=?base64?${Buffer.from("Zürich").toString("base64")}?=`);
    expect(call.headers["mcp-param-days"]).toBe("3");
    expect(call.headers["mcp-param-units"]).toBeUndefined();
  });

  it("N6: input-required results are fulfilled by the handlers and retried with a new id, the state byte-exact; 8 rounds at most", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const asked: unknown[] = [];
    const client = await native.MCPClient.connect("mrtr", { type: "http", url: s.url }, {
      client: { protocolVersion: "2026-07-28" },
      elicitation: async (params: any) => (asked.push(params.message), { action: "accept", content: { sure: true } }),
    } as any);
    cleanups.push(() => client.close());
    const result: any = await client.callTool("confirm", { x: 1 });
    expect(JSON.parse(result.content[0].text)).toEqual({
      responses: { ok: { action: "accept", content: { sure: true } } },
      state: '{"n": 1,  "spaced":true}',
    });
    const calls = s.seen.filter((r) => r.body.method === "tools/call");
    expect(calls).toHaveLength(2);
    expect(calls[1].body.id).not.toBe(calls[0].body.id);
    expect(calls[1].body.params.arguments).toEqual({ x: 1 });
    expect(asked).toEqual(["Sure?"]);
    await expect(client.callTool("nag", {})).rejects.toThrow("MCP server kept asking for input after 8 rounds");
    const nags = s.seen.filter((r) => r.body.params?.name === "nag");
    expect(nags).toHaveLength(8);
    // No state was sent, so none goes back.
    expect(nags.every((r) => r.body.params.requestState === undefined)).toBe(true);
  });

  it("N9: ping is a server/discover; setLoggingLevel becomes the _meta level of later requests", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await native.MCPClient.connect("n9", { type: "http", url: s.url }, { client: { protocolVersion: "2026-07-28" } });
    cleanups.push(() => client.close());
    await expect(client.ping()).resolves.toEqual({});
    await client.setLoggingLevel("debug");
    await client.callTool("add", { a: 1, b: 1 });
    expect(s.seen.map((r) => r.body.method)).toEqual(["server/discover", "server/discover", "tools/call"]);
    expect(s.seen[2].body.params._meta[`${META}logLevel`]).toBe("debug");
    expect(s.seen[1].body.params._meta[`${META}logLevel`]).toBeUndefined();
  });

  it("N8: listTools serves connection.tools while the list's ttlMs lasts, then lists again", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await native.MCPClient.connect("n8", { type: "http", url: s.url }, { client: { protocolVersion: "2026-07-28" } });
    cleanups.push(() => client.close());
    const lists = () => s.seen.filter((r) => r.body.method === "tools/list").length;
    const first = await client.listTools();
    expect(await client.listTools()).toBe(first);
    expect(lists()).toBe(1);
    await new Promise((r) => setTimeout(r, 350));
    const again = await client.listTools();
    expect(again).not.toBe(first);
    expect(lists()).toBe(2);
  });
});

describe("N2 auto detection", () => {
  const connectAuto = async (config: any) => {
    const client = await native.MCPClient.connect("auto", config, { client: { protocolVersion: "auto" } } as any);
    cleanups.push(() => client.close());
    return client;
  };

  it("N2: a stateless server is found by the probe", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await connectAuto({ type: "http", url: s.url });
    expect(client.connection.protocolVersion).toBe("2026-07-28");
    expect(client.connection.eraDetection).toBe("probe");
  });

  it("N2: a handshake server answers the probe with an error: handshake; the verdict is remembered for the process", async () => {
    // A unique env entry makes a server of its own for the process-wide verdicts.
    const config = { command: process.execPath, args: [server], env: { N2_CASE: `remember-${Date.now()}` } };
    const first = await connectAuto(config);
    expect(first.connection.protocolVersion).toBe("2025-11-25");
    expect(first.connection.eraDetection).toBe("refused");
    expect((await history(first.connection.transport as any)).map((m: any) => m.method).slice(0, 2)).toEqual(["server/discover", "initialize"]);
    const second = await connectAuto(config);
    expect(second.connection.eraDetection).toBe("remembered");
    expect((await history(second.connection.transport as any)).map((m: any) => m.method)[0]).toBe("initialize");
  });

  it("N2: a server that exits on the probe is started once more for the handshake", async () => {
    const config = { command: process.execPath, args: [server, "--exit-on-unknown-first"], env: { N2_CASE: `exit-${Date.now()}` } };
    const client = await connectAuto(config);
    expect(client.connection.protocolVersion).toBe("2025-11-25");
    expect(client.connection.eraDetection).toBe("respawn");
    expect((await history(client.connection.transport as any)).map((m: any) => m.method)[0]).toBe("initialize");
  });

  it("N2: a server that never answers the probe gets the handshake after 3 s", async () => {
    const config = { command: process.execPath, args: [server, "--hang-on-unknown"], env: { N2_CASE: `hang-${Date.now()}` } };
    const started = Date.now();
    const client = await connectAuto(config);
    expect(client.connection.protocolVersion).toBe("2025-11-25");
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect(client.connection.eraDetection).toBe("timeout");
  }, 15_000);

  it("N2 over HTTP: type 'sse' falls from the probe to the handshake, on the legacy HTTP+SSE protocol (H11)", async () => {
    const legacy = await startExampleHttp({ legacy: true });
    cleanups.push(() => legacy.close());
    const client = await connectAuto({ type: "sse", url: legacy.url });
    expect(client.connection.eraDetection).toBe("refused");
    expect(client.connection.protocolVersion).toBe("2025-03-26");
    await expect(client.callTool("echo", { text: "old" })).resolves.toMatchObject({ content: [{ text: "old" }] });
  });

  it("N2 over HTTP: a stateless server's JSON-RPC error in a 4xx is a modern answer, also for type 'sse': no legacy GET", async () => {
    const s = await statelessServer(["2025-11-25"]);
    const client = await connectAuto({ type: "sse", url: s.url });
    expect(client.connection.eraDetection).toBe("unsupported-version");
    expect(client.connection.protocolVersion).toBe("2025-11-25");
    expect(s.seen.map((r) => r.body.method)).toEqual(["server/discover", "initialize", "notifications/initialized"]);
    // The one GET is the handshake era's listener, after the handshake; none probed for legacy.
    expect(await waitFor(() => s.others.length > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(s.others).toEqual(["GET"]);
  });

  it("N2: the manager keeps the verdict beside the tools, so a new process connects without a probe", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-era-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "tools.json");
    const servers = {
      old: { command: process.execPath, args: [server] },
      modern: { command: process.execPath, args: [server, "--stateless"] },
    };
    const auto = { client: { protocolVersion: "auto" } };
    const first = await managerProcess(path, servers, auto);
    expect(first.old).toEqual({ detection: "refused", version: "2025-11-25", first: "server/discover" });
    expect(first.modern).toEqual({ detection: "probe", version: "2026-07-28", first: "server/discover" });
    const cache = new native.FileToolCache(path);
    expect(await cache.getEra("old", servers.old)).toBe("handshake");
    expect(await cache.getEra("modern", servers.modern)).toBe("2026-07-28");
    expect(await cache.get("old", servers.old)).toEqual(expect.arrayContaining([expect.objectContaining({ name: "echo" })]));
    const second = await managerProcess(path, servers, auto);
    expect(second.old).toEqual({ detection: "remembered", version: "2025-11-25", first: "initialize" });
    expect(second.modern).toEqual({ detection: "remembered", version: "2026-07-28", first: "server/discover" });
    // Without "auto" the manager keeps the handshake (N1) and reads no verdict.
    const plain = await managerProcess(path, { old: servers.old });
    expect(plain.old).toEqual({ version: "2025-11-25", first: "initialize" });
  }, 30_000);

  it("N2: a kept verdict that turns out wrong is dropped: the server is probed again and the new verdict kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-era-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "tools.json");
    // N1: the server's own config asks for "auto".
    const servers = {
      moved: { command: process.execPath, args: [server], protocolVersion: "auto" },
      upgraded: { command: process.execPath, args: [server, "--stateless"], protocolVersion: "auto" },
    };
    const cache = new native.FileToolCache(path);
    await cache.setEra("moved", servers.moved, "2026-07-28");
    await cache.setEra("upgraded", servers.upgraded, "handshake");
    const run = await managerProcess(path, servers);
    expect(run.moved).toEqual({ detection: "refused", version: "2025-11-25", first: "server/discover" });
    // The handshake it was remembered for is refused (-32022), so it is probed.
    expect(run.upgraded).toEqual({ detection: "probe", version: "2026-07-28", first: "initialize" });
    expect(await cache.getEra("moved", servers.moved)).toBe("handshake");
    expect(await cache.getEra("upgraded", servers.upgraded)).toBe("2026-07-28");
  }, 30_000);

  it("N4: -32020 lists the tools again, once, and repeats the call with the new headers", async () => {
    const s = await statelessServer(["2026-07-28"]);
    const client = await native.MCPClient.connect("relist", { type: "http", url: s.url }, { client: { protocolVersion: "2026-07-28" } });
    cleanups.push(() => client.close());
    await client.listTools();
    await expect(client.callTool("moved", { region: "eu" })).resolves.toMatchObject({ content: [{ text: "moved to eu" }] });
    const methods = s.seen.map((r) => r.body.method);
    expect(methods).toEqual(["server/discover", "tools/list", "tools/call", "tools/list", "tools/call"]);
    expect(s.seen[4].headers["mcp-param-region"]).toBe("eu");
  });
});
