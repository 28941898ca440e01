// Run by test-runners.test.ts under Jest, in the same worker as stdio.spec.cjs.
const { join } = require("node:path");
const { MCPManager } = require("../../..");

const example = join(__dirname, "..", "..", "..", "example", "server.mjs");

test("a manager connects, calls, and disconnects everything", async () => {
  const manager = new MCPManager(process.cwd(), null, {});
  const { tools } = await manager.connectServers({ example: { command: process.execPath, args: [example] } }, {});
  const echo = tools.find((tool) => tool.mcpToolName === "echo");
  expect((await echo.execute({ text: "jest" })).content[0].text).toBe("jest");
  await manager.disconnectAll();
});
