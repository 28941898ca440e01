// The client the official conformance suite drives: public API only. The runner appends the
// server URL and names the scenario in MCP_CONFORMANCE_SCENARIO.
import { createRequire } from 'node:module'

const { MCPClient } = createRequire(import.meta.url)('..')

const url = process.argv[2]
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ''
const protocolVersion = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION
// What a scenario hands the client (pre-registered credentials, keys).
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}')

// O1: the user agent's part, scripted: the suite's authorization endpoint redirects at once,
// so following that one redirect is the whole user interaction.
async function redirect(authorizationUrl) {
  const response = await fetch(authorizationUrl, { redirect: 'manual' })
  const location = response.headers.get('location')
  if (!location) throw new Error(`authorization endpoint answered ${response.status} without a redirect`)
  return new URL(location, authorizationUrl).toString()
}

function oauthOptions() {
  const clientCredentials = scenario.startsWith('auth/client-credentials')
  // SEP-1933: the workload's JWT is its whole identity (no client id, no registration).
  if (scenario === 'auth/wif-jwt-bearer') return { grantType: 'jwt_bearer', workloadToken: context.valid_jwt }
  // SEP-990: the user's ID token from single sign-on, exchanged at the IdP for an ID-JAG.
  if (scenario === 'auth/enterprise-managed-authorization') {
    return {
      grantType: 'enterprise_managed',
      clientId: context.client_id,
      clientSecret: context.client_secret,
      idp: { tokenEndpoint: context.idp_token_endpoint, clientId: context.idp_client_id, assertion: context.idp_id_token },
    }
  }
  return {
    redirect,
    redirectUri: 'http://localhost:3000/callback',
    clientMetadataUrl: 'https://conformance-test.local/client-metadata.json',
    clientName: 'mcp-native conformance client',
    ...(context.client_id && { clientId: context.client_id }),
    ...(context.client_secret && { clientSecret: context.client_secret }),
    ...(context.private_key_pem && { privateKey: context.private_key_pem, signingAlgorithm: context.signing_algorithm }),
    ...(clientCredentials && { grantType: 'client_credentials' }),
    ...(scenario.startsWith('auth/dpop') && { dpop: true }),
  }
}

// What each scenario's server expects the client to call, by tool name.
const toolArguments = {
  add_numbers: { a: 5, b: 3 },
}

async function main() {
  const client = await MCPClient.connect(
    'conformance',
    { type: 'http', url, ...(scenario.startsWith('auth/') && { oauth: oauthOptions() }) },
    {
      client: protocolVersion ? { protocolVersion } : undefined,
      // SEP-1034: accept with nothing filled in, so the client's own defaults show.
      elicitation: async () => ({ action: 'accept', content: {} }),
      sampling: async (params) => ({
        role: 'assistant',
        model: 'conformance-model',
        content: { type: 'text', text: `sampled: ${params.messages?.length ?? 0} messages` },
      }),
    },
  )
  try {
    const tools = await client.listTools()
    if (scenario === 'json-schema-2020-12-preservation') {
      // P7: hand the focal tool's inputSchema, as we received it, to the echo tool.
      const echo = tools.find((tool) => tool.inputSchema?.properties?.schema)
      const focal = tools.find((tool) => tool !== echo)
      await client.callTool(echo.name, { schema: focal.inputSchema })
    } else if (context.toolCalls) {
      // The scenario names the calls (and their arguments) it wants to see.
      for (const call of context.toolCalls) await client.callTool(call.name, call.arguments)
    } else if (scenario !== 'initialize') {
      for (const tool of tools) {
        await client.callTool(tool.name, toolArguments[tool.name] ?? {})
      }
    }
  } finally {
    await client.close()
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`conformance client (${scenario}): ${error?.stack ?? error}`)
    process.exit(1)
  },
)
