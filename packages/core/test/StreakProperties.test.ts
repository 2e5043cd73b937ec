/**
 * Properties of the streak calculus over random activity (random sets, random arrival orders,
 * duplicates) in a fixed zone and in zones with DST, midnight gaps, odd offsets and a skipped
 * date, checked against a naive reference that walks dates one by one.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Calendar from "../src/Calendar.js"
import type { LocalDate } from "../src/Calendar.js"
import * as Streak from "../src/Streak.js"

const ZONES = [
  "UTC",
  "America/New_York",
  "Europe/London",
  "America/Santiago",
  "America/Havana",
  "Asia/Beirut",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Pacific/Chatham",
  "Pacific/Kiritimati",
  "Pacific/Pago_Pago",
  "Pacific/Apia"
] as const
// Windows holding Apia's skipped 2011-12-30, the 2024 leap day, and the 2025 DST changes.
const BASES = ["2011-12-10", "2024-02-10", "2024-09-01", "2025-03-01", "2025-10-10"].map(Calendar.unsafeLocalDate)

const zone = fc.constantFrom(...ZONES)
const base = fc.constantFrom(...BASES)
/** A window and a zone; one case in two is Apia around its skipped date, the rarest edge. */
const scene = fc.oneof(
  fc.tuple(base, zone),
  fc.constant([Calendar.unsafeLocalDate("2011-12-10"), "Pacific/Apia"] as const)
)
/** Offsets from the base in arrival order: duplicates and any order allowed. */
const arrivals = fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 40 })

const datesOf = (b: LocalDate, offsets: ReadonlyArray<number>) => offsets.map((n) => Calendar.addDays(b, n))

/** What Ingest does: O(1) per action, recompute from every day seen on a late action. */
const fold = (days: ReadonlyArray<LocalDate>, tz: string): Streak.Summary => {
  const seen: Array<LocalDate> = []
  let s = Streak.empty
  for (const day of days) {
    seen.push(day)
    const r = Streak.applyDay(s, day, tz)
    if (r._tag === "Applied") s = r.summary
    else if (r._tag === "NeedsHistory") s = Streak.fromDays(seen, tz)
  }
  return s
}

/** docs/streak-semantics.md#the-rules read literally: walk back over existing dates while they are in D. */
const reference = (d: ReadonlySet<string>, today: LocalDate, tz: string) => {
  const runEndingAt = (x: LocalDate): number => {
    let n = 0
    while (d.has(x)) {
      n++
      x = Calendar.previousDay(x, tz)
    }
    return n
  }
  const todayDone = d.has(today)
  const current = todayDone ? runEndingAt(today) : runEndingAt(Calendar.previousDay(today, tz))
  const best = Math.max(0, ...Array.from(d, (x) => runEndingAt(x as LocalDate)))
  return { current, best, todayDone }
}

const foldEqualsFromDays = (b: LocalDate, offsets: ReadonlyArray<number>, tz: string) => {
  const days = datesOf(b, offsets)
  const folded = fold(days, tz)
  assert.deepStrictEqual(folded, Streak.fromDays(days, tz))
  assert.deepStrictEqual(folded, Streak.fromDays([...days].reverse(), tz))
  assert.isTrue(folded.best >= folded.run)
}

describe("incremental counting equals recomputation", () => {
  it.prop(
    "folding applyDay (fromDays on NeedsHistory) equals fromDays of the set, in America/New_York",
    [base, arrivals],
    ([b, offsets]) => foldEqualsFromDays(b, offsets, "America/New_York"),
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "folding applyDay (fromDays on NeedsHistory) equals fromDays of the set, in any zone",
    [scene, arrivals],
    ([[b, tz], offsets]) => foldEqualsFromDays(b, offsets, tz),
    { fastCheck: { numRuns: 300 } }
  )
})

