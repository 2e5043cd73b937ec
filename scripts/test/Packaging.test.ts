/**
 * The library packages as a user outside this repository gets them. `scripts/check-packages.mjs`
 * builds and packs each one as published (`pnpm pack` applies `publishConfig`) and lints the
 * tarball with publint and attw; then core, storage-conformance, storage-pg and http are installed
 * from their tarballs with plain npm into a project in the OS temp dir, where a plain `.mjs` embeds
 * the engine and a `.ts` file type-checks against the published declarations (an adapter's
 * conformance test among them). Core ships no test runner: vitest comes with the test kit alone.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const libraries = ["core", "storage-conformance", "storage-pg", "http", "webhooks", "scheduler", "mcp", "server"]
const installed = ["core", "storage-conformance", "storage-pg", "http"]
/** Files every tarball carries: the build with its maps, the sources they point to, the notices. */
const shipped = ["dist/index.js", "dist/index.js.map", "dist/index.d.ts", "src/index.ts", "README.md", "LICENSE"]

/** Without the `npm_*` variables of a parent `pnpm run`, which npm would read as its own settings. */
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")))

interface Ran {
  readonly status: number | null
  readonly output: string
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  Effect.async<Ran>((resume) => {
    const child = spawn(command, args, { cwd, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.once("error", (error) => resume(Effect.succeed({ status: null, output: `${output}${error.message}` })))
    child.once("close", (status) => resume(Effect.succeed({ status, output })))
    return Effect.sync(() => child.kill())
  })

const version = (pkg: string): string =>
  JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")).version

const packageJson = (tarballs: string) => ({
  name: "streaks-outside",
  private: true,
  type: "module",
  dependencies: {
    ...Object.fromEntries(
      installed.map((name) => [`@streaks/${name}`, `file:${join(tarballs, `streaks-${name}-0.1.0.tgz`)}`])
    ),
    effect: version("effect")
  },
  devDependencies: { typescript: version("typescript"), "@types/node": version("@types/node") }
})

/** A plain Node program: the published engine on the in-memory adapter records one action. */
const embedMjs =
  `import { EventInput, Ids, Ingest, OutboundEvents, Provisioning, SecretBox, Services, StateQuery } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { Api } from "@streaks/http"
import { PgStorage } from "@streaks/storage-pg"
import { Effect, Layer, ManagedRuntime } from "effect"

const runtime = ManagedRuntime.make(Services.layer.pipe(
  Layer.provide(OutboundEvents.layerNoop),
  Layer.provide(SecretBox.layerEphemeral),
  Layer.provide(MemoryStorage.layer)
))

const result = await runtime.runPromise(Effect.gen(function*() {
  const provisioning = yield* Provisioning.Provisioning
  const workspace = yield* provisioning.createWorkspace({ name: "Outside", plan: "starter" })
  const { project } = yield* provisioning.createProject({ workspaceId: workspace.id, name: "Lessons", allowedOrigins: [], timezone: "UTC" })
  const { program } = yield* provisioning.createProgram({ projectId: project.id, name: "Daily lesson", eventKey: "lesson_completed", milestones: [] })
  yield* provisioning.setProgramStatus(program.id, "live")

  const ingest = yield* Ingest.Ingest
  const action = yield* EventInput.decodeCountAction({ userHash: "member-42", tz: "Europe/Paris" })
  const resolved = yield* ingest.resolveProject(project.siteKey)
  const answer = yield* ingest.record({ project: resolved, action, auth: { door: "api", programId: Ids.unsafe("ProgramId", program.id) } })
  const streak = yield* (yield* StateQuery.StateQuery).memberStreak(program.id, "member-42")
  return { answer: answer.body, current: streak.current, api: typeof Api.Api, postgres: typeof PgStorage.layer }
}))
console.log(JSON.stringify(result))
await runtime.dispose()
`

/** Uses of the published types that must compile, and misuses that must not. */
const checkTs = `import { EventInput, Ids, Ingest, OutboundEvents, SecretBox, Services, Storage } from "@streaks/core"
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import * as Ports from "@streaks/core/Ports"
import { Api } from "@streaks/http"
import { Fixtures, StorageConformance } from "@streaks/storage-conformance"
import { PgStorage } from "@streaks/storage-pg"
import { Effect, Layer } from "effect"

export const ports: Layer.Layer<Ports.Storage> = Layer.effectContext(MemoryStorage.make)
export const storage: Layer.Layer<Storage.Complete> = Storage.layer(ports)
export const services: Layer.Layer<Services.Services> = Services.layer.pipe(
  Layer.provide(OutboundEvents.layerNoop),
  Layer.provide(SecretBox.layerEphemeral),
  Layer.provide(storage)
)
export const onPostgres: Layer.Layer<Storage.Complete, unknown, unknown> = PgStorage.layer()
export const api = Api.Api
StorageConformance.storageConformance("memory", MemoryStorage.layer)
export const tenant = Fixtures.seedTenant().pipe(Effect.provide(storage))
// @ts-expect-error the suite takes a layer of every port, not a single one
StorageConformance.storageConformance("partial", Layer.effect(Ports.Transactor, Effect.never))

export const record = (siteKey: string, programId: string) =>
  Effect.gen(function*() {
    const ingest = yield* Ingest.Ingest
    const action = yield* EventInput.decodeCountAction({ userHash: "member-42" })
    const project = yield* ingest.resolveProject(siteKey)
    const auth = { door: "api", programId: Ids.unsafe("ProgramId", programId) } as const
    const answer: Ingest.IngestAnswer = yield* ingest.record({ project, action, auth })
    // @ts-expect-error an action comes from EventInput's decoders, not a bare object
    yield* ingest.record({ project, action: { userHash: 42 }, auth })
    return answer.body
  })

// @ts-expect-error modules under internal/ are not part of the published API
export type Hidden = typeof import("@streaks/core/internal/epochDay")
`

const tsconfig = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    skipLibCheck: false,
    types: ["node"]
  },
  files: ["check.ts"]
}

/** The packages packed and checked, and a project outside the workspace with three of them installed. */
class Outside
  extends Context.Tag("@streaks/scripts/Outside")<Outside, { readonly checked: Ran; readonly app: string }>()
{}

const outside = Layer.scoped(
  Outside,
  Effect.gen(function*() {
    const base = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "streaks-outside-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const tarballs = join(base, "tarballs")
    const checked = yield* run(process.execPath, [join(root, "scripts/check-packages.mjs"), "--out", tarballs], root)
    const app = join(base, "app")
    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify(packageJson(tarballs), null, 2))
    writeFileSync(join(app, "embed.mjs"), embedMjs)
    writeFileSync(join(app, "check.ts"), checkTs)
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig, null, 2))
    const npm = yield* run(
      "npm",
      // Optional dependencies are the embedded database's binaries, which nothing here starts.
      [
        "install",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--ignore-scripts",
        "--omit=optional",
        "--loglevel=error"
      ],
      app
    )
    if (npm.status !== 0) return yield* Effect.dieMessage(`npm install failed:\n${checked.output}\n${npm.output}`)
    return { checked, app }
  })
)

