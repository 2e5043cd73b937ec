import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import * as Calendar from "../src/Calendar.js"
import type { Principal } from "../src/Credentials.js"
import type { Program } from "../src/Domain.js"
import type { WorkspaceId } from "../src/Ids.js"
import { DirectoryStore, UsageStore } from "../src/Ports.js"
import * as Reports from "../src/Reports.js"
import { seedProgram, type Tenant } from "@streaks/storage-conformance/Fixtures"
import * as Pipeline from "./support/pipeline.js"

const layer = Reports.layer.pipe(Layer.provideMerge(Pipeline.layer))

/** Wednesday 2026-05-20, noon UTC: the default range is 2026-04-21 .. 2026-05-20. */
const NOW = Pipeline.at("2026-05-20T12:00:00Z")

const principal = (...workspaceIds: ReadonlyArray<WorkspaceId>): Principal => ({
  credential: { type: "api_key", id: "key_reports_test" },
  workspaceIds,
  kind: workspaceIds.length === 1 ? "api_key" : "oauth"
})

const reports = Reports.Reports

/** One action through the server door (counted when it is the member's first of that local day). */
const act = (
  t: Tenant,
  userHash: string,
  ts: string,
  extra: Record<string, unknown> = {},
  program: Program = t.program
) => Pipeline.server({ siteKey: t.project.siteKey, userHash, event: program.eventKey, ts, ...extra })

/** One action at noon UTC on each of `n` days starting `first`. */
const daily = (t: Tenant, userHash: string, first: string, n: number, program: Program = t.program) =>
  Effect.forEach(
    Array.from({ length: n }, (_, i) => Calendar.addDays(Calendar.unsafeLocalDate(first), i)),
    (date) => act(t, userHash, `${date}T12:00:00Z`, {}, program),
    { discard: true }
  )

/**
 * A live tenant with two programs (P1, P2) and a second, unrelated workspace with activity of
 * its own. Active days (all UTC):
 * - alice: P1 2026-05-01..05-20 (current 20), P2 05-20 (current 1)
 * - bob:   P1 05-19, 05-20 (current 2), plus a duplicate and a widget impression on 05-20;
 *          his 05-19 action carries externalService "make"
 * - carol: P1 05-20 (current 1), source automation / zapier / zap_1
 * - dave:  P1 2026-04-01..04-03 (broken)
 * - erin:  P2 2026-04-16..05-20 (current 35)
 * - tester: P1 test ledger only (never reported)
 */
const seeded = Effect.gen(function*() {
  yield* TestClock.setTime(NOW)
  const t = yield* Pipeline.tenant({ program: { status: "live" } })
  const p2 = yield* seedProgram(t, { status: "live" })
  yield* daily(t, "alice", "2026-05-01", 20)
  yield* daily(t, "alice", "2026-05-20", 1, p2)
  yield* act(t, "bob", "2026-05-19T09:00:00Z", { externalService: "make" })
  yield* act(t, "bob", "2026-05-20T09:00:00Z")
  yield* act(t, "bob", "2026-05-20T10:00:00Z")
  yield* act(t, "bob", "2026-05-20T10:05:00Z", { eventType: "widget_impression" })
  yield* act(t, "carol", "2026-05-20T08:00:00Z", {
    source: "automation",
    externalService: "zapier",
    integrationId: "zap_1"
  })
  yield* daily(t, "dave", "2026-04-01", 3)
  yield* daily(t, "erin", "2026-04-16", 35, p2)
  yield* Pipeline.api(t, { userHash: "tester", test: true })

  const other = yield* Pipeline.tenant({ program: { status: "live" } })
  yield* daily(other, "zoe", "2026-05-10", 11)
  return { t, p2, other }
})

const codeOf = Pipeline.codeOf

