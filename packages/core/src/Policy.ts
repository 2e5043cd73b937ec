/**
 * How a program counts (docs/streak-semantics.md#streak-policies): the period (day, ISO week,
 * month) and the active days it needs, when a member's day starts, rest days, the freeze bank and
 * the at-risk hour. A program without a policy counts with `defaultPolicy`, exactly as the daily
 * rules and due events describe (docs/streak-semantics.md#the-rules, #at-risk-and-broken).
 */
import { Either, ParseResult, Schema } from "effect"

export const Cadence = Schema.Literal("daily", "weekly", "monthly")
export type Cadence = typeof Cadence.Type

/** `streak.mode` in answers: "continuous" for daily, else the cadence. */
export const Mode = Schema.Literal("continuous", "weekly", "monthly")
export type Mode = typeof Mode.Type

/** The bounds a policy is checked against (what API documents show, kept in one place). */
export const limits = {
  /** Most active days a period may ask for, by cadence. */
  target: { daily: 1, weekly: 7, monthly: 28 },
  /** Most freezes a bank may hold (`freezes.max`, hence `freezes.initial`). */
  freezes: 10,
  /** Largest `freezes.earnEvery`. */
  earnEvery: 1000,
  /** Most rest days: one weekday at least must count. */
  restDays: 6,
  /** Largest `repairWindowDays`. */
  repairWindowDays: 365,
  /** Largest `repairsPer30Days`. */
  repairsPer30Days: 10
} as const

const hour = (name: string) =>
  Schema.Int.pipe(
    Schema.between(0, 23, { message: () => `${name} must be an integer from 0 to 23` })
  )

const count = (name: string, max: number) =>
  Schema.Int.pipe(
    Schema.between(0, max, { message: () => `${name} must be an integer from 0 to ${max}` })
  )

/** The freeze bank: `initial` freezes, one more each `earnEvery` kept periods (0: never), at most `max`. */
export const Freezes = Schema.Struct({
  initial: Schema.optionalWith(count("freezes.initial", limits.freezes), { default: () => 0, exact: true }),
  max: Schema.optionalWith(count("freezes.max", limits.freezes), { default: () => 0, exact: true }),
  earnEvery: Schema.optionalWith(count("freezes.earnEvery", limits.earnEvery), { default: () => 0, exact: true })
})
export type Freezes = typeof Freezes.Type

const Weekday = Schema.Int.pipe(
  Schema.between(1, 7, { message: () => "restDays holds ISO weekdays: integers from 1 (Monday) to 7 (Sunday)" })
)

/** Rules that involve several fields; the first broken one is the message. */
const consistent = (p: {
  readonly cadence: Cadence
  readonly target: number
  readonly restDays: ReadonlyArray<number>
  readonly freezes: Freezes
}): string | undefined => {
  const limit = limits.target[p.cadence]
  if (p.target < 1 || p.target > limit) {
    return p.cadence === "daily"
      ? "target must be 1 for a daily cadence"
      : `target must be from 1 to ${limit} for a ${p.cadence} cadence`
  }
  if (p.restDays.length > 0 && p.cadence !== "daily") return "restDays are for a daily cadence only"
  if (new Set(p.restDays).size !== p.restDays.length) return "restDays must not repeat a weekday"
  // Seven rest days would make a streak that can never be kept nor broken.
  if (p.restDays.length > limits.restDays) return "restDays must leave at least one weekday that counts"
  if (p.freezes.initial > p.freezes.max) return "freezes.initial must not exceed freezes.max"
  return undefined
}

/**
 * A program's policy. Every field may be left out and takes its default value (a `PUT` of a
 * policy replaces it whole, so a field left out is reset to its default).
 */
export class Policy extends Schema.Class<Policy>("Policy")(
  Schema.Struct({
    cadence: Schema.optionalWith(Cadence, { default: () => "daily" as const, exact: true }),
    target: Schema.optionalWith(Schema.Int, { default: () => 1, exact: true }),
    dayStartHour: Schema.optionalWith(hour("dayStartHour"), { default: () => 0, exact: true }),
    restDays: Schema.optionalWith(Schema.Array(Weekday), { default: () => [], exact: true }),
    freezes: Schema.optionalWith(Freezes, { default: () => ({ initial: 0, max: 0, earnEvery: 0 }), exact: true }),
    atRiskHour: Schema.optionalWith(hour("atRiskHour"), { default: () => 0, exact: true }),
    /** Days after a missed period's last day during which it may be repaired (0: no repairs). */
    repairWindowDays: Schema.optionalWith(count("repairWindowDays", limits.repairWindowDays), {
      default: () => 0,
      exact: true
    }),
    /** Repairs a member may have within any 30 days. */
    repairsPer30Days: Schema.optionalWith(count("repairsPer30Days", limits.repairsPer30Days), {
      default: () => 1,
      exact: true
    })
  }).pipe(Schema.filter((p) => consistent(p)))
) {}

/** The policy of a program that has none: daily, one action a day, midnight, no rest, no freezes. */
export const defaultPolicy: Policy = Schema.decodeSync(Policy)({})

/** The policy a program counts with. */
export const of = (program: { readonly policy?: Policy | undefined }): Policy => program.policy ?? defaultPolicy

/** True when `policy` counts exactly as the default one. */
export const isDefault = (policy: Policy): boolean =>
  policy === defaultPolicy ||
  (policy.cadence === "daily" && policy.dayStartHour === 0 && policy.restDays.length === 0 &&
    policy.freezes.initial === 0 && policy.freezes.max === 0 && policy.atRiskHour === 0)

/** `streak.mode` of a policy's streaks. */
export const modeOf = (policy: Policy): Mode => (policy.cadence === "daily" ? "continuous" : policy.cadence)

/** The policy as JSON (what the API shows and what adapters store). */
export const toJson = (policy: Policy) => ({
  cadence: policy.cadence,
  target: policy.target,
  dayStartHour: policy.dayStartHour,
  restDays: [...policy.restDays],
  freezes: { initial: policy.freezes.initial, max: policy.freezes.max, earnEvery: policy.freezes.earnEvery },
  atRiskHour: policy.atRiskHour,
  repairWindowDays: policy.repairWindowDays,
  repairsPer30Days: policy.repairsPer30Days
})

const decodeEither = Schema.decodeUnknownEither(Policy, { onExcessProperty: "error" })

/**
 * A policy from a request body, or the message of its first problem, naming the field
 * ("policy.target: …"): what an `INVALID_BODY` answer says.
 */
export const decode = (input: unknown): Either.Either<Policy, string> =>
  typeof input !== "object" || input === null || Array.isArray(input)
    ? Either.left("policy must be an object")
    : Either.mapLeft(decodeEither(input), (error) => {
      const [first] = ParseResult.ArrayFormatter.formatErrorSync(error)
      if (first === undefined) return "policy is not valid"
      const path = ["policy", ...first.path.map(String)].join(".")
      return `${path}: ${first.message}`
    })
