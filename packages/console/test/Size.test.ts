/**
 * The console's budget (docs/console.md#size): `size-limit` (its `@size-limit/file` plugin, brotli),
 * as configured in package.json, passes at 150 KB for everything the first page loads (the app's
 * module and its style sheet); and the app is one module that imports nothing at run time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as esbuild from "esbuild"
import { execFileSync } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const sizeLimit = join(dirname(createRequire(import.meta.url).resolve("size-limit/package.json")), "bin.js")

/** size-limit's JSON report (over the limit it exits 1, still with its report). */
const report = Effect.sync(() => {
  let out: string
  try {
    out = execFileSync(process.execPath, [sizeLimit, "--json"], { cwd: root, encoding: "utf8" })
  } catch (error) {
    out = String((error as { stdout?: unknown }).stdout ?? error)
  }
  return JSON.parse(out) as Array<{ name: string; passed: boolean; size: number; sizeLimit: number }>
})

describe("the built console", () => {
  it.effect("size-limit passes: the first page's files are at most 150 KB with brotli", () =>
    Effect.gen(function*() {
      const [first] = yield* report
      expect(first).toMatchObject({ name: "first page", sizeLimit: 150_000 })
      expect(first!.size).toBeLessThanOrEqual(150_000)
      expect(first!.passed).toBe(true)
    }))

  it.effect("is one ES module importing nothing: its inputs are the console's sources and Preact", () =>
    Effect.gen(function*() {
      const result = yield* Effect.promise(() =>
        esbuild.build({
          absWorkingDir: root,
          entryPoints: ["src/Console.tsx"],
          bundle: true,
          format: "esm",
          jsx: "automatic",
          jsxImportSource: "preact",
          write: false,
          metafile: true,
          logLevel: "silent"
        })
      )
      const inputs = Object.keys(result.metafile.inputs)
      expect(inputs.every((input) => input.startsWith("src/") || /node_modules\/(\.pnpm\/)?preact/.test(input)))
        .toBe(true)
      const outputs = Object.values(result.metafile.outputs)
      expect(outputs).toHaveLength(1)
      expect(outputs[0]!.imports).toEqual([])
    }))
})
