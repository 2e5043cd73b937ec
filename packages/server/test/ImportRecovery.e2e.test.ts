/**
 * A history import whose server dies (SIGKILL) mid-import, over real HTTP on Postgres with the
 * server spawned as a process and started again on the same database: killed while it reads the
 * body, the import becomes `interrupted` once its lease runs out and sending the body again
 * imports the rest; killed while it recomputes, the restarted server finishes it.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Effect, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"

const root = fileURLToPath(new URL("..", import.meta.url))
const ADMIN = "import-recovery-admin"
const PORT = 43011
const base = `http://127.0.0.1:${PORT}`
const dataDir = mkdtempSync(join(tmpdir(), "streaks-import-recovery-"))

const running = new Set<ChildProcess>()
afterAll(() => {
  for (const child of running) child.kill("SIGKILL")
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `streaks serve` as a process on `url`, with a lease of two seconds; resolves once it answers. */
const serve = (url: string) =>
  Effect.promise(async () => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/bin.ts", "serve"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: url,
        PORT: String(PORT),
        STREAKS_ADMIN_TOKEN: ADMIN,
        STREAKS_SECRET_KEY: "import-recovery-secret-key",
        STREAKS_DATA_DIR: dataDir,
        STREAKS_DB_POOL_SIZE: "4",
        STREAKS_IMPORT_LEASE: "2 seconds"
      },
      stdio: ["ignore", "ignore", "pipe"]
    })
    running.add(child)
    child.once("exit", () => running.delete(child))
    let stderr = ""
    child.stderr!.on("data", (c) => (stderr += c))
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${stderr}`)
      const up = await fetch(`${base}/health`).then((r) => r.ok, () => false)
      if (up) return child
      await sleep(100)
    }
    throw new Error(`serve did not start: ${stderr}`)
  })

const kill = (child: ChildProcess) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once("exit", () => resolve())
      child.kill("SIGKILL")
    })
  )

const call = (path: string, init: { headers: Record<string, string>; body?: unknown }) =>
  Effect.promise(async () => {
    const r = await fetch(`${base}${path}`, {
      method: init.body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
    })
    const text = await r.text()
    return { status: r.status, body: text === "" ? undefined : JSON.parse(text) }
  })
const admin = (path: string, body?: unknown) => call(path, { headers: { "x-admin-token": ADMIN }, body })

/** A live program and an API key, provisioned through the running server. */
const tenant = Effect.gen(function*() {
  const ws = yield* admin("/admin/workspaces", { name: "Recovery", plan: "pro" })
  const project = yield* admin("/admin/projects", { workspaceId: ws.body.id, name: "App", allowedOrigins: [] })
  const program = yield* admin("/admin/programs", {
    projectId: project.body.id,
    name: "Lessons",
    eventKey: "lesson",
    milestones: [{ target: 5, msg: "Five" }]
  })
  yield* admin(`/admin/programs/${program.body.id}/status`, { status: "live" })
  const key = yield* admin(`/admin/workspaces/${ws.body.id}/api-keys`, { name: "k" })
  const auth = { authorization: `Bearer ${key.body.key}` }
  const programId = program.body.id as string
  return {
    programId,
    auth,
    status: (id: string) => call(`/v1/api/programs/${programId}/imports/${id}`, { headers: auth }),
    member: (userHash: string) => call(`/v1/api/programs/${programId}/members/${userHash}`, { headers: auth }),
    /** The import started last, as the audit log names it. */
    lastStarted: Effect.map(
      call("/v1/api/audit", { headers: auth }),
      (r) => r.body.entries.find((e: any) => e.action === "import.start")?.target as string | undefined
    )
  }
})

const DAY = 86_400_000
/** `members` members active on each of the last `days` days (noon UTC), day by day. */
const history = (members: number, days: number): Array<string> => {
  const lines: Array<string> = []
  for (let d = days; d >= 1; d--) {
    const at = new Date(Date.now() - d * DAY)
    at.setUTCHours(12, 0, 0, 0)
    for (let m = 0; m < members; m++) lines.push(`${JSON.stringify({ userHash: `m${m}`, ts: at.toISOString() })}\n`)
  }
  return lines
}

/** Posts a body; resolves with the answer, or with the failure once the connection drops. */
const post = (programId: string, auth: Record<string, string>, body: BodyInit) =>
  fetch(`${base}/v1/api/programs/${programId}/imports`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/x-ndjson" },
    body,
    duplex: "half"
  } as RequestInit).then(
    async (r) => ({ status: r.status, body: await r.json() as any }),
    (error: unknown) => ({ status: 0, body: { error: String(error) } })
  )

/** Polls the import until `done` holds (within a minute). */
const until = (read: Effect.Effect<{ body: any }>, done: (body: any) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 600; i++) {
      const r = yield* read
      if (r.body !== undefined && done(r.body)) return r.body
      yield* Effect.promise(() => sleep(100))
    }
    throw new Error("the import did not get there")
  })

const row = (url: string, id: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      const r = await client.query("SELECT status, loaded FROM streaks_imports WHERE id = $1", [id])
      return r.rows[0] as { status: string; loaded: boolean }
    } finally {
      await client.end()
    }
  })

layer(PgTest.layer, { timeout: 240_000 })("an import whose server is killed", (it) => {
  it.effect(
    "killed while reading the body: interrupted after its lease, the lines committed are in, and sending the body again imports the rest",
    () =>
      Effect.gen(function*() {
        const url = Redacted.value(yield* PgTest.url)
        let server = yield* serve(url)
        const t = yield* tenant
        const lines = history(1500, 10)
        // Two batches' worth of lines, then the body stalls until the server is gone.
        const sent = 12_000
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(lines.slice(0, sent).join("")))
          }
        })
        const request = post(t.programId, t.auth, stream)
        const id = yield* until(
          Effect.map(t.lastStarted, (target) => ({ body: target })),
          (target) => typeof target === "string"
        )
        const before = yield* until(t.status(id), (job) => job.received >= 10_000)
        expect(before.status).toBe("running")
        yield* kill(server)
        expect((yield* Effect.promise(() => request)).status).toBe(0)

        server = yield* serve(url)
        const interrupted = yield* until(t.status(id), (job) => job.status !== "running")
        expect(interrupted).toMatchObject({ id, status: "interrupted", received: 10_000, imported: 10_000 })
        expect(Date.parse(interrupted.finishedAt)).toBeGreaterThanOrEqual(Date.parse(interrupted.startedAt))

        // The whole body again: the committed lines are duplicates, every member is recomputed.
        const retry = yield* Effect.promise(() => post(t.programId, t.auth, lines.join("")))
        expect(retry.status).toBe(202)
        const done = yield* until(t.status(retry.body.importId), (job) => job.status !== "running")
        expect(done).toMatchObject({ status: "finished", received: 15_000, imported: 5000, duplicates: 10_000 })
        expect((yield* t.member("m0")).body).toMatchObject({ current: 10, best: 10 })
        expect((yield* t.member("m1499")).body).toMatchObject({ current: 10, best: 10 })
        // The interrupted import stays as it was.
        expect((yield* t.status(id)).body.status).toBe("interrupted")
        yield* kill(server)
      }),
    { timeout: 200_000 }
  )

  it.effect(
    "killed while recomputing: the restarted server claims it once its lease runs out and finishes it",
    () =>
      Effect.gen(function*() {
        const url = Redacted.value(yield* PgTest.url)
        let server = yield* serve(url)
        const t = yield* tenant
        const members = 40_000
        const started = yield* Effect.promise(() => post(t.programId, t.auth, history(members, 1).join("")))
        expect(started.status).toBe(202)
        // Every line is read once the answer is 202: the recomputation is under way.
        yield* kill(server)
        expect(yield* row(url, started.body.importId)).toEqual({ status: "running", loaded: true })

        server = yield* serve(url)
        const done = yield* until(t.status(started.body.importId), (job) => job.status !== "running")
        expect(done).toMatchObject({ status: "finished", received: members, imported: members, duplicates: 0 })
        expect((yield* t.member("m0")).body).toMatchObject({ current: 1, best: 1 })
        expect((yield* t.member(`m${members - 1}`)).body).toMatchObject({ current: 1, best: 1 })
        yield* kill(server)
      }),
    { timeout: 200_000 }
  )
})
