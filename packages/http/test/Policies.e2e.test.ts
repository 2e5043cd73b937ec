/**
 * Streak policies over real HTTP on Postgres (docs/streak-semantics.md#streak-policies): a
 * program's policy set at creation and replaced with `PUT /admin/programs/{id}/policy`, shown whole
 * in every program answer; the ledger and freezes routes of the customer API, with the member
 * route's reach; the added fields of the state and member answers, and the unchanged answers of
 * programs without a policy. The last suite runs a server whose clock the test moves, so that weeks
 * can pass.
 */
import { expect, layer } from "@effect/vitest"
import { DueChecks, OutboxSignal, SecretBox, Services } from "@streaks/core"
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import type { Duration } from "effect"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import * as Http from "../src/Http.js"
import * as HttpConfig from "../src/HttpConfig.js"
import * as Jobs from "../src/Jobs.js"
import * as RateLimit from "../src/RateLimit.js"
import {
  ADMIN_TOKEN,
  admin,
  daysAgo,
  getState,
  request,
  serverEvent,
  type Tenant,
  tenant,
  layer as testServer,
  utcDate
} from "./support/TestServer.js"

const api = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: { authorization: `Bearer ${token}` }, ...init })

const defaultPolicy = {
  cadence: "daily",
  target: 1,
  dayStartHour: 0,
  restDays: [],
  freezes: { initial: 0, max: 0, earnEvery: 0 },
  atRiskHour: 0,
  repairWindowDays: 0,
  repairsPer30Days: 1
}

const weeklyTwo = { cadence: "weekly", target: 2, freezes: { max: 2 } }

/** `weeklyTwo` as answers show it: every field, defaults filled in. */
const weeklyTwoShown = {
  cadence: "weekly",
  target: 2,
  dayStartHour: 0,
  restDays: [],
  freezes: { initial: 0, max: 2, earnEvery: 0 },
  atRiskHour: 0,
  repairWindowDays: 0,
  repairsPer30Days: 1
}

/** A tenant with an API key of its workspace. */
const withKey = Effect.gen(function*() {
  const t = yield* tenant()
  const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "crm" })
  expect(key.status).toBe(201)
  return { ...t, apiKey: key.body.key as string }
})

/** A second program of the tenant's project, counting `eventKey`, with `policy` if given. */
const program = (t: Tenant, eventKey: string, policy?: unknown) =>
  Effect.gen(function*() {
    const created = yield* admin("/admin/programs", {
      projectId: t.projectId,
      name: `Program ${eventKey}`,
      eventKey,
      ...(policy !== undefined ? { policy } : {})
    })
    expect([created.status, created.text]).toEqual([201, expect.any(String)])
    return { ...t, programId: created.body.id as string, eventKey, created: created.body }
  })

const programsOf = (apiKey: string) =>
  Effect.map(api(apiKey, "/programs"), (r) => r.body as Array<{ id: string; mode: string; policy: unknown }>)

