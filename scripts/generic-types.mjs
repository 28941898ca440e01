// napi-rs cannot declare a generic class, so `index.d.ts` carries the hand-written
// `MCPManager<TTool>` (types-header.d.ts) and this drops the generated, non-generic one.
// It also declares string enums as plain enums (napi-rs writes `const enum`), documents the
// `Js…` aliases napi-rs adds for the classes, and declares the
// agent's string constants as their literal values (A44), read from the built binding.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const file = fileURLToPath(new URL("../index.d.ts", import.meta.url));
const generated = readFileSync(file, "utf8");
const pruned = generated
  .replace(/export declare class MCPManager \{[^]*?\}\n/, "")
  .replace(/export type JsMcpManager = MCPManager\n/, "")
  // A real object at run time: a plain enum, which isolatedModules and Bun accept.
  .replace(/export declare const enum /g, "export declare enum ")
  // napi-rs also exports each class under its Rust struct's name; say so once (idempotent).
  .replace(/(?<!\*\/\n)export type (Js\w+) = (\w+)\n/g, "/** The Rust struct's name for `$2`, exported by napi-rs too: use `$2`. */\nexport type $1 = $2\n");
if (/export declare class MCPManager \{/.test(pruned)) {
  throw new Error("index.d.ts: the generated MCPManager declaration was not removed");
}
const binding = createRequire(import.meta.url)("../index.js");
let typed = pruned;
for (const name of ["MCP_PROTOCOL_VERSION", "MCP_CONFIG_SCHEMA_URL"]) {
  const declared = `export declare const ${name}: string`;
  const literal = `export declare const ${name}: ${JSON.stringify(binding[name])}`;
  if (!typed.includes(declared) && !typed.includes(literal)) throw new Error(`index.d.ts: ${name} is not declared`);
  typed = typed.replace(declared, literal);
}
writeFileSync(file, typed);
