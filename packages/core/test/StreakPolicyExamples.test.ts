/**
 * The worked examples of docs/streak-semantics.md ("Streak policies"), asserted as written there:
 * each history, its ledger, the state and the due instants.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Calendar from "../src/Calendar.js"
import * as Policy from "../src/Policy.js"
import * as Streak from "../src/Streak.js"

const d = Calendar.unsafeLocalDate
const policy = (fields: Record<string, unknown>) => Schema.decodeSync(Policy.Policy)(fields)

const example = (days: ReadonlyArray<string>, p: Policy.Policy, today: string, zone = "UTC") => {
  const summary = Streak.fromDays(days.map(d), zone, p)
  const noon = Calendar.startOfActivityDay(d(today), zone, p.dayStartHour).getTime() + 12 * 3_600_000
  const state = Streak.evaluate(summary, noon, zone, p)
  return {
    ledger: Streak.ledger(days.map(d), [], d(today), zone, p).map((
      l
    ): Array<unknown> => [l.start, l.activeDays, l.status]),
    state: [state.current, state.best, state.freezes, state.pending],
    due: [Streak.atRiskAt(summary, zone, p)?.toISOString(), Streak.brokenAt(summary, zone, p)?.toISOString()]
  }
}

describe("docs/streak-semantics.md: streak policies", () => {
  it("weekly, target 3, one freeze: a week with one day is frozen", () => {
    const days = ["03-02", "03-04", "03-06", "03-10", "03-17", "03-19", "03-20", "03-23"].map((x) => `2026-${x}`)
    const p = policy({ cadence: "weekly", target: 3, freezes: { initial: 1, max: 1 } })
    assert.deepStrictEqual(example(days, p, "2026-03-25"), {
      ledger: [["2026-03-02", 3, "kept"], ["2026-03-09", 1, "frozen"], ["2026-03-16", 3, "kept"], [
        "2026-03-23",
        1,
        "current"
      ]],
      state: [2, 2, 0, true],
      due: ["2026-03-28T00:00:00.000Z", "2026-03-30T00:00:00.000Z"]
    })
  })

  it("daily with the weekend as rest days", () => {
    const days = ["03-05", "03-06", "03-09", "03-10", "03-14"].map((x) => `2026-${x}`)
    const ex = example(days, policy({ restDays: [6, 7] }), "2026-03-16")
    assert.deepStrictEqual(ex.ledger.map(([, , status]) => status), [
      "kept",
      "kept",
      "rest",
      "rest",
      "kept",
      "kept",
      "missed",
      "missed",
      "missed",
      "kept",
      "rest",
      "current"
    ])
    assert.deepStrictEqual(ex.state, [1, 4, 0, true])
    assert.deepStrictEqual(ex.due, ["2026-03-16T00:00:00.000Z", "2026-03-17T00:00:00.000Z"])
  })

  it("freezes earned every 3 kept days, then used", () => {
    const days = ["01", "02", "03", "05", "06", "07", "09"].map((x) => `2026-03-${x}`)
    const ex = example(days, policy({ freezes: { initial: 0, max: 2, earnEvery: 3 } }), "2026-03-09")
    assert.deepStrictEqual(ex.ledger.map(([start, , status]) => `${String(start).slice(8)} ${status}`), [
      "01 kept",
      "02 kept",
      "03 kept",
      "04 frozen",
      "05 kept",
      "06 kept",
      "07 kept",
      "08 frozen",
      "09 kept"
    ])
    assert.deepStrictEqual(ex.state, [7, 7, 0, false])
  })

  it("monthly, target 8, at-risk hour 18 in Paris: February 2024 has 29 days", () => {
    const days = ["01-03", "01-09", "01-10", "01-15", "01-20", "01-22", "01-28", "01-30", "02-02", "02-05"].map((x) =>
      `2024-${x}`
    )
    const ex = example(days, policy({ cadence: "monthly", target: 8, atRiskHour: 18 }), "2024-02-20", "Europe/Paris")
    assert.deepStrictEqual(ex.ledger, [["2024-01-01", 8, "kept"], ["2024-02-01", 2, "current"]])
    assert.deepStrictEqual(ex.state, [1, 1, 0, true])
    assert.deepStrictEqual(ex.due, ["2024-02-24T17:00:00.000Z", "2024-02-29T23:00:00.000Z"])
  })

  it("a 4 am day start on New York's fall-back night, at risk at 2 am", () => {
    const ny = "America/New_York"
    const days = ["2025-11-01T08:30:00Z", "2025-11-02T06:30:00Z", "2025-11-02T08:59:59Z", "2025-11-02T09:00:00Z"].map((
      t
    ) => Calendar.activityDay(new Date(t), ny, 4))
    assert.deepStrictEqual(days, ["2025-11-01", "2025-11-01", "2025-11-01", "2025-11-02"])
    const ex = example(days, policy({ dayStartHour: 4, atRiskHour: 2 }), "2025-11-02", ny)
    assert.deepStrictEqual(ex.state, [2, 2, 0, false])
    assert.deepStrictEqual(ex.due, ["2025-11-04T07:00:00.000Z", "2025-11-04T09:00:00.000Z"])
  })
})
