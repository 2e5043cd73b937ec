import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { DueChecks } from "../src/DueChecks.js"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import {
  api,
  at,
  drainOutbox,
  layer,
  liveTenant,
  rowOf,
  server,
  startExperiment,
  subscribe,
  tenant
} from "./support/pipeline.js"

const act = (t: Tenant, userHash: string, iso: string, tz?: string) =>
  server({
    siteKey: t.project.siteKey,
    userHash,
    event: t.program.eventKey,
    ts: iso,
    ...(tz === undefined ? {} : { tz })
  })

const sweep = (iso: string, options?: { readonly batchSize?: number }) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(at(iso))
    return yield* (yield* DueChecks).run(options)
  })

const none = { atRisk: 0, broken: 0, freezesUsed: 0 }

describe("DueChecks (docs/streak-semantics.md#at-risk-and-broken)", () => {
  it.effect("east of UTC (Tokyo): at-risk once at the first check after local midnight, broken once a full day later", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T03:00:00Z"))
      yield* act(t, "u1", "2026-05-10T03:00:00Z", "Asia/Tokyo") // noon on May 10 in Tokyo
      assert.deepStrictEqual(yield* sweep("2026-05-10T14:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-10T15:00:00Z"), { atRisk: 1, broken: 0, freezesUsed: 0 }) // 00:00 May 11 in Tokyo
      assert.deepStrictEqual(yield* sweep("2026-05-10T16:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-11T14:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-11T15:00:00Z"), { atRisk: 0, broken: 1, freezesUsed: 0 })
      assert.deepStrictEqual(yield* sweep("2026-05-11T16:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-20T00:00:00Z"), none)
      const bodies = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual(bodies.map((b) => [b.type, b.timestamp]), [
        ["streak.at_risk", "2026-05-10T15:00:00.000Z"],
        ["streak.broken", "2026-05-11T15:00:00.000Z"]
      ])
      assert.deepStrictEqual(bodies[0]!.data, {
        programId: t.program.id,
        projectId: t.project.id,
        siteKey: t.project.siteKey,
        userHash: "u1",
        isTest: false,
        streak: { current: 1, best: 1 },
        localDate: "2026-05-11",
        timezone: "Asia/Tokyo"
      })
      assert.deepStrictEqual(bodies[1]!.data, {
        programId: t.program.id,
        projectId: t.project.id,
        siteKey: t.project.siteKey,
        userHash: "u1",
        isTest: false,
        streak: { current: 0, best: 1 },
        endedRun: 1,
        lastActiveDate: "2026-05-10",
        timezone: "Asia/Tokyo"
      })
    }).pipe(Effect.provide(layer)))

  it.effect("west of UTC (Los Angeles): at-risk at local midnight, broken a day later, each once", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T20:00:00Z"))
      yield* act(t, "u1", "2026-05-09T20:00:00Z", "America/Los_Angeles")
      yield* act(t, "u1", "2026-05-10T20:00:00Z") // the member's zone is remembered: May 9 and May 10 local
      assert.deepStrictEqual(yield* sweep("2026-05-11T06:59:59Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-11T07:00:00Z"), { atRisk: 1, broken: 0, freezesUsed: 0 }) // 00:00 May 11 PDT
      assert.deepStrictEqual(yield* sweep("2026-05-11T08:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-12T07:00:00Z"), { atRisk: 0, broken: 1, freezesUsed: 0 })
      assert.deepStrictEqual(yield* sweep("2026-05-12T08:00:00Z"), none)
      const broken = (yield* drainOutbox).map((m) => m.body).find((b) => b.type === "streak.broken")
      assert.deepStrictEqual([broken?.data.endedRun, broken?.data.lastActiveDate, broken?.data.timezone], [
        2,
        "2026-05-10",
        "America/Los_Angeles"
      ])
    }).pipe(Effect.provide(layer)))

  it.effect("acting on the owed day keeps the run alive: the next at-risk is for the next day, nothing breaks", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      yield* act(t, "u1", "2026-05-10T12:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-11T00:00:00Z"), { atRisk: 1, broken: 0, freezesUsed: 0 })
      yield* act(t, "u1", "2026-05-11T00:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-11T12:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-12T00:00:00Z"), { atRisk: 1, broken: 0, freezesUsed: 0 })
      const atRisk = (yield* drainOutbox).map((m) => m.body.data.localDate)
      assert.deepStrictEqual(atRisk, ["2026-05-11", "2026-05-12"])
    }).pipe(Effect.provide(layer)))

  it.effect("a member who acts daily after the day's at-risk keeps the due instant the sweep set", () =>
    // The Postgres adapter relies on this: the row's update then changes no indexed column (HOT).
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      yield* act(t, "u1", "2026-05-10T12:00:00Z", "Asia/Tokyo")
      for (
        const [sweptAt, actedAt] of [
          ["2026-05-10T15:00:00Z", "2026-05-11T03:00:00Z"],
          ["2026-05-11T15:00:00Z", "2026-05-12T09:00:00Z"]
        ] as const
      ) {
        assert.deepStrictEqual(yield* sweep(sweptAt), { atRisk: 1, broken: 0, freezesUsed: 0 })
        const swept = yield* rowOf(t, "u1", "live")
        yield* TestClock.setTime(at(actedAt))
        yield* act(t, "u1", actedAt)
        const acted = yield* rowOf(t, "u1", "live")
        assert.strictEqual(acted?.run, (swept?.run ?? 0) + 1)
        assert.isDefined(swept?.dueAt)
        assert.deepStrictEqual(acted?.dueAt, swept?.dueAt)
      }
      // The start of May 13 in Tokyo: at-risk for the day after the last action.
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.dueAt?.getTime(), at("2026-05-12T15:00:00Z"))
    }).pipe(Effect.provide(layer)))

  it.effect("broken fires once per ended run: a new run that ends breaks again", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-01T12:00:00Z"))
      yield* act(t, "u1", "2026-05-01T12:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-03T00:00:00Z"), { atRisk: 0, broken: 1, freezesUsed: 0 })
      yield* TestClock.setTime(at("2026-05-05T12:00:00Z"))
      yield* act(t, "u1", "2026-05-05T12:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-07T01:00:00Z"), { atRisk: 0, broken: 1, freezesUsed: 0 })
      assert.deepStrictEqual(yield* sweep("2026-05-09T01:00:00Z"), none)
    }).pipe(Effect.provide(layer)))

  it.effect("a sweep catching up after downtime fires broken only, never at-risk for a day that is over", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      yield* act(t, "u1", "2026-05-10T12:00:00Z")
      // No sweep ran on May 11; the first one after the outage is on May 12.
      assert.deepStrictEqual(yield* sweep("2026-05-12T05:00:00Z"), { atRisk: 0, broken: 1, freezesUsed: 0 })
      assert.deepStrictEqual((yield* drainOutbox).map((m) => m.body.type), ["streak.broken"])
      const row = yield* rowOf(t, "u1", "live")
      assert.isUndefined(row?.dueAt, "nothing is due once the run's broken event went out")
    }).pipe(Effect.provide(layer)))

  it.effect("test programs and control-group members fire nothing and count for nothing, but their rows move on", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* subscribe(t)
      const live = yield* liveTenant()
      const { control } = yield* startExperiment(live.program)
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      yield* api(t, { userHash: "tester", test: true })
      yield* act(live, control, "2026-05-10T12:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-11T00:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-05-12T00:00:00Z"), none)
      assert.deepStrictEqual(yield* drainOutbox, [])
      for (const row of [yield* rowOf(t, "tester", "test"), yield* rowOf(live, control, "live")]) {
        assert.deepStrictEqual([row?.atRiskNotifiedFor, row?.brokenNotifiedAfter, row?.dueAt], [
          "2026-05-11",
          "2026-05-10",
          undefined
        ])
      }
    }).pipe(Effect.provide(layer)))

  it.effect("a sweep works through every due row in batches until a batch comes back short", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      for (let i = 0; i < 7; i++) yield* act(t, `u${i}`, "2026-05-10T12:00:00Z")
      assert.deepStrictEqual(yield* sweep("2026-05-11T00:00:00Z", { batchSize: 2 }), {
        atRisk: 7,
        broken: 0,
        freezesUsed: 0
      })
      assert.strictEqual((yield* drainOutbox).length, 7)
    }).pipe(Effect.provide(layer)))

  it.effect("concurrent sweeps never fire an event twice", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      for (let i = 0; i < 10; i++) yield* act(t, `u${i}`, "2026-05-10T12:00:00Z")
      yield* TestClock.setTime(at("2026-05-11T00:30:00Z"))
      const checks = yield* DueChecks
      const results = yield* Effect.all([
        checks.run({ batchSize: 3 }),
        checks.run({ batchSize: 3 }),
        checks.run({ batchSize: 3 })
      ], {
        concurrency: "unbounded"
      })
      assert.strictEqual(results.reduce((n, r) => n + r.atRisk, 0), 10)
      const owed = (yield* drainOutbox).map((m) => m.body.data.userHash).sort()
      assert.deepStrictEqual(owed, Array.from({ length: 10 }, (_, i) => `u${i}`).sort())
    }).pipe(Effect.provide(layer)))
})
