/**
 * Policy simulation (docs/operations.md#trying-a-policy-before-shipping-it): the outcome of
 * replayed histories on worked examples, outcomes as a monoid, and through the services on random
 * histories counted in any order, the replay under the current policy equal to what the state and
 * ledger reads say of every member.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema, TestClock } from "effect"
import * as Calendar from "../src/Calendar.js"
import { Milestone } from "../src/Domain.js"
import * as Ids from "../src/Ids.js"
import * as Policy from "../src/Policy.js"
import * as Simulation from "../src/Simulation.js"
import { StateQuery } from "../src/StateQuery.js"
import { StreakPolicies } from "../src/StreakPolicies.js"
import { Forgiveness } from "../src/Forgiveness.js"
import { at, codeOf, layer, liveTenant, server } from "./support/pipeline.js"

const d = Calendar.unsafeLocalDate
const policy = (fields: Record<string, unknown>) => Schema.decodeSync(Policy.Policy)(fields)
const member = (days: ReadonlyArray<string>, timezone = "UTC"): Simulation.History => ({
  timezone,
  grants: [],
  days: days.map(d)
})

/** Noon UTC of a day: Friday 2026-03-06 when nothing else is said. */
const noon = (day: string) => at(`${day}T12:00:00Z`)
const settings = (p: Policy.Policy, extra: Partial<Simulation.Settings> = {}): Simulation.Settings => ({
  policy: p,
  milestoneTargets: [],
  now: noon("2026-03-06"),
  ...extra
})

describe("Simulation.outcome", () => {
  it("counts a daily chain broken by a missed day, and the same day frozen under a policy with a freeze", () => {
    // Mon 2, Tue 3, Thu 5 of March 2026; read on Friday the 6th (today not done yet: pending, alive).
    const history = [member(["2026-03-02", "2026-03-03", "2026-03-05"])]
    assert.deepStrictEqual(Simulation.outcome(history, settings(Policy.defaultPolicy)), {
      members: 1,
      alive: 1,
      broken: 1,
      freezesUsed: 0,
      milestonesAchieved: 0,
      lengthHistogram: [{ length: 1, members: 1 }]
    })
    assert.deepStrictEqual(
      Simulation.outcome(history, settings(policy({ freezes: { initial: 1, max: 1 } }))),
      {
        members: 1,
        alive: 1,
        broken: 0,
        freezesUsed: 1,
        milestonesAchieved: 0,
        lengthHistogram: [{ length: 3, members: 1 }]
      }
    )
  })

  it("judges the time since the last active day: a chain that ended since then is broken, and its freeze used", () => {
    // Last active Monday; by Friday Tuesday to Thursday were missed.
    const history = [member(["2026-03-01", "2026-03-02"])]
    assert.deepStrictEqual(
      Simulation.outcome(history, settings(Policy.defaultPolicy)),
      {
        members: 1,
        alive: 0,
        broken: 1,
        freezesUsed: 0,
        milestonesAchieved: 0,
        lengthHistogram: [{ length: 0, members: 1 }]
      }
    )
    // A freeze carries Tuesday; Wednesday ends the chain: both are counted.
    assert.deepStrictEqual(
      Simulation.outcome(history, settings(policy({ freezes: { initial: 1, max: 1 } }))),
      {
        members: 1,
        alive: 0,
        broken: 1,
        freezesUsed: 1,
        milestonesAchieved: 0,
        lengthHistogram: [{ length: 0, members: 1 }]
      }
    )
  })

  it("counts a milestone per member whose longest run reached it, even if the run has ended since", () => {
    const histories = [
      member(["2026-02-20", "2026-02-21", "2026-02-22"]),
      member(["2026-03-04", "2026-03-05"]),
      member([])
    ]
    const outcome = Simulation.outcome(histories, settings(Policy.defaultPolicy, { milestoneTargets: [2, 3, 7] }))
    assert.deepStrictEqual(outcome, {
      members: 3,
      alive: 1,
      broken: 1,
      freezesUsed: 0,
      milestonesAchieved: 3,
      lengthHistogram: [{ length: 0, members: 2 }, { length: 2, members: 1 }]
    })
  })

  it("a weekly policy keeps what the daily one breaks; rest days too", () => {
    // Weekdays of two weeks, then Monday and Tuesday of the third: read on Wednesday 2026-03-18.
    const weekdays = ["02", "03", "04", "05", "06", "09", "10", "11", "12", "13", "16", "17"].map((n) => `2026-03-${n}`)
    const now = noon("2026-03-18")
    const history = [member(weekdays)]
    assert.deepStrictEqual(Simulation.outcome(history, settings(Policy.defaultPolicy, { now })).broken, 2)
    const weekly = Simulation.outcome(history, settings(policy({ cadence: "weekly", target: 2 }), { now }))
    assert.deepStrictEqual([weekly.broken, weekly.lengthHistogram], [0, [{ length: 3, members: 1 }]])
    const rest = Simulation.outcome(history, settings(policy({ restDays: [6, 7] }), { now }))
    assert.deepStrictEqual([rest.broken, rest.lengthHistogram], [0, [{ length: 12, members: 1 }]])
  })

  it("a window keeps the days in it and reads each streak as it stood on its last day", () => {
    const history = [member(["2026-02-27", "2026-03-01", "2026-03-02", "2026-03-03"])]
    // Up to Monday the 2nd: Feb 28 missed, then a run of 2 as it stood that Monday.
    const to = Simulation.outcome(history, settings(Policy.defaultPolicy, { window: { to: d("2026-03-02") } }))
    assert.deepStrictEqual([to.broken, to.lengthHistogram], [1, [{ length: 2, members: 1 }]])
    // From March 1st: the run of 3, broken by Wednesday and Thursday by Friday.
    const from = Simulation.outcome(history, settings(Policy.defaultPolicy, { window: { from: d("2026-03-01") } }))
    assert.deepStrictEqual([from.broken, from.alive], [1, 0])
    // A window with no day of the member: replayed with none.
    const none = Simulation.outcome(
      history,
      settings(Policy.defaultPolicy, { window: { from: d("2026-01-01"), to: d("2026-01-31") } })
    )
    assert.deepStrictEqual([none.members, none.broken, none.lengthHistogram], [1, 0, [{ length: 0, members: 1 }]])
  })

  it("reads each member in the zone of their row", () => {
    // At 2026-03-06T12:00Z it is already Saturday the 7th in Kiritimati (UTC+14): Friday was missed there.
    const histories = [member(["2026-03-04", "2026-03-05"]), member(["2026-03-04", "2026-03-05"], "Pacific/Kiritimati")]
    const outcome = Simulation.outcome(histories, settings(Policy.defaultPolicy, { now: at("2026-03-06T12:00:00Z") }))
    assert.deepStrictEqual(outcome.lengthHistogram, [{ length: 0, members: 1 }, { length: 2, members: 1 }])
  })
})