describe("evaluate matches the literal rules", () => {
  it.prop(
    "current, best and todayDone equal a naive walk over dates; best >= current; pending iff current > 0 and not todayDone",
    [scene, arrivals, fc.integer({ min: -3, max: 44 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })],
    ([[b, tz], offsets, todayOffset, fraction]) => {
      // Actions dated in the member's zone only ever fall on dates that exist there.
      const days = datesOf(b, offsets).filter((x) => Calendar.dayExists(x, tz))
      const summary = fold(days, tz)
      const candidate = Calendar.addDays(b, todayOffset)
      const start = Calendar.startOfDay(candidate, tz).getTime()
      const end = Calendar.startOfDay(Calendar.nextDay(candidate, tz), tz).getTime()
      const now = start + Math.floor(fraction * (end - start))
      const state = Streak.evaluate(summary, now, tz)
      const today = Calendar.localDate(now, tz)
      assert.strictEqual(state.today, today)

      const set = new Set<string>(days)
      const ref = reference(set, today, tz)
      assert.strictEqual(state.best, ref.best)
      assert.isTrue(state.best >= state.current)
      assert.strictEqual(state.pending, state.current > 0 && !state.todayDone)

      // The summary knows the run ending at lastActiveDay; a today before that run (only possible
      // when actions are dated ahead of the member's today) is reported as outside it.
      const last = summary.lastActiveDay
      let runStart = last
      for (let i = 1; runStart !== undefined && i < summary.run; i++) runStart = Calendar.previousDay(runStart, tz)
      if (runStart === undefined || today >= runStart) {
        assert.deepStrictEqual({ current: state.current, todayDone: state.todayDone }, {
          current: ref.current,
          todayDone: ref.todayDone
        })
      } else {
        assert.deepStrictEqual({ current: state.current, todayDone: state.todayDone }, { current: 0, todayDone: false })
      }
    },
    { fastCheck: { numRuns: 400 } }
  )
})

describe("due events under any sweep schedule", () => {
  it.prop(
    "sweeps with random downtime send broken exactly once per run, and at-risk at most once, only during the owed day",
    [
      scene,
      fc.integer({ min: 1, max: 30 }),
      fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 200, maxLength: 200 })
    ],
    ([[b, tz], run, gapsInHours]) => {
      const days = Array.from({ length: run }, (_, i) => Calendar.addDays(b, i)).filter((x) =>
        Calendar.dayExists(x, tz)
      )
      const summary = Streak.fromDays(days, tz)
      const last = summary.lastActiveDay!
      const owed = Calendar.nextDay(last, tz)
      const atRiskAt = Streak.atRiskAt(summary, tz)!.getTime()
      const brokenAt = Streak.brokenAt(summary, tz)!.getTime()
      assert.strictEqual(atRiskAt, Calendar.startOfDay(owed, tz).getTime())
      assert.isTrue(atRiskAt < brokenAt)

      let notified: Streak.Notified = { atRiskFor: undefined, brokenAfter: undefined }
      let t = Calendar.startOfDay(last, tz).getTime()
      let atRisk = 0
      let broken = 0
      let sweptDuringOwedDay = false
      for (const hours of gapsInHours) {
        t += hours * 3_600_000
        if (t >= atRiskAt && t < brokenAt) sweptDuringOwedDay = true
        // The scheduler only looks at rows whose indexed instant has passed.
        const due = Streak.nextDueAt(summary, tz, notified)
        const event = Streak.dueEvent(summary, tz, t, notified)
        if (due === undefined || t < due.getTime()) {
          assert.isUndefined(event)
          continue
        }
        if (event?._tag === "AtRisk") {
          atRisk++
          assert.strictEqual(event.localDate, owed)
          assert.strictEqual(Calendar.localDate(t, tz), owed)
          notified = { ...notified, atRiskFor: event.localDate }
        } else if (event?._tag === "Broken") {
          broken++
          assert.deepStrictEqual(event, { _tag: "Broken", endedRun: summary.run, lastActiveDate: last })
          assert.isTrue(t >= brokenAt)
          notified = { ...notified, brokenAfter: event.lastActiveDate }
        }
      }
      assert.isAtMost(atRisk, 1)
      assert.strictEqual(atRisk, sweptDuringOwedDay ? 1 : 0)
      if (t >= brokenAt) {
        assert.strictEqual(broken, 1)
        assert.isUndefined(Streak.nextDueAt(summary, tz, notified))
      }
    },
    { fastCheck: { numRuns: 200 } }
  )
})
