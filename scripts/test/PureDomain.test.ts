/**
 * The `streaks/pure-domain` lint rule (scripts/eslint-pure-domain.mjs): ESLint with the
 * repository's own configuration refuses a pure module of core that imports a module defining a
 * `Context.Tag`, a service module of `effect` or an I/O package, while the pure modules as they
 * are, and the services, pass.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ESLint } from "eslint"
import { readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const eslint = new ESLint({ cwd: root })

/** The messages of the rule on `code` linted as if it were the file `file` of the repository. */
const lint = (file: string, code: string) =>
  Effect.promise(async () => {
    const [result] = await eslint.lintText(code, { filePath: join(root, file) })
    return result!.messages.filter((message) => message.ruleId === "streaks/pure-domain")
  })

const pure = "packages/core/src/Streak.ts"

describe("streaks/pure-domain", () => {
  it.effect("refuses a pure module importing a module that defines a Context.Tag", () =>
    Effect.gen(function*() {
      const messages = yield* lint(pure, `import { Ingest } from "./Ingest.js"\nexport const x = Ingest\n`)
      assert.strictEqual(messages.length, 1)
      assert.include(messages[0]!.message, "'./Ingest.js', which defines a Context.Tag")
    }))

  it.effect("refuses type imports of a port module and re-exports of a service", () =>
    Effect.gen(function*() {
      const typeOnly = yield* lint(
        pure,
        `import type { IdempotencyClaim } from "./Ports.js"\nexport type X = IdempotencyClaim\n`
      )
      assert.strictEqual(typeOnly.length, 1)
      assert.include(typeOnly[0]!.message, "'./Ports.js'")
      const reexport = yield* lint(pure, `export { Metering } from "./Metering.js"\n`)
      assert.strictEqual(reexport.length, 1)
      const internal = yield* lint(
        "packages/core/src/internal/zoneDate.ts",
        `export { make } from "./groupCommit.js"\n`
      )
      assert.strictEqual(internal.length, 1)
    }))

  it.effect("refuses a module that is not on the pure list, even without a tag", () =>
    Effect.gen(function*() {
      const messages = yield* lint(pure, `import * as Finished from "./Finished.js"\nexport const x = Finished\n`)
      assert.strictEqual(messages.length, 1)
      assert.include(messages[0]!.message, "is not on the pure list")
    }))

  it.effect("refuses the service modules of effect and Effect.Service, Effect.Tag, Effect.run*", () =>
    Effect.gen(function*() {
      const named = yield* lint(
        pure,
        `import { Context, Layer, Option } from "effect"\nexport const x = [Context, Layer, Option]\n`
      )
      assert.deepStrictEqual(named.map((m) => m.message.match(/'(\w+)' of effect/)?.[1]), ["Context", "Layer"])
      const path = yield* lint(pure, `import * as Queue from "effect/Queue"\nexport const x = Queue\n`)
      assert.strictEqual(path.length, 1)
      const members = yield* lint(
        pure,
        `import { Effect } from "effect"\nexport class S extends Effect.Service<S>()("S", { succeed: {} }) {}\nexport const n = Effect.runSync(Effect.succeed(1))\n`
      )
      assert.deepStrictEqual(members.map((m) => m.message.match(/Effect\.(\w+)/)?.[1]), ["Service", "runSync"])
    }))

  it.effect("refuses packages that do I/O", () =>
    Effect.gen(function*() {
      const messages = yield* lint(
        pure,
        `import * as fs from "node:fs"\nimport { SqlClient } from "@effect/sql"\nexport const x = [fs, SqlClient]\n`
      )
      assert.strictEqual(messages.length, 2)
    }))

  it.effect("accepts pure imports, and leaves the services alone", () =>
    Effect.gen(function*() {
      const clean = yield* lint(
        pure,
        `import { Option, Schema } from "effect"\nimport * as Calendar from "./Calendar.js"\nimport type { UsageEntry } from "./Usage.js"\nexport const x = [Option, Schema, Calendar]\nexport type U = UsageEntry\n`
      )
      assert.deepStrictEqual(clean, [])
      const service = yield* lint(
        "packages/core/src/Metering.ts",
        `import { Context } from "effect"\nimport { UsageStore } from "./Ports.js"\nexport const x = [Context, UsageStore]\n`
      )
      assert.deepStrictEqual(service, [])
    }))

  it.effect("every module on the pure list passes as it is", () =>
    Effect.gen(function*() {
      // The list as the configuration gives it to the rule.
      const config = yield* Effect.promise(() => eslint.calculateConfigForFile(join(root, pure)))
      const [, options] = config.rules["streaks/pure-domain"] as [unknown, { readonly pure: ReadonlyArray<string> }]
      const pureDomain = options.pure.map((file) => relative(root, file))
      assert.include(pureDomain, "packages/core/src/Calendar.ts")
      assert.isAtLeast(pureDomain.length, 10)
      for (const file of pureDomain) {
        const messages = yield* lint(file, readFileSync(join(root, file), "utf8"))
        assert.deepStrictEqual(messages, [], file)
      }
    }))
})