const outcomeArb: fc.Arbitrary<Simulation.Outcome> = fc
  .dictionary(fc.integer({ min: 0, max: 20 }).map(String), fc.integer({ min: 1, max: 5 }), { maxKeys: 6 })
  .chain((histogram) => {
    const lengthHistogram = Object.entries(histogram)
      .map(([length, members]) => ({ length: Number(length), members }))
      .sort((a, b) => a.length - b.length)
    const members = lengthHistogram.reduce((n, e) => n + e.members, 0)
    return fc.record({
      broken: fc.nat(50),
      freezesUsed: fc.nat(50),
      milestonesAchieved: fc.nat(50)
    }).map((r) => ({
      members,
      alive: lengthHistogram.filter((e) => e.length > 0).reduce((n, e) => n + e.members, 0),
      ...r,
      lengthHistogram
    }))
  })

describe("Simulation outcomes combine", () => {
  it.prop("associatively, with empty as the unit", [outcomeArb, outcomeArb, outcomeArb], ([a, b, c]) => {
    assert.deepStrictEqual(
      Simulation.combine(Simulation.combine(a, b), c),
      Simulation.combine(a, Simulation.combine(b, c))
    )
    assert.deepStrictEqual(Simulation.combine(a, Simulation.empty), a)
    assert.deepStrictEqual(Simulation.combine(Simulation.empty, a), a)
    assert.deepStrictEqual(Simulation.combine(a, b), Simulation.combine(b, a))
  })

  it.prop(
    "the outcome of members split into batches combined is the outcome of them all",
    [
      fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 25 }), { maxLength: 12 }),
      fc.integer({ min: 1, max: 5 })
    ],
    ([members, size]) => {
      const histories = members.map((ns) =>
        member(ns.sort((a, b) => a - b).map((n) => Calendar.addDays(d("2026-02-01"), n)))
      )
      const s = settings(policy({ freezes: { initial: 1, max: 2, earnEvery: 3 } }), { milestoneTargets: [3, 5] })
      const batches: Array<Simulation.Outcome> = []
      for (let i = 0; i < histories.length; i += size) batches.push(Simulation.outcome(histories.slice(i, i + size), s))
      const whole = Simulation.outcome(histories, s)
      assert.deepStrictEqual(Simulation.combineAll(batches), whole)
      assert.strictEqual(whole.lengthHistogram.reduce((n, e) => n + e.members, 0), whole.members)
    }
  )
})

