/**
 * `streaks import` end to end: the CLI spawned as a process with a file, on the Postgres database
 * of a reference server that provisions the program and answers the REST reads. Plain progress
 * lines without a terminal and a bar with one, a resume after a kill from the last committed
 * line, and a re-run that finds every line a duplicate; each start in the workspace's audit log.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, ConfigProvider, Effect, Layer, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Main from "../src/Main.js"
import * as ServerConfig from "../src/ServerConfig.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const ADMIN = "import-cli-admin"

class Database extends Effect.Tag("import-cli/Database")<Database, { readonly url: string }>() {}

const server = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = Redacted.value(yield* PgTest.url)
    const environment = ConfigProvider.fromMap(
      new Map([
        ["DATABASE_URL", url],
        ["STREAKS_ADMIN_TOKEN", ADMIN],
        ["STREAKS_SECRET_KEY", "import-cli-secret-key"],
        ["STREAKS_DB_POOL_SIZE", "4"],
        ["STREAKS_DIRECTORY_CACHE_TTL", "0 seconds"]
      ])
    )
    const config = yield* Effect.withConfigProvider(ServerConfig.config, environment)
    return Layer.merge(Main.layer({ ...config, port: 0 }), Layer.succeed(Database, { url })).pipe(
      Layer.provide(Layer.setConfigProvider(environment))
    )
  })
).pipe(Layer.provide(PgTest.layer), Layer.provideMerge(Layer.setClock(Clock.make())))

const http = (path: string, headers: Record<string, string>, body?: unknown) =>
  Effect.flatMap(NodeServer.NodeServer, (s) =>
    Effect.promise(async () => {
      const response = await fetch(`${s.url}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json", ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {})
      })
      const text = await response.text()
      return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
    }))
const admin = (path: string, body?: unknown) => http(path, { "x-admin-token": ADMIN }, body)

/** A live program and an API key to read its members. */
const tenant = Effect.gen(function*() {
  const workspace = yield* admin("/admin/workspaces", { name: "Cli", plan: "pro" })
  const project = yield* admin("/admin/projects", { workspaceId: workspace.body.id, name: "Cli", allowedOrigins: [] })
  const program = yield* admin("/admin/programs", {
    projectId: project.body.id,
    name: "Lessons",
    eventKey: "lesson",
    milestones: [{ target: 5, msg: "Five" }]
  })
  yield* admin(`/admin/programs/${program.body.id}/status`, { status: "live" })
  const key = yield* admin(`/admin/workspaces/${workspace.body.id}/api-keys`, { name: "k" })
  const programId = program.body.id as string
  const member = (userHash: string) =>
    http(`/v1/api/programs/${programId}/members/${userHash}`, { authorization: `Bearer ${key.body.key}` })
  /** The import starts of the workspace's audit log, oldest first. */
  const starts = Effect.map(
    http("/v1/api/audit", { authorization: `Bearer ${key.body.key}` }),
    (r) => (r.body.entries as ReadonlyArray<any>).filter((e) => e.action === "import.start").reverse()
  )
  return { programId, workspaceId: workspace.body.id as string, member, starts }
})

const DAY = 86_400_000
/** `members` members active on each of the last `days` days (noon UTC), one line each. */
const history = (members: number, days: number): string => {
  const lines: Array<string> = []
  for (let d = days; d >= 1; d--) {
    const at = new Date(Date.now() - d * DAY)
    at.setUTCHours(12, 0, 0, 0)
    const ts = at.toISOString()
    for (let m = 0; m < members; m++) lines.push(JSON.stringify({ userHash: `m${m}`, ts }))
  }
  return lines.join("\n") + "\n"
}

const fileOf = (name: string, text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "streaks-import-")), name)
  writeFileSync(path, text)
  return path
}

interface Outcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Spawns `streaks import …`; `until` may kill it once its stderr satisfies it. */
const cli = (
  url: string,
  args: ReadonlyArray<string>,
  options: { readonly until?: (stderr: string) => boolean; readonly tty?: boolean } = {}
) =>
  Effect.promise(() =>
    new Promise<Outcome>((resolve) => {
      const argv = [process.execPath, "--import", "tsx", "src/bin.ts", "import", ...args]
      const env = { ...process.env, DATABASE_URL: url, STREAKS_DB_POOL_SIZE: "2" }
      // `script` gives the command a terminal, as an operator's shell would.
      const child: ChildProcess = options.tty === true
        ? spawn("script", ["-qefc", argv.map((a) => `'${a}'`).join(" "), "/dev/null"], { cwd: root, env })
        : spawn(argv[0]!, argv.slice(1), { cwd: root, env })
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (chunk) => (stdout += chunk))
      child.stderr!.on("data", (chunk) => {
        stderr += chunk
        if (options.until?.(stderr) === true) child.kill("SIGKILL")
      })
      child.once("exit", (code, signal) => resolve({ code, signal, stdout, stderr }))
    })
  )

