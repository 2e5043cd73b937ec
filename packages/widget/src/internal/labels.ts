/** The widget's words: a count with its unit, plural-aware (`Intl.PluralRules`), per streak mode. */

const rules = new Intl.PluralRules("en")

// `streak.mode` of the state answer: "continuous" counts days (CONTRACT §6, §16).
const units: Record<string, string> = { weekly: "week", monthly: "month" }

/** The unit alone: "day", "days", "week", "weeks", ... */
export const unit = (n: number, mode: string): string =>
  `${units[mode] ?? "day"}${rules.select(n) === "one" ? "" : "s"}`

/** The count and its unit: "1 day", "3 days", "2 weeks". */
export const count = (n: number, mode: string): string => `${n} ${unit(n, mode)}`