// --- Through the services: the replay under the current policy is the stored state --------------

const BASE = d("2026-01-05")
const ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati", "Australia/Lord_Howe"]

const policyArb: fc.Arbitrary<Policy.Policy> = fc
  .record({
    cadence: fc.constantFrom<Policy.Cadence>("daily", "daily", "weekly", "monthly"),
    target: fc.integer({ min: 1, max: 4 }),
    dayStartHour: fc.constantFrom(0, 4, 23),
    restDays: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 2 }),
    max: fc.integer({ min: 0, max: 3 }),
    initial: fc.integer({ min: 0, max: 3 }),
    earnEvery: fc.integer({ min: 0, max: 4 })
  })
  .map((r) =>
    policy({
      cadence: r.cadence,
      target: r.cadence === "daily" ? 1 : r.target,
      dayStartHour: r.dayStartHour,
      restDays: r.cadence === "daily" ? r.restDays : [],
      freezes: { initial: Math.min(r.initial, r.max), max: r.max, earnEvery: r.earnEvery },
      repairWindowDays: 365,
      repairsPer30Days: 10
    })
  )

/** Forgiveness after the actions: an outage window, a repair and a pause of member 0 (each maybe). */
const forgivenessArb = fc.record({
  outage: fc.option(fc.record({ hour: fc.integer({ min: 0, max: 90 * 24 }), hours: fc.integer({ min: 1, max: 48 }) })),
  repair: fc.option(fc.integer({ min: 0, max: 90 })),
  pause: fc.option(fc.record({ from: fc.integer({ min: 60, max: 90 }), days: fc.integer({ min: 1, max: 20 }) }))
})

interface Action {
  readonly user: number
  readonly ts: Date
}

/** Up to five members, each with one zone and actions at random hours of up to 90 days, in random order. */
const historyArb = fc
  .array(
    fc.record({
      zone: fc.constantFrom(...ZONES),
      actions: fc.uniqueArray(fc.integer({ min: 0, max: 90 * 24 - 1 }), { minLength: 1, maxLength: 30 })
    }),
    { minLength: 1, maxLength: 5 }
  )
  .chain((members) => {
    const actions: Array<Action & { readonly zone: string }> = members.flatMap((m, user) =>
      m.actions.map((hour) => ({
        user,
        zone: m.zone,
        ts: new Date(Calendar.startOfActivityDay(BASE, "UTC", 0).getTime() + hour * 3_600_000)
      }))
    )
    return fc.shuffledSubarray(actions, { minLength: actions.length, maxLength: actions.length }).map((order) => ({
      members: members.length,
      order
    }))
  })

