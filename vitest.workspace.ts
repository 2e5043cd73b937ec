// The root test run: every package and example brings its own vitest.config.ts.
export default [
  "packages/*/vitest.config.ts",
  "examples/*/vitest.config.ts",
  "integrations/*/vitest.config.ts",
  "bench/vitest.config.ts",
  "scripts/vitest.config.ts"
]
