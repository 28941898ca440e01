// docs/cli.md tells the truth about the CLI: its help text is `mcp-native --help`'s, word for
// word, and its command table names exactly the commands the help lists.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const doc = readFileSync(join(root, "docs", "cli.md"), "utf8");
const help = (...args: string[]) => execFileSync(process.execPath, [join(root, "bin", "mcp-native.mjs"), ...args], { encoding: "utf8" });

describe("docs/cli.md", () => {
  it("shows the help text as the CLI prints it, for --help, help and a command's --help", () => {
    const documented = /## The help text[\s\S]*?```text\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(documented).toBeDefined();
    expect(help("--help")).toBe(documented);
    expect(help("help")).toBe(documented);
    expect(help("call", "--help")).toBe(documented);
  });

  it("its command table names the commands the help lists", () => {
    const usage = /Usage\n([\s\S]*?)\n\n/.exec(help("--help"))?.[1] ?? "";
    const listed = [...usage.matchAll(/^ {2}mcp-native (\S+)/gm)].map((m) => m[1]).sort();
    // The first table of the page: one row per command.
    const firstTable = /\n(\| command \|[\s\S]*?)\n\n/.exec(doc)?.[1] ?? "";
    const table = [...firstTable.matchAll(/^\| `([a-z]+)[ `,]/gm)].map((m) => m[1]).sort();
    expect(table).toEqual(listed);
  });
});
