// Run by test-runners.test.ts under Jest: a user's test that closes what it opened.
const { join } = require("node:path");
const { connectToServer, listTools, callTool } = require("../../..");

const example = join(__dirname, "..", "..", "..", "example", "server.mjs");

test("a stdio round trip, closed at the end", async () => {
  const connection = await connectToServer("example", { command: process.execPath, args: [example] });
  expect((await listTools(connection)).length).toBeGreaterThan(0);
  const result = await callTool(connection, "echo", { text: "jest" });
  expect(result.content[0].text).toBe("jest");
  await connection.transport.close();
});
