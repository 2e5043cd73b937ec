/** The widget's words: a count with its unit, plural-aware (`Intl.PluralRules`), per streak mode. */

const rules = new Intl.PluralRules("en")

// `streak.mode` of the state answer: "continuous" counts days (docs/streak-semantics.md#the-rules, #streak-policies).
const units: Record<string, string> = { weekly: "week", monthly: "month" }

/** The unit alone: "day", "days", "week", "weeks", ... */
export const unit = (n: number, mode: string): string =>
  `${units[mode] ?? "day"}${rules.select(n) === "one" ? "" : "s"}`

/** The count and its unit: "1 day", "3 days", "2 weeks". */
export const count = (n: number, mode: string): string => `${n} ${unit(n, mode)}`

/**
 * The line under the count: a weekly or monthly streak speaks of its period's active days ("1 of 2
 * days this week", "Done this week"); a daily one of today ("Done for today", "Rest day", …).
 */
export const progress = (
  streak: {
    readonly todayDone: boolean
    readonly pending: boolean
    readonly period?: { readonly done: number; readonly target: number }
  },
  mode: string,
  restDay: boolean
): string => {
  const period = streak.period
  const name = units[mode]
  if (period !== undefined && name !== undefined) {
    return period.done >= period.target
      ? `Done this ${name}`
      : `${period.done} of ${count(period.target, "continuous")} this ${name}`
  }
  if (streak.todayDone) return "Done for today"
  if (restDay) return "Rest day"
  return streak.pending ? "Still to do today" : "Start today"
}
