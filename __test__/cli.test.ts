// The mcp-native CLI (issue 7), run as a user runs it: `node bin/mcp-native.mjs …` in a child
// process, against the bundled example server (no target), the stdio fixture (--stdio), and
// 127.0.0.1 HTTP servers (--url): every subcommand, --json parsed, the exit codes, Ctrl-C.
import { execFile, spawn } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startExampleHttp } from "./fixtures/cli-http-server.mjs";
import { startHttpFixture } from "./fixtures/http-server";
import { server as fixtureServer, waitFor } from "./helpers";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = join(root, "bin", "mcp-native.mjs");
const exampleServer = join(root, "example", "server.mjs");

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

// A directory without .mcp.json, so nothing on this machine decides what "no target" means.
let cwd: string;
beforeAll(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cli-")));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

function cli(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const env = { ...process.env, ...options.env };
    execFile(process.execPath, [bin, ...args], { cwd: options.cwd ?? cwd, env, timeout: 15_000 }, (error, stdout, stderr) => {
      const failure = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
      resolve({
        code: failure ? (typeof failure.code === "number" ? failure.code : null) : 0,
        signal: failure?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

/** Runs and parses the one JSON document on stdout. */
async function cliJson(args: string[], expectedCode = 0, options: { cwd?: string } = {}) {
  const run = await cli([...args, "--json"], options);
  expect(run.code, run.stderr).toBe(expectedCode);
  return JSON.parse(run.stdout);
}

// Single quotes, so paths with spaces would survive the shell-like split of --stdio.
const fixtureCommand = (...flags: string[]) => [process.execPath, fixtureServer, ...flags].map((w) => `'${w}'`).join(" ");

/** Gone = no such process, or a zombie waiting for its reaper (it runs nothing any more). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }
}

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((fn) => fn()));
});

describe("the bundled example server (no target)", () => {
  it("tools: an aligned table of the example's tools, nothing on stderr in a pipe", async () => {
    const run = await cli(["tools"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(""); // no progress line, no colour codes outside a terminal
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+ARGUMENTS\s+DESCRIPTION$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(["echo", "add", "time", "sleep", "fail"]);
    expect(lines.find((line) => line.startsWith("add"))).toMatch(/^add\s+a, b\s+Adds two numbers$/);
    expect(lines.find((line) => line.startsWith("sleep"))).toMatch(/^sleep\s+ms\?\s+Waits/);
    // Aligned: every description starts in the same column as the header's.
    const column = lines[0].indexOf("DESCRIPTION");
    expect(lines.slice(1).every((line) => line[column - 1] === " " && line[column] !== " ")).toBe(true);
    expect(run.stdout).not.toContain("\x1b[");
  });

  it("tools --json: the tool definitions as the server lists them", async () => {
    const tools = await cliJson(["tools"]);
    expect(tools.map((t: any) => t.name)).toEqual(["echo", "add", "time", "sleep", "fail"]);
    expect(tools[0]).toEqual({
      name: "echo",
      description: "Returns its text argument unchanged",
      inputSchema: { type: "object", properties: { text: { type: "string", description: "What to echo" } }, required: ["text"] },
    });
  });

  it("inspect: server info, protocol, capabilities, instructions and counts, then the tools", async () => {
    const run = await cli(["inspect"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^server\s+mcp-native-example 1\.0\.0$/m);
    expect(run.stdout).toMatch(/^protocol\s+2025-03-26$/m);
    // N2: the CLI finds the era out; the example server refuses the probe.
    expect(run.stdout).toMatch(/^era\s+handshake, the server refused the server\/discover probe$/m);
    expect(run.stdout).toMatch(/^capabilities\s+tools, resources, prompts$/m);
    expect(run.stdout).toMatch(/^tools\s+5$/m);
    expect(run.stdout).toMatch(/^resources\s+1$/m);
    expect(run.stdout).toMatch(/^prompts\s+1$/m);
    expect(run.stdout).toMatch(/^instructions\s+A demo server bundled with mcp-native/m);
    expect(run.stdout).toMatch(/^transport\s+stdio \S*node\S* \S*example\/server\.mjs$/m);
    expect(run.stdout).toMatch(/^echo\s+text\s+Returns its text argument unchanged$/m);
  });

  it("inspect: a stateless (2026-07-28) stdio server, its era found by the probe (N2), and calls to it", async () => {
    const target = ["--stdio", `"${process.execPath}" "${fixtureServer}" --stateless`];
    const run = await cli(["inspect", ...target]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^protocol\s+2026-07-28$/m);
    expect(run.stdout).toMatch(/^era\s+stateless, found by a server\/discover probe$/m);
    expect((await cliJson(["inspect", ...target])).era).toEqual({ name: "stateless", detection: "probe" });
    expect((await cli(["call", ...target, "echo", '{"text":"no handshake"}'])).stdout).toBe("no handshake\n");
  });

  it("inspect --json", async () => {
    const doc = await cliJson(["inspect"]);
    expect(doc).toMatchObject({
      name: "example",
      serverInfo: { name: "mcp-native-example", version: "1.0.0" },
      protocolVersion: "2025-03-26",
      capabilities: { tools: {}, resources: {}, prompts: {} },
      counts: { tools: 5, resources: 1, prompts: 1 },
    });
    expect(doc.instructions).toMatch(/^A demo server bundled with mcp-native/);
    expect(doc.tools.map((t: any) => t.name)).toEqual(["echo", "add", "time", "sleep", "fail"]);
    expect(doc.transport).toContain("example/server.mjs");
  });

  it("call: text content on stdout, exit 0; --json gives the whole result", async () => {
    const run = await cli(["call", "echo", '{"text":"hello"}']);
    expect(run).toMatchObject({ code: 0, stdout: "hello\n", stderr: "" });
    expect(await cliJson(["call", "add", '{"a":2,"b":40}'])).toEqual({ content: [{ type: "text", text: "42" }] });
    const time = await cli(["call", "time"]); // no arguments at all: {}
    expect(Date.parse(time.stdout.trim())).toBeGreaterThan(Date.now() - 60_000);
  });

  it("call: a tool result with isError exits 1, with the content still printed", async () => {
    const run = await cli(["call", "fail", '{"reason":"on purpose"}']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("on purpose\n");
    expect(run.stderr).toContain("fail returned an error (isError)");
    expect(await cliJson(["call", "fail"], 1)).toEqual({ content: [{ type: "text", text: "this tool always fails" }], isError: true });
    // Bad arguments are the tool's business: reported the same way.
    expect((await cli(["call", "add", '{"a":"x"}'])).code).toBe(1);
  });

  it("ping, resources, read, prompts", async () => {
    const [ping, pingJson, resources, resourcesJson, read, readJson, prompts, promptsJson] = await Promise.all([
      cli(["ping"]),
      cliJson(["ping"]),
      cli(["resources"]),
      cliJson(["resources"]),
      cli(["read", "example://about"]),
      cliJson(["read", "example://about"]),
      cli(["prompts"]),
      cliJson(["prompts"]),
    ]);
    expect(ping.stdout).toMatch(/^pong from mcp-native-example 1\.0\.0 in \d+\.\d\d ms\n$/);
    expect(pingJson).toEqual({ ok: true, ms: expect.any(Number) });
    expect(resources.stdout).toMatch(/^URI\s+NAME\s+TYPE\s+DESCRIPTION\nexample:\/\/about\s+about\s+text\/markdown\s+What this server is\n$/);
    expect(resourcesJson).toEqual([{ uri: "example://about", name: "about", description: "What this server is", mimeType: "text/markdown" }]);
    expect(read.stdout).toMatch(/^# mcp-native example server\n\nA dependency-free MCP server/);
    expect(readJson.contents).toEqual([{ uri: "example://about", mimeType: "text/markdown", text: expect.stringContaining("Tools: echo, add, time, sleep, fail.") }]);
    expect(prompts.stdout).toMatch(/^NAME\s+ARGUMENTS\s+DESCRIPTION\ngreet\s+name, style\?\s+Asks the model for a short greeting\n$/);
    expect(promptsJson[0].arguments.map((a: any) => [a.name, a.required])).toEqual([["name", true], ["style", false]]);
    for (const run of [ping, resources, read, prompts]) expect(run.code).toBe(0);
  });

  it('"example" names the bundled server unless the config defines it', async () => {
    expect((await cli(["call", "example", "echo", '{"text":"by name"}'])).stdout).toBe("by name\n");
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cli-example-")));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: { example: { command: process.execPath, args: [fixtureServer] } } }));
    const run = await cli(["inspect", "example", "--json"], { cwd: dir });
    expect(JSON.parse(run.stdout).serverInfo.name).toBe("fixture-stdio");
  });
});

describe("--stdio: the fixture server", () => {
  it("inspect --json, with quoted words in the command line", async () => {
    const stdio = `${fixtureCommand("--all-capabilities")} --instructions='Read the docs, then "act".'`;
    const doc = await cliJson(["inspect", "--stdio", stdio]);
    expect(doc.serverInfo).toEqual({ name: "fixture-stdio", version: "1.0.0" });
    expect(doc.instructions).toBe('Read the docs, then "act".');
    expect(doc.counts).toEqual({ tools: doc.tools.length, resources: 7, prompts: 5 });
    expect(doc.tools.map((t: any) => t.name)).toEqual(expect.arrayContaining(["echo", "slow", "never", "rich"]));
    expect(doc.capabilities).toEqual({ tools: {}, resources: {}, prompts: {}, logging: {}, completions: {} });
  });

  it("tools, call, ping, resources, read, prompts", async () => {
    const stdio = ["--stdio", fixtureCommand("--all-capabilities")];
    const [tools, echo, add, ping, resources, read, prompts] = await Promise.all([
      cliJson(["tools", ...stdio]),
      cli(["call", ...stdio, "echo", '{"text":"via stdio"}']),
      cliJson(["call", ...stdio, "add", '{"a":2,"b":3}']),
      cli(["ping", ...stdio]),
      cli(["resources", ...stdio]),
      cli(["read", ...stdio, "fixture://r/3"]),
      cliJson(["prompts", ...stdio]),
    ]);
    expect(tools.find((t: any) => t.name === "echo").description).toBe("Echoes its text argument");
    expect(echo).toMatchObject({ code: 0, stdout: "via stdio\n" });
    expect(add).toEqual({ content: [{ type: "text", text: "5" }] });
    expect(ping.stdout).toMatch(/^pong from fixture-stdio 1\.0\.0 in /);
    expect(resources.stdout.trimEnd().split("\n").slice(1).map((line) => line.split(/\s+/)[0])).toEqual(
      Array.from({ length: 7 }, (_, i) => `fixture://r/${i}`),
    );
    expect(read.stdout).toBe("contents of fixture://r/3\n");
    expect(prompts.map((p: any) => p.name)).toEqual(["p0", "p1", "p2", "p3", "p4"]);
  });

  it("call shows every content type, and isError exits 1", async () => {
    const run = await cli(["call", "--stdio", fixtureCommand(), "rich"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      ["t", "[image: image/png, 3 bytes]", "[audio: audio/wav, 3 bytes]", "[resource: file:///r (text/plain)]", "r", "[link: l → file:///l]", ""].join("\n"),
    );
  });

  it("--env reaches a stdio server", async () => {
    const run = await cli(["call", "--stdio", fixtureCommand(), "--env", "CLI_TEST_VAR=from the cli", "env", '{"name":"CLI_TEST_VAR"}']);
    expect(JSON.parse(run.stdout)).toEqual({ value: "from the cli", cwd });
  });

  it("a server that does not offer resources or prompts is not asked for them", async () => {
    const [resources, prompts, doc] = await Promise.all([
      cli(["resources", "--stdio", fixtureCommand()]),
      cliJson(["prompts", "--stdio", fixtureCommand()]),
      cliJson(["inspect", "--stdio", fixtureCommand()]),
    ]);
    expect(resources).toMatchObject({ code: 0, stdout: "(the server does not offer resources)\n" });
    expect(prompts).toEqual([]);
    expect(doc.counts).toEqual({ tools: doc.tools.length, resources: null, prompts: null });
  });
});

describe("--url: HTTP servers on 127.0.0.1", () => {
  it("every subcommand against the example server over Streamable HTTP", async () => {
    const http = await startExampleHttp();
    cleanups.push(http.close);
    const url = ["--url", http.url];
    const [doc, tools, echo, fail, ping, resources, read, prompts] = await Promise.all([
      cliJson(["inspect", ...url]),
      cli(["tools", ...url]),
      cli(["call", ...url, "echo", '{"text":"over http"}']),
      cli(["call", ...url, "fail"]),
      cliJson(["ping", ...url]),
      cliJson(["resources", ...url]),
      cli(["read", ...url, "example://about"]),
      cliJson(["prompts", ...url]),
    ]);
    expect(doc).toMatchObject({ transport: `http ${http.url}`, serverInfo: { name: "mcp-native-example" }, counts: { tools: 5, resources: 1, prompts: 1 } });
    expect(tools.stdout).toMatch(/^echo\s+text\s+Returns its text argument unchanged$/m);
    expect(echo).toMatchObject({ code: 0, stdout: "over http\n" });
    expect(fail.code).toBe(1);
    expect(ping.ok).toBe(true);
    expect(resources[0].uri).toBe("example://about");
    expect(read.stdout).toMatch(/^# mcp-native example server/);
    expect(prompts[0].name).toBe("greet");
  });

  it("--sse speaks to a server that only has the legacy HTTP+SSE protocol", async () => {
    const http = await startExampleHttp({ legacy: true });
    cleanups.push(http.close);
    const doc = await cliJson(["inspect", "--url", http.url, "--sse"]);
    expect(doc).toMatchObject({ transport: `sse ${http.url}`, counts: { tools: 5, resources: 1, prompts: 1 } });
    expect((await cli(["call", "--url", http.url, "--sse", "echo", '{"text":"legacy"}'])).stdout).toBe("legacy\n");
    // Without --sse the refused POST is an HTTP error: a protocol failure.
    const plain = await cli(["ping", "--url", http.url]);
    expect(plain.code).toBe(3);
    expect(plain.stderr).toContain("HTTP 405");
  });

  it("--header is sent with every request, in K=V and 'K: V' form", async () => {
    const http = await startHttpFixture();
    cleanups.push(http.close);
    const result = await cliJson(["call", "--url", http.url, "--header", "X-Cli-Test=a=b", "--header", "Authorization: Bearer t0k3n", "whoami"]);
    const headers = JSON.parse(result.content[0].text);
    expect(headers["x-cli-test"]).toBe("a=b");
    expect(headers["authorization"]).toBe("Bearer t0k3n");
    expect(http.posted().find((m: any) => m.method === "initialize").params.clientInfo.name).toBe("mcp-native");
  });
});

describe("exit codes and error messages", () => {
  it("help: usage with the exit codes, exit 0", async () => {
    for (const args of [["--help"], ["help"], ["call", "-h"]]) {
      const run = await cli(args);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^mcp-native: connect to MCP servers/);
      expect(run.stdout).toMatch(/^Exit codes\n  0 +success\n  1 +the tool ran and returned isError: true\n  2 +usage error/m);
      expect(run.stdout).toMatch(/^  130 +interrupted/m);
    }
  });

  it("exit 2: usage errors, with what was wrong", async () => {
    const cases: [string[], RegExp][] = [
      [[], /no command given/],
      [["frobnicate"], /unknown command "frobnicate"; commands: servers, tools, inspect, call/],
      [["tools", "--bogus"], /Unknown option '--bogus'/],
      [["call"], /call needs <tool>/],
      [["read"], /read needs <uri>/],
      [["ping", "a", "b"], /too many arguments for ping: b/],
      [["tools", "--timeout", "soon"], /--timeout expects milliseconds/],
      [["tools", "--sse"], /--sse needs --url/],
      [["tools", "--stdio", "node 'server.mjs"], /--stdio has an unterminated single quote/],
      [["tools", "--stdio", "x", "--url", "http://127.0.0.1:1/mcp"], /give either --stdio or --url/],
      [["tools", "--url", "http://127.0.0.1:1/mcp", "--env", "A=1"], /--env applies to stdio servers/],
      [["tools", "--header", "novalue"], /--header expects KEY=VALUE, got "novalue"/],
      [["servers", "--stdio", "x"], /--stdio does not apply to servers/],
      [["call", "echo", "[1, 2]", "--stdio", "x"], /tool arguments must be a JSON object/],
      [["tools", "--url", "not a url"], /invalid server config for not a url: The "url" field must be an http\(s\) URL/],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(args)));
    runs.forEach((run, i) => {
      expect(run.code, cases[i][0].join(" ")).toBe(2);
      expect(run.stderr).toMatch(cases[i][1]);
      expect(run.stderr).toMatch(/^mcp-native: /);
      expect(run.stdout).toBe("");
    });
  });

  it("exit 2: bad JSON arguments name the position and point at it, before anything is spawned", async () => {
    const run = await cli(["call", "--stdio", "this-command-does-not-exist", "echo", '{"text": "a" "b"}']);
    expect(run.code).toBe(2);
    const [message, excerpt, caret] = run.stderr.split("\n");
    expect(message).toMatch(/^mcp-native: invalid JSON arguments at position 13: .*position 13/);
    expect(excerpt).toBe('  {"text": "a" "b"}');
    expect(caret).toBe(`  ${" ".repeat(13)}^`); // under the second string
    const truncated = await cli(["call", "echo", '{"text":']);
    expect(truncated.stderr).toMatch(/invalid JSON arguments at position 8: Unexpected end of JSON input/);
  });

  it("exit 2: an unknown tool lists the server's tools; an unknown server lists the configured ones", async () => {
    const tool = await cli(["call", "ecko", '{"text":"x"}']);
    expect(tool.code).toBe(2);
    expect(tool.stderr).toBe('mcp-native: unknown tool "ecko" on the example server\n  its tools: echo, add, time, sleep, fail\n');
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cli-names-")));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, "servers.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { alpha: { command: "a" }, beta: { url: "http://x", type: "http" }, off: { command: "o", enabled: false } } }));
    const server = await cli(["tools", "gamma", "--config", config]);
    expect(server.code).toBe(2);
    expect(server.stderr).toBe(`mcp-native: unknown server "gamma"\n  servers in ${config}: alpha, beta\n`);
    expect((await cli(["tools", "off", "--config", config])).stderr).toBe(`mcp-native: server "off" is disabled in ${config}\n`);
    expect((await cli(["tools", "alpha"], { cwd })).stderr).toContain(`no config file: ${join(cwd, ".mcp.json")} does not exist`);
    expect((await cli(["tools", "alpha", "--config", join(dir, "missing.json")])).code).toBe(2);
  });

  it("exit 3: connection refused", async () => {
    // A port that was just free: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const run = await cli(["tools", "--url", `http://127.0.0.1:${port}/mcp`]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`mcp-native: cannot connect to http://127.0.0.1:${port}/mcp: connection refused (is the server running?)`);
    expect(run.stderr).toContain("ECONNREFUSED");
  });

  it("exit 3: a command that cannot be started, and a server that dies (with its stderr)", async () => {
    const missing = await cli(["tools", "--stdio", "mcp-native-no-such-command --flag"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/^mcp-native: cannot connect to `mcp-native-no-such-command --flag`: command not found\n.*ENOENT/);
    const crash = await cli(["call", "--stdio", fixtureCommand(), "crash", '{"stderr":"fatal: out of cheese\\n"}']);
    expect(crash.code).toBe(3);
    expect(crash.stderr).toMatch(/mcp-native: tools\/call crash failed: MCP subprocess exited with code \d+ before responding\n/);
    expect(crash.stderr).toContain("  server stderr:\n    fatal: out of cheese\n");
  });

  it("exit 3: timeouts, of the handshake and of a call", async () => {
    const started = Date.now();
    const [handshake, call] = await Promise.all([
      cli(["tools", "--stdio", fixtureCommand("--no-init-answer"), "--timeout", "300"]),
      // Long enough for the handshake on a busy machine, far shorter than the call.
      cli(["call", "--stdio", fixtureCommand(), "--timeout", "3000", "slow", '{"ms":30000}']),
    ]);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(handshake.code).toBe(3);
    expect(handshake.stderr).toMatch(/^mcp-native: cannot connect to `.*`: timed out after 300 ms\n  --timeout <ms> waits longer/);
    expect(call.code).toBe(3);
    expect(call.stderr).toMatch(/^mcp-native: tools\/call slow failed: Request timeout after 3000ms\n/);
  });

  it("exit 3: a JSON-RPC error answer", async () => {
    const run = await cli(["read", "example://nothing-here"]);
    expect(run.code).toBe(3);
    expect(run.stderr).toBe("mcp-native: resources/read example://nothing-here failed: MCP error -32002: Resource not found: example://nothing-here\n");
  });
});

describe("servers: every configured server through MCPManager", () => {
  let dir: string;
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-cli-servers-")));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const writeConfig = (name: string, mcpServers: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify({ mcpServers, ...extra }));
    return file;
  };

  it("--config with a good and a failing server: status, server info, tool count and error; exit 3", async () => {
    const config = writeConfig("mixed.json", {
      good: { command: process.execPath, args: [exampleServer] },
      refusing: { command: process.execPath, args: [fixtureServer, "--init-error"] },
      invalid: { type: "http" },
      skipped: { command: "nope", enabled: false },
    }, { disabledServers: ["also-skipped"] });
    const doc = await cliJson(["servers", "--config", config], 3);
    expect(doc.config).toBe(config);
    expect(doc.servers).toEqual([
      { name: "good", status: "connected", type: "stdio", serverInfo: { name: "mcp-native-example", version: "1.0.0" }, protocolVersion: "2025-03-26", toolCount: 5, tools: ["echo", "add", "time", "sleep", "fail"], error: null },
      { name: "invalid", status: "failed", type: "http", serverInfo: null, protocolVersion: null, toolCount: null, tools: [], error: 'Server "invalid": http server requires "url" field' },
      { name: "refusing", status: "failed", type: "stdio", serverInfo: null, protocolVersion: null, toolCount: null, tools: [], error: "MCP error -32603: Initialization refused" },
    ]);
    const table = await cli(["servers", "--config", config]);
    expect(table.code).toBe(3);
    expect(table.stderr).toBe("");
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+TYPE\s+SERVER\s+PROTOCOL\s+TOOLS\s+ERROR$/);
    expect(lines[1]).toMatch(/^good\s+connected\s+stdio\s+mcp-native-example 1\.0\.0\s+2025-03-26\s+5$/);
    expect(lines[3]).toMatch(/^refusing\s+failed\s+stdio\s+MCP error -32603: Initialization refused$/);
  });

  it("./.mcp.json through discoverAndConnect: all connected is exit 0", async () => {
    const project = join(dir, "project");
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, ".mcp.json"), JSON.stringify({
      mcpServers: { one: { command: process.execPath, args: [exampleServer] }, two: { command: process.execPath, args: [fixtureServer] } },
    }));
    const run = await cli(["servers"], { cwd: project });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^one\s+connected\s+stdio\s+mcp-native-example 1\.0\.0/m);
    expect(run.stdout).toMatch(/^two\s+connected\s+stdio\s+fixture-stdio 1\.0\.0/m);
    // The servers connect in parallel: three 2 s handshakes take 2 s (plus start-up), not 6.
    writeFileSync(join(project, ".mcp.json"), JSON.stringify({
      mcpServers: Object.fromEntries(["a", "b", "c"].map((n) => [n, { command: process.execPath, args: [fixtureServer, "--init-delay=2000"] }])),
    }));
    const started = Date.now();
    const slow = await cliJson(["servers"], 0, { cwd: project });
    expect(slow.servers.map((s: any) => s.status)).toEqual(["connected", "connected", "connected"]);
    expect(Date.now() - started).toBeLessThan(5900);
  });

  it("--timeout applies to every server; no config means no servers; a broken file is exit 2", async () => {
    const config = writeConfig("slow.json", { late: { command: process.execPath, args: [fixtureServer, "--init-delay=5000"] } });
    const doc = await cliJson(["servers", "--config", config, "--timeout", "300"], 3);
    expect(doc.servers[0]).toMatchObject({ name: "late", status: "failed", error: 'Connection to MCP server "late" timed out after 300ms' });
    const empty = await cli(["servers"], { cwd });
    expect(empty).toMatchObject({ code: 0, stdout: `(no MCP servers configured in ${cwd}/.mcp.json)\n` });
    writeFileSync(join(dir, "broken.json"), "{ not json");
    const broken = await cli(["servers", "--config", join(dir, "broken.json")]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`config file ${join(dir, "broken.json")} is not valid JSON`);
  });
});

describe("Ctrl-C", () => {
  /** Starts the CLI, resolves once its stderr matches `ready`. */
  function startCli(args: string[], ready: RegExp) {
    const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    const readied = new Promise<void>((resolve, reject) => {
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        if (ready.test(stderr)) resolve();
      });
      exited.then(() => reject(new Error(`the CLI exited before it was ready: ${stderr}`)));
    });
    cleanups.push(() => void child.kill("SIGKILL"));
    return { child, exited, readied, stderr: () => stderr };
  }

  const pidFile = () => join(mkdtempSync(join(tmpdir(), "mcp-native-cli-pid-")), "pids");
  const pidsIn = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map(Number) : []);

  it("aborts the call in flight, stops the server and exits 130", async () => {
    const pids = pidFile();
    const run = startCli(["call", "-v", "--stdio", fixtureCommand(`--pid-file=${pids}`), "never"], /calling never/);
    await run.readied;
    const [pid] = pidsIn(pids);
    expect(pid).toBeGreaterThan(0);
    expect(run.stderr()).toContain(`pid ${pid}`);
    expect(gone(pid)).toBe(false);
    run.child.kill("SIGINT");
    expect(await run.exited).toEqual({ code: 130, signal: null });
    expect(run.stderr()).toMatch(/mcp-native: interrupted\n$/);
    expect(await waitFor(() => gone(pid), 3000)).toBe(true);
  });

  it("interrupts servers while they connect, leaving no server behind", async () => {
    const pids = pidFile();
    const config = join(cwd, "ctrl-c.json");
    const slow = { command: process.execPath, args: [fixtureServer, "--init-delay=20000", `--pid-file=${pids}`] };
    writeFileSync(config, JSON.stringify({ mcpServers: { first: slow, second: slow } }));
    const run = startCli(["servers", "-v", "--config", config], /connecting first, second/);
    await run.readied;
    expect(await waitFor(() => pidsIn(pids).length === 2, 3000)).toBe(true);
    const started = Date.now();
    run.child.kill("SIGINT");
    expect((await run.exited).code).toBe(130);
    expect(Date.now() - started).toBeLessThan(4000); // not the 20 s handshake
    for (const pid of pidsIn(pids)) expect(await waitFor(() => gone(pid), 3000)).toBe(true);
  });
});

describe("on a terminal", () => {
  const hasScript = process.platform === "linux" && existsSync("/usr/bin/script");
  /** Runs the CLI on a pseudo-terminal `columns` wide; stdout and stderr both land in the result. */
  const onTerminal = (args: string[], columns: number) =>
    new Promise<string>((resolve, reject) => {
      const command = `stty cols ${columns}; exec ${[process.execPath, bin, ...args].map((w) => `'${w}'`).join(" ")}`;
      execFile("script", ["-qec", command, "/dev/null"], { cwd, env: { ...process.env, NO_COLOR: "", TERM: "xterm" }, timeout: 10_000 }, (error, stdout) =>
        error && error.code !== 3 ? reject(error) : resolve(stdout),
      );
    });
  const withoutEscapes = (text: string) => text.replace(/\x1b\[[\d;]*[mK]/g, "");

  it.skipIf(!hasScript)("servers: a live progress line, then a table whose coloured cells stay aligned", async () => {
    const config = join(cwd, "terminal.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { good: { command: process.execPath, args: [fixtureServer, "--init-delay=400"] }, bad: { type: "http", url: "http://127.0.0.1:1/mcp" } } }));
    const output = await onTerminal(["servers", "--config", config], 200);
    expect(output).toMatch(/\r\x1b\[2K. connecting \d\/2: good . {2}bad ./);
    expect(output).toContain("\x1b[32m  connected\x1b[0m");
    expect(output).toContain("\x1b[31m  failed   \x1b[0m");
    const lines = withoutEscapes(output).split("\r\n").map((line) => line.slice(line.lastIndexOf("\r") + 1));
    const header = lines.find((line) => line.startsWith("NAME"))!;
    const good = lines.find((line) => line.startsWith("good"))!;
    expect(good.indexOf("connected")).toBe(header.indexOf("STATUS"));
    expect(good.indexOf("stdio")).toBe(header.indexOf("TYPE"));
    expect(lines.find((line) => line.startsWith("bad"))!.indexOf("fetch failed")).toBe(header.indexOf("ERROR"));
  });

  it.skipIf(!hasScript)("P4: call shows the server's progress of a long tool call on the progress line", async () => {
    const output = await onTerminal(["call", "--stdio", fixtureCommand(), "progress", '{"steps":4,"ms":200}'], 100);
    expect(output).toMatch(/\r\x1b\[2K. calling progress… 2\/4 step 2/);
    expect(output).toMatch(/\r\x1b\[2K. calling progress… 3\/4 step 3/);
    expect(withoutEscapes(output)).toContain('done {"progressToken":');
  });

  it.skipIf(!hasScript)("a progress line on stderr while connecting, a bold header, cut to the width", async () => {
    const output = await onTerminal(["tools"], 60);
    expect(output).toMatch(/\r\x1b\[2K. connecting to the example server…/);
    expect(output).toContain("\x1b[1mNAME \x1b[0m"); // bold headings
    const lines = withoutEscapes(output).split("\r\n");
    expect(lines.some((line) => line.endsWith("NAME   ARGUMENTS  DESCRIPTION"))).toBe(true);
    const sleepLine = lines.find((line) => line.startsWith("sleep"))!;
    expect([...sleepLine].length).toBe(60);
    expect(sleepLine.endsWith("…")).toBe(true);
  });
});

describe("package", () => {
  it("bin, files and npm start", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(pkg.bin).toEqual({ "mcp-native": "bin/mcp-native.mjs" });
    expect(pkg.files).toEqual(expect.arrayContaining(["bin/", "cli/", "example/"]));
    expect(pkg.scripts.start).toBe(`node bin/mcp-native.mjs inspect && node bin/mcp-native.mjs call echo '{"text":"hello"}'`);
    expect(readFileSync(bin, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    accessSync(bin, constants.X_OK);
  });

  const bun = join(root, "node_modules", ".bin", "bun");
  it.skipIf(!existsSync(bun))("runs under Bun too", async () => {
    const output = await new Promise<string>((resolve, reject) => {
      execFile(bun, [bin, "call", "echo", '{"text":"from bun"}'], { cwd, timeout: 10_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr)) : resolve(stdout),
      );
    });
    expect(output).toBe("from bun\n");
  });
});

describe("O7 login and logout", () => {
  it("O7: login signs in through a loopback redirect; other commands use the tokens; logout forgets them", async () => {
    const { startOAuthFixture } = await import("./fixtures/oauth-server");
    const f = await startOAuthFixture();
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-login-"));
    try {
      const env = {
        XDG_CACHE_HOME: dir,
        MCP_NATIVE_TOKENS: "",
        MCP_NATIVE_BROWSER: `'${process.execPath}' '${fileURLToPath(new URL("./fixtures/fake-browser.mjs", import.meta.url))}'`,
      };
      // Not signed in: the server's 401 as it is.
      const before = await cli(["tools", "--url", f.url], { env });
      expect(before.code).toBe(3);
      expect(before.stderr).toContain("HTTP 401");

      const login = await cli(["login", "--url", f.url], { env });
      expect(login.stderr).toContain("Open this URL in your browser to sign in to");
      expect(login.stderr).toContain(`${f.base}/as/authorize?`);
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toBe(`signed in to ${f.url} through ${f.base}/as\n`);
      const [authorization] = f.authorizations;
      expect(authorization.redirect_uri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      expect(f.registrations[0]).toMatchObject({ client_name: "mcp-native CLI", application_type: "native" });
      const path = join(dir, "mcp-native", "tokens.json");
      expect(statSync(path).mode & 0o777).toBe(0o600);

      const tools = await cli(["tools", "--url", f.url, "--json"], { env });
      expect(tools.code, tools.stderr).toBe(0);
      expect(JSON.parse(tools.stdout).map((t: any) => t.name)).toEqual(["whoami"]);
      expect(f.authorizations).toHaveLength(1);

      // Expired and not refreshable: the command says how to sign in again.
      f.revoke(true);
      const expired = await cli(["tools", "--url", f.url], { env });
      expect(expired.code).toBe(3);
      expect(expired.stderr).toContain(`the sign-in has expired; run \`mcp-native login --url ${f.url}\``);

      const logout = await cli(["logout", "--url", f.url], { env });
      expect(logout.stdout).toBe(`signed out of ${f.url}\n`);
      expect(JSON.parse(readFileSync(path, "utf8")).entries).toEqual({});
      expect((await cli(["logout", "--url", f.url], { env })).stdout).toBe(`not signed in to ${f.url}\n`);
      const stdio = await cli(["login"], { env });
      expect(stdio.code).toBe(2);
      expect(stdio.stderr).toContain("login applies to HTTP servers");
    } finally {
      await f.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("SEP-1933/SEP-990: a config file's workload token or enterprise IdP signs in without a browser", async () => {
    const { startOAuthFixture } = await import("./fixtures/oauth-server");
    // Two servers: tokens are kept per server URL.
    const f = await startOAuthFixture({ refreshTokens: false });
    const g = await startOAuthFixture({ refreshTokens: false });
    g.preRegister("agent", "agent-secret");
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-machine-login-"));
    const env = { MCP_NATIVE_TOKENS: join(dir, "tokens.json"), MCP_NATIVE_BROWSER: "false" };
    try {
      const tokenPath = join(dir, "workload.jwt");
      writeFileSync(tokenPath, f.workloadToken("ci-job"));
      const config = join(dir, "mcp.json");
      writeFileSync(
        config,
        JSON.stringify({
          mcpServers: {
            workload: { type: "http", url: f.url, oauth: { grantType: "jwt_bearer", workloadToken: { file: tokenPath } } },
            enterprise: {
              type: "http",
              url: g.url,
              oauth: {
                grantType: "enterprise_managed",
                clientId: "agent",
                clientSecret: "agent-secret",
                idp: { issuer: g.idpIssuer(), clientId: "agent-at-idp", clientSecret: "idp-secret", assertion: { env: "MCP_TEST_ID_TOKEN" } },
              },
            },
          },
        }),
      );
      const login = await cli(["login", "workload", "--config", config], { env });
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toBe(`signed in to "workload" through ${f.base}/as\n`);
      expect(login.stderr).not.toContain("browser");
      // Without login, the other commands obtain tokens themselves.
      const call = await cli(["call", "enterprise", "whoami", "--config", config], { env: { ...env, MCP_TEST_ID_TOKEN: g.idToken("dana") } });
      expect(call.code, call.stderr).toBe(0);
      expect(call.stdout).toBe(`dana (agent) via ${g.base}/as\n`);
      expect([...f.authorizations, ...g.authorizations]).toEqual([]);
    } finally {
      await Promise.all([f.close(), g.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const bun = join(root, "node_modules", ".bin", "bun");
  it.skipIf(!existsSync(bun))("O7 under Bun: login's loopback listener, the browser spawn and the token file", async () => {
    const { startOAuthFixture } = await import("./fixtures/oauth-server");
    const f = await startOAuthFixture();
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-bun-login-"));
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        const env = {
          ...process.env,
          MCP_NATIVE_TOKENS: join(dir, "tokens.json"),
          MCP_NATIVE_BROWSER: `'${process.execPath}' '${fileURLToPath(new URL("./fixtures/fake-browser.mjs", import.meta.url))}'`,
        };
        execFile(bun, [bin, ...args], { cwd, env, timeout: 15_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? Number((error as any).code ?? 1) : 0, stdout, stderr }),
        );
      });
    try {
      const login = await run(["login", "--url", f.url]);
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toBe(`signed in to ${f.url} through ${f.base}/as\n`);
      const call = await run(["call", "--url", f.url, "whoami"]);
      expect(call.code, call.stderr).toBe(0);
      expect(call.stdout).toBe(`client-1 via ${f.base}/as\n`);
      expect(statSync(join(dir, "tokens.json")).mode & 0o777).toBe(0o600);
    } finally {
      await f.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
