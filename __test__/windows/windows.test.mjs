// The Windows test set: the addon built for x86_64-pc-windows-gnu, loaded by a Windows
// node.exe (under Wine here: `npm run test:windows`; on the release workflow's Windows
// runners, natively). Node's own test runner, so nothing but node.exe is needed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { startExampleHttp } from "../fixtures/cli-http-server.mjs";

const require = createRequire(import.meta.url);
const native = require("../../index.js");
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const exampleServer = here("../../example/server.mjs");
const fixtureServer = here("../fixtures/stdio-server.mjs");
const cli = here("../../bin/mcp-native.mjs");
const node = process.execPath;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const open = [];
after(async () => {
  await Promise.allSettled(open.map((connection) => native.disconnectServer(connection)));
});

async function connect(name, config, options) {
  const connection = await native.connectToServer(name, { timeout: 20_000, ...config }, options);
  open.push(connection);
  return connection;
}

const textOf = (result) => result.content.map((part) => part.text).join("");

/** A directory of its own with `name` (a batch file) running `node script`. */
function shim(name, script) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-native-win-"));
  writeFileSync(join(dir, name), `@"${node}" "${script}" %*\r\n`);
  return dir;
}

/** Whether a process of that pid still runs. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("stdio", () => {
  it("S1-S3: a round trip with the bundled example server", async () => {
    const connection = await connect("example", { command: node, args: [exampleServer] });
    assert.equal(connection.serverInfo.name, "mcp-native-example");
    const tools = await native.listTools(connection);
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ["echo", "add", "time", "sleep", "fail"],
    );
    const result = await native.callTool(connection, "echo", { text: "hello, Windows" });
    assert.equal(textOf(result), "hello, Windows");
  });

  it("A12: a bare command name is found through PATH and PATHEXT as a .cmd, run by cmd.exe", async () => {
    const dir = shim("example-server.cmd", exampleServer);
    const env = { PATH: `${dir};${process.env.PATH ?? ""}`, PATHEXT: ".COM;.EXE;.BAT;.CMD" };
    const connection = await connect("shim", { command: "example-server", env });
    const result = await native.callTool(connection, "add", { a: 2, b: 40 });
    assert.equal(textOf(result), "42");
  });

  // `%` is left out here: Wine's cmd.exe expands the `%%cd:~,%` of A12's quoting once more
  // inside the batch file's `%*` than Windows does (the unit tests pin the line itself).
  it("A12: an argument cmd.exe would mangle reaches the server unchanged through a batch file", async () => {
    const dir = shim("fixture.cmd", fixtureServer);
    const tricky = `off & "quoted" ^caret <angle> |pipe! (paren) tail\\`;
    const connection = await connect("escaped", {
      command: join(dir, "fixture.cmd"),
      args: [`--instructions=${tricky}`],
    });
    assert.equal(connection.instructions, tricky);
  });

  it("A12: an npm shim runs its script with node directly, arguments untouched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-native-npm-"));
    writeFileSync(join(dir, "server.mjs"), `import(${JSON.stringify(new URL("../fixtures/stdio-server.mjs", import.meta.url).href)});\r\n`);
    const cmdShim = [
      "@ECHO off",
      "SETLOCAL",
      'IF EXIST "%dp0%\\node.exe" (',
      '  SET "_prog=%dp0%\\node.exe"',
      ") ELSE (",
      '  SET "_prog=node"',
      ")",
      '"%_prog%"  "%dp0%\\server.mjs" %*',
      "",
    ].join("\r\n");
    writeFileSync(join(dir, "npm-server.cmd"), cmdShim);
    const env = { PATH: `${dir};${join(node, "..")};${process.env.PATH ?? ""}` };
    const connection = await connect("npm", { command: "npm-server", args: ["--instructions=a%b"], env });
    assert.equal(connection.instructions, "a%b");
  });

  it("A12: a line feed in an argument of a batch command is refused before anything runs", async () => {
    const dir = shim("fixture.cmd", fixtureServer);
    await assert.rejects(
      native.connectToServer("refused", { command: join(dir, "fixture.cmd"), args: ["a\nb"] }),
      { message: "Windows batch MCP argument cannot contain NUL, CR, or LF characters" },
    );
  });

  it("T5: server notifications reach onNotification", async () => {
    const connection = await connect("notes", { command: node, args: [fixtureServer] });
    const seen = [];
    connection.transport.onNotification = (method, params) => seen.push([method, params?.data]);
    const result = await native.callTool(connection, "notify_then_answer", { count: 3 });
    assert.equal(textOf(result), "after notifications");
    assert.deepEqual(seen, [
      ["notifications/message", "n0"],
      ["notifications/message", "n1"],
      ["notifications/message", "n2"],
    ]);
  });

  it("T7/T8: a request times out, and an aborted one rejects with the signal's reason", async () => {
    const connection = await connect("slow", { command: node, args: [fixtureServer] });
    const transport = connection.transport;
    await assert.rejects(transport.request("tools/call", { name: "never", arguments: {} }, { timeout: 200 }), {
      message: "Request timeout after 200ms",
    });
    const controller = new AbortController();
    const pending = transport.request("tools/call", { name: "never", arguments: {} }, { signal: controller.signal });
    controller.abort(new Error("stop now"));
    await assert.rejects(pending, { message: "stop now" });
  });

  it("S6: close() ends the server and the process it started", async () => {
    const connection = await native.connectToServer("tree", { command: node, args: [fixtureServer, "--grandchild"] });
    const pid = connection.transport.pid;
    const grandchild = Number(textOf(await native.callTool(connection, "grandchild_pid", {})));
    assert.ok(grandchild > 0 && alive(grandchild), "the grandchild runs");
    await native.disconnectServer(connection);
    for (let i = 0; i < 100 && (alive(pid) || alive(grandchild)); i++) await sleep(50);
    assert.equal(alive(pid), false, "the server is gone");
    assert.equal(alive(grandchild), false, "the grandchild is gone");
  });

  it("S4/S5/A45: a crash rejects what is pending with the server's last stderr words", async () => {
    const connection = await connect("crash", { command: node, args: [fixtureServer] });
    const error = await connection.transport
      .request("tools/call", { name: "crash", arguments: { stderr: "fatal: disk on fire\n" } })
      .catch((e) => e);
    assert.equal(error.message, "MCP subprocess exited with code 3 before responding");
    assert.match(error.stderr, /fatal: disk on fire/);
    // A45: the class (defined in JS as the module loads) works in node.exe too.
    assert.ok(error instanceof native.MCPTransportError);
    assert.equal(error.transport, "stdio");
    assert.equal(error.retryable, true);
  });
});

describe("HTTP", () => {
  it("H1: a Streamable HTTP round trip on 127.0.0.1", async () => {
    const server = await startExampleHttp();
    try {
      const connection = await connect("http", { type: "http", url: server.url });
      const result = await native.callTool(connection, "echo", { text: "over http" });
      assert.equal(textOf(result), "over http");
      await native.disconnectServer(connection);
    } finally {
      await server.close();
    }
  });

  it("A25: a legacy HTTP+SSE round trip on 127.0.0.1", async () => {
    const server = await startExampleHttp({ legacy: true });
    try {
      const connection = await connect("sse", { type: "sse", url: server.url });
      const result = await native.callTool(connection, "add", { a: 1, b: 2 });
      assert.equal(textOf(result), "3");
      await native.disconnectServer(connection);
    } finally {
      await server.close();
    }
  });

  // Wine's CryptoAPI refuses any extra root (E_INVALIDARG) and Windows takes them; either
  // way plain http must work, as Node goes on without certificates it cannot load.
  it("H10: NODE_EXTRA_CA_CERTS never breaks plain HTTP", async () => {
    const server = await startExampleHttp();
    try {
      const child = [
        `const native = require(${JSON.stringify(require.resolve("../../index.js"))});`,
        "const c = await native.connectToServer('ca', { type: 'http', url: process.env.URL });",
        "const r = await native.callTool(c, 'echo', { text: 'with extra certs' });",
        "process.stdout.write(r.content[0].text);",
        "await native.disconnectServer(c);",
      ].join("\n");
      const env = { ...process.env, URL: server.url, NODE_EXTRA_CA_CERTS: here("../fixtures/tls-cert.pem") };
      const { stdout, stderr } = await promisify(execFile)(node, ["--input-type=commonjs", "-e", `(async () => { ${child} })()`], { env });
      assert.equal(stdout, "with extra certs");
      assert.match(stderr, /^(|Warning: Ignoring extra certs from `.*tls-cert\.pem`, load failed: .+\n)$/);
    } finally {
      await server.close();
    }
  });
});

describe("manager and CLI", () => {
  it("M1: the manager connects two servers and lists their tools", async () => {
    const manager = new native.MCPManager(process.cwd());
    try {
      const loaded = await manager.connectServers({
        one: { command: node, args: [exampleServer] },
        two: { command: node, args: [exampleServer] },
      });
      assert.deepEqual([...loaded.errors.keys()], []);
      // M4: a server still connecting when the call returns is waited for here.
      await Promise.all(["one", "two"].map((name) => manager.waitForConnection(name)));
      assert.deepEqual(manager.getConnectedServers().sort(), ["one", "two"]);
      const names = manager.getTools().map((tool) => tool.name);
      assert.ok(names.includes("mcp__one_echo") && names.includes("mcp__two_echo"), names.join(", "));
    } finally {
      await manager.disconnectAll();
    }
  });

  it("M3: a !command value runs through cmd.exe and its output reaches the server", async () => {
    const manager = new native.MCPManager(process.cwd());
    try {
      const config = { command: node, args: [fixtureServer], env: { GREETING: "!echo from cmd" } };
      const loaded = await manager.connectServers({ env: config });
      assert.deepEqual([...loaded.errors.keys()], []);
      await manager.waitForConnection("env");
      const connection = manager.getConnection("env");
      const answer = JSON.parse(textOf(await native.callTool(connection, "env", { name: "GREETING" })));
      assert.equal(answer.value, "from cmd");
    } finally {
      await manager.disconnectAll();
    }
  });

  it("the CLI inspects the example server and calls a tool", async () => {
    const run = promisify(execFile);
    const inspected = await run(node, [cli, "inspect"], { timeout: 60_000 });
    assert.match(inspected.stdout, /mcp-native-example/);
    assert.match(inspected.stdout, /echo/);
    const called = await run(node, [cli, "call", "echo", '{"text":"from the CLI"}'], { timeout: 60_000 });
    assert.equal(called.stdout.trim(), "from the CLI");
  });
});
