/**
 * The widget's words (`internal/labels.ts`): counts in the streak's unit, and the line under the
 * count, which speaks of today for a daily streak and of the period for a weekly or monthly one.
 */
import { describe, expect, it } from "vitest"
import * as Labels from "../src/internal/labels.js"

describe("widget labels", () => {
  it("counts in days, weeks or months, plural-aware", () => {
    expect([Labels.count(1, "continuous"), Labels.count(3, "continuous")]).toEqual(["1 day", "3 days"])
    expect([Labels.count(1, "weekly"), Labels.count(2, "monthly")]).toEqual(["1 week", "2 months"])
  })

  it("a daily streak: done, rest day, still to do, start", () => {
    const daily = (todayDone: boolean, pending: boolean) => ({ todayDone, pending })
    expect(Labels.progress(daily(true, false), "continuous", false)).toBe("Done for today")
    expect(Labels.progress(daily(false, false), "continuous", true)).toBe("Rest day")
    expect(Labels.progress(daily(false, true), "continuous", false)).toBe("Still to do today")
    expect(Labels.progress(daily(false, false), "continuous", false)).toBe("Start today")
  })

  it("a weekly or monthly streak: the period's active days, then done for the period", () => {
    const periodic = (done: number, target: number) => ({ todayDone: true, pending: true, period: { done, target } })
    expect(Labels.progress(periodic(1, 3), "weekly", false)).toBe("1 of 3 days this week")
    expect(Labels.progress(periodic(0, 1), "monthly", false)).toBe("0 of 1 day this month")
    expect(Labels.progress(periodic(3, 3), "weekly", false)).toBe("Done this week")
  })
})