describe("Reports: numbers on seeded activity", () => {
  it.effect("overview: active streakers, counted actions and current streak lengths over the default range", () =>
    Effect.gen(function*() {
      const { t } = yield* seeded
      const overview = yield* (yield* reports).overview(principal(t.workspace.id), {})
      assert.deepStrictEqual(overview, {
        paused: false,
        range: { from: "2026-04-21", to: "2026-05-20" },
        // alice (in two programs, once), bob, carol, erin; dave's days are before the range.
        activeStreakers: 4,
        // alice 20 + 1, bob 2 (not his duplicate nor the impression), carol 1, erin 30 in range.
        countedActions: 54,
        streakLengths: [
          { length: "1", members: 2 }, // alice in P2, carol
          { length: "2-6", members: 1 }, // bob
          { length: "7-29", members: 1 }, // alice in P1
          { length: "30+", members: 1 } // erin
        ]
      })
    }).pipe(Effect.provide(layer)))

  it.effect("overview narrowed to one program, and over an explicit past range (runs that end after it)", () =>
    Effect.gen(function*() {
      const { p2, t } = yield* seeded
      const service = yield* reports
      const onlyP2 = yield* service.overview(principal(t.workspace.id), { programId: p2.id })
      assert.deepStrictEqual(onlyP2, {
        paused: false,
        range: { from: "2026-04-21", to: "2026-05-20" },
        activeStreakers: 2,
        countedActions: 31,
        streakLengths: [
          { length: "1", members: 1 },
          { length: "2-6", members: 0 },
          { length: "7-29", members: 0 },
          { length: "30+", members: 1 }
        ]
      })
      const april = yield* service.overview(principal(t.workspace.id), { from: "2026-04-01", to: "2026-04-30" })
      // dave (3 days) and erin (04-16..04-30, 15 days); alice's run starts in May. Streak lengths
      // are "now", whatever the range.
      assert.deepStrictEqual(april, {
        paused: false,
        range: { from: "2026-04-01", to: "2026-04-30" },
        activeStreakers: 2,
        countedActions: 18,
        streakLengths: [
          { length: "1", members: 2 },
          { length: "2-6", members: 1 },
          { length: "7-29", members: 1 },
          { length: "30+", members: 1 }
        ]
      })
    }).pipe(Effect.provide(layer)))

  it.effect("events: live actions per local date and event type, counted or not, ascending", () =>
    Effect.gen(function*() {
      const { t } = yield* seeded
      const events = yield* (yield* reports).events(principal(t.workspace.id), {})
      assert.isFalse(events.paused)
      if (events.paused) return
      assert.deepStrictEqual(events.range, { from: "2026-04-21", to: "2026-05-20" })
      // erin acted on every date of the range; 05-20 also has bob's impression.
      assert.strictEqual(events.days.length, 31)
      assert.deepStrictEqual(events.days[0], {
        date: "2026-04-21",
        eventType: "streak_interaction",
        count: 1,
        counted: 1
      })
      assert.deepStrictEqual(events.days.slice(-3), [
        { date: "2026-05-19", eventType: "streak_interaction", count: 3, counted: 3 },
        // alice ×2 programs, bob + his duplicate, carol, erin.
        { date: "2026-05-20", eventType: "streak_interaction", count: 6, counted: 5 },
        { date: "2026-05-20", eventType: "widget_impression", count: 1, counted: 0 }
      ])
      assert.strictEqual(events.days.reduce((n, d) => n + d.counted, 0), 54)
      assert.isTrue(events.days.every((d) => d.date >= "2026-04-21" && d.date <= "2026-05-20"))
      const sorted = [...events.days].sort((a, b) => `${a.date}${a.eventType}`.localeCompare(`${b.date}${b.eventType}`))
      assert.deepStrictEqual(events.days, sorted)
    }).pipe(Effect.provide(layer)))

  it.effect("insights: counted live actions by source labels, most first, ties null first", () =>
    Effect.gen(function*() {
      const { t } = yield* seeded
      const insights = yield* (yield* reports).insights(principal(t.workspace.id), {})
      assert.deepStrictEqual(insights, {
        paused: false,
        range: { from: "2026-04-21", to: "2026-05-20" },
        sources: [
          { source: null, externalService: null, integrationId: null, count: 52 },
          { source: null, externalService: "make", integrationId: null, count: 1 },
          { source: "automation", externalService: "zapier", integrationId: "zap_1", count: 1 }
        ]
      })
    }).pipe(Effect.provide(layer)))

  it.effect("a credential reaching both workspaces sees both; each workspace's key sees only its own", () =>
    Effect.gen(function*() {
      const { other, t } = yield* seeded
      const service = yield* reports
      const both = yield* service.overview(principal(t.workspace.id, other.workspace.id), {})
      const mine = yield* service.overview(principal(other.workspace.id), {})
      assert.isFalse(both.paused || mine.paused)
      if (both.paused || mine.paused) return
      assert.strictEqual(both.activeStreakers, 5)
      assert.strictEqual(both.countedActions, 54 + 11)
      assert.strictEqual(mine.activeStreakers, 1)
      assert.strictEqual(mine.countedActions, 11)
      assert.deepStrictEqual(mine.streakLengths.map((b) => b.members), [0, 0, 1, 0])
    }).pipe(Effect.provide(layer)))

  it.effect("a program without live activity, or a credential without programs, reports zeros", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* Pipeline.tenant()
      yield* Pipeline.api(t, { userHash: "tester", test: true })
      const service = yield* reports
      for (const p of [principal(t.workspace.id), principal()]) {
        assert.deepStrictEqual(yield* service.overview(p, {}), {
          paused: false,
          range: { from: "2026-04-21", to: "2026-05-20" },
          activeStreakers: 0,
          countedActions: 0,
          streakLengths: Reports.streakBuckets.map((length) => ({ length, members: 0 }))
        })
        assert.deepStrictEqual((yield* service.events(p, {})) as unknown, {
          paused: false,
          range: { from: "2026-04-21", to: "2026-05-20" },
          days: []
        })
        assert.deepStrictEqual((yield* service.insights(p, {})) as unknown, {
          paused: false,
          range: { from: "2026-04-21", to: "2026-05-20" },
          sources: []
        })
      }
    }).pipe(Effect.provide(layer)))

  it.effect("dates are the members' local dates (insights: the UTC day of ts)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* Pipeline.tenant({ program: { status: "live" } })
      // 20:00 UTC on 04-20 is 05:00 on 04-21 in Tokyo.
      yield* act(t, "kenji", "2026-04-20T20:00:00Z", { tz: "Asia/Tokyo" })
      const service = yield* reports
      const p = principal(t.workspace.id)
      const events = yield* service.events(p, {})
      assert.deepStrictEqual(events.paused ? [] : events.days, [
        { date: "2026-04-21", eventType: "streak_interaction", count: 1, counted: 1 }
      ])
      const overview = yield* service.overview(p, {})
      assert.strictEqual(overview.paused ? -1 : overview.activeStreakers, 1)
      const before = yield* service.events(p, { from: "2026-04-20", to: "2026-04-20" })
      assert.deepStrictEqual(before.paused ? undefined : before.days, [])
      const insights = yield* service.insights(p, { from: "2026-04-20", to: "2026-04-20" })
      assert.deepStrictEqual(insights.paused ? [] : insights.sources, [
        { source: null, externalService: null, integrationId: null, count: 1 }
      ])
    }).pipe(Effect.provide(layer)))
})

