// The docs a newcomer reads: README stays the front door (at most 300 lines), and every
// relative link and anchor in README.md and docs/ leads somewhere.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pages = ["README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** The anchors GitHub gives a page's headings (lowercase, punctuation dropped, spaces to -, repeats numbered). */
function anchors(path: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every markdown link outside code: its text position and target. */
function links(path: string): string[] {
  const text = readFileSync(path, "utf8").replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

describe("docs", () => {
  it("README is at most 300 lines", () => {
    expect(readFileSync(join(root, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300);
  });

  it("every relative link and anchor in README.md and docs/ resolves", () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const target of links(join(root, page))) {
        if (/^[a-z]+:/i.test(target)) continue;
        const [file, anchor] = target.split("#");
        const path = file ? resolve(dirname(join(root, page)), file) : join(root, page);
        if (!existsSync(path)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (anchor && path.endsWith(".md") && !anchors(path).has(anchor)) broken.push(`${page}: ${target} (no such anchor)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
