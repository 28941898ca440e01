// Every code example of README.md runs: each ```ts block is written out as a module (the
// package imported from this checkout, the example URLs pointed at 127.0.0.1 fixtures) and
// run by Node; it must finish without an error.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { httpTestScope } from "./helpers";
import { startOAuthFixture } from "./fixtures/oauth-server";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { fixture } = httpTestScope();
const dir = mkdtempSync(join(tmpdir(), "mcp-native-examples-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const blocks = [...readFileSync(join(root, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);

describe("README examples", () => {
  it("has examples to run", () => expect(blocks.length).toBeGreaterThanOrEqual(4));

  it.each(blocks.map((code, i) => [i + 1, code]))("example %i runs", async (index, code) => {
    const http = await fixture();
    const legacy = await fixture({ legacy: true });
    // The OAuth examples: an authorization server with its enterprise IdP, a workload token.
    const oauth = await startOAuthFixture();
    oauth.preRegister("my-agent", "my-agent-secret");
    const workloadToken = join(dir, `workload-${index}.jwt`);
    writeFileSync(workloadToken, oauth.workloadToken("ci"));
    const module = (code as string)
      .replaceAll('from "mcp-native"', `from ${JSON.stringify(pathToFileURL(join(root, "index.mjs")).href)}`)
      .replaceAll("http://127.0.0.1:3001/mcp", http.url)
      .replaceAll("http://127.0.0.1:3001/sse", legacy.url)
      .replaceAll("http://127.0.0.1:3002/mcp", oauth.url)
      .replaceAll("https://idp.example.com", oauth.idpIssuer())
      .replaceAll("/var/run/secrets/tokens/mcp", workloadToken);
    const file = join(dir, `example-${index}.mjs`);
    // The examples leave connections open as a program would; the run ends once they are done.
    writeFileSync(file, `${module}\nprocess.exit(0);\n`);
    const run = await promisify(execFile)(process.execPath, [file], {
      cwd: root,
      timeout: 30_000,
      env: {
        ...process.env,
        PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`,
        MCP_CLIENT_SECRET: "my-agent-secret",
        SSO_ID_TOKEN: oauth.idToken("user@example.com"),
      },
    }).finally(() => oauth.close());
    expect(run.stderr).toBe("");
    if (code.includes("127.0.0.1:3002")) expect(oauth.tokenRequests.map((r) => r.grant)).toEqual(["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
  }, 40_000);
});
