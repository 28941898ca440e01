import { defineConfig } from "vitest/config";

// For test-runners.test.ts only: the pool comes from the command line.
export default defineConfig({ test: { include: ["__test__/runners/*.check.ts"], root: new URL("../..", import.meta.url).pathname } });