describe("simulation through the services", () => {
  it.effect.prop(
    "under the current policy it replays to the stored state, forgiveness included: alive, the histogram and milestones as state reads say, breaks and freezes as ledgers show",
    [policyArb, historyArb, fc.integer({ min: 0, max: 20 * 24 }), forgivenessArb],
    ([current, history, hoursAfter, forgiven]) =>
      Effect.gen(function*() {
        const milestones = [2, 5, 9].map((target) =>
          new Milestone({
            id: Ids.unsafe("MilestoneId", `ms_${target}`),
            target,
            msg: `${target}`,
            rewardType: "message"
          })
        )
        const t = yield* liveTenant({ program: { policy: current, mode: Policy.modeOf(current), milestones } })
        const end = Calendar.startOfActivityDay(Calendar.addDays(BASE, 91), "UTC", 0).getTime()
        yield* TestClock.setTime(end)
        for (const { ts, user, zone } of history.order) {
          yield* server({
            siteKey: t.project.siteKey,
            userHash: `m${user}`,
            event: t.program.eventKey,
            ts: ts.toISOString(),
            tz: zone
          })
        }
        // Forgiveness as support and operators give it: refused ones (a period not missed) change nothing.
        const forgiveness = yield* Forgiveness
        const base = Calendar.startOfActivityDay(BASE, "UTC", 0).getTime()
        if (forgiven.outage !== null) {
          const start = base + forgiven.outage.hour * 3_600_000
          yield* Effect.either(forgiveness.addOutage(t.program.id, {
            start: new Date(start).toISOString(),
            end: new Date(Math.min(start + forgiven.outage.hours * 3_600_000, end)).toISOString(),
            reason: "down"
          }))
        }
        if (forgiven.repair !== null) {
          yield* Effect.either(forgiveness.repair(t.program.id, "m0", {
            period: Calendar.addDays(BASE, forgiven.repair),
            reason: "support"
          }))
        }
        if (forgiven.pause !== null) {
          yield* Effect.either(forgiveness.addPause(t.program.id, "m0", {
            start: Calendar.addDays(BASE, forgiven.pause.from),
            end: Calendar.addDays(BASE, Math.min(forgiven.pause.from + forgiven.pause.days, 110))
          }))
        }
        yield* TestClock.setTime(end + hoursAfter * 3_600_000)

        const policies = yield* StreakPolicies
        const answer = yield* policies.simulate(t.program.id, { policy: Policy.toJson(current) })
        assert.deepStrictEqual(answer.proposed, answer.actual)

        const lengths = new Map<number, number>()
        let milestonesReached = 0
        let broken = 0
        let frozen = 0
        for (let user = 0; user < history.members; user++) {
          const state = yield* (yield* StateQuery).memberStreak(t.program.id, `m${user}`)
          lengths.set(state.current, (lengths.get(state.current) ?? 0) + 1)
          milestonesReached += milestones.filter((m) => m.target <= state.best).length
          const ledger = yield* policies.ledger(t.program.id, `m${user}`, { from: "2025-12-01", to: "2026-12-31" })
          let before: string | undefined
          for (const p of ledger.periods) {
            if (p.status === "frozen") frozen++
            if (p.status === "missed" && (before === "kept" || before === "frozen" || before === "repaired")) broken++
            // Paused and forgiven periods count as rest: they neither add to a chain nor end it.
            if (p.status !== "rest" && p.status !== "paused" && p.status !== "forgiven") before = p.status
          }
        }
        const histogram = [...lengths].map(([length, members]) => ({ length, members })).sort((a, b) =>
          a.length - b.length
        )
        assert.deepStrictEqual(answer.actual, {
          members: history.members,
          alive: histogram.filter((e) => e.length > 0).reduce((n, e) => n + e.members, 0),
          broken,
          freezesUsed: frozen,
          milestonesAchieved: milestonesReached,
          lengthHistogram: histogram
        })
      }).pipe(Effect.provide(layer)),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect("an invalid policy, a bad window and an unknown program are refused; nothing is written", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      const policies = yield* StreakPolicies
      yield* TestClock.setTime(noon("2026-03-06"))
      yield* server({ siteKey: t.project.siteKey, userHash: "m1", event: t.program.eventKey })
      for (
        const request of [
          { policy: { cadence: "weekly", target: 9 } },
          { policy: { cadense: "weekly" } },
          { policy: [] },
          { policy: undefined },
          { policy: {}, from: "2026-02-30" },
          { policy: {}, from: "2026-03-02", to: "2026-03-01" }
        ]
      ) assert.strictEqual(yield* codeOf(policies.simulate(t.program.id, request)), "INVALID_BODY")
      assert.strictEqual(yield* codeOf(policies.simulate("prg_unknown", { policy: {} })), "NOT_FOUND")
      const answer = yield* policies.simulate(t.program.id, { policy: { cadence: "weekly" } })
      assert.deepStrictEqual(answer.proposed.lengthHistogram, [{ length: 1, members: 1 }])
      // The program keeps its policy and the member's streak is untouched.
      const state = yield* (yield* StateQuery).memberStreak(t.program.id, "m1")
      assert.deepStrictEqual([state.current, state.mode], [1, undefined])
    }).pipe(Effect.provide(layer)))

  it.effect("pages of members: more members than a page are each replayed once", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(noon("2026-03-06"))
      const n = 2 * 2000 + 7
      for (let i = 0; i < n; i += 500) {
        yield* Effect.forEach(
          Array.from({ length: Math.min(500, n - i) }, (_, k) => i + k),
          (k) => server({ siteKey: t.project.siteKey, userHash: `m${k}`, event: t.program.eventKey }),
          { discard: true }
        )
      }
      const answer = yield* (yield* StreakPolicies).simulate(t.program.id, { policy: {} })
      assert.deepStrictEqual(answer.actual.lengthHistogram, [{ length: 1, members: n }])
      assert.strictEqual(answer.actual.members, n)
    }).pipe(Effect.provide(layer)), 60_000)
})
