// SPEC-PROTOCOL P7: tool schemas and structuredContent are data: every JSON Schema 2020-12
// keyword reaches the caller as the server sent it, and no $ref is dereferenced or fetched.
import { afterEach, describe, expect, it } from "vitest";
import { native, server } from "./helpers";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()));
});
const config = { command: process.execPath, args: [server] };

/** The tool as the server sent it, read without the client flows. */
async function wireSchema(connection: import("../index.js").MCPServerConnection) {
  const listed: any = await connection.transport.request("tools/list");
  return listed.tools.find((t: any) => t.name === "schema_keywords");
}

describe("P7 schemas are data", () => {
  it("P7: listTools, callTool and the manager's tool parameters keep every keyword, $ref unresolved", async () => {
    const connection = await native.connectToServer("schemas", config as any);
    cleanups.push(() => connection.transport.close());
    const raw = await wireSchema(connection);
    expect(raw.inputSchema.$defs.money.$anchor).toBe("money");

    const tools = await native.listTools(connection);
    const tool = tools.find((t) => t.name === "schema_keywords")!;
    expect(tool.inputSchema).toEqual(raw.inputSchema);
    expect(tool.outputSchema).toEqual(raw.outputSchema);
    expect(JSON.stringify(tool.inputSchema)).toBe(JSON.stringify(raw.inputSchema));
    expect((tool.inputSchema as any).properties.remote).toEqual({ $ref: "https://example.com/never-fetched.json" });
    expect((tool.inputSchema as any).properties.huge.maximum).toBe(12345678901234567890);

    const result: any = await native.callTool(connection, "schema_keywords", {});
    expect(result.structuredContent).toEqual({ schema: raw.inputSchema, n: 1.5e300 });

    const manager = new native.MCPManager(process.cwd(), null, {});
    cleanups.push(() => manager.disconnectAll());
    const { tools: managed } = await manager.connectServers({ schemas: config as any }, {});
    const parameters = managed.find((t) => t.mcpToolName === "schema_keywords")!.parameters;
    expect(JSON.stringify(parameters)).toBe(JSON.stringify(raw.inputSchema));
  });
});