const summary = (o: Outcome) => JSON.parse(o.stdout.trim().split("\n").at(-1)!)

layer(server, { timeout: 180_000 })("streaks import", (it) => {
  it.effect(
    "imports a file with plain progress lines, resumes after a kill from the last committed line, and a re-run finds only duplicates",
    () =>
      Effect.gen(function*() {
        const { url } = yield* Database
        const t = yield* tenant
        const members = 1000
        const days = 20
        const path = fileOf("history.ndjson", history(members, days))
        const args = ["--program", t.programId, "--batch-lines", "200", path]

        // Killed once its first batch is committed and reported.
        const killed = yield* cli(url, args, { until: (stderr) => /import: [1-9]\d*\/20000 lines/.test(stderr) })
        expect(killed.signal, killed.stderr).toBe("SIGKILL")
        expect(killed.stdout).toBe("")

        const resumed = yield* cli(url, args)
        expect(resumed.code, resumed.stderr).toBe(0)
        const from = /import: resuming (imp_\S+) after line (\d+)/.exec(resumed.stderr)
        expect(from, resumed.stderr).not.toBeNull()
        expect(Number(from![2])).toBeGreaterThan(0)
        expect(Number(from![2]) % 200).toBe(0)
        expect(resumed.stderr).toMatch(/import: 20000\/20000 lines, \d+ lines\/s, ETA 0s/)
        const done = summary(resumed)
        // Every line once: the committed batches were not read again, the interrupted one was.
        expect(done).toMatchObject({
          id: from![1],
          status: "finished",
          received: 20000,
          imported: 20000,
          duplicates: 0
        })
        expect(done.rejected).toEqual([])
        expect((yield* t.member("m0")).body).toMatchObject({ current: days, best: days })
        expect((yield* t.member(`m${members - 1}`)).body).toMatchObject({ current: days, best: days })

        const rerun = yield* cli(url, args)
        expect(rerun.code, rerun.stderr).toBe(0)
        expect(rerun.stderr).not.toContain("resuming")
        const again = summary(rerun)
        expect(again.id).not.toBe(done.id)
        expect(again).toMatchObject({ status: "finished", received: 20000, imported: 0, duplicates: 20000 })

        // Each run's start is in the workspace's audit log, by the operator on the command line.
        const starts = yield* t.starts
        expect(starts.map((e) => e.target)).toEqual([done.id, done.id, again.id])
        for (const e of starts) {
          expect(e).toMatchObject({
            workspaceId: t.workspaceId,
            actor: { kind: "admin", id: "cli" },
            clientAddress: "cli",
            details: { programId: t.programId, format: "ndjson" }
          })
        }
      }),
    { timeout: 150_000 }
  )

  it.effect(
    "on a terminal the progress is a bar with lines, rate and ETA; CSV by extension",
    () =>
      Effect.gen(function*() {
        const { url } = yield* Database
        const t = yield* tenant
        const rows = Array.from(
          { length: 300 },
          (_, i) => `c${i % 30},${new Date(Date.now() - (1 + Math.floor(i / 30)) * DAY).toISOString()}`
        )
        const path = fileOf("history.csv", ["userHash,ts", ...rows, "bad@example.com,2024-01-01T00:00:00Z"].join("\n"))
        const out = yield* cli(url, ["--program", t.programId, "--batch-lines", "50", path], { tty: true })
        expect(out.code, out.stdout).toBe(0)
        // With a terminal, `script` carries stdout and stderr together.
        expect(out.stdout).toMatch(/import \[[█░]+\] \d+% \| \d+\/302 lines \| \d+ lines\/s \| ETA/)
        const done = JSON.parse(/\{"id".*\}/.exec(out.stdout)![0])
        expect(done).toMatchObject({
          status: "finished",
          received: 301,
          imported: 300,
          rejected: [{ line: 302, error: "INVALID_BODY" }]
        })
        expect((yield* t.member("c0")).body).toMatchObject({ current: 10, best: 10 })
        expect(yield* t.starts).toMatchObject([{
          target: done.id,
          actor: { kind: "admin", id: "cli" },
          details: { programId: t.programId, format: "csv" }
        }])
      }),
    { timeout: 60_000 }
  )

  it.effect("an unknown program fails with the reason and imports nothing", () =>
    Effect.gen(function*() {
      const { url } = yield* Database
      const path = fileOf("one.ndjson", history(1, 1))
      const out = yield* cli(url, ["--program", "prg_unknown", path])
      expect(out.code).toBe(1)
      expect(out.stderr).toContain("import failed: program not found")
      expect(out.stdout).toBe("")
      // Nothing started, nothing recorded.
      const audit = yield* admin("/admin/audit?limit=200")
      expect((audit.body.entries as ReadonlyArray<any>).filter((e) => e.details.programId === "prg_unknown")).toEqual(
        []
      )
    }), { timeout: 60_000 })
})
