/**
 * Repairs, pauses and outage windows end to end (docs/streak-semantics.md#forgiveness) on the real
 * composition root on Postgres, over real HTTP, with a receiver verifying every delivery with the
 * `standardwebhooks` npm package: a repair and its `streak.repaired`, the pause routes and their
 * codes, and an outage window declared afterwards on both prefixes restoring broken streaks.
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

/** A live program with `policy`, an API key, and a verifying receiver subscribed to the streak events. */
const setup = (base: string, policy: Record<string, unknown>) =>
  Effect.map(
    LiveProgram.make(base, ADMIN, { policy, eventTypes: ["streak.broken", "streak.repaired"] }),
    (p) => ({ ...p, act: (userHash: string, ts: string) => p.act(userHash, { tz: "UTC", ts }) })
  )

const today = () => Calendar.localDate(Date.now(), "UTC")
const noonAgo = (daysAgo: number) => `${Calendar.addDays(today(), -daysAgo)}T12:00:00.000Z`
/** A moment ago, today (UTC). */
const justNow = () => new Date(Math.max(Date.parse(`${today()}T00:00:00.000Z`), Date.now() - 1_000)).toISOString()

const until = (probe: () => boolean, ms: number) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    while (Date.now() < end && !probe()) await new Promise((r) => setTimeout(r, 25))
  })

