// O1: code migrating from the TypeScript SDK keeps its OAuthClientProvider; our own options
// and FileTokenStore type-check as documented. Compiled, never run.
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { createHttpTransport, FileTokenStore, MCPClient, type MCPOAuthOptions, type MCPTokenStore } from "../../index.js";

declare const sdkProvider: OAuthClientProvider;

export async function migrated(url: string, callbackUrl: string) {
  const transport = await createHttpTransport({ type: "http", url, authProvider: sdkProvider });
  try {
    await transport.request("tools/list");
  } catch (error) {
    if ((error as Error).name === "UnauthorizedError") await transport.finishAuth(callbackUrl);
  }
  transport.onAuthError = async () => ({ Authorization: "Bearer fresh" });
}

export async function ours(url: string, open: (url: string) => Promise<string>) {
  const store: MCPTokenStore = new FileTokenStore("/tmp/tokens.json");
  const oauth: MCPOAuthOptions = { redirect: open, store, clientName: "agent", scope: "mcp:tools" };
  const client = await MCPClient.connect("remote", { type: "http", url, oauth });
  await createHttpTransport({ type: "sse", url }, { oauth });
  await client.close();
}

// SEP-1933 and SEP-990: machine sign-in needs no redirect.
export async function machines(url: string, idToken: () => Promise<string>) {
  const workload: MCPOAuthOptions = { grantType: "jwt_bearer", workloadToken: { file: "/var/run/secrets/tokens/mcp" } };
  const fromEnv: MCPOAuthOptions = { grantType: "jwt_bearer", workloadToken: { env: "MCP_WORKLOAD_TOKEN" } };
  const enterprise: MCPOAuthOptions = {
    grantType: "enterprise_managed",
    clientId: "agent",
    clientSecret: "secret",
    idp: { issuer: "https://idp.example", clientId: "agent-at-idp", assertion: idToken, assertionType: "id_token" },
  };
  for (const oauth of [workload, fromEnv, enterprise]) await (await MCPClient.connect("m", { type: "http", url, oauth })).close();
}
