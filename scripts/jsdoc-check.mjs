#!/usr/bin/env node
// Every symbol index.d.ts exports, every member and constructor of its classes, and every
// field of what a user configures or implements (options, configs, handlers, the seams the
// agent plugs into) carries a doc comment (read with the TypeScript compiler's own JSDoc
// lookup), so an editor's hover says what each is. The MCP wire types mirror the protocol's
// schema and are documented there.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const ts = createRequire(import.meta.url)("typescript");
const file = fileURLToPath(new URL("../index.d.ts", import.meta.url));
const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
const undocumented = [];
const SEAMS = new Set(["MCPServerConfigBase", "MCPTransport", "MCPServerConnection", "MCPTokenStore", "MCPToolCache", "MCPToolFactory", "MCPLogger"]);
const configured = (name) => /(Options|Config|Handlers)$/.test(name) || SEAMS.has(name);
for (const statement of source.statements) {
  if (ts.isInterfaceDeclaration(statement) && configured(statement.name.text)) {
    for (const member of statement.members) {
      if (!member.name || ts.getJSDocCommentsAndTags(member).length > 0) continue;
      undocumented.push(`${statement.name.text}.${member.name.getText(source)}`);
    }
  }
  if (!statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
  if (ts.isClassDeclaration(statement)) {
    for (const member of statement.members) {
      if (ts.getJSDocCommentsAndTags(member).length > 0) continue;
      const name = ts.isConstructorDeclaration(member) ? "constructor" : member.name?.getText(source);
      undocumented.push(`${statement.name.getText(source)}.${name}`);
    }
  }
  if (ts.getJSDocCommentsAndTags(statement).length > 0) continue;
  const names = statement.name
    ? [statement.name.getText(source)]
    : (statement.declarationList?.declarations ?? []).map((d) => d.name.getText(source));
  undocumented.push(...names);
}
if (undocumented.length > 0) {
  console.error(`index.d.ts: ${undocumented.length} export(s) without a doc comment: ${undocumented.join(", ")}`);
  process.exit(1);
}
console.log(`index.d.ts: every export documented (${source.statements.length} declarations)`);