layer(server, { timeout: 120_000 })("forgiveness end to end", (it) => {
  it.scoped("a repair answers the member, shows in the ledger and delivers streak.repaired; a broken already sent stays sent", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, { repairWindowDays: 7, repairsPer30Days: 1 })
      for (const ago of [4, 3]) expect((yield* p.act("mender", noonAgo(ago))).status).toBe(202)
      // Two days ago was missed: the due checks announce the break once.
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      yield* until(() => p.receiver.deliveries.length >= 1, 3_000)
      expect(p.receiver.deliveries.map((d) => d.type)).toEqual(["streak.broken"])

      const missed = Calendar.addDays(today(), -2)
      const repaired = yield* p.api("/members/mender/repairs", { body: { period: missed, reason: "ticket 7" } })
      expect(repaired.status).toBe(200)
      // Yesterday is missed too: only the repaired day joins the chain, which yesterday broke.
      expect(repaired.body).toMatchObject({ userHash: "mender", current: 0, best: 3 })
      const yesterday = Calendar.addDays(today(), -1)
      const again = yield* p.api("/members/mender/repairs", { body: { period: yesterday, reason: "ticket 8" } })
      expect(again).toEqual({ status: 409, body: { error: "NOT_REPAIRABLE" } })
      yield* until(() => p.receiver.deliveries.length >= 2, 3_000)
      expect(p.receiver.invalid).toEqual([])
      expect(p.receiver.deliveries.map((d) => d.type)).toEqual(["streak.broken", "streak.repaired"])
      expect(p.receiver.deliveries[1]!.body.data).toMatchObject({
        userHash: "mender",
        period: { start: missed, end: missed },
        current: 0,
        streak: { current: 0, best: 3 }
      })
      const ledger = yield* p.api(`/members/mender/ledger?from=${Calendar.addDays(today(), -4)}`)
      expect(ledger.body.periods.map((x: { status: string }) => x.status)).toEqual([
        "kept",
        "kept",
        "repaired",
        "missed",
        "current"
      ])
      for (
        const body of [{ period: "2-2", reason: "x" }, { period: missed, reason: "" }, { period: missed }, {
          period: missed,
          reason: "x".repeat(501)
        }]
      ) {
        expect(yield* p.api("/members/mender/repairs", { body })).toEqual({
          status: 400,
          body: { error: "INVALID_BODY" }
        })
      }
      // No new delivery for the refused calls; the broken stays the only one of its kind.
      expect(p.receiver.deliveries.filter((d) => d.type === "streak.broken")).toHaveLength(1)
    }))

  it.scoped("a repaired period with no action after it is owed as an action would be: signed at-risk and broken", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* LiveProgram.make(base, ADMIN, {
        policy: { repairWindowDays: 7, repairsPer30Days: 1 },
        eventTypes: ["streak.at_risk", "streak.broken"]
      })
      const act = (userHash: string, ts: string) => p.act(userHash, { tz: "UTC", ts })
      const day = (n: number) => Calendar.addDays(today(), n)
      for (const ago of [5, 4]) expect((yield* act("owed", noonAgo(ago))).status).toBe(202)
      for (const ago of [6, 5]) expect((yield* act("again", noonAgo(ago))).status).toBe(202)
      // "again" broke 4 days ago (not announced yet); 3 days ago, outside any chain, is repaired:
      // a chain of one, broken the next day, with no action after the repair.
      const mended = yield* p.api("/members/again/repairs", { body: { period: day(-3), reason: "ticket 1" } })
      expect(mended.status).toBe(200)
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      yield* until(() => p.receiver.deliveries.length >= 3, 10_000)
      const broken = (userHash: string) =>
        p.receiver.deliveries.filter((d) => d.type === "streak.broken" && d.body.data.userHash === userHash)
          .map((d) => [d.body.data.endedRun, d.body.data.lastActiveDate]).sort()
      // Each run breaks once: the one that ended on its last active day, and the repaired one.
      expect(broken("again")).toEqual([[1, day(-5)], [2, day(-5)]])
      expect(broken("owed")).toEqual([[2, day(-4)]])

      // "owed" broke 3 days ago; yesterday, outside any chain, is repaired: today is owed.
      const repaired = yield* p.api("/members/owed/repairs", { body: { period: day(-1), reason: "ticket 2" } })
      expect(repaired.status).toBe(200)
      expect(repaired.body).toMatchObject({ current: 1, pending: true })
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      yield* until(() => p.receiver.deliveries.length >= 4, 10_000)
      expect(p.receiver.invalid).toEqual([])
      const atRisk = p.receiver.deliveries.filter((d) => d.type === "streak.at_risk")
      expect(atRisk.map((d) => [d.body.data.userHash, d.body.data.localDate])).toEqual([["owed", today()]])
      // Sent once: the next run of the due checks sends nothing more.
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      expect((yield* admin(base, "/admin/jobs/deliveries")).status).toBe(200)
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 300)))
      expect(p.receiver.deliveries).toHaveLength(4)
    }))

  it.scoped("pauses: 201 with the pause, listed, PAUSE_OVERLAPS, 204 before the start, PAUSE_STARTED from it, 404 unknown, bounds 400", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, {})
      yield* p.act("traveller", noonAgo(1))
      const day = (n: number) => Calendar.addDays(today(), n)
      const created = yield* p.api("/members/traveller/pauses", { body: { start: day(2), end: day(5) } })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ start: day(2), end: day(5) })
      const started = yield* p.api("/members/traveller/pauses", { body: { start: day(0), end: day(1) } })
      expect(started.status).toBe(201)
      expect((yield* p.api("/members/traveller/pauses")).body).toEqual({ pauses: [started.body, created.body] })
      expect(yield* p.api("/members/traveller/pauses", { body: { start: day(5), end: day(6) } })).toEqual({
        status: 409,
        body: { error: "PAUSE_OVERLAPS" }
      })
      for (
        const body of [
          { start: day(10), end: day(100) },
          { start: day(10), end: day(9) },
          { start: day(-10), end: day(-1) },
          { start: "soon", end: day(9) },
          { start: day(10) }
        ]
      ) {
        expect(yield* p.api("/members/traveller/pauses", { body })).toEqual({
          status: 400,
          body: { error: "INVALID_BODY" }
        })
      }
      // Inside the started pause nothing is owed.
      expect((yield* p.api("/members/traveller")).body).toMatchObject({ current: 1, pending: false })
      expect(yield* p.api(`/members/traveller/pauses/${started.body.id}`, { method: "DELETE" })).toEqual({
        status: 409,
        body: { error: "PAUSE_STARTED" }
      })
      expect((yield* p.api(`/members/traveller/pauses/${created.body.id}`, { method: "DELETE" })).status).toBe(204)
      expect(yield* p.api(`/members/traveller/pauses/${created.body.id}`, { method: "DELETE" })).toEqual({
        status: 404,
        body: { error: "NOT_FOUND" }
      })
      expect((yield* p.api("/members/traveller/pauses")).body).toEqual({ pauses: [started.body] })
    }))

  it.scoped("an outage window declared afterwards restores the streaks it broke, one signed streak.repaired each; both prefixes list it", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, {})
      for (const ago of [4, 3, 2]) {
        for (const m of ["a", "b", "c"]) yield* p.act(m, noonAgo(ago))
      }
      yield* p.act("c", noonAgo(1))
      expect((yield* p.act("a", justNow())).status).toBe(202)
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      yield* until(() => p.receiver.deliveries.length >= 1, 3_000)
      // "b" was broken by yesterday; "a" started again today; "c" kept yesterday.
      expect(p.receiver.deliveries.map((d) => [d.type, d.body.data.userHash])).toEqual([["streak.broken", "b"]])
      const yesterday = Calendar.addDays(today(), -1)
      const window = { start: `${yesterday}T10:00:00.000Z`, end: `${yesterday}T13:30:00.000Z`, reason: "API down" }
      const created = yield* p.api("/outages", { body: window })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ ...window, restored: 2 })
      const listed = yield* call(base, `/admin/programs/${p.programId}/outages`, {
        headers: { "x-admin-token": ADMIN }
      })
      expect(listed.body).toEqual({ outages: [created.body] })
      expect((yield* p.api("/outages")).body).toEqual({ outages: [created.body] })
      yield* until(() => p.receiver.deliveries.length >= 3, 3_000)
      expect(p.receiver.invalid).toEqual([])
      const repaired = p.receiver.deliveries.filter((d) => d.type === "streak.repaired")
      expect(repaired.map((d) => d.body.data.userHash).sort()).toEqual(["a", "b"])
      for (const d of repaired) expect(d.body.data.period).toEqual({ start: yesterday, end: yesterday })
      expect((yield* p.api("/members/a")).body).toMatchObject({ current: 4, todayDone: true })
      expect((yield* p.api("/members/b")).body).toMatchObject({ current: 3, pending: true })
      expect((yield* p.api("/members/c")).body).toMatchObject({ current: 4 })
      const ledger = yield* p.api(`/members/b/ledger?from=${yesterday}`)
      expect(ledger.body.periods.map((x: { status: string }) => x.status)).toEqual(["forgiven", "current"])

      // The operator route declares one too; bad windows change nothing.
      const byAdmin = yield* admin(base, `/admin/programs/${p.programId}/outages`, {
        start: `${yesterday}T20:00:00.000Z`,
        end: `${yesterday}T21:00:00.000Z`,
        reason: "again"
      })
      expect(byAdmin.status).toBe(201)
      expect(byAdmin.body.restored).toBe(0)
      const future = new Date(Date.now() + 3_600_000).toISOString()
      for (
        const body of [
          { ...window, end: window.start },
          { ...window, start: `${Calendar.addDays(today(), -9)}T00:00:00.000Z` },
          { start: future, end: new Date(Date.now() + 7_200_000).toISOString(), reason: "x" },
          { ...window, reason: "" },
          { start: "yesterday", end: window.end, reason: "x" }
        ]
      ) {
        expect(yield* p.api("/outages", { body })).toEqual({ status: 400, body: { error: "INVALID_BODY" } })
      }
      expect((yield* p.api("/outages")).body.outages).toHaveLength(2)
      expect(yield* call(base, "/admin/programs/prg_unknown/outages", { headers: { "x-admin-token": ADMIN } }))
        .toEqual({ status: 404, body: { error: "NOT_FOUND" } })
    }))
  it.scoped("outage windows declared at the same time all stay: concurrent creations on both prefixes are each listed once", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, {})
      for (const ago of [3, 2]) yield* p.act("member", noonAgo(ago))
      const yesterday = Calendar.addDays(today(), -1)
      const window = (n: number) => ({
        start: `${yesterday}T${String(n).padStart(2, "0")}:00:00.000Z`,
        end: `${yesterday}T${String(n).padStart(2, "0")}:30:00.000Z`,
        reason: `incident ${n}`
      })
      const created = yield* Effect.all(
        Array.from({ length: 12 }, (_, n) =>
          n % 3 === 0
            ? admin(base, `/admin/programs/${p.programId}/outages`, window(n))
            : p.api("/outages", { body: window(n) })),
        { concurrency: "unbounded" }
      )
      expect(created.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 201))
      const listed = (yield* p.api("/outages")).body.outages as ReadonlyArray<{ id: string; reason: string }>
      expect(listed.map((o) => o.id).sort()).toEqual(created.map((r) => r.body.id).sort())
      expect(listed.map((o) => o.reason).sort()).toEqual(Array.from({ length: 12 }, (_, n) => `incident ${n}`).sort())
      const byAdmin = yield* call(base, `/admin/programs/${p.programId}/outages`, {
        headers: { "x-admin-token": ADMIN }
      })
      expect(byAdmin.body).toEqual({ outages: listed })
      // Each window was judged with the others: one of them forgave yesterday, restoring the streak once.
      expect(created.reduce((n, r) => n + r.body.restored, 0)).toBe(1)
      expect((yield* p.api("/members/member")).body).toMatchObject({ current: 2, pending: true })
    }))

  it.scoped("while an ongoing window is open, the due checks send no break for the program", () =>
    Effect.gen(function*() {
      const base = (yield* NodeServer.NodeServer).url
      const p = yield* setup(base, {})
      // Active two days ago and the day before: yesterday was missed, so a break is owed now.
      for (const ago of [3, 2]) yield* p.act("held", noonAgo(ago))
      const start = new Date(Math.max(Date.parse(`${today()}T00:00:00.000Z`), Date.now() - 3_600_000))
      const window = { start: start.toISOString(), end: new Date(Date.now() + 3_600_000).toISOString(), reason: "down" }
      const created = yield* p.api("/outages", { body: window })
      expect(created.status).toBe(201)
      // Yesterday's last chance was before the window: nothing is forgiven, the break is only held.
      expect(created.body.restored).toBe(0)
      expect((yield* admin(base, "/admin/jobs/due-checks")).status).toBe(200)
      expect((yield* admin(base, "/admin/jobs/deliveries")).status).toBe(200)
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 300)))
      expect(p.receiver.deliveries).toEqual([])
      expect((yield* p.api("/members/held")).body).toMatchObject({ current: 0, best: 2 })
    }))
})
