/**
 * History import end to end on the real composition root (`Main.layer`) on Postgres: lines
 * checked as ingest checks them (rejections with their line numbers and codes), duplicates by
 * idempotency key and by (userHash, ts), streaks, bests and milestones recomputed, a re-run that
 * imports nothing, 404 outside the credential's reach, a test program that stays test, and a
 * subscribed receiver that hears nothing for the past.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer } from "effect"
import { call, receiver } from "./support/Receivers.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const ADMIN = "e2e-admin"

const server = ReferenceServer.layer({
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_SECRET_KEY: "e2e-secret-key",
  STREAKS_ALLOW_INSECURE_WEBHOOK_URLS: "true",
  STREAKS_DB_POOL_SIZE: "10"
}).pipe(Layer.provideMerge(PgTest.layer), Layer.provideMerge(Layer.setClock(Clock.make())))

const admin = (base: string, path: string, body?: unknown) =>
  call(base, path, { method: "POST", headers: { "x-admin-token": ADMIN }, ...(body !== undefined ? { body } : {}) })

const DAY = 86_400_000
/** Noon UTC `n` days before today. */
const noon = (n: number) => {
  const d = new Date(Date.now() - n * DAY)
  d.setUTCHours(12, 0, 0, 0)
  return d.toISOString()
}

/** A raw body posted with a content type. */
const post = (base: string, path: string, token: string, contentType: string, body: string) =>
  Effect.promise(async () => {
    const r = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": contentType },
      body
    })
    const text = await r.text()
    return { status: r.status, body: text === "" ? undefined : JSON.parse(text) }
  })

/** A workspace with a program (live unless `test`), an API key and a receiver on every event type. */
const setup = (base: string, options: { readonly live?: boolean } = {}) =>
  Effect.gen(function*() {
    const ws = yield* admin(base, "/admin/workspaces", { name: "Acme", plan: "pro" })
    const project = yield* admin(base, "/admin/projects", { workspaceId: ws.body.id, name: "App", allowedOrigins: [] })
    const program = yield* admin(base, "/admin/programs", {
      projectId: project.body.id,
      name: "Lessons",
      eventKey: "lesson",
      milestones: [{ target: 3, msg: "Three" }, { target: 7, msg: "Seven" }, { target: 30, msg: "Thirty" }]
    })
    expect(program.status).toBe(201)
    if (options.live !== false) yield* admin(base, `/admin/programs/${program.body.id}/status`, { status: "live" })
    const key = yield* admin(base, `/admin/workspaces/${ws.body.id}/api-keys`, { name: "k" })
    let secret = ""
    const r = yield* receiver(() => secret)
    const hook = yield* call(base, "/v1/api/hooks", {
      headers: { authorization: `Bearer ${key.body.key}` },
      body: {
        programId: program.body.id,
        url: r.url,
        eventTypes: ["milestone.achieved", "reward.unlocked", "streak.broken", "streak.at_risk", "streak.freeze_earned"]
      }
    })
    expect(hook.status).toBe(201)
    secret = hook.body.secret
    const token = key.body.key as string
    const programId = program.body.id as string
    const auth = { authorization: `Bearer ${token}` }
    return {
      receiver: r,
      token,
      programId,
      project: project.body,
      start: (body: string, contentType = "application/x-ndjson") =>
        post(base, `/v1/api/programs/${programId}/imports`, token, contentType, body),
      status: (importId: string) => call(base, `/v1/api/programs/${programId}/imports/${importId}`, { headers: auth }),
      member: (userHash: string) => call(base, `/v1/api/programs/${programId}/members/${userHash}`, { headers: auth }),
      state: (userHash: string) =>
        call(
          base,
          `/v1/state?${new URLSearchParams({ siteKey: project.body.siteKey, userHash, event: "lesson" })}`,
          { headers: { "x-streak-server-token": project.body.serverToken } }
        )
    }
  })

/** Polls the import until it is no longer running. */
const finished = (status: (id: string) => Effect.Effect<{ status: number; body: any }>, id: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      const r = yield* status(id)
      if (r.body?.status !== "running") return r
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 25)))
    }
    throw new Error("the import did not finish")
  })

const ndjson = (lines: ReadonlyArray<unknown>) =>
  lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n"

