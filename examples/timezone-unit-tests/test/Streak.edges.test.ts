/**
 * Streak rules across time-zone edges, with `TestClock` standing in for "now": each test sets
 * the clock to the instant it is about and reads it back through `Clock`, as the services do.
 * `it.effect` runs every test on a fresh TestClock (starting at 1970-01-01T00:00:00Z).
 */
import { assert, describe, it } from "@effect/vitest"
import { Calendar, Streak } from "@streaks/core"
import { Clock, Effect, TestClock } from "effect"
import { type Action, daysOf, stateAt } from "../src/History.js"

const day = Calendar.unsafeLocalDate
const at = (iso: string) => new Date(iso)

/** Moves the test clock to `iso` and evaluates `summary` at the clock's "now" in `zone`. */
const stateWhenClockReads = (iso: string, summary: Streak.Summary, zone: string) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(at(iso).getTime())
    return Streak.evaluate(summary, yield* Clock.currentTimeMillis, zone)
  })

describe("America/Santiago, where 2024-09-08 began at 01:00 (04:00Z)", () => {
  const zone = "America/Santiago"
  const summary = Streak.fromDays([day("2024-09-05"), day("2024-09-06"), day("2024-09-07")], zone)

  it("the streak falls at risk when 2024-09-08 really starts (04:00Z), not an hour earlier", () => {
    assert.strictEqual(Streak.atRiskAt(summary, zone)?.toISOString(), "2024-09-08T04:00:00.000Z")
    assert.strictEqual(Streak.brokenAt(summary, zone)?.toISOString(), "2024-09-09T03:00:00.000Z")
  })

  it.effect("done at 23:59 on the 7th, pending from the first instant of the 8th, broken when the 9th starts", () =>
    Effect.gen(function*() {
      const lastMoment = yield* stateWhenClockReads("2024-09-08T03:59:59.999Z", summary, zone)
      assert.deepStrictEqual([lastMoment.today, lastMoment.current, lastMoment.todayDone], ["2024-09-07", 3, true])

      const firstMoment = yield* stateWhenClockReads("2024-09-08T04:00:00.000Z", summary, zone)
      assert.deepStrictEqual([firstMoment.today, firstMoment.current, firstMoment.pending], ["2024-09-08", 3, true])

      const stillOwed = yield* stateWhenClockReads("2024-09-09T02:59:59.999Z", summary, zone)
      assert.deepStrictEqual([stillOwed.today, stillOwed.current, stillOwed.pending], ["2024-09-08", 3, true])

      const broken = yield* stateWhenClockReads("2024-09-09T03:00:00.000Z", summary, zone)
      assert.deepStrictEqual([broken.today, broken.current, broken.best], ["2024-09-09", 0, 3])
    }))
})

describe("Europe/London's 25-hour day, 2024-10-27", () => {
  const zone = "Europe/London"
  const summary = Streak.fromDays([day("2024-10-25"), day("2024-10-26")], zone)

  it.effect("a member who owes the 27th still has until 00:00Z on the 28th, 25 hours after the day began", () =>
    Effect.gen(function*() {
      // 24 hours after the day began (23:00Z on the 26th) it is only 23:00 on the 27th in London.
      const late = yield* stateWhenClockReads("2024-10-27T23:30:00.000Z", summary, zone)
      assert.deepStrictEqual([late.today, late.current, late.pending], ["2024-10-27", 2, true])
      const over = yield* stateWhenClockReads("2024-10-28T00:00:00.000Z", summary, zone)
      assert.deepStrictEqual([over.today, over.current], ["2024-10-28", 0])
    }))
})

