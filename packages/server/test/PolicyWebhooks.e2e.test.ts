/**
 * Streak policies end to end on the real composition root (`Main.layer`) on Postgres, with a real
 * receiver verifying every delivery with the `standardwebhooks` npm package: a freeze earned at
 * ingest, a freeze used then a break at the due checks, the at-risk hour, and the day-start hour.
 */
import { expect, layer } from "@effect/vitest"
import { Calendar } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer } from "effect"
import * as LiveProgram from "./support/LiveProgram.js"
import { call } from "./support/Receivers.js"
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

/** A live program with `policy`, an API key, and a verifying receiver subscribed to every event type. */
const setup = (base: string, policy: Record<string, unknown>) =>
  Effect.map(
    LiveProgram.make(base, ADMIN, {
      policy,
      eventTypes: ["streak.at_risk", "streak.broken", "streak.freeze_used", "streak.freeze_earned"]
    }),
    (p) => ({ ...p, member: (userHash: string) => p.api(`/members/${userHash}`) })
  )

/** Noon of the date `daysAgo` days before today in `zone`, as an ISO instant. */
const localNoon = (zone: string, daysAgo: number) => {
  const start = Calendar.startOfDay(Calendar.addDays(Calendar.localDate(Date.now(), zone), -daysAgo), zone)
  return new Date(start.getTime() + 12 * 3_600_000).toISOString()
}

const until = (probe: () => boolean, ms: number) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    while (Date.now() < end && !probe()) await new Promise((r) => setTimeout(r, 25))
  })

layer(server, { timeout: 120_000 })("streak policies end to end", (it) => {
  it.scoped("a freeze earned at ingest is delivered, signed, with the bank after it", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, { freezes: { max: 2, earnEvery: 2 } })
      expect((yield* p.act("earner", { tz: "UTC", ts: localNoon("UTC", 2) })).status).toBe(202)
      expect((yield* p.act("earner", { tz: "UTC", ts: localNoon("UTC", 1) })).status).toBe(202)
      yield* until(() => p.receiver.deliveries.length >= 1, 3_000)
      expect(p.receiver.invalid).toEqual([])
      expect(p.receiver.deliveries.map((d) => d.type)).toEqual(["streak.freeze_earned"])
      expect(p.receiver.deliveries[0]!.body.data).toMatchObject({
        userHash: "earner",
        streak: { current: 2, best: 2 },
        freezesAvailable: 1,
        timezone: "UTC"
      })
      const member = yield* p.member("earner")
      expect(member.body).toMatchObject({ current: 2, freezes: 1, mode: "continuous" })
    }))

  it.scoped("the due checks use a freeze for the first missed day, then break the chain, each delivered once", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, { freezes: { initial: 1, max: 1 } })
      const zone = "Asia/Tokyo"
      yield* p.act("skipper", { tz: zone, ts: localNoon(zone, 3) })
      // The sweep covers every program of the database; this receiver hears this program only.
      expect((yield* admin(base, "/admin/jobs/due-checks")).body.freezesUsed).toBe(1)
      expect((yield* admin(base, "/admin/jobs/due-checks")).body).toEqual({ atRisk: 0, broken: 0, freezesUsed: 0 })
      yield* until(() => p.receiver.deliveries.length >= 2, 3_000)
      expect(p.receiver.invalid).toEqual([])
      const today = Calendar.localDate(Date.now(), zone)
      const frozenDay = Calendar.addDays(today, -2)
      // Two messages of one sweep: the dispatcher may deliver them in either order.
      const byType = new Map(p.receiver.deliveries.map((d) => [d.type, d.body.data]))
      expect([...byType.keys()].sort()).toEqual(["streak.broken", "streak.freeze_used"])
      expect(byType.get("streak.freeze_used")).toMatchObject({
        period: { start: frozenDay, end: frozenDay },
        freezesLeft: 0,
        timezone: zone
      })
      expect(byType.get("streak.broken")).toMatchObject({
        endedRun: 1,
        lastActiveDate: Calendar.addDays(today, -3),
        streak: { current: 0, best: 1 }
      })
    }))

  it.scoped("at-risk waits for the policy's at-risk hour in the member's zone, then carries the bank and the period's end", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      // A whole-hour zone whose local hour now leaves two hours of room on both sides.
      const hourIn = (zone: string) =>
        Number(
          new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "numeric", hourCycle: "h23" }).format(new Date())
        )
      const zone = Array.from({ length: 23 }, (_, i) => i - 11)
        .map((offset) => (offset === 0 ? "UTC" : `Etc/GMT${offset > 0 ? "-" : "+"}${Math.abs(offset)}`))
        .find((z) => hourIn(z) >= 3 && hourIn(z) <= 20)!
      const hour = hourIn(zone)
      const later = yield* setup(base, { freezes: { initial: 1, max: 1 }, atRiskHour: hour + 2 })
      const earlier = yield* setup(base, { freezes: { initial: 1, max: 1 }, atRiskHour: hour - 2 })
      for (const p of [later, earlier]) yield* p.act("risky", { tz: zone, ts: localNoon(zone, 1) })
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      yield* until(() => earlier.receiver.deliveries.length >= 1, 3_000)
      expect(later.receiver.deliveries).toEqual([])
      const today = Calendar.localDate(Date.now(), zone)
      expect(earlier.receiver.deliveries.map((d) => d.type)).toEqual(["streak.at_risk"])
      expect(earlier.receiver.deliveries[0]!.body.data).toMatchObject({
        localDate: today,
        periodEnd: today,
        freezesAvailable: 1,
        timezone: zone,
        streak: { current: 1, best: 1 }
      })
    }))

  it.scoped("with days starting at 4 am, an action at 02:30 counts for the day before", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, { dayStartHour: 4 })
      const yesterday = Calendar.addDays(Calendar.localDate(Date.now(), "UTC"), -1)
      yield* p.act("night-owl", { tz: "UTC", ts: `${yesterday}T02:30:00Z` })
      yield* p.act("night-owl", { tz: "UTC", ts: `${yesterday}T04:30:00Z` })
      const member = yield* p.member("night-owl")
      expect(member.body).toMatchObject({ lastActiveDate: yesterday, current: 2, best: 2 })
    }))
})
