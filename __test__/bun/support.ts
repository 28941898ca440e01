// What every `bun test` file here needs: the addon, and cleanups run after each test.
import { afterEach } from "bun:test";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
export const native: typeof import("../../index.js") = require("../../index.js");

/** A list of cleanups the calling test file runs (all at once) after each of its tests. */
export function cleanupsAfterEach(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((f) => f()));
  });
  return cleanups;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 10 ms until it holds or `ms` have passed; its last answer. */
export async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (!check() && Date.now() < until) await sleep(10);
  return check();
}

export { alive } from "../proc";
