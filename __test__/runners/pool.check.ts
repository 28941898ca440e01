// Run by test-runners.test.ts with vitest --pool=threads and --pool=forks.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const require = createRequire(import.meta.url);
const { connectToServer, callTool } = require("../../index.js") as typeof import("../../index.js");
const example = fileURLToPath(new URL("../../example/server.mjs", import.meta.url));

it("a stdio round trip in this pool", async () => {
  const connection = await connectToServer("example", { command: process.execPath, args: [example] });
  const result: any = await callTool(connection, "echo", { text: "pool" });
  expect(result.content[0].text).toBe("pool");
  await connection.transport.close();
});
