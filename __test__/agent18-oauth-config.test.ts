// SPEC-AGENT18 A2/A38: the v18 agent's configs may carry its own `oauth` block
// ({clientId, clientSecret, scope, redirectUri, callbackPort, callbackPath, prompt}), which
// its own OAuth flow reads. Such a block is not an ask for our flow (O1): the server connects
// as any other, a 401 goes to onAuthError, and `type: "sse"` routes as A25 says.
import { afterEach, describe, expect, it } from "vitest";
import { native } from "./helpers";
import { startHttpFixture } from "./fixtures/http-server";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});
const agentOAuth = { clientId: "omp", clientSecret: "s", scope: "read", redirectUri: "http://127.0.0.1:3999/cb", callbackPort: 3999, callbackPath: "/cb", prompt: "" };

async function fixture(options: Parameters<typeof startHttpFixture>[0] = {}) {
  const f = await startHttpFixture(options);
  cleanups.push(f.close);
  return f;
}

describe("A2 the agent's own oauth block", () => {
  it("A2: an HttpTransport with the agent's oauth block connects and requests as without it", async () => {
    const f = await fixture();
    const t = await native.createHttpTransport({ type: "http", url: f.url, oauth: agentOAuth } as any);
    cleanups.push(() => t.close());
    expect(await t.request("json/echo", { n: 1 })).toEqual({ params: { n: 1 } });
  });

  it("A2/A10: a 401 is not answered by our flow but by onAuthError, whose headers are retried", async () => {
    const token = { current: "fresh" };
    const f = await fixture({ bearer: token });
    const t = await native.createHttpTransport({ type: "http", url: f.url, headers: { Authorization: "Bearer stale" }, oauth: agentOAuth } as any);
    cleanups.push(() => t.close());
    let asked = 0;
    t.onAuthError = async () => {
      asked++;
      return { Authorization: "Bearer fresh" };
    };
    expect(await t.request("json/echo", { n: 2 })).toEqual({ params: { n: 2 } });
    expect(asked).toBe(1);
    // Nothing went looking for authorization-server metadata.
    expect(f.received.filter((r) => r.path.includes("well-known"))).toEqual([]);
  });

  it("A2/A25: connectToServer opens type sse with the agent's oauth block as a LegacySseTransport", async () => {
    const f = await fixture({ legacy: true });
    const connection = await native.connectToServer("legacy", { type: "sse", url: f.url, oauth: agentOAuth } as any);
    cleanups.push(() => native.disconnectServer(connection));
    expect(connection.transport).toBeInstanceOf(native.LegacySseTransport);
    expect(connection.serverInfo.name).toBe("fixture-legacy");
  });

  it("A2: a manager connects a server whose config has the agent's oauth block", async () => {
    const f = await fixture();
    const manager = new native.MCPManager(process.cwd());
    cleanups.push(() => manager.disconnectAll());
    const report = await manager.connectServers({ remote: { type: "http", url: f.url, oauth: agentOAuth } as any }, {});
    expect(report.connectedServers).toEqual(["remote"]);
    expect(report.errors.size).toBe(0);
  });

  it("O1: an oauth block with our own fields still asks for our flow and is checked", async () => {
    const f = await fixture();
    const ours = await native.createHttpTransport({ type: "http", url: f.url, oauth: { ...agentOAuth, grantType: "client_credentials" } } as any);
    cleanups.push(() => ours.close());
    await expect(native.createHttpTransport({ type: "http", url: f.url, oauth: { clientId: "x", store: {} } } as any)).rejects.toThrow(
      new TypeError('The "oauth.redirect" field must be a function'),
    );
  });
});
