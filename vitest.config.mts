import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["__test__/**/*.test.ts"],
    // __test__/bun/ holds `bun test` files (bun:test), run by scripts/test.sh.
    exclude: [...configDefaults.exclude, "__test__/bun/**"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
