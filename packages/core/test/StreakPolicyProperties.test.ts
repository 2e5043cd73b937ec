/**
 * Properties of the policy calculus (docs/streak-semantics.md#streak-policies) over random
 * histories and random policies: counting in any arrival order equals a recomputation, best never
 * trails current, a freeze never revives a chain that had ended, filling a frozen gap gives its
 * freeze back, and the due checks announce exactly the freezes and breaks the ledger shows.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import * as Calendar from "../src/Calendar.js"
import type { LocalDate } from "../src/Calendar.js"
import * as Policy from "../src/Policy.js"
import * as Streak from "../src/Streak.js"

const d = Calendar.unsafeLocalDate
const BASE = d("2024-01-01")
const ZONES = ["UTC", "America/New_York", "Europe/London", "Pacific/Kiritimati", "Australia/Lord_Howe"]

const policyArb: fc.Arbitrary<Policy.Policy> = fc
  .record({
    cadence: fc.constantFrom<Policy.Cadence>("daily", "weekly", "monthly"),
    target: fc.integer({ min: 1, max: 28 }),
    dayStartHour: fc.integer({ min: 0, max: 23 }),
    restDays: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 3 }),
    max: fc.integer({ min: 0, max: 4 }),
    initial: fc.integer({ min: 0, max: 4 }),
    earnEvery: fc.integer({ min: 0, max: 4 }),
    atRiskHour: fc.integer({ min: 0, max: 23 })
  })
  .map((r) =>
    Schema.decodeSync(Policy.Policy)({
      cadence: r.cadence,
      target: r.cadence === "daily" ? 1 : Math.min(r.target, r.cadence === "weekly" ? 7 : 28),
      dayStartHour: r.dayStartHour,
      restDays: r.cadence === "daily" ? r.restDays : [],
      freezes: { initial: Math.min(r.initial, r.max), max: r.max, earnEvery: r.earnEvery },
      atRiskHour: r.atRiskHour
    })
  )

/** Days within `span` days of BASE, denser for weekly/monthly programs so periods get kept. */
const daysArb = (span: number) =>
  fc.uniqueArray(fc.integer({ min: 0, max: span }), { minLength: 1, maxLength: 60 }).map((ns) =>
    ns.map((n) => Calendar.addDays(BASE, n))
  )

const grantsArb = (span: number) =>
  fc.array(
    fc.record({
      day: fc.integer({ min: 0, max: span }).map((n) => Calendar.addDays(BASE, n)),
      count: fc.integer({ min: 1, max: 3 })
    }),
    { maxLength: 3 }
  )

/** Counts days in the given order as Ingest does: O(1) when possible, else from the days seen. */
const countInOrder = (
  order: ReadonlyArray<LocalDate>,
  zone: string,
  policy: Policy.Policy,
  grants: ReadonlyArray<Streak.Grant>
): Streak.Summary => {
  const seen: Array<LocalDate> = []
  let summary = Streak.fromDays([], zone, policy, grants)
  for (const day of order) {
    seen.push(day)
    const r = Streak.applyDay(summary, day, zone, policy)
    if (r._tag === "Applied") summary = r.summary
    else if (r._tag === "NeedsHistory") summary = Streak.fromDays(seen, zone, policy, grants)
  }
  return summary
}

const noonOf = (day: LocalDate, zone: string, policy: Policy.Policy): number =>
  Calendar.startOfActivityDay(day, zone, policy.dayStartHour).getTime() + 12 * 3_600_000

