/**
 * Properties of forgiveness in the calculus (docs/streak-semantics.md#forgiveness) over random
 * histories × random policies × random repairs, pauses and outage windows: counting in any arrival
 * order (late actions after a repair or inside a pause included) equals the recomputation, the
 * ledger tells the same `current` as the state, and the due checks never warn inside a pause nor
 * fire while a window is open.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import * as Calendar from "../src/Calendar.js"
import type { LocalDate } from "../src/Calendar.js"
import * as Policy from "../src/Policy.js"
import * as Streak from "../src/Streak.js"

const d = Calendar.unsafeLocalDate
const BASE = d("2024-01-01")
const BASE_MS = Date.parse("2024-01-01T00:00:00Z")
const HOUR = 3_600_000
const ZONES = ["UTC", "America/New_York", "Europe/London", "Pacific/Kiritimati", "Australia/Lord_Howe"]
const SPAN = 150

const policyArb: fc.Arbitrary<Policy.Policy> = fc
  .record({
    cadence: fc.constantFrom<Policy.Cadence>("daily", "daily", "weekly", "monthly"),
    target: fc.integer({ min: 1, max: 28 }),
    dayStartHour: fc.integer({ min: 0, max: 23 }),
    restDays: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 2 }),
    max: fc.integer({ min: 0, max: 3 }),
    initial: fc.integer({ min: 0, max: 3 }),
    earnEvery: fc.integer({ min: 0, max: 4 }),
    atRiskHour: fc.integer({ min: 0, max: 23 })
  })
  .map((r) =>
    Schema.decodeSync(Policy.Policy)({
      cadence: r.cadence,
      target: r.cadence === "daily" ? 1 : Math.min(r.target, r.cadence === "weekly" ? 4 : 10),
      dayStartHour: r.dayStartHour,
      restDays: r.cadence === "daily" ? r.restDays : [],
      freezes: { initial: Math.min(r.initial, r.max), max: r.max, earnEvery: r.earnEvery },
      atRiskHour: r.atRiskHour,
      repairWindowDays: 30
    })
  )

const daysArb = fc.uniqueArray(fc.integer({ min: 0, max: SPAN }), { minLength: 1, maxLength: 70 }).map((ns) =>
  ns.map((n) => Calendar.addDays(BASE, n))
)

const grantsArb = fc.array(
  fc.record({
    day: fc.integer({ min: 0, max: SPAN }).map((n) => Calendar.addDays(BASE, n)),
    count: fc.integer({ min: 1, max: 2 })
  }),
  { maxLength: 2 }
)

/** Repaired days (made period starts under the policy), pauses and windows within the span. */
const forgivenessArb = fc.record({
  repaired: fc.array(fc.integer({ min: 0, max: SPAN }), { maxLength: 4 }),
  pauses: fc.array(
    fc.record({ start: fc.integer({ min: 0, max: SPAN }), length: fc.integer({ min: 1, max: 40 }) }),
    { maxLength: 2 }
  ),
  outages: fc.array(
    fc.record({ start: fc.integer({ min: 0, max: SPAN * 24 }), hours: fc.integer({ min: 1, max: 7 * 24 }) }),
    { maxLength: 2 }
  )
})

const forgivenessOf = (
  raw: typeof forgivenessArb extends fc.Arbitrary<infer A> ? A : never,
  policy: Policy.Policy
): Streak.Forgiveness => ({
  repaired: [...new Set(raw.repaired.map((n) => Streak.periodStart(Calendar.addDays(BASE, n), policy)))],
  pauses: raw.pauses.map((p) => ({
    start: Calendar.addDays(BASE, p.start),
    end: Calendar.addDays(BASE, p.start + p.length - 1)
  })),
  outages: raw.outages.map((w) => ({ start: BASE_MS + w.start * HOUR, end: BASE_MS + (w.start + w.hours) * HOUR }))
})

/** Counts days in the given order as Ingest does: O(1) when possible, else from the days seen. */
const countInOrder = (
  order: ReadonlyArray<LocalDate>,
  zone: string,
  policy: Policy.Policy,
  grants: ReadonlyArray<Streak.Grant>,
  f: Streak.Forgiveness
): Streak.Summary => {
  const seen: Array<LocalDate> = []
  let summary = Streak.fromDays([], zone, policy, grants, f)
  for (const day of order) {
    seen.push(day)
    const r = Streak.applyDay(summary, day, zone, policy)
    if (r._tag === "Applied") summary = r.summary
    else if (r._tag === "NeedsHistory") summary = Streak.fromDays(seen, zone, policy, grants, f)
  }
  return summary
}

