/**
 * Forgiveness as pure functions (docs/streak-semantics.md#forgiveness): whether a period may be
 * repaired and a pause or an outage window declared, and a streak row recomputed with them.
 */
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"
import type { Pause, Program, Repair, StreakRow } from "./Domain.js"
import { type Forgiven, forgivenessOf, notifiedOf, rowOf, summaryOf } from "./internal/streakProgress.js"
import type * as Policy from "./Policy.js"
import * as Streak from "./Streak.js"

/** Longest pause, counting both ends. */
export const maxPauseDays = 90

/** Longest reason of a repair or an outage window. */
export const maxReasonLength = 500

/** Longest outage window. */
export const maxOutageMs = 7 * 24 * 60 * 60 * 1000

const DAY_MS = 24 * 60 * 60 * 1000

/** Repairs count against the allowance for this long after they are made. */
export const allowanceMs = 30 * DAY_MS

/** The answer of a check: what was asked, or why it is refused. */
export type Check<A> = { readonly _tag: "Allowed"; readonly value: A } | {
  readonly _tag: "Refused"
  readonly why: string
}

const allowed = <A>(value: A): Check<A> => ({ _tag: "Allowed", value })
const refused = <A>(why: string): Check<A> => ({ _tag: "Refused", why })

/** What a check of a member reads. */
export interface Member {
  readonly row: StreakRow | undefined
  readonly days: ReadonlyArray<LocalDate>
  readonly zone: string
  readonly policy: Policy.Policy
  readonly program: Program
  readonly now: Date
}

const todayOf = (m: Member): LocalDate => Calendar.activityDay(m.now, m.zone, m.policy.dayStartHour)

/** The member's periods as the ledger explains them today. */
export const ledgerOf = (m: Member): ReadonlyArray<Streak.LedgerPeriod> =>
  Streak.ledger(
    m.days,
    m.row?.grants ?? [],
    todayOf(m),
    m.zone,
    m.policy,
    forgivenessOf(m.row, m.program) ?? Streak.noForgiveness
  )

/**
 * Whether the period holding `day` may be repaired: it is `missed` in the ledger, its last day
 * plus `repairWindowDays` is not before today, and the member had fewer than `repairsPer30Days`
 * repairs in the last 30 days (counted by when they were made).
 */
export const repairCheck = (m: Member, day: LocalDate): Check<Streak.Period> => {
  const { policy } = m
  if (policy.repairWindowDays === 0) return refused("the program's policy allows no repairs (repairWindowDays is 0)")
  const period = Streak.periodOf(day, policy)
  const found = ledgerOf(m).find((p) => p.start === period.start)
  if (found === undefined) return refused("the period is not in the member's ledger")
  if (found.status !== "missed") return refused(`the period is ${found.status}, not missed`)
  if (Calendar.addDays(period.end, policy.repairWindowDays) < todayOf(m)) {
    return refused(`more than ${policy.repairWindowDays} days have passed since the period ended`)
  }
  const since = m.now.getTime() - allowanceMs
  const recent = (m.row?.repairs ?? []).filter((r) => Date.parse(r.at) > since).length
  if (recent >= policy.repairsPer30Days) {
    return refused(`the member already had ${recent} repairs in the last 30 days`)
  }
  return allowed(period)
}

/** Whether a pause from `start` to `end` may be declared (the bounds are checked by the caller). */
export const pauseCheck = (m: Member, start: LocalDate, end: LocalDate): Check<"overlaps" | undefined> => {
  if (start > end) return refused("start must not be after end")
  if (Calendar.addDays(start, maxPauseDays - 1) < end) return refused(`a pause lasts at most ${maxPauseDays} days`)
  if (end < todayOf(m)) return refused("end must not be before the member's today")
  const overlaps = (m.row?.pauses ?? []).some((p) => p.start <= end && start <= p.end)
  return allowed(overlaps ? "overlaps" : undefined)
}

/** Whether a pause may be removed: only before its start day. */
export const removable = (m: Member, pause: Pause): boolean => todayOf(m) < pause.start

/** Why an outage window may not be declared at `now`, if it may not. */
export const outageProblem = (start: Date, end: Date, now: Date): string | undefined => {
  if (start.getTime() >= end.getTime()) return "start must be before end"
  if (end.getTime() - start.getTime() > maxOutageMs) return "an outage window lasts at most 7 days"
  if (start.getTime() > now.getTime()) return "start must not be in the future (a window is in the past or ongoing)"
  return undefined
}

/**
 * The row recomputed from its days with `forgiven` (its repairs and pauses) under `program`'s
 * windows. What was sent stays sent. Once a `streak.broken` was sent, the breaks the new history
 * has already passed count as sent (a repair made late does not announce a break of the past),
 * and one sent for a run that the new history keeps alive is let go, so that the run's next
 * break is announced (never the same break twice).
 */
export const recomputed = (
  row: StreakRow,
  days: ReadonlyArray<LocalDate>,
  policy: Policy.Policy,
  program: Program,
  now: Date,
  forgiven: Forgiven
): { readonly row: StreakRow; readonly summary: Streak.Summary } => {
  const summary = Streak.fromDays(days, row.timezone, policy, row.grants ?? [], forgivenessOf(forgiven, program))
  const sent = notifiedOf(row)
  const notified = sent.brokenAfter === undefined
    ? sent
    : { ...sent, brokenAfter: Streak.settledAt(summary, row.timezone, now, policy).brokenAfter }
  return { row: rowOf(row, summary, row.timezone, notified, now, policy, forgiven), summary }
}

/** A row with one more repair. */
export const withRepair = (row: StreakRow, repair: Repair): Forgiven => ({
  repairs: [...(row.repairs ?? []), repair],
  pauses: row.pauses ?? []
})

/** A row with its pauses replaced (kept in start order). */
export const withPauses = (row: StreakRow, pauses: ReadonlyArray<Pause>): Forgiven => ({
  repairs: row.repairs ?? [],
  pauses: [...pauses].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))
})

/** A streak an outage window restored: its row after, the period forgiven, its state now. */
export interface Restored {
  readonly row: StreakRow
  readonly period: Streak.Period
  readonly current: number
  readonly best: number
}

/**
 * A batch of a program's rows recomputed once an outage window is added (`before` and `after`
 * the program without and with it): every row moved, and those whose `current` grew, restored.
 */
export const restore = (
  rows: ReadonlyArray<StreakRow>,
  days: ReadonlyArray<ReadonlyArray<LocalDate>>,
  policy: Policy.Policy,
  before: Program,
  after: Program,
  now: Date
): { readonly rows: ReadonlyArray<StreakRow>; readonly restored: ReadonlyArray<Restored> } => {
  const moved: Array<StreakRow> = []
  const restored: Array<Restored> = []
  rows.forEach((row, i) => {
    const was = Streak.evaluate(summaryOf(row, policy, before), now, row.timezone, policy).current
    const next = recomputed(row, days[i]!, policy, after, now, row)
    moved.push(next.row)
    const state = Streak.evaluate(next.summary, now, row.timezone, policy)
    if (state.current <= was) return
    const member: Member = { row: next.row, days: days[i]!, zone: row.timezone, policy, program: after, now }
    const forgiven = ledgerOf(member).filter((p) => p.status === "forgiven")
    const period = forgiven[forgiven.length - 1]
    if (period !== undefined) {
      restored.push({
        row: next.row,
        period: { start: period.start, end: period.end },
        current: state.current,
        best: state.best
      })
    }
  })
  return { rows: moved, restored }
}
