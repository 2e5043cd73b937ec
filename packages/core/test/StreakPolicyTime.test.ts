/**
 * Time correctness of streak policies (docs/streak-semantics.md#streak-policies): a day start hour
 * across DST changes, weekly periods across a year boundary, monthly periods in February of a leap
 * year, rest days for a traveller, and a weekly streak of a member who crosses the date line
 * mid-week.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Calendar from "../src/Calendar.js"
import * as Policy from "../src/Policy.js"
import * as Streak from "../src/Streak.js"

const d = Calendar.unsafeLocalDate
const at = (iso: string) => new Date(iso).getTime()
const iso = (date: Date | undefined) => date?.toISOString()
const policy = (fields: Record<string, unknown>) => Schema.decodeSync(Policy.Policy)(fields)

describe("day start hour across DST", () => {
  const ny = "America/New_York"
  const fourAm = policy({ dayStartHour: 4 })

  it("a 4 am boundary on a fall-back night: the activity day of Nov 1 lasts 25 hours", () => {
    // 2025-11-02: clocks go from 02:00 EDT back to 01:00 EST.
    assert.strictEqual(iso(Calendar.startOfActivityDay(d("2025-11-01"), ny, 4)), "2025-11-01T08:00:00.000Z")
    assert.strictEqual(iso(Calendar.startOfActivityDay(d("2025-11-02"), ny, 4)), "2025-11-02T09:00:00.000Z")
    assert.strictEqual(Calendar.activityDay(at("2025-11-02T08:59:59.999Z"), ny, 4), "2025-11-01") // 03:59:59 EST
    assert.strictEqual(Calendar.activityDay(at("2025-11-02T09:00:00Z"), ny, 4), "2025-11-02") // 04:00 EST
    // 04:30 EDT on Nov 1 and 03:30 EST on Nov 2 are the same activity day: one day, counted once.
    const first = Calendar.activityDay(at("2025-11-01T08:30:00Z"), ny, 4)
    const second = Calendar.activityDay(at("2025-11-02T08:30:00Z"), ny, 4)
    const s = Streak.fromDays([first, second], ny, fourAm)
    assert.deepStrictEqual([s.lastActiveDay, s.run], ["2025-11-01", 1])
    assert.deepStrictEqual(Streak.applyDay(s, second, ny, fourAm), { _tag: "Duplicate" })
    const next = Streak.applyDay(s, Calendar.activityDay(at("2025-11-02T09:30:00Z"), ny, 4), ny, fourAm)
    assert.strictEqual(next._tag === "Applied" && next.summary.run, 2)
  })

  it("an at-risk hour before the day start falls on the next calendar date, near the end of the activity day", () => {
    const late = policy({ dayStartHour: 4, atRiskHour: 2 })
    const s = Streak.fromDays([d("2025-11-01")], ny, late)
    // Owed: the activity day Nov 2 (04:00 EST Nov 2 to 04:00 EST Nov 3); at risk at 02:00 EST Nov 3.
    assert.strictEqual(iso(Streak.atRiskAt(s, ny, late)), "2025-11-03T07:00:00.000Z")
    assert.strictEqual(iso(Streak.brokenAt(s, ny, late)), "2025-11-03T09:00:00.000Z")
    const event = Streak.dueEvent(
      s,
      ny,
      at("2025-11-03T07:00:00Z"),
      { atRiskFor: undefined, brokenAfter: undefined },
      late
    )
    assert.strictEqual(event?._tag === "AtRisk" ? event.localDate : undefined, d("2025-11-02"))
  })

  it("a boundary in a spring-forward gap starts at the first instant after the gap", () => {
    // 2025-03-09: 02:00 EST does not exist, clocks jump to 03:00 EDT.
    assert.strictEqual(iso(Calendar.startOfActivityDay(d("2025-03-09"), ny, 2)), "2025-03-09T07:00:00.000Z")
    assert.strictEqual(Calendar.activityDay(at("2025-03-09T06:59:59.999Z"), ny, 2), "2025-03-08")
    assert.strictEqual(Calendar.activityDay(at("2025-03-09T07:00:00Z"), ny, 2), "2025-03-09")
  })

  it("a boundary at a repeated hour starts the first time the hour comes (London, 01:00 on 2025-10-26)", () => {
    assert.strictEqual(
      iso(Calendar.startOfActivityDay(d("2025-10-26"), "Europe/London", 1)),
      "2025-10-26T00:00:00.000Z"
    )
    // The second 01:00 (GMT) is still the same activity day.
    assert.strictEqual(Calendar.activityDay(at("2025-10-26T01:30:00Z"), "Europe/London", 1), "2025-10-26")
  })
})

describe("weekly periods across a year boundary (ISO week 1)", () => {
  const weekly = policy({ cadence: "weekly", target: 2 })

  it("Monday 2024-12-30 opens ISO week 1 of 2025: days on both sides of New Year keep one week", () => {
    assert.deepStrictEqual(Streak.periodOf(d("2025-01-02"), weekly), { start: "2024-12-30", end: "2025-01-05" })
    const days = ["2024-12-23", "2024-12-27", "2024-12-30", "2025-01-02"].map(d)
    const s = Streak.fromDays(days, "UTC", weekly)
    assert.deepStrictEqual([s.run, s.periodDays], [2, 2])
    const state = Streak.evaluate(s, at("2025-01-03T12:00:00Z"), "UTC", weekly)
    assert.deepStrictEqual([state.mode, state.current, state.pending], ["weekly", 2, false])
    assert.deepStrictEqual(state.period, { start: "2024-12-30", end: "2025-01-05", done: 2, target: 2 })
  })

  it("week 53 of 2026 runs into 2027: 2026-12-31 and 2027-01-01 are one period", () => {
    assert.deepStrictEqual(Streak.periodOf(d("2027-01-01"), weekly), { start: "2026-12-28", end: "2027-01-03" })
    const s = Streak.fromDays(["2026-12-31", "2027-01-01"].map(d), "UTC", weekly)
    assert.strictEqual(s.run, 1)
  })
})

describe("monthly periods in February of a leap year", () => {
  it("target 28 in a 29-day February: the last chance day is Feb 2 (Feb 1 in 2023)", () => {
    const monthly = policy({ cadence: "monthly", target: 28 })
    const january = (year: number) => Array.from({ length: 28 }, (_, i) => Calendar.addDays(d(`${year}-01-01`), i))
    const leap = Streak.fromDays(january(2024), "UTC", monthly)
    assert.strictEqual(leap.run, 1)
    assert.strictEqual(iso(Streak.atRiskAt(leap, "UTC", monthly)), "2024-02-02T00:00:00.000Z")
    assert.strictEqual(iso(Streak.brokenAt(leap, "UTC", monthly)), "2024-03-01T00:00:00.000Z")
    const common = Streak.fromDays(january(2023), "UTC", monthly)
    assert.strictEqual(iso(Streak.atRiskAt(common, "UTC", monthly)), "2023-02-01T00:00:00.000Z")
  })

  it("target 1: at risk on Feb 29 at the at-risk hour; a day on Feb 29 keeps the month", () => {
    const monthly = policy({ cadence: "monthly", atRiskHour: 18 })
    const s = Streak.fromDays([d("2024-01-15")], "Europe/Paris", monthly)
    assert.strictEqual(iso(Streak.atRiskAt(s, "Europe/Paris", monthly)), "2024-02-29T17:00:00.000Z")
    const kept = Streak.fromDays(["2024-01-15", "2024-02-29"].map(d), "Europe/Paris", monthly)
    assert.strictEqual(kept.run, 2)
    assert.deepStrictEqual(Streak.periodOf(d("2024-02-10"), monthly), { start: "2024-02-01", end: "2024-02-29" })
  })
})

describe("rest days for a traveller", () => {
  const weekdays = policy({ restDays: [6, 7] })

  it("Friday in Tokyo, Monday in New York: the weekend rests, the run goes on", () => {
    const friday = Calendar.activityDay(at("2025-06-13T14:30:00Z"), "Asia/Tokyo", 0) // 23:30 Friday in Tokyo
    const monday = Calendar.activityDay(at("2025-06-16T04:30:00Z"), "America/New_York", 0) // 00:30 Monday in NY
    assert.deepStrictEqual([friday, monday], ["2025-06-13", "2025-06-16"])
    assert.strictEqual(Streak.fromDays([friday, monday], "America/New_York", weekdays).run, 2)
    assert.strictEqual(Streak.fromDays([friday, monday], "America/New_York").run, 1)
  })

  it("on a rest day nothing is owed; at risk only on Monday, in the zone the member is in now", () => {
    const s = Streak.fromDays([d("2025-06-13")], "America/New_York", weekdays)
    const sunday = Streak.evaluate(s, at("2025-06-15T20:00:00Z"), "America/New_York", weekdays)
    assert.deepStrictEqual([sunday.current, sunday.pending, sunday.todayDone], [1, false, false])
    assert.strictEqual(iso(Streak.atRiskAt(s, "America/New_York", weekdays)), "2025-06-16T04:00:00.000Z")
    assert.strictEqual(iso(Streak.brokenAt(s, "America/New_York", weekdays)), "2025-06-17T04:00:00.000Z")
    const strip = Streak.week(d("2025-06-15"), new Set(["2025-06-13"]), weekdays)
    assert.deepStrictEqual(strip.filter((e) => e.isRestDay).map((e) => e.isoDate), ["2025-06-14", "2025-06-15"])
  })
})

describe("a weekly streak across the date line", () => {
  const weekly = policy({ cadence: "weekly", target: 2 })

  it("Monday in Kiritimati (UTC+14), Wednesday in Pago Pago (UTC-11): one kept week, due in the new zone", () => {
    const monday = Calendar.activityDay(at("2025-06-08T10:30:00Z"), "Pacific/Kiritimati", 0) // 00:30 Mon Jun 9
    const wednesday = Calendar.activityDay(at("2025-06-11T20:00:00Z"), "Pacific/Pago_Pago", 0) // 09:00 Wed Jun 11
    assert.deepStrictEqual([monday, wednesday], ["2025-06-09", "2025-06-11"])
    const pago = "Pacific/Pago_Pago"
    const s = Streak.fromDays([monday, wednesday], pago, weekly)
    assert.deepStrictEqual([s.run, s.periodDays], [1, 2])
    // Sunday 23:00 in Pago Pago is already Tuesday in Kiritimati: the week is still the member's.
    const sunday = Streak.evaluate(s, at("2025-06-16T10:00:00Z"), pago, weekly)
    assert.deepStrictEqual([sunday.today, sunday.current, sunday.pending], ["2025-06-15", 1, false])
    // Next week needs two days: its last chance day is Saturday, at Pago Pago's midnight.
    assert.strictEqual(iso(Streak.atRiskAt(s, pago, weekly)), "2025-06-21T11:00:00.000Z")
    assert.strictEqual(iso(Streak.brokenAt(s, pago, weekly)), "2025-06-23T11:00:00.000Z")
  })
})