describe("Reports: range and reach", () => {
  it.effect("defaults to the 30 days ending today (UTC); `to` alone gives the 30 days ending then", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Pipeline.at("2026-03-01T23:59:59Z"))
      const t = yield* Pipeline.tenant()
      const service = yield* reports
      const p = principal(t.workspace.id)
      const rangeOf = (r: Reports.Range) => Effect.map(service.events(p, r), (e) => (e.paused ? undefined : e.range))
      assert.deepStrictEqual(yield* rangeOf({}), { from: "2026-01-31", to: "2026-03-01" })
      assert.deepStrictEqual(yield* rangeOf({ to: "2024-03-01" }), { from: "2024-02-01", to: "2024-03-01" }) // leap year
      assert.deepStrictEqual(yield* rangeOf({ from: "2026-02-14" }), { from: "2026-02-14", to: "2026-03-01" })
      // One day, and the longest range: 366 days.
      assert.deepStrictEqual(yield* rangeOf({ from: "2026-02-14", to: "2026-02-14" }), {
        from: "2026-02-14",
        to: "2026-02-14"
      })
      assert.deepStrictEqual(yield* rangeOf({ from: "2024-01-01", to: "2024-12-31" }), {
        from: "2024-01-01",
        to: "2024-12-31"
      })
      assert.deepStrictEqual(yield* rangeOf({ from: "0001-01-01", to: "0001-01-10" }), {
        from: "0001-01-01",
        to: "0001-01-10"
      })
      assert.deepStrictEqual(yield* rangeOf({ to: "0001-01-10" }), { from: "0001-01-01", to: "0001-01-10" })
    }).pipe(Effect.provide(layer)))

  it.effect("from after to, more than 366 days, or a malformed or unreal date is INVALID_BODY in every report", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* Pipeline.tenant()
      const service = yield* reports
      const p = principal(t.workspace.id)
      const bad: ReadonlyArray<Reports.Range> = [
        { from: "2026-05-02", to: "2026-05-01" },
        { from: "2026-05-21" }, // after today, the default `to`
        { from: "2024-01-01", to: "2025-01-01" }, // 367 days
        { from: "2026-5-1" },
        { to: "2026-02-30" },
        { from: "yesterday" },
        { to: "" }
      ]
      for (const range of bad) {
        assert.strictEqual(yield* codeOf(service.overview(p, range)), "INVALID_BODY", JSON.stringify(range))
        assert.strictEqual(yield* codeOf(service.events(p, range)), "INVALID_BODY", JSON.stringify(range))
        assert.strictEqual(yield* codeOf(service.insights(p, range)), "INVALID_BODY", JSON.stringify(range))
      }
    }).pipe(Effect.provide(layer)))

  it.effect("a programId outside the credential's reach, or unknown, is NOT_FOUND", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const mine = yield* Pipeline.tenant()
      const theirs = yield* Pipeline.tenant()
      const service = yield* reports
      const p = principal(mine.workspace.id)
      for (const programId of [theirs.program.id, "prg_unknown", mine.project.id]) {
        assert.strictEqual(yield* codeOf(service.overview(p, { programId })), "NOT_FOUND")
        assert.strictEqual(yield* codeOf(service.events(p, { programId })), "NOT_FOUND")
        assert.strictEqual(yield* codeOf(service.insights(p, { programId })), "NOT_FOUND")
      }
      const own = yield* service.events(p, { programId: mine.program.id })
      assert.isFalse(own.paused)
    }).pipe(Effect.provide(layer)))
})

