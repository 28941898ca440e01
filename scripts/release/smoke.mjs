#!/usr/bin/env node
// The release workflow's test on each runner that can run its target: load the built addon
// through the package's loader and make a stdio round trip with the bundled example server.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { MCPClient, __napiBindingTarget } = createRequire(import.meta.url)(join(root, "index.js"));
const client = await MCPClient.connect("example", { command: process.execPath, args: [join(root, "example", "server.mjs")] });
const tools = await client.listTools();
const echoed = await client.callTool("echo", { text: "smoke" });
await client.close();
if (echoed.content?.[0]?.text !== "smoke") {
  console.error(`smoke: echo answered ${JSON.stringify(echoed)}`);
  process.exit(1);
}
console.log(`smoke: ok (${process.platform}-${process.arch}, ${__napiBindingTarget ?? "native"}, ${tools.length} tools)`);