layer(testServer(), { timeout: 120_000 })("streak policies over real HTTP", (it) => {
  it.effect("POST /admin/programs takes a policy; every program answer shows its policy whole and its mode", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const weekly = yield* program(t, "workout", weeklyTwo)
      expect(weekly.created).toMatchObject({
        id: weekly.programId,
        status: "test",
        mode: "weekly",
        policy: weeklyTwoShown,
        webhookSecret: expect.stringMatching(/^whi_/)
      })
      // A program created without a policy shows the default one it counts with.
      const listed = yield* programsOf(t.apiKey)
      expect(listed.map((p) => [p.id, p.mode, p.policy])).toEqual(expect.arrayContaining([
        [t.programId, "continuous", defaultPolicy],
        [weekly.programId, "weekly", weeklyTwoShown]
      ]))
      const status = yield* admin(`/admin/programs/${weekly.programId}/status`, { status: "live" })
      expect(status.body).toMatchObject({ status: "live", mode: "weekly", policy: weeklyTwoShown })
      const monthly = yield* program(t, "reading", { cadence: "monthly", target: 10, dayStartHour: 4 })
      expect(monthly.created).toMatchObject({
        mode: "monthly",
        policy: { ...defaultPolicy, cadence: "monthly", target: 10, dayStartHour: 4 }
      })
    }))

  it.effect("POST /admin/programs with an invalid policy: 400 INVALID_BODY and no program", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const invalid: ReadonlyArray<unknown> = [
        { cadence: "yearly" },
        { cadence: "weekly", target: 8 },
        { cadence: "weekly", restDays: [6] },
        { restDays: [1, 2, 3, 4, 5, 6, 7] },
        { freezes: { initial: 3, max: 2 } },
        { dayStartHour: 24 },
        { cadance: "weekly" },
        null,
        "weekly",
        [weeklyTwo]
      ]
      for (const [i, policy] of invalid.entries()) {
        const r = yield* admin("/admin/programs", { projectId: t.projectId, name: "Bad", eventKey: `bad_${i}`, policy })
        expect([JSON.stringify(policy), r.status, r.body]).toEqual([
          JSON.stringify(policy),
          400,
          { error: "INVALID_BODY" }
        ])
      }
      expect((yield* programsOf(t.apiKey)).map((p) => p.id)).toEqual([t.programId])
    }))

  it.effect("PUT /admin/programs/{id}/policy: 200 the program and its streaks recounted; invalid 400 changes nothing; unknown 404", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      // Active two days ago and today: yesterday broke the daily streak.
      yield* serverEvent(t, { userHash: "m-1", ts: daysAgo(2) })
      yield* serverEvent(t, { userHash: "m-1" })
      const member = `/programs/${t.programId}/members/m-1`
      const before = yield* api(t.apiKey, member)
      expect(before.body).toMatchObject({ current: 1, best: 1 })

      // With a freeze to start with, yesterday is frozen and the streak spans both days.
      const withFreeze = { freezes: { initial: 1, max: 1 } }
      const put = yield* admin(`/admin/programs/${t.programId}/policy`, withFreeze, "PUT")
      expect(put.status).toBe(200)
      expect(put.body).toMatchObject({
        id: t.programId,
        status: "live",
        mode: "continuous",
        policy: { ...defaultPolicy, freezes: { initial: 1, max: 1, earnEvery: 0 } }
      })
      expect(put.body.webhookSecret).toBeUndefined()
      const after = yield* api(t.apiKey, member)
      expect(after.body).toEqual({
        programId: t.programId,
        userHash: "m-1",
        current: 2,
        best: 2,
        todayDone: true,
        pending: false,
        lastActiveDate: utcDate(),
        isLive: true,
        mode: "continuous",
        freezes: 0,
        period: { start: utcDate(), end: utcDate(), done: 1, target: 1 }
      })

      for (const bad of [{ cadence: "weekly", target: 9 }, { cadance: "weekly" }, { atRiskHour: -1 }, [], "daily"]) {
        const r = yield* admin(`/admin/programs/${t.programId}/policy`, bad, "PUT")
        expect([JSON.stringify(bad), r.status, r.body]).toEqual([JSON.stringify(bad), 400, { error: "INVALID_BODY" }])
      }
      const listed = (yield* programsOf(t.apiKey)).find((p) => p.id === t.programId)
      expect(listed).toMatchObject({ mode: "continuous", policy: put.body.policy })
      expect((yield* api(t.apiKey, member)).body).toEqual(after.body)

      // A policy is replaced whole: what the body leaves out goes back to its default.
      const weekly = yield* admin(`/admin/programs/${t.programId}/policy`, { cadence: "weekly" }, "PUT")
      expect(weekly.body).toMatchObject({ mode: "weekly", policy: { ...defaultPolicy, cadence: "weekly" } })

      const unknown = yield* admin("/admin/programs/prg_unknown/policy", weeklyTwo, "PUT")
      expect([unknown.status, unknown.body]).toEqual([404, { error: "NOT_FOUND" }])
      const anonymous = yield* request(`/admin/programs/${t.programId}/policy`, { method: "PUT", body: weeklyTwo })
      expect([anonymous.status, anonymous.body]).toEqual([401, { error: "UNAUTHORIZED" }])
      const wrong = yield* request(`/admin/programs/${t.programId}/policy`, {
        method: "PUT",
        headers: { "x-admin-token": `${ADMIN_TOKEN}-not` },
        body: weeklyTwo
      })
      expect(wrong.status).toBe(401)
      expect((yield* programsOf(t.apiKey)).find((p) => p.id === t.programId)?.mode).toBe("weekly")

      // `{}` is the default policy, set explicitly: counted as before, answered with the policy fields.
      const reset = yield* admin(`/admin/programs/${t.programId}/policy`, {}, "PUT")
      expect(reset.body).toMatchObject({ mode: "continuous", policy: defaultPolicy })
      expect((yield* api(t.apiKey, member)).body).toMatchObject({ current: 1, best: 1, mode: "continuous", freezes: 0 })
    }))

  it.effect("a program without a policy answers state and member exactly as before policies", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      yield* serverEvent(t, { userHash: "plain", ts: daysAgo(1) })
      yield* serverEvent(t, { userHash: "plain" })
      const state = yield* getState(t, "plain")
      expect(state.status).toBe(200)
      expect(state.body.streak).toEqual({ mode: "continuous", current: 2, best: 2, todayDone: true, pending: false })
      for (const day of state.body.week) {
        expect(Object.keys(day).sort()).toEqual(["dayNumber", "isCheckedIn", "isToday", "isoDate", "label"])
      }
      expect(Object.keys(state.body).sort()).toEqual(["meta", "milestones", "settings", "streak", "week"])
      const member = yield* api(t.apiKey, `/programs/${t.programId}/members/plain`)
      expect(Object.keys(member.body).sort()).toEqual(
        ["best", "current", "isLive", "lastActiveDate", "pending", "programId", "todayDone", "userHash"]
      )
    }))

  it.effect("a program with a policy adds freezes and period to state and member, isFrozen and isRestDay to the week", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const p = yield* program(t, "stretch", { restDays: [6, 7], freezes: { initial: 2, max: 3 } })
      yield* serverEvent(p, { userHash: "m-2" })
      const state = yield* getState(p, "m-2")
      expect(state.body.streak).toEqual({
        mode: "continuous",
        current: 1,
        best: 1,
        todayDone: true,
        pending: false,
        freezes: 2,
        period: { start: utcDate(), end: utcDate(), done: 1, target: 1 }
      })
      expect(state.body.week).toHaveLength(7)
      expect(state.body.week.map((d: any) => [d.label, d.isRestDay, d.isFrozen])).toEqual([
        ["Mon", false, false],
        ["Tue", false, false],
        ["Wed", false, false],
        ["Thu", false, false],
        ["Fri", false, false],
        ["Sat", true, false],
        ["Sun", true, false]
      ])
      const member = yield* api(t.apiKey, `/programs/${p.programId}/members/m-2`)
      expect(member.body).toMatchObject({
        current: 1,
        mode: "continuous",
        freezes: 2,
        period: { start: utcDate(), end: utcDate(), done: 1, target: 1 }
      })
    }))

  it.effect("freezes and ledger: the bank is capped at the policy's max; bad counts, dates and ids answer 400", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const p = yield* program(t, "swim", weeklyTwo)
      const freezes = (userHash: string, body: unknown, programId = p.programId) =>
        api(t.apiKey, `/programs/${programId}/members/${userHash}/freezes`, { body })
      expect((yield* freezes("m-3", { count: 1 })).body).toEqual({ freezes: 1 })
      const capped = yield* freezes("m-3", { count: 10 })
      expect([capped.status, capped.body]).toEqual([200, { freezes: 2 }])
      // The default policy holds no freeze: a grant answers the bank, empty.
      expect((yield* freezes("m-3", { count: 1 }, t.programId)).body).toEqual({ freezes: 0 })
      for (const body of [{ count: 0 }, { count: 11 }, { count: 1.5 }, { count: "2" }, {}]) {
        const r = yield* freezes("m-3", body)
        expect([JSON.stringify(body), r.status, r.body]).toEqual([JSON.stringify(body), 400, { error: "INVALID_BODY" }])
      }
      const byEmail = yield* freezes("someone@example.com", { count: 1 })
      expect([byEmail.status, byEmail.body]).toEqual([400, { error: "INVALID_BODY" }])

      const ledger = yield* api(t.apiKey, `/programs/${p.programId}/members/m-3/ledger`)
      expect(ledger.status).toBe(200)
      expect(ledger.body).toEqual({
        programId: p.programId,
        userHash: "m-3",
        policy: weeklyTwoShown,
        current: 0,
        best: 0,
        freezes: 2,
        periods: []
      })
      const nobody = yield* api(t.apiKey, `/programs/${p.programId}/members/nobody/ledger?from=2020-01-01`)
      expect(nobody.body).toMatchObject({ current: 0, best: 0, freezes: 0, periods: [] })
      for (const query of ["from=2026-02-30", "to=yesterday", "from=2026-03-02&to=2026-03-01", "from=2026-3-1"]) {
        const r = yield* api(t.apiKey, `/programs/${p.programId}/members/m-3/ledger?${query}`)
        expect([query, r.status, r.body]).toEqual([query, 400, { error: "INVALID_BODY" }])
      }
    }))

  it.effect("ledger and freezes answer another workspace's credentials 404, as the member route does, and change nothing", () =>
    Effect.gen(function*() {
      const mine = yield* withKey
      const theirs = yield* withKey
      const theirProgram = yield* program(theirs, "run", weeklyTwo)
      yield* serverEvent(theirProgram, { userHash: "x" })
      const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [mine.workspaceId], appName: "Make" })
      for (const token of [mine.apiKey, grant.body.accessToken as string]) {
        for (const programId of [theirProgram.programId, "prg_unknown"]) {
          const member = yield* api(token, `/programs/${programId}/members/x`)
          const ledger = yield* api(token, `/programs/${programId}/members/x/ledger`)
          const freezes = yield* api(token, `/programs/${programId}/members/x/freezes`, { body: { count: 1 } })
          for (const r of [member, ledger, freezes]) expect([r.status, r.body]).toEqual([404, { error: "NOT_FOUND" }])
        }
      }
      const unauthenticated = yield* request(`/v1/api/programs/${theirProgram.programId}/members/x/freezes`, {
        body: { count: 1 }
      })
      expect(unauthenticated.status).toBe(401)
      const own = yield* api(theirs.apiKey, `/programs/${theirProgram.programId}/members/x/ledger`)
      expect(own.body).toMatchObject({ userHash: "x", current: 0, freezes: 0 })
      expect(own.body.periods).toEqual([{
        start: expect.any(String),
        end: expect.any(String),
        status: "current",
        activeDays: 1,
        target: 2
      }])
    }))

  it.effect("subscriptions and webhook samples take streak.freeze_used and streak.freeze_earned", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const p = yield* program(t, "yoga", weeklyTwo)
      const hook = yield* api(t.apiKey, "/hooks", {
        body: {
          programId: p.programId,
          url: "http://127.0.0.1:9/hook",
          eventTypes: ["streak.freeze_used", "streak.freeze_earned"]
        }
      })
      expect(hook.status).toBe(201)
      expect(hook.body.eventTypes).toEqual(["streak.freeze_used", "streak.freeze_earned"])
      const used = yield* api(t.apiKey, `/programs/${p.programId}/webhook-samples?type=streak.freeze_used`)
      expect(used.status).toBe(200)
      expect(used.body).toHaveLength(1)
      expect(used.body[0]).toMatchObject({
        type: "streak.freeze_used",
        data: {
          programId: p.programId,
          period: { start: expect.any(String), end: expect.any(String) },
          freezesLeft: expect.any(Number),
          timezone: "UTC"
        }
      })
      const earned = yield* api(t.apiKey, `/programs/${p.programId}/webhook-samples?type=streak.freeze_earned`)
      expect(earned.body[0]).toMatchObject({
        type: "streak.freeze_earned",
        data: { programId: p.programId, freezesAvailable: expect.any(Number), timezone: "UTC" }
      })
    }))
})

