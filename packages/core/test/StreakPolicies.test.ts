/**
 * Streak policies through the services (docs/streak-semantics.md#streak-policies), on the memory
 * adapter with `TestClock`: actions counted per policy, the due checks' freeze_used / broken /
 * at-risk, freeze_earned at ingest, granted freezes, the ledger, and a policy change that
 * recomputes without events.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema, TestClock } from "effect"
import { DueChecks } from "../src/DueChecks.js"
import * as Calendar from "../src/Calendar.js"
import { Milestone, StreakKey } from "../src/Domain.js"
import * as Ids from "../src/Ids.js"
import type { UserHash } from "../src/Ids.js"
import * as Policy from "../src/Policy.js"
import { StreakStore } from "../src/Ports.js"
import { StateQuery } from "../src/StateQuery.js"
import { StreakPolicies } from "../src/StreakPolicies.js"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import { at, codeOf, drainOutbox, layer, liveTenant, rowOf, server } from "./support/pipeline.js"

const policy = (fields: Record<string, unknown>) => Schema.decodeSync(Policy.Policy)(fields)

const withPolicy = (p: Policy.Policy) => liveTenant({ program: { policy: p, mode: Policy.modeOf(p) } })

const act = (t: Tenant, userHash: string, iso: string) =>
  server({ siteKey: t.project.siteKey, userHash, event: t.program.eventKey, ts: iso })

const sweep = (iso: string) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(at(iso))
    return yield* (yield* DueChecks).run()
  })

const none = { atRisk: 0, broken: 0, freezesUsed: 0 }

describe("streak policies through the services", () => {
  it.effect("a weekly program with a freeze: a missed week is frozen (freeze_used), the next one breaks the chain", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ cadence: "weekly", target: 2, freezes: { initial: 1, max: 2 } }))
      yield* TestClock.setTime(at("2026-03-04T12:00:00Z"))
      // Week of Mon 2026-03-02: two days keep it.
      yield* act(t, "u1", "2026-03-02T12:00:00Z")
      yield* act(t, "u1", "2026-03-04T12:00:00Z")
      const row = (yield* rowOf(t, "u1", "live"))!
      assert.deepStrictEqual([row.run, row.periodDays, row.freezes], [1, 2, 1])
      // Week of 2026-03-09: nothing. Its last chance day is Sunday the 15th... with 2 needed, Saturday.
      assert.deepStrictEqual(yield* sweep("2026-03-13T23:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-14T00:00:00Z"), { ...none, atRisk: 1 })
      assert.deepStrictEqual(yield* sweep("2026-03-16T00:00:00Z"), { ...none, freezesUsed: 1 })
      // Week of 2026-03-16: nothing again; no freeze left.
      assert.deepStrictEqual(yield* sweep("2026-03-21T00:00:00Z"), { ...none, atRisk: 1 })
      assert.deepStrictEqual(yield* sweep("2026-03-23T00:00:00Z"), { ...none, broken: 1 })
      assert.deepStrictEqual(yield* sweep("2026-03-30T00:00:00Z"), none)
      const bodies = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual(bodies.map((b) => b.type), [
        "streak.at_risk",
        "streak.freeze_used",
        "streak.at_risk",
        "streak.broken"
      ])
      assert.deepStrictEqual(
        [bodies[0]!.data.localDate, bodies[0]!.data.periodEnd, bodies[0]!.data.freezesAvailable],
        ["2026-03-14", "2026-03-15", 1]
      )
      assert.deepStrictEqual(bodies[1]!.data.period, { start: "2026-03-09", end: "2026-03-15" })
      assert.deepStrictEqual([bodies[1]!.data.freezesLeft, bodies[1]!.data.streak], [0, { current: 1, best: 1 }])
      assert.deepStrictEqual([bodies[3]!.data.endedRun, bodies[3]!.data.lastActiveDate], [1, "2026-03-04"])

      const ledger = yield* (yield* StreakPolicies).ledger(t.program.id, "u1", {})
      assert.deepStrictEqual(
        ledger.periods.map((p) => [p.start, p.status, p.activeDays]),
        [["2026-03-02", "kept", 2], ["2026-03-09", "frozen", 0], ["2026-03-16", "missed", 0], [
          "2026-03-23",
          "missed",
          0
        ], ["2026-03-30", "current", 0]]
      )
      assert.deepStrictEqual([ledger.current, ledger.best, ledger.freezes], [0, 1, 0])
    }).pipe(Effect.provide(layer)))

  it.effect("earning a freeze fires streak.freeze_earned at ingest; the bank stops at max", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ freezes: { initial: 0, max: 1, earnEvery: 2 } }))
      for (const day of ["02", "03", "04", "05"]) {
        yield* TestClock.setTime(at(`2026-03-${day}T12:00:00Z`))
        yield* act(t, "u1", `2026-03-${day}T12:00:00Z`)
      }
      const earned = (yield* drainOutbox).filter((m) => m.body.type === "streak.freeze_earned")
      assert.strictEqual(earned.length, 1)
      assert.deepStrictEqual([earned[0]!.body.data.freezesAvailable, earned[0]!.body.data.streak.current], [1, 2])
      const state = yield* (yield* StateQuery).memberStreak(t.program.id, "u1")
      assert.deepStrictEqual([state.current, state.freezes, state.mode], [4, 1, "continuous"])
    }).pipe(Effect.provide(layer)))

  it.effect("granted freezes are capped at max, and one granted in time carries a missed day", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ freezes: { initial: 0, max: 2 } }))
      const policies = yield* StreakPolicies
      yield* TestClock.setTime(at("2026-03-02T12:00:00Z"))
      yield* act(t, "u1", "2026-03-02T12:00:00Z")
      assert.deepStrictEqual(yield* policies.grantFreezes(t.program.id, "u1", 3), { freezes: 2 })
      assert.strictEqual(yield* codeOf(policies.grantFreezes(t.program.id, "u1", 0)), "INVALID_BODY")
      assert.strictEqual(yield* codeOf(policies.grantFreezes(t.program.id, "u1", 11)), "INVALID_BODY")
      assert.strictEqual(yield* codeOf(policies.grantFreezes("prg_unknown", "u1", 1)), "NOT_FOUND")
      // Tuesday missed, Wednesday active: the chain goes on with one freeze used.
      yield* TestClock.setTime(at("2026-03-04T12:00:00Z"))
      yield* act(t, "u1", "2026-03-04T12:00:00Z")
      const state = yield* (yield* StateQuery).memberStreak(t.program.id, "u1")
      assert.deepStrictEqual([state.current, state.freezes], [2, 1])
      const ledger = yield* policies.ledger(t.program.id, "u1", { from: "2026-03-02", to: "2026-03-04" })
      assert.deepStrictEqual(ledger.periods.map((p) => p.status), ["kept", "frozen", "kept"])
    }).pipe(Effect.provide(layer)))

  it.effect("a policy change recomputes every streak from its days and sends nothing for the past", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-03-07T12:00:00Z"))
      // Weekdays only: Mon to Fri, then nothing on the weekend.
      for (const day of ["02", "03", "04", "05", "06"]) yield* act(t, "u1", `2026-03-${day}T12:00:00Z`)
      yield* drainOutbox
      const policies = yield* StreakPolicies
      assert.strictEqual(
        yield* codeOf(policies.setPolicy(t.program.id, { cadence: "weekly", target: 9 })),
        "INVALID_BODY"
      )
      assert.strictEqual(yield* codeOf(policies.setPolicy("prg_unknown", {})), "NOT_FOUND")
      const either = Policy.decode({ cadence: "weekly", target: 9 })
      assert.isTrue(Either.isLeft(either))
      // Under the default policy Monday 9th breaks it; under a weekly target of 3 the week is kept.
      const program = yield* policies.setPolicy(t.program.id, { cadence: "weekly", target: 3 })
      assert.deepStrictEqual([program.mode, program.policy?.target], ["weekly", 3])
      const row = (yield* rowOf(t, "u1", "live"))!
      assert.deepStrictEqual([row.run, row.best, row.periodDays], [1, 1, 5])
      // Nothing is owed for the week that is kept; no event went out for the change.
      assert.deepStrictEqual(yield* sweep("2026-03-09T00:00:00Z"), none)
      assert.deepStrictEqual(yield* drainOutbox, [])
      // Back to daily with the weekend as rest days: on Sunday the run of 5 is alive, nothing owed.
      yield* TestClock.setTime(at("2026-03-08T12:00:00Z"))
      yield* policies.setPolicy(t.program.id, { restDays: [6, 7] })
      const state = yield* (yield* StateQuery).memberStreak(t.program.id, "u1")
      assert.deepStrictEqual([state.current, state.pending, state.mode], [5, false, "continuous"])
    }).pipe(Effect.provide(layer)))

  it.effect("milestones are reached in periods: a weekly program's target 2 is two kept weeks", () =>
    Effect.gen(function*() {
      const p = policy({ cadence: "weekly", target: 2 })
      const t = yield* liveTenant({
        program: {
          policy: p,
          mode: "weekly",
          milestones: [
            new Milestone({
              id: Ids.unsafe("MilestoneId", "ms_two"),
              target: 2,
              msg: "Two weeks",
              rewardType: "message"
            })
          ]
        }
      })
      for (const day of ["2026-03-02", "2026-03-03", "2026-03-09"]) {
        yield* TestClock.setTime(at(`${day}T12:00:00Z`))
        yield* act(t, "u1", `${day}T12:00:00Z`)
      }
      // Three active days, one kept week: no milestone yet.
      assert.deepStrictEqual((yield* drainOutbox).map((m) => m.body.type), [])
      yield* TestClock.setTime(at("2026-03-11T12:00:00Z"))
      yield* act(t, "u1", "2026-03-11T12:00:00Z")
      const bodies = (yield* drainOutbox).map((m) => m.body)
      assert.deepStrictEqual(bodies.map((b) => [b.type, b.data.streak.current]), [["milestone.achieved", 2]])
    }).pipe(Effect.provide(layer)))

  it.effect("a week that can no longer be kept is never announced at risk; the break still comes", () =>
    Effect.gen(function*() {
      const t = yield* withPolicy(policy({ cadence: "weekly", target: 3 }))
      yield* TestClock.setTime(at("2026-03-06T12:00:00Z"))
      for (const day of ["02", "04", "06"]) yield* act(t, "u1", `2026-03-${day}T12:00:00Z`)
      // Week of 2026-03-09: its last chance day is Friday the 13th (three days left, three needed).
      // A sweep that first comes on Saturday finds the week lost: no at-risk, only the break later.
      assert.deepStrictEqual(yield* sweep("2026-03-14T01:00:00Z"), none)
      assert.deepStrictEqual(yield* sweep("2026-03-16T00:00:00Z"), { ...none, broken: 1 })
      assert.deepStrictEqual((yield* drainOutbox).map((m) => m.body.type), ["streak.broken"])
    }).pipe(Effect.provide(layer)))

  it.effect("a policy change recomputes every streak, past the batch of 500 streaks a read", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(at("2026-03-05T12:00:00Z"))
      const streaks = yield* StreakStore
      const members = Array.from({ length: 1_201 }, (_, i) => `m${i}`)
      for (const userHash of members) {
        const key = new StreakKey({
          projectId: t.project.id,
          programId: t.program.id,
          userHash: userHash as UserHash,
          ledger: "live"
        })
        yield* streaks.lock([{ key, timezone: "UTC" }])
        yield* streaks.addDays([{ key, day: Calendar.unsafeLocalDate("2026-03-02") }, {
          key,
          day: Calendar.unsafeLocalDate("2026-03-03")
        }])
      }
      yield* (yield* StreakPolicies).setPolicy(t.program.id, { cadence: "weekly", target: 2 })
      const rows = yield* streaks.rows({ programId: t.program.id, ledger: "live" })
      assert.strictEqual(rows.length, members.length)
      assert.deepStrictEqual(
        new Set(rows.map((r) => `${r.lastActiveDay} ${r.run} ${r.periodDays}`)),
        new Set(["2026-03-03 1 2"])
      )
    }).pipe(Effect.provide(layer)))
})
