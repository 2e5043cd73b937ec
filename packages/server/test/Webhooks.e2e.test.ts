/**
 * Outbound webhooks end to end: the real composition root (`Main.layer`: fast path, HttpApi,
 * dispatcher loop, scheduler) on Postgres, real receivers on 127.0.0.1 that verify every
 * delivery with the `standardwebhooks` npm package.
 */
import { expect, layer } from "@effect/vitest"
import { Calendar, ClientAddress, Experiments } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Duration, Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import * as Main from "../src/Main.js"
import { call, receiver } from "./support/Receivers.js"

const ADMIN = "e2e-admin"

class First extends Effect.Tag("e2e/First")<First, NodeServer.NodeServer["Type"]>() {}
class Second extends Effect.Tag("e2e/Second")<Second, NodeServer.NodeServer["Type"]>() {}

const config = (url: Redacted.Redacted<string>) => ({
  port: 0,
  host: "127.0.0.1",
  databaseUrl: Option.some(url),
  dataDir: "./.streaks-test",
  adminToken: Option.some(Redacted.make(ADMIN)),
  secretKey: Option.some(Redacted.make("e2e-secret-key")),
  dueCheckInterval: Duration.hours(1),
  importLease: Duration.seconds(30),
  rateLimitIp: 10_000,
  rateLimitSite: 10_000,
  rateLimitCredential: 10_000,
  rateLimitAuthFailures: 10_000,
  trustedProxies: ClientAddress.none,
  allowInsecureWebhookUrls: true,
  tablePrefix: "streaks_",
  embeddedPort: 0,
  databasePoolSize: 10,
  databasePrepare: true,
  databaseStatementTimeout: Duration.seconds(5),
  databaseConnectTimeout: Duration.seconds(5),
  directoryCacheTtl: Duration.seconds(1),
  accessLog: false,
  simulationWorkers: 0
})

/**
 * Two full servers (two dispatchers, two schedulers) on one fresh database. The second is built in
 * its own runtime: within one layer build, constant layers (router, handlers) would be shared.
 */
const twoServers = Layer.unwrapEffect(
  Effect.map(PgTest.url, (url) =>
    Layer.merge(
      Layer.effect(First, NodeServer.NodeServer).pipe(Layer.provide(Main.layer(config(url)))),
      Layer.scoped(
        Second,
        Effect.acquireRelease(
          Effect.promise(async () => {
            const runtime = ManagedRuntime.make(Main.layer(config(url)))
            return { runtime, server: await runtime.runPromise(NodeServer.NodeServer) }
          }),
          ({ runtime }) => Effect.promise(() => runtime.dispose())
        ).pipe(Effect.map(({ server }) => server))
      )
    ))
).pipe(Layer.provide(PgTest.layer), Layer.provideMerge(Layer.setClock(Clock.make())))

const admin = (base: string, path: string, body?: unknown) =>
  call(base, path, { method: "POST", headers: { "x-admin-token": ADMIN }, ...(body !== undefined ? { body } : {}) })

/** A live program (milestones: 1 day with a coupon, 5 days) with an API key. */
const liveProgram = (base: string, options: { live?: boolean } = {}) =>
  Effect.gen(function*() {
    const ws = yield* admin(base, "/admin/workspaces", { name: "Acme", plan: "pro" })
    const project = yield* admin(base, "/admin/projects", { workspaceId: ws.body.id, name: "App", allowedOrigins: [] })
    const program = yield* admin(base, "/admin/programs", {
      projectId: project.body.id,
      name: "Lessons",
      eventKey: "lesson",
      milestones: [{ target: 1, msg: "Day one", rewardType: "coupon", rewardValue: "WELCOME-5" }, {
        target: 5,
        msg: "Five"
      }]
    })
    if (options.live !== false) yield* admin(base, `/admin/programs/${program.body.id}/status`, { status: "live" })
    const key = yield* admin(base, `/admin/workspaces/${ws.body.id}/api-keys`, { name: "k" })
    return {
      siteKey: project.body.siteKey as string,
      serverToken: project.body.serverToken as string,
      programId: program.body.id as string,
      webhookSecret: program.body.webhookSecret as string,
      apiKey: key.body.key as string
    }
  })

const subscribe = (base: string, apiKey: string, programId: string, url: string) =>
  Effect.map(
    call(base, "/v1/api/hooks", {
      headers: { authorization: `Bearer ${apiKey}` },
      body: { programId, url, eventTypes: ["milestone.achieved", "reward.unlocked", "streak.at_risk", "streak.broken"] }
    }),
    (r) => ({ id: r.body.id as string, secret: r.body.secret as string })
  )