layer(server, { timeout: 120_000 })("history import over real HTTP on Postgres", (it) => {
  it.scoped("lines are checked as ingest checks them; streaks, bests and milestones are recomputed; nothing is delivered; a re-run finds only duplicates", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base)
      const lines: Array<unknown> = []
      // alice: the last 10 days, kept alive today; a second action on yesterday adds no day.
      for (let n = 10; n >= 1; n--) lines.push({ userHash: "alice", ts: noon(n), idempotencyKey: `a-${n}` })
      lines.push({ userHash: "alice", ts: noon(1).replace("12:00", "18:00"), tz: "UTC" })
      // bob: five days a month ago, broken since; identity by (userHash, ts), the same line twice.
      for (let n = 35; n >= 31; n--) lines.push({ userHash: "bob", ts: noon(n) })
      lines.push({ userHash: "bob", ts: noon(31) })
      lines.push("") // blank: not a line read
      lines.push({ userHash: "carol@example.com", ts: noon(2) }) // an e-mail: INVALID_BODY
      lines.push({ userHash: "dave" }) // no ts: INVALID_BODY
      lines.push("{not json") // INVALID_BODY
      lines.push({ userHash: "erin", ts: new Date(Date.now() + 3_600_000).toISOString() }) // future: INVALID_BODY
      lines.push({ userHash: "frank", ts: noon(3), meta: { blob: "x".repeat(5000) } }) // PAYLOAD_TOO_LARGE
      lines.push({ userHash: "gus", ts: noon(3), tz: "Mars/Olympus" }) // INVALID_BODY
      lines.push({ userHash: "alice", ts: noon(9), idempotencyKey: "a-10" }) // key seen: duplicate
      const body = ndjson(lines)
      const started = yield* p.start(body)
      expect(started.status).toBe(202)
      expect(started.body.importId).toMatch(/^imp_/)
      const done = yield* finished(p.status, started.body.importId)
      expect(done.status).toBe(200)
      expect(done.body).toMatchObject({
        id: started.body.importId,
        status: "finished",
        received: 24,
        imported: 16,
        duplicates: 2,
        rejected: [
          { line: 19, error: "INVALID_BODY" },
          { line: 20, error: "INVALID_BODY" },
          { line: 21, error: "INVALID_BODY" },
          { line: 22, error: "INVALID_BODY" },
          { line: 23, error: "PAYLOAD_TOO_LARGE" },
          { line: 24, error: "INVALID_BODY" }
        ]
      })
      expect(Date.parse(done.body.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.body.startedAt))

      const alice = yield* p.member("alice")
      expect(alice.body).toMatchObject({ current: 10, best: 10 })
      const bob = yield* p.member("bob")
      expect(bob.body).toMatchObject({ current: 0, best: 5 })
      // Milestones reached in the history are marked achieved: by alice's run of 10, bob's best of 5.
      const achieved = (s: { body: any }) => s.body.milestones.filter((m: any) => m.achieved).map((m: any) => m.target)
      expect(achieved(yield* p.state("alice"))).toEqual([3, 7])
      expect(achieved(yield* p.state("bob"))).toEqual([3])

      // The same file again: nothing new.
      const again = yield* p.start(body)
      const rerun = yield* finished(p.status, again.body.importId)
      expect(rerun.body).toMatchObject({ status: "finished", received: 24, imported: 0, duplicates: 18 })
      expect((yield* p.member("alice")).body).toMatchObject({ current: 10, best: 10 })

      // Each start is in the workspace's audit log, with who started it.
      const audit = yield* call(base, "/v1/api/audit", { headers: { authorization: `Bearer ${p.token}` } })
      const starts = audit.body.entries.filter((e: any) => e.action === "import.start")
      expect(starts.map((e: any) => e.target).sort()).toEqual([started.body.importId, again.body.importId].sort())
      expect(starts[0].actor.kind).toBe("api_key")

      // The dispatcher runs all along: no message was ever written for the past.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1500)))
      expect(p.receiver.deliveries).toEqual([])
      expect(p.receiver.attempts).toEqual([])
    }))

  it.scoped("CSV with a header; lines numbered from the header; a test program stays test", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, { live: false })
      const csv = [
        "userHash,ts,tz,idempotencyKey,meta",
        `u1,${noon(2)},Europe/Paris,k1,`,
        `u1,${noon(1)},,k2,"{""source"":""legacy, db""}"`,
        `u2,not-a-date,,,`,
        `u2,${noon(1)},,,{broken`
      ].join("\r\n")
      const started = yield* p.start(csv, "text/csv; charset=utf-8")
      expect(started.status).toBe(202)
      const done = yield* finished(p.status, started.body.importId)
      expect(done.body).toMatchObject({
        status: "finished",
        received: 4,
        imported: 2,
        duplicates: 0,
        rejected: [{ line: 4, error: "INVALID_BODY" }, { line: 5, error: "INVALID_BODY" }]
      })
      const programs = yield* call(base, "/v1/api/programs", { headers: { authorization: `Bearer ${p.token}` } })
      expect(programs.body.find((x: any) => x.id === p.programId).status).toBe("test")
    }))

  it.scoped("another workspace's program or import, an unknown import and a body of another type are refused", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base)
      const other = yield* setup(base)
      const started = yield* p.start(ndjson([{ userHash: "x", ts: noon(1) }]))
      expect(started.status).toBe(202)
      yield* finished(p.status, started.body.importId)
      // Another workspace's credential: the program is out of its reach.
      const foreign = yield* post(
        base,
        `/v1/api/programs/${p.programId}/imports`,
        other.token,
        "application/x-ndjson",
        ""
      )
      expect([foreign.status, foreign.body]).toEqual([404, { error: "NOT_FOUND" }])
      const foreignRead = yield* call(base, `/v1/api/programs/${p.programId}/imports/${started.body.importId}`, {
        headers: { authorization: `Bearer ${other.token}` }
      })
      expect([foreignRead.status, foreignRead.body]).toEqual([404, { error: "NOT_FOUND" }])
      // Its own program, another program's import id: not found either.
      const elsewhere = yield* other.status(started.body.importId)
      expect([elsewhere.status, elsewhere.body]).toEqual([404, { error: "NOT_FOUND" }])
      const unknown = yield* p.status("imp_unknown")
      expect([unknown.status, unknown.body]).toEqual([404, { error: "NOT_FOUND" }])
      const json = yield* p.start("{}", "application/json")
      expect([json.status, json.body]).toEqual([400, { error: "INVALID_BODY" }])
      // An import body has no overall cap (each line has an action body's): 2000 lines, ~140 KB.
      const many = Array.from({ length: 2000 }, (_, i) => ({ userHash: `bulk-${i}`, ts: noon(1 + (i % 5)) }))
      const big = ndjson(many)
      expect(big.length).toBeGreaterThan(64 * 1024)
      const accepted = yield* p.start(big)
      expect(accepted.status).toBe(202)
      expect((yield* finished(p.status, accepted.body.importId)).body).toMatchObject({ imported: 2000, rejected: [] })
    }))
})
