/**
 * The widget's budget (docs/widget.md): `size-limit` (its `@size-limit/file` plugin, brotli), as
 * configured in package.json, passes at 6 KB; and the build is one module with nothing imported.
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

/** size-limit's JSON report for `dist/widget.js` (over the limit it exits 1, still with its report). */
const report = Effect.sync(() => {
  let out: string
  try {
    out = execFileSync(process.execPath, [sizeLimit, "--json"], { cwd: root, encoding: "utf8" })
  } catch (error) {
    out = String((error as { stdout?: unknown }).stdout ?? error)
  }
  return JSON.parse(out) as Array<{ name: string; passed: boolean; size: number; sizeLimit: number }>
})

describe("the built widget", () => {
  it.effect("size-limit passes: dist/widget.js is at most 6 KB with brotli", () =>
    Effect.gen(function*() {
      const [widget] = yield* report
      expect(widget).toMatchObject({ name: "dist/widget.js", sizeLimit: 6000 })
      expect(widget!.size).toBeLessThanOrEqual(6000)
      expect(widget!.passed).toBe(true)
    }))

  it.effect("is one ES module that imports nothing: every input is the widget's own source", () =>
    Effect.gen(function*() {
      const result = yield* Effect.promise(() =>
        esbuild.build({
          absWorkingDir: root,
          entryPoints: ["src/StreakWidget.ts"],
          bundle: true,
          format: "esm",
          write: false,
          metafile: true,
          logLevel: "silent"
        })
      )
      expect(Object.keys(result.metafile.inputs).every((input) => input.startsWith("src/"))).toBe(true)
      const outputs = Object.values(result.metafile.outputs)
      expect(outputs).toHaveLength(1)
      expect(outputs[0]!.imports).toEqual([])
    }))
})