const act = (
  base: string,
  p: { siteKey: string; serverToken: string },
  userHash: string,
  extra: Record<string, unknown> = {}
) =>
  call(base, "/v1/server/e", {
    headers: { "x-streak-server-token": p.serverToken },
    body: { siteKey: p.siteKey, userHash, event: "lesson", ...extra }
  })

/** Noon of the local date `daysAgo` days before today in `zone`, as an ISO instant. */
const localNoon = (zone: string, daysAgo: number) => {
  const today = Calendar.localDate(Date.now(), zone)
  const start = Calendar.startOfDay(Calendar.addDays(today, -daysAgo), zone)
  return new Date(start.getTime() + 12 * 3_600_000).toISOString()
}

const until = <A>(probe: () => A | undefined, ms: number) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    while (Date.now() < end) {
      const v = probe()
      if (v !== undefined) return v
      await new Promise((r) => setTimeout(r, 25))
    }
    return probe()
  })

layer(twoServers, { timeout: 180_000 })("outbound webhooks end to end", (it) => {
  it.scoped("milestone.achieved and reward.unlocked arrive within one second of the action, signed", () =>
    Effect.gen(function*() {
      const base = (yield* First).url
      const p = yield* liveProgram(base)
      let secret = ""
      const r = yield* receiver(() => secret)
      secret = (yield* subscribe(base, p.apiKey, p.programId, r.url)).secret
      const sentAt = Date.now()
      expect((yield* act(base, p, "member-fast")).status).toBe(202)
      yield* until(() => (r.deliveries.length >= 2 ? true : undefined), 1_000)
      expect(r.invalid).toEqual([])
      const types = r.deliveries.map((d) => d.type).sort()
      expect(types).toEqual(["milestone.achieved", "reward.unlocked"])
      for (const d of r.deliveries) expect(d.at - sentAt).toBeLessThan(1_000)
      const reward = r.deliveries.find((d) => d.type === "reward.unlocked")!
      expect(reward.body.data).toMatchObject({
        userHash: "member-fast",
        isTest: false,
        reward: { type: "coupon", value: "WELCOME-5" }
      })
    }))

  it.scoped("at-risk and broken arrive after a due-check pass, once each, in members' own zones east and west of UTC", () =>
    Effect.gen(function*() {
      const base = (yield* First).url
      const p = yield* liveProgram(base)
      let secret = ""
      const r = yield* receiver(() => secret)
      secret = (yield* subscribe(base, p.apiKey, p.programId, r.url)).secret
      for (const zone of ["Pacific/Kiritimati", "America/Los_Angeles"]) {
        yield* act(base, p, `risk-${zone}`, { tz: zone, ts: localNoon(zone, 1) })
        yield* act(base, p, `broken-${zone}`, { tz: zone, ts: localNoon(zone, 2) })
      }
      const run = yield* admin(base, "/admin/jobs/due-checks")
      expect(run.body).toEqual({ atRisk: 2, broken: 2, freezesUsed: 0 })
      const again = yield* admin(base, "/admin/jobs/due-checks")
      expect(again.body).toEqual({ atRisk: 0, broken: 0, freezesUsed: 0 })
      yield* until(
        () => (r.deliveries.filter((d) => d.type.startsWith("streak.")).length >= 4 ? true : undefined),
        3_000
      )
      const streakEvents = r.deliveries.filter((d) => d.type.startsWith("streak."))
      expect(streakEvents.map((d) => `${d.type} ${d.body.data.userHash}`).sort()).toEqual([
        "streak.at_risk risk-America/Los_Angeles",
        "streak.at_risk risk-Pacific/Kiritimati",
        "streak.broken broken-America/Los_Angeles",
        "streak.broken broken-Pacific/Kiritimati"
      ])
      for (const d of streakEvents) {
        const zone = d.body.data.timezone as string
        if (d.type === "streak.at_risk") expect(d.body.data.localDate).toBe(Calendar.localDate(Date.now(), zone))
        else {
          const twoDaysAgo = Calendar.addDays(Calendar.localDate(Date.now(), zone), -2)
          expect(d.body.data).toMatchObject({
            endedRun: 1,
            lastActiveDate: twoDaysAgo,
            streak: { current: 0, best: 1 }
          })
        }
      }
    }))

  it.scoped("a receiver answering 500 then 200 gets the message on retry with the same webhook-id", () =>
    Effect.gen(function*() {
      const base = (yield* First).url
      const p = yield* liveProgram(base)
      let secret = ""
      const r = yield* receiver(() => secret, [500, 500])
      secret = (yield* subscribe(base, p.apiKey, p.programId, r.url)).secret
      yield* act(base, p, "member-retry")
      // Two messages fail at once; the schedule retries them 5 s later.
      yield* until(() => (r.deliveries.length >= 2 ? true : undefined), 12_000)
      expect(r.deliveries.map((d) => d.type).sort()).toEqual(["milestone.achieved", "reward.unlocked"])
      const retried = r.attempts.filter((id, i) => r.attempts.indexOf(id) !== i)
      expect(retried.length).toBeGreaterThan(0)
      for (const id of retried) expect(r.deliveries.map((d) => d.id)).toContain(id)
    }))

  it.scoped("a receiver answering 410 loses its subscription", () =>
    Effect.gen(function*() {
      const base = (yield* First).url
      const p = yield* liveProgram(base)
      let secret = ""
      const r = yield* receiver(() => secret, [410, 410])
      const sub = yield* subscribe(base, p.apiKey, p.programId, r.url)
      secret = sub.secret
      yield* act(base, p, "member-gone")
      yield* until(() => (r.attempts.length >= 1 ? true : undefined), 2_000)
      yield* Effect.sleep("300 millis")
      const removed = yield* call(base, `/v1/api/hooks/${sub.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${p.apiKey}` }
      })
      expect(removed.status).toBe(404)
      expect(r.deliveries).toEqual([])
    }))

  it.scoped("nothing is sent for test programs or for members in a Proof control group", () =>
    Effect.gen(function*() {
      const base = (yield* First).url
      const test = yield* liveProgram(base, { live: false })
      let secret = ""
      const r = yield* receiver(() => secret)
      secret = (yield* subscribe(base, test.apiKey, test.programId, r.url)).secret
      // The webhook door counts test progress and never makes the program live.
      const hook = yield* call(base, `/v1/webhook/${test.siteKey}/e`, {
        headers: { "x-streak-webhook-secret": test.webhookSecret },
        body: { userHash: "tester", event: "lesson" }
      })
      expect(hook.status).toBe(202)

      const live = yield* liveProgram(base)
      let secret2 = ""
      const r2 = yield* receiver(() => secret2)
      secret2 = (yield* subscribe(base, live.apiKey, live.programId, r2.url)).secret
      const exp = yield* call(base, `/v1/api/programs/${live.programId}/experiments`, {
        headers: { authorization: `Bearer ${live.apiKey}` },
        body: { holdoutPercent: 50 }
      })
      expect(exp.status).toBe(201)
      let control = ""
      for (let i = 0; control === ""; i++) if (Experiments.isControl(exp.body.id, `m${i}`, 50)) control = `m${i}`
      yield* act(base, live, control)
      yield* Effect.sleep("1500 millis")
      expect(r.attempts).toEqual([])
      expect(r2.attempts).toEqual([])
    }))

  it.scoped("two servers (two schedulers, two dispatchers) on one database deliver every event exactly once", () =>
    Effect.gen(function*() {
      const one = (yield* First).url
      const two = (yield* Second).url
      const p = yield* liveProgram(one)
      let secret = ""
      const r = yield* receiver(() => secret)
      secret = (yield* subscribe(one, p.apiKey, p.programId, r.url)).secret
      const members = Array.from({ length: 30 }, (_, i) => `twice-${i}`)
      // Yesterday's action fires the day-one milestone and reward now, and at-risk at the sweep.
      yield* Effect.forEach(
        members,
        (m, i) => act(i % 2 === 0 ? one : two, p, m, { tz: "UTC", ts: localNoon("UTC", 1) }),
        {
          concurrency: 10
        }
      )
      const [a, b] = yield* Effect.all([admin(one, "/admin/jobs/due-checks"), admin(two, "/admin/jobs/due-checks")], {
        concurrency: 2
      })
      expect(a.body.atRisk + b.body.atRisk).toBe(30)
      yield* until(() => (r.deliveries.length >= 90 ? true : undefined), 10_000)
      yield* Effect.sleep("500 millis")
      const ids = r.deliveries.map((d) => d.id)
      expect(ids.length).toBe(90)
      expect(new Set(ids).size).toBe(90)
      expect(r.invalid).toEqual([])
    }))
})