describe("either side of the date line", () => {
  // Two actions an hour apart, at the same instants for both members.
  const instants = [at("2024-06-15T09:30:00Z"), at("2024-06-15T10:30:00Z")]

  it("on Kiritimati (+14) they straddle local midnight: two active days, a 2-day streak", () => {
    const actions: Array<Action> = instants.map((a) => ({ at: a, tz: "Pacific/Kiritimati" }))
    assert.deepStrictEqual(daysOf(actions).map(String), ["2024-06-15", "2024-06-16"])
    assert.strictEqual(stateAt(actions, at("2024-06-15T11:00:00Z"), "Pacific/Kiritimati").current, 2)
  })

  it("in Pago Pago (-11) both fall on the evening of the 14th: one active day", () => {
    const actions: Array<Action> = instants.map((a) => ({ at: a, tz: "Pacific/Pago_Pago" }))
    assert.deepStrictEqual(daysOf(actions).map(String), ["2024-06-14", "2024-06-14"])
    assert.strictEqual(stateAt(actions, at("2024-06-15T11:00:00Z"), "Pacific/Pago_Pago").current, 1)
  })
})

describe("a traveller", () => {
  it("Paris on the 8th and 9th, then 22:00 on the 10th in New York: three consecutive local days", () => {
    const actions: Array<Action> = [
      { at: at("2024-03-08T19:00:00Z"), tz: "Europe/Paris" },
      { at: at("2024-03-09T19:00:00Z"), tz: "Europe/Paris" },
      // 22:00 EDT on the 10th is already 03:00 on the 11th in Paris.
      { at: at("2024-03-11T02:00:00Z"), tz: "America/New_York" }
    ]
    assert.deepStrictEqual(daysOf(actions).map(String), ["2024-03-08", "2024-03-09", "2024-03-10"])
    const now = stateAt(actions, at("2024-03-11T02:30:00Z"), "America/New_York")
    assert.deepStrictEqual([now.today, now.current, now.todayDone], ["2024-03-10", 3, true])
  })

  it("dating the last action in the home zone instead would have skipped the 10th and broken the run", () => {
    const homeZoneOnly = [
      day("2024-03-08"),
      day("2024-03-09"),
      Calendar.localDate(at("2024-03-11T02:00:00Z"), "Europe/Paris")
    ]
    assert.strictEqual(Streak.fromDays(homeZoneOnly, "Europe/Paris").run, 1)
  })

  it("flying west lands on the day before the last action's day: the run counts up to that day", () => {
    const actions: Array<Action> = [
      { at: at("2024-03-09T23:00:00Z"), tz: "Asia/Tokyo" }, // 08:00 on the 10th in Tokyo
      { at: at("2024-03-10T23:00:00Z"), tz: "Asia/Tokyo" } // 08:00 on the 11th in Tokyo
    ]
    // Landed in Los Angeles: 20:00 on the 10th there.
    const now = stateAt(actions, at("2024-03-11T03:00:00Z"), "America/Los_Angeles")
    assert.deepStrictEqual([now.today, now.current, now.todayDone], ["2024-03-10", 1, true])
  })
})

describe("Pacific/Apia, which skipped 2011-12-30", () => {
  const zone = "Pacific/Apia"

  it("the 29th and the 31st are consecutive days: the run goes on", () => {
    const summary = Streak.fromDays([day("2011-12-28"), day("2011-12-29"), day("2011-12-31")], zone)
    assert.strictEqual(summary.run, 3)
    assert.strictEqual(Streak.fromDays([day("2011-12-29"), day("2011-12-31")], "Pacific/Pago_Pago").run, 1)
  })

  it.effect("after the 29th, the owed day is the 31st, starting 10:00Z on the 30th", () =>
    Effect.gen(function*() {
      const summary = Streak.fromDays([day("2011-12-28"), day("2011-12-29")], zone)
      assert.strictEqual(Streak.atRiskAt(summary, zone)?.toISOString(), "2011-12-30T10:00:00.000Z")
      const owed = yield* stateWhenClockReads("2011-12-30T10:00:00.000Z", summary, zone)
      assert.deepStrictEqual([owed.today, owed.current, owed.pending], ["2011-12-31", 2, true])
    }))
})