// --- A server whose clock the test moves ---------------------------------------------------------

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000

/** How far the server's clock is ahead of real time (negative: behind). */
let offset = 0
const realClock = Clock.make()
const movedMillis = () => realClock.unsafeCurrentTimeMillis() + offset

/** Real time moved by `offset`: the server lives at whatever instant the test sets. */
const movableClock: Clock.Clock = {
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: movedMillis,
  currentTimeMillis: Effect.sync(movedMillis),
  unsafeCurrentTimeNanos: () => BigInt(movedMillis()) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(movedMillis()) * 1_000_000n),
  sleep: (duration: Duration.Duration) => realClock.sleep(duration)
}

/** The server of `TestServer.layer`, on its own database, with `movableClock` instead of real time. */
const movableServer = Http.layerServer({ port: 0, shutdownTimeout: "1 second" }).pipe(
  Layer.provide(Layer.effect(
    Jobs.Jobs,
    Effect.map(DueChecks.DueChecks, (due) =>
      Jobs.Jobs.of({
        dueChecks: due.run(),
        deliveries: Effect.succeed({ attempted: 0, delivered: 0, failed: 0, retrying: 0 }),
        ready: Effect.succeed(true)
      }))
  )),
  Layer.provide(RateLimit.layer({ authFailuresPerMinute: 10_000, ipPerSecond: 10_000, sitePerSecond: 10_000 })),
  Layer.provide(
    HttpConfig.layer({ adminToken: Option.some(Redacted.make(ADMIN_TOKEN)), allowInsecureWebhookUrls: true })
  ),
  Layer.provideMerge(Services.layer),
  Layer.provideMerge(OutboxSignal.layerNoop),
  Layer.provideMerge(SecretBox.layerEphemeral),
  Layer.provideMerge(PgStorage.layer()),
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(movableClock))
)