describe("streak policies: properties", () => {
  it.prop(
    "counting in any arrival order equals the recomputation from every day and grant",
    [
      policyArb,
      fc.constantFrom(...ZONES),
      daysArb(200).chain((days) => fc.tuple(fc.constant(days), fc.shuffledSubarray(days, { minLength: days.length }))),
      grantsArb(200)
    ],
    ([policy, zone, [days, order], grants]) => {
      const expected = Streak.fromDays(days, zone, policy, grants)
      assert.deepStrictEqual(countInOrder(order, zone, policy, grants), expected)
      // Sorted arrival is the O(1) path throughout, except where a grant is dated after a first day.
      assert.deepStrictEqual(countInOrder([...days].sort(), zone, policy, grants), expected)
    },
    { fastCheck: { numRuns: 300, seed: 46 } }
  )

  it.prop(
    "best is never below current, at any later instant; a ledger's kept periods in the chain are current",
    [policyArb, fc.constantFrom(...ZONES), daysArb(150), grantsArb(150), fc.integer({ min: 0, max: 60 })],
    ([policy, zone, days, grants, later]) => {
      const summary = Streak.fromDays(days, zone, policy, grants)
      const last = summary.lastActiveDay!
      const today = Calendar.addDays(last, later)
      const state = Streak.evaluate(summary, noonOf(today, zone, policy), zone, policy)
      assert.isAtLeast(state.best, state.current)
      assert.isAtLeast(summary.best, summary.run)
      assert.isAtMost(state.freezes, policy.freezes.max)
      // The ledger tells the same story: kept periods since the last missed one are `current`.
      const ledger = Streak.ledger(days, grants, state.today, zone, policy)
      let chain = 0
      for (const p of ledger) {
        if (p.status === "kept") chain++
        else if (p.status === "missed") chain = 0
      }
      assert.strictEqual(chain, state.current)
    },
    { fastCheck: { numRuns: 300, seed: 46 } }
  )

  it.prop(
    "a freeze never revives a chain that had ended: before every frozen period comes a kept one, with no missed between",
    [policyArb, fc.constantFrom(...ZONES), daysArb(150), grantsArb(150)],
    ([policy, zone, days, grants]) => {
      const today = Calendar.addDays(BASE, 170)
      const ledger = Streak.ledger(days, grants, today, zone, policy)
      ledger.forEach((p, i) => {
        if (p.status !== "frozen") return
        let j = i - 1
        while (j >= 0 && (ledger[j]!.status === "rest" || ledger[j]!.status === "frozen")) j--
        assert.isAtLeast(j, 0, `frozen ${p.start} opens the ledger`)
        assert.strictEqual(ledger[j]!.status, "kept", `frozen ${p.start} follows ${ledger[j]!.status}`)
      })
    },
    { fastCheck: { numRuns: 300, seed: 46 } }
  )

  it.prop(
    "a late action that fills a frozen day gives back the freeze it cost (daily, nothing earned or granted)",
    [
      fc.integer({ min: 1, max: 5 }),
      fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 2 }),
      fc.constantFrom(...ZONES),
      daysArb(60)
    ],
    ([freezes, restDays, zone, days]) => {
      const policy = Schema.decodeSync(Policy.Policy)({ restDays, freezes: { initial: freezes, max: freezes } })
      const summary = Streak.fromDays(days, zone, policy)
      const now = noonOf(summary.lastActiveDay!, zone, policy)
      const before = Streak.evaluate(summary, now, zone, policy)
      const ledger = Streak.ledger(days, [], before.today, zone, policy)
      const frozen = ledger.findIndex((p) => p.status === "frozen")
      // A frozen day in the chain that is alive today: nothing after it was missed.
      fc.pre(frozen >= 0 && !ledger.slice(frozen).some((p) => p.status === "missed"))
      const filled = ledger[frozen]!.start
      // Counted as a late action: it needs the history, and the recomputation gives the freeze back.
      assert.deepStrictEqual(Streak.applyDay(summary, filled, zone, policy), { _tag: "NeedsHistory" })
      const after = Streak.evaluate(Streak.fromDays([...days, filled], zone, policy), now, zone, policy)
      assert.strictEqual(after.freezes, before.freezes + 1)
      assert.strictEqual(after.current, before.current + 1)
    },
    { fastCheck: { numRuns: 300, seed: 46 } }
  )

  it.prop(
    "due checks at random instants announce exactly the ledger's freezes used and at most one break, each once",
    [
      policyArb,
      fc.constantFrom(...ZONES),
      daysArb(60),
      fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 80, maxLength: 80 })
    ],
    ([policy, zone, days, gapsInHours]) => {
      const summary = Streak.fromDays(days, zone, policy)
      const last = summary.lastActiveDay!
      let notified: Streak.Notified = { atRiskFor: undefined, brokenAfter: undefined }
      let t = noonOf(last, zone, policy)
      const used: Array<string> = []
      const atRisk: Array<string> = []
      let broken = 0
      const check = () => {
        const due = Streak.nextDueAt(summary, zone, notified, policy, t)
        const events = Streak.dueEvents(summary, zone, t, notified, policy)
        // The indexed instant is never later than an event that is due.
        if (events.length > 0) assert.isTrue(due !== undefined && due.getTime() <= t)
        for (const e of events) {
          notified = Streak.sent(notified, e)
          if (e._tag === "FreezeUsed") used.push(e.period.start)
          else if (e._tag === "AtRisk") {
            atRisk.push(e.period.start)
            assert.strictEqual(Calendar.activityDay(t, zone, policy.dayStartHour), e.localDate)
          } else broken++
        }
      }
      for (const hours of gapsInHours) {
        t += hours * 3_600_000
        check()
      }
      const today = Calendar.activityDay(t, zone, policy.dayStartHour)
      const ledger = Streak.ledger(days, [], today, zone, policy)
      // Periods from the last active one on: those before it were judged before this history ended.
      const expectedUsed = ledger.filter((p) => p.status === "frozen" && p.end >= last).map((p) => p.start)
      assert.deepStrictEqual(used, expectedUsed)
      assert.strictEqual(new Set(atRisk).size, atRisk.length)
      assert.isAtMost(broken, 1)
      // A live chain that is over by now was announced broken, once.
      const state = Streak.evaluate(summary, t, zone, policy)
      assert.strictEqual(broken, summary.run > 0 && state.current === 0 ? 1 : 0)
    },
    { fastCheck: { numRuns: 300, seed: 46 } }
  )
})