const noonOf = (day: LocalDate, zone: string, policy: Policy.Policy): number =>
  Calendar.startOfActivityDay(day, zone, policy.dayStartHour).getTime() + 12 * HOUR

describe("forgiveness: properties", () => {
  it.prop(
    "counting in any arrival order, late actions after a repair or inside a pause included, equals the recomputation",
    [
      policyArb,
      fc.constantFrom(...ZONES),
      daysArb.chain((days) => fc.tuple(fc.constant(days), fc.shuffledSubarray(days, { minLength: days.length }))),
      grantsArb,
      forgivenessArb
    ],
    ([policy, zone, [days, order], grants, raw]) => {
      const f = forgivenessOf(raw, policy)
      const expected = Streak.fromDays(days, zone, policy, grants, f)
      assert.deepStrictEqual(countInOrder(order, zone, policy, grants, f), expected)
      assert.deepStrictEqual(countInOrder([...days].sort(), zone, policy, grants, f), expected)
    },
    { fastCheck: { numRuns: 300, seed: 60 } }
  )

  it.prop(
    "the ledger's chain (kept and repaired count, missed ends it) is the state's current; best never trails it",
    [policyArb, fc.constantFrom(...ZONES), daysArb, grantsArb, forgivenessArb, fc.integer({ min: 0, max: 40 })],
    ([policy, zone, days, grants, raw, later]) => {
      const f = forgivenessOf(raw, policy)
      const summary = Streak.fromDays(days, zone, policy, grants, f)
      const today = Calendar.addDays(summary.lastActiveDay!, later)
      const state = Streak.evaluate(summary, noonOf(today, zone, policy), zone, policy)
      assert.isAtLeast(state.best, state.current)
      const ledger = Streak.ledger(days, grants, state.today, zone, policy, f)
      let chain = 0
      let longest = 0
      for (const p of ledger) {
        if (p.status === "kept" || p.status === "repaired") chain++
        else if (p.status === "missed") chain = 0
        longest = Math.max(longest, chain)
      }
      assert.strictEqual(chain, state.current)
      // The longest chain of the ledger is the best (a repaired period can only lengthen one).
      assert.strictEqual(longest, state.best)
      // Paused periods are never owed.
      const current = ledger[ledger.length - 1]
      if (current?.status === "paused") assert.isFalse(state.pending)
    },
    { fastCheck: { numRuns: 300, seed: 60 } }
  )

  it.prop(
    "sweeps at random instants never warn on a paused day nor fire while a window is open; broken at most once per run",
    [
      policyArb,
      fc.constantFrom(...ZONES),
      daysArb,
      forgivenessArb,
      fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 5, maxLength: 40 })
    ],
    ([policy, zone, days, raw, gaps]) => {
      const f = forgivenessOf(raw, policy)
      const summary = Streak.fromDays(days, zone, policy, [], f)
      let notified: Streak.Notified = { atRiskFor: undefined, brokenAfter: undefined, frozenThrough: undefined }
      let ms = Calendar.startOfActivityDay(summary.lastActiveDay!, zone, policy.dayStartHour).getTime()
      // A run ends where its last active day or its last repaired period does; a repaired period
      // after a break starts another run, so one history may break more than once, each run once.
      const broken: Array<string> = []
      for (const gap of gaps) {
        ms += gap * HOUR
        const due = Streak.due(summary, zone, ms, notified, policy)
        if (f.outages.some((w) => w.start <= ms && ms < w.end)) assert.deepStrictEqual(due.events, [])
        for (const e of due.events) {
          if (e._tag === "AtRisk") assert.isFalse(f.pauses.some((p) => p.start <= e.localDate && e.localDate <= p.end))
          if (e._tag === "Broken") broken.push(e.runEnd ?? e.lastActiveDate)
        }
        notified = due.notified
      }
      assert.deepStrictEqual(broken, [...new Set(broken)].sort())
      const runs = 1 + f.repaired.filter((r) => r > summary.lastActiveDay!).length
      assert.isAtMost(broken.length, runs)
    },
    { fastCheck: { numRuns: 300, seed: 60 } }
  )
})