/** Monday 00:00 UTC of the ISO week five weeks before this one: the start of the moved calendar. */
const base = (() => {
  const now = new Date()
  const monday = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) -
    ((now.getUTCDay() + 6) % 7) * DAY_MS
  return monday - 35 * DAY_MS
})()

/** The instant `day` days and `hour` hours after `base`. */
const instant = (day: number, hour = 12) => new Date(base + day * DAY_MS + hour * HOUR_MS)
/** The UTC date `day` days after `base`. */
const date = (day: number) => instant(day, 0).toISOString().slice(0, 10)

/** Moves the server's clock to `day`, `hour` (it runs on from there). */
const at = (day: number, hour = 12) =>
  Effect.sync(() => {
    offset = instant(day, hour).getTime() - realClock.unsafeCurrentTimeMillis()
  })

/** An action of `userHash` at the server's now. */
const actNow = (t: Tenant, userHash: string) =>
  Effect.flatMap(
    Effect.sync(() => new Date(movedMillis()).toISOString()),
    (ts) =>
      Effect.tap(serverEvent(t, { userHash, ts }), (r) => {
        expect([r.status, r.body]).toEqual([202, { ok: true, counted: true }])
      })
  )

layer(movableServer, { timeout: 120_000 })("streak policies as weeks pass", (it) => {
  it.effect("weekly, two active days a week: kept, then frozen by a granted freeze, then kept; the ledger says so", () =>
    Effect.gen(function*() {
      yield* at(0)
      const t = yield* withKey
      const p = yield* program(t, "gym", { cadence: "weekly", target: 2, freezes: { max: 1 } })
      const ledgerOf = (query = "") => api(t.apiKey, `/programs/${p.programId}/members/m/ledger${query}`)
      // Week 1: Monday and Tuesday.
      yield* actNow(p, "m")
      yield* at(1)
      yield* actNow(p, "m")
      expect((yield* ledgerOf()).body).toMatchObject({ current: 1, best: 1, freezes: 0 })
      // Week 2: Wednesday only, and support grants a freeze that Wednesday.
      yield* at(9)
      yield* actNow(p, "m")
      const granted = yield* api(t.apiKey, `/programs/${p.programId}/members/m/freezes`, { body: { count: 1 } })
      expect([granted.status, granted.body]).toEqual([200, { freezes: 1 }])
      // Monday of week 3, before any action: the sweep finds week 2 missed and spends the freeze.
      yield* at(14, 1)
      const sweep = yield* admin("/admin/jobs/due-checks", undefined, "POST")
      expect(sweep.body).toEqual({ atRisk: 0, broken: 0, freezesUsed: 1 })
      expect((yield* admin("/admin/jobs/due-checks", undefined, "POST")).body).toEqual({
        atRisk: 0,
        broken: 0,
        freezesUsed: 0
      })
      // Week 3: Monday and Thursday.
      yield* at(14)
      yield* actNow(p, "m")
      yield* at(17)
      yield* actNow(p, "m")
      // Tuesday of week 4, nothing yet this week.
      yield* at(22)
      const ledger = yield* ledgerOf()
      expect(ledger.body).toEqual({
        programId: p.programId,
        userHash: "m",
        policy: {
          cadence: "weekly",
          target: 2,
          dayStartHour: 0,
          restDays: [],
          freezes: { initial: 0, max: 1, earnEvery: 0 },
          atRiskHour: 0,
          repairWindowDays: 0,
          repairsPer30Days: 1
        },
        current: 2,
        best: 2,
        freezes: 0,
        periods: [
          { start: date(0), end: date(6), status: "kept", activeDays: 2, target: 2 },
          { start: date(7), end: date(13), status: "frozen", activeDays: 1, target: 2 },
          { start: date(14), end: date(20), status: "kept", activeDays: 2, target: 2 },
          { start: date(21), end: date(27), status: "current", activeDays: 0, target: 2 }
        ]
      })
      const range = yield* ledgerOf(`?from=${date(8)}&to=${date(15)}`)
      expect(range.body.periods.map((p: { status: string }) => p.status)).toEqual(["frozen", "kept"])

      const state = yield* getState(p, "m")
      expect(state.body.streak).toEqual({
        mode: "weekly",
        current: 2,
        best: 2,
        todayDone: false,
        pending: true,
        freezes: 0,
        period: { start: date(21), end: date(27), done: 0, target: 2 }
      })
      const member = yield* api(t.apiKey, `/programs/${p.programId}/members/m`)
      expect(member.body).toMatchObject({
        current: 2,
        best: 2,
        pending: true,
        lastActiveDate: date(17),
        mode: "weekly",
        freezes: 0,
        period: { start: date(21), end: date(27), done: 0, target: 2 }
      })
    }).pipe(Effect.ensuring(Effect.sync(() => (offset = 0)))))

  it.effect("daily with a rest day and a freeze: this week's state shows the frozen day and the rest day", () =>
    Effect.gen(function*() {
      const t = yield* withKey
      const p = yield* program(t, "practice", { restDays: [7], freezes: { initial: 1, max: 1 } })
      // Monday, (Tuesday missed), Wednesday and Thursday of the week before this one.
      for (const day of [28, 30, 31]) {
        yield* at(day)
        yield* actNow(p, "d")
      }
      const state = yield* getState(p, "d")
      expect(state.body.streak).toEqual({
        mode: "continuous",
        current: 3,
        best: 3,
        todayDone: true,
        pending: false,
        freezes: 0,
        period: { start: date(31), end: date(31), done: 1, target: 1 }
      })
      expect(state.body.week.map((d: any) => [d.isoDate, d.isCheckedIn, d.isFrozen, d.isRestDay, d.isToday]))
        .toEqual([
          [date(28), true, false, false, false],
          [date(29), false, true, false, false],
          [date(30), true, false, false, false],
          [date(31), true, false, false, true],
          [date(32), false, false, false, false],
          [date(33), false, false, false, false],
          [date(34), false, false, true, false]
        ])
      const ledger = yield* api(t.apiKey, `/programs/${p.programId}/members/d/ledger`)
      expect(ledger.body.periods.map((x: { start: string; status: string }) => [x.start, x.status])).toEqual([
        [date(28), "kept"],
        [date(29), "frozen"],
        [date(30), "kept"],
        [date(31), "kept"]
      ])
    }).pipe(Effect.ensuring(Effect.sync(() => (offset = 0)))))
})
