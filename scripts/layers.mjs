// The floors of src/, checked from the code's own paths: every `crate::a::b` and `super::…`
// a file names is an arrow from its module to that one. Prints the import circles among
// modules (files) and the arrows that run from a lower floor to a higher one; exits 1 when
// there is any, so `npm test` keeps them from coming back.
//
// `node scripts/layers.mjs [--report] [--edges]`: --report also prints the binding's share
// of the non-test lines of src/ and where `unsafe` is; --edges every module's arrows.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../src/", import.meta.url));
const report = process.argv.includes("--report");

// Bottom up. A module may name its own floor and the ones below.
const FLOORS = [
  ["sys", "redaction", "runtime", "http_client"],
  ["protocol", "error", "transport_error"],
  ["session", "host", "persist"],
  ["transport", "oauth"],
  ["config", "client"],
  ["manager"],
  ["binding"],
];
const floorOf = new Map(FLOORS.flatMap((names, level) => names.map((name) => [name, level])));
// Test-only modules and the crate root see everything.
const EXEMPT = new Set(["lib", "fake_host"]);
const exempt = (name) => EXEMPT.has(name.split("::")[0]) || /::(tests|test_\w+)$/.test(name);

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : name.endsWith(".rs") ? [path] : [];
  });
}

/** `a/b.rs` → ["a", "b"]; `a/mod.rs` → ["a"]. */
const modulePath = (file) => {
  const parts = relative(root, file).replace(/\.rs$/, "").split("/");
  if (parts.at(-1) === "mod") parts.pop();
  return parts;
};

/** The code outside `#[cfg(test)] mod … { … }` blocks (tests may reach anywhere). */
function withoutTests(text) {
  const lines = text.split("\n");
  const kept = [];
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*#\[cfg\(test\)\]/.test(lines[i]) && /^\s*(pub(\([^)]*\))? )?mod \w+ \{/.test(lines[i + 1] ?? "")) {
      let depth = 0;
      for (i = i + 1; i < lines.length; i++) {
        depth += (lines[i].match(/\{/g) ?? []).length - (lines[i].match(/\}/g) ?? []).length;
        if (depth <= 0) break;
      }
      continue;
    }
    kept.push(lines[i]);
  }
  return kept.join("\n");
}

const modules = new Map(); // "a::b" → { file, path, code, lines }
for (const file of files(root)) {
  const path = modulePath(file);
  const text = readFileSync(file, "utf8");
  const code = withoutTests(text).replace(/\/\/.*$/gm, "");
  modules.set(path.join("::"), { file: relative(root, file), path, code, lines: code.split("\n").filter((l) => l.trim()).length });
}

/** The longest known module that `segments` starts with. */
function resolve(segments) {
  for (let n = segments.length; n > 0; n--) {
    const name = segments.slice(0, n).join("::");
    if (modules.has(name)) return name;
  }
  return undefined;
}

const edges = new Map(); // module → Set(module)
for (const [name, { path, code }] of modules) {
  const targets = new Set();
  // `use crate::a::{b, c::d}` and inline `crate::a::b` paths.
  for (const match of code.matchAll(/\bcrate((?:::\w+)+)(?:::\{([^;]*?)\})?/g)) {
    const base = match[1].split("::").filter(Boolean);
    const group = match[2];
    if (group) {
      for (const item of group.split(",")) {
        const rest = item.trim().replace(/\s+as\s+\w+$/, "").split("::").filter((s) => /^\w+$/.test(s));
        targets.add(resolve([...base, ...rest]));
      }
    } else targets.add(resolve(base));
  }
  // `super::a::b`: each `super` is one step up from this module (a mod.rs is its folder).
  for (const match of code.matchAll(/\b((?:super::)+)((?:\w+::)*\w+)/g)) {
    const ups = match[1].split("super::").length - 1;
    const base = path.slice(0, Math.max(0, path.length - ups));
    targets.add(resolve([...base, ...match[2].split("::")]));
  }
  targets.delete(undefined);
  targets.delete(name);
  edges.set(name, targets);
}

// Circles: strongly connected components of more than one module (Tarjan).
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const circles = [];
let counter = 0;
function visit(v) {
  index.set(v, counter);
  low.set(v, counter++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v) ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) circles.push(component.sort());
  }
}
for (const v of modules.keys()) if (!index.has(v)) visit(v);

const top = (name) => name.split("::")[0];
const upward = [];
for (const [from, targets] of edges) {
  if (exempt(from)) continue;
  for (const to of targets) {
    const [a, b] = [floorOf.get(top(from)), floorOf.get(top(to))];
    if (a === undefined || b === undefined) {
      upward.push([from, to, "a module with no floor (add it to FLOORS)"]);
    } else if (b > a) upward.push([from, to, `floor ${a} → ${b}`]);
  }
}

for (const circle of circles) console.log(`circle: ${circle.join(", ")}`);
for (const [from, to, why] of upward) console.log(`up: ${from} → ${to} (${why})`);
if (report) {
  const nonTest = [...modules.entries()].filter(([name]) => !exempt(name));
  const total = nonTest.reduce((n, [, m]) => n + m.lines, 0);
  const binding = nonTest.filter(([name]) => top(name) === "binding").reduce((n, [, m]) => n + m.lines, 0);
  console.log(`binding: ${binding} of ${total} non-test lines of src/ (${((100 * binding) / total).toFixed(1)} %)`);
  const unsafeFiles = [...modules.values()].filter((m) => /\bunsafe\b/.test(m.code));
  const uses = unsafeFiles.reduce((n, m) => n + (m.code.match(/\bunsafe\b/g) ?? []).length, 0);
  console.log(`unsafe: ${uses} uses in ${unsafeFiles.length} files: ${unsafeFiles.map((m) => m.file).join(", ")}`);
}
console.log(`${modules.size} modules: ${circles.length} circle(s), ${upward.length} arrow(s) up`);
process.exitCode = circles.length || upward.length ? 1 : 0;
if (process.argv.includes("--edges")) for (const [from, targets] of edges) console.log(`${from} → ${[...targets].join(", ")}`);