describe("Reports: plan pause (docs/api.md#get-usage)", () => {
  const markActive = (workspaceId: WorkspaceId, month: string, n: number) =>
    Effect.flatMap(
      UsageStore,
      (usage) =>
        usage.markActive(Array.from({ length: n }, (_, i) => ({ workspaceId, month, member: `prj_x:member_${i}` })))
    )

  it.effect("over the limit every report answers paused; actions keep counting; after an upgrade they all show", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* Pipeline.tenant({ program: { status: "live" } })
      const service = yield* reports
      const p = principal(t.workspace.id)
      yield* act(t, "before", "2026-05-18T12:00:00Z")

      // Exactly the limit is not over it.
      yield* markActive(t.workspace.id, "2026-05", 499)
      assert.isFalse((yield* service.overview(p, {})).paused)

      yield* markActive(t.workspace.id, "2026-05", 501)
      const paused = {
        paused: true,
        reason: "PLAN_LIMIT_EXCEEDED",
        workspaceId: t.workspace.id,
        usage: { month: "2026-05", plan: "starter", limit: 500, activeStreakers: 502 }
      }
      assert.deepStrictEqual((yield* service.overview(p, {})) as unknown, paused)
      assert.deepStrictEqual((yield* service.events(p, {})) as unknown, paused)
      assert.deepStrictEqual((yield* service.insights(p, { programId: t.program.id })) as unknown, paused)
      // Validation and reach still come first.
      assert.strictEqual(yield* codeOf(service.overview(p, { from: "2026-05-02", to: "2026-05-01" })), "INVALID_BODY")
      assert.strictEqual(yield* codeOf(service.overview(p, { programId: "prg_unknown" })), "NOT_FOUND")

      // Tracked while paused: nothing is refused and streaks keep counting.
      assert.deepStrictEqual((yield* act(t, "during", "2026-05-19T12:00:00Z")).body, { ok: true, counted: true })
      yield* act(t, "during", "2026-05-20T11:00:00Z", { externalService: "zapier" })
      yield* act(t, "before", "2026-05-20T11:30:00Z")
      const stillPaused = yield* service.overview(p, {})
      assert.isTrue(stillPaused.paused)
      assert.strictEqual(stillPaused.paused ? stillPaused.usage.activeStreakers : 0, 503)

      yield* Effect.flatMap(DirectoryStore, (d) => d.setPlan(t.workspace.id, "growth"))
      assert.deepStrictEqual(yield* service.overview(p, {}), {
        paused: false,
        range: { from: "2026-04-21", to: "2026-05-20" },
        activeStreakers: 2,
        countedActions: 4,
        streakLengths: [
          { length: "1", members: 1 }, // before: 05-18, then 05-20
          { length: "2-6", members: 1 }, // during: 05-19, 05-20
          { length: "7-29", members: 0 },
          { length: "30+", members: 0 }
        ]
      })
      const events = yield* service.events(p, {})
      assert.deepStrictEqual(events.paused ? [] : events.days, [
        { date: "2026-05-18", eventType: "streak_interaction", count: 1, counted: 1 },
        { date: "2026-05-19", eventType: "streak_interaction", count: 1, counted: 1 },
        { date: "2026-05-20", eventType: "streak_interaction", count: 2, counted: 2 }
      ])
      const insights = yield* service.insights(p, {})
      assert.deepStrictEqual(insights.paused ? [] : insights.sources, [
        { source: null, externalService: null, integrationId: null, count: 3 },
        { source: null, externalService: "zapier", integrationId: null, count: 1 }
      ])
    }).pipe(Effect.provide(layer)))

  it.effect("only the current month pauses, and only workspaces of the covered programs", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const over = yield* Pipeline.tenant({ program: { status: "live" } })
      const fine = yield* Pipeline.tenant({ workspace: { plan: "growth" }, program: { status: "live" } })
      const service = yield* reports
      yield* markActive(over.workspace.id, "2026-04", 600)
      yield* markActive(fine.workspace.id, "2026-05", 600)
      const both = principal(over.workspace.id, fine.workspace.id)
      // Last month over the limit does not pause this month; 600 is within growth.
      assert.isFalse((yield* service.overview(both, {})).paused)

      yield* markActive(over.workspace.id, "2026-05", 501)
      const all = yield* service.overview(both, {})
      assert.isTrue(all.paused)
      assert.strictEqual(all.paused ? all.workspaceId : undefined, over.workspace.id)
      assert.isTrue((yield* service.events(both, { programId: over.program.id })).paused)
      assert.isFalse((yield* service.events(both, { programId: fine.program.id })).paused)

      // A new month starts unpaused.
      yield* TestClock.setTime(Pipeline.at("2026-06-01T00:00:00Z"))
      assert.isFalse((yield* service.overview(both, {})).paused)
    }).pipe(Effect.provide(layer)))
})