layer(outside, { timeout: "10 minutes" })("the published packages", (it) => {
  it.effect("each library package packs with dist/ and passes publint and attw", () =>
    Effect.gen(function*() {
      const { app, checked } = yield* Outside
      // The tarballs' sizes, for the record.
      console.log(checked.output)
      assert.strictEqual(checked.status, 0, checked.output)
      for (const name of libraries) {
        assert.match(checked.output, new RegExp(`@streaks/${name} .* publint ok, attw ok`))
      }
      for (const name of installed) {
        const dir = join(app, "node_modules", "@streaks", name)
        const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
        assert.deepStrictEqual(manifest.exports["."], { types: "./dist/index.d.ts", import: "./dist/index.js" })
        assert.strictEqual(manifest.exports["./internal/*"], null)
        assert.notInclude(JSON.stringify(manifest.dependencies), "workspace:")
        const runners = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })
          .filter((dep) => dep === "vitest" || dep === "@effect/vitest")
        assert.deepStrictEqual(runners, name === "storage-conformance" ? ["@effect/vitest", "vitest"] : [], name)
        for (const file of shipped) {
          assert.doesNotThrow(() => readFileSync(join(dir, file)), `${name} ships ${file}`)
        }
      }
    }))

  it.effect("a plain .mjs embeds the engine on the in-memory adapter and records an action", () =>
    Effect.gen(function*() {
      const { app } = yield* Outside
      const ran = yield* run(process.execPath, ["embed.mjs"], app)
      assert.strictEqual(ran.status, 0, ran.output)
      const result = JSON.parse(ran.output.trim().split("\n").at(-1)!)
      assert.strictEqual(result.answer.counted, true)
      assert.strictEqual(result.current, 1)
      assert.strictEqual(result.api, "function")
      assert.strictEqual(result.postgres, "function")
    }))

  it.effect("a .ts file type-checks against the published declarations, internals stay private", () =>
    Effect.gen(function*() {
      const { app } = yield* Outside
      const ran = yield* run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", "."], app)
      assert.strictEqual(ran.status, 0, ran.output)
    }))
})
