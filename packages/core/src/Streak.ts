/**
 * The streak calculus of CONTRACT §6 and §8 as pure functions over activity days: count one day
 * in O(1), recompute from all days, evaluate the state at an instant, and compute when (and
 * which) at-risk / broken events fall due. No I/O and no clock: instants are passed in.
 */
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"

/**
 * How a program counts. Only "continuous" (one action per local day, consecutive days) exists;
 * every function dispatches on `Summary.mode` through `rulesOf`, so a weekly or freeze mode is a
 * new `Rules` value (and, if it needs state, new optional `Summary` fields), not a rewrite.
 */
export type Mode = "continuous"

/** What a streak row keeps so that counting an action never reads the member's history. */
export interface Summary {
  readonly mode: Mode
  readonly lastActiveDay: LocalDate | undefined
  /** Length of the run ending at `lastActiveDay` (0 when there is no activity). */
  readonly run: number
  /** Longest run ever (never less than `run`). */
  readonly best: number
}

export const empty: Summary = { mode: "continuous", lastActiveDay: undefined, run: 0, best: 0 }

/** The outcome of counting one active day against a summary. */
export type Applied =
  /** The day is the newest so far: the summary moved in O(1). */
  | { readonly _tag: "Applied"; readonly summary: Summary }
  /** The day is `lastActiveDay`: nothing changes. */
  | { readonly _tag: "Duplicate" }
  /** The day is older than `lastActiveDay` (late action): recompute with `fromDays`. */
  | { readonly _tag: "NeedsHistory" }

/** The per-mode decisions; everything else (dedup, late actions, due events) is shared. */
interface Rules {
  /** True when a run ending at `a` continues with `b` (a < b). */
  readonly follows: (a: LocalDate, b: LocalDate, zone: string) => boolean
  /** The day after `day` that is owed to keep a run ending at `day` alive. */
  readonly next: (day: LocalDate, zone: string) => LocalDate
}

const continuous: Rules = {
  // "Consecutive" means the next date that exists in the zone, so a skipped date (Pacific/Apia
  // 2011-12-30) does not break a run. Adjacent calendar dates always follow, so the common case
  // needs no zone lookup; only a gap of two or more dates asks whether the dates between exist.
  follows: (a, b, zone) => {
    const gap = Calendar.daysBetween(a, b)
    return gap === 1 || (gap > 1 && b <= Calendar.nextDay(a, zone))
  },
  next: Calendar.nextDay
}

const rulesOf = (mode: Mode): Rules => {
  switch (mode) {
    case "continuous":
      return continuous
  }
}

// Summaries are built field by field, not as `{ ...summary, … }`: on Node 20 (V8 11.3) an object
// made by a leading spread and then given more properties survives scavenges (a 5-line loop of
// `{ ...src, c }` promotes 2 MB per scavenge, `Object.assign` or a plain literal none), and this
// runs for every counted action (docs/performance.md).
const summaryFrom = (mode: Mode, lastActiveDay: LocalDate | undefined, run: number, best: number): Summary => ({
  mode,
  lastActiveDay,
  run,
  best
})

const emptyOf = (mode: Mode): Summary => (mode === empty.mode ? empty : summaryFrom(mode, undefined, 0, 0))

const DUPLICATE: Applied = { _tag: "Duplicate" }
const NEEDS_HISTORY: Applied = { _tag: "NeedsHistory" }

/**
 * Counts one active day (dated in its own zone; `zone` is the member's zone, used to tell which
 * dates exist). O(1): a day older than `lastActiveDay` may join or merge older runs, which the
 * summary cannot know, so it answers `NeedsHistory` and the caller recomputes with `fromDays`.
 */
export const applyDay = (before: Summary, day: LocalDate, zone: string): Applied => {
  const last = before.lastActiveDay
  if (last === undefined) {
    return { _tag: "Applied", summary: summaryFrom(before.mode, day, 1, Math.max(before.best, 1)) }
  }
  if (day === last) return DUPLICATE
  if (day < last) return NEEDS_HISTORY
  const run = rulesOf(before.mode).follows(last, day, zone) ? before.run + 1 : 1
  return { _tag: "Applied", summary: summaryFrom(before.mode, day, run, Math.max(before.best, run)) }
}

/** Recomputes a summary from every active day: order-independent, duplicates ignored. */
export const fromDays = (days: Iterable<LocalDate>, zone: string, mode: Mode = "continuous"): Summary => {
  // Ascending order makes every step the O(1) path of applyDay, so both share one definition.
  const sorted = Array.from(new Set(days)).sort()
  let summary = emptyOf(mode)
  for (const day of sorted) {
    const r = applyDay(summary, day, zone)
    if (r._tag === "Applied") summary = r.summary
  }
  return summary
}

/** One cell of the week strip (Monday..Sunday of today's ISO week). */
export interface WeekEntry {
  readonly isoDate: LocalDate
  readonly label: string
  readonly dayNumber: number
  readonly isToday: boolean
  readonly isCheckedIn: boolean
}

/** The member-facing state at an instant (CONTRACT §6). */
export interface State {
  readonly mode: Mode
  /** The member's local date at the instant. */
  readonly today: LocalDate
  readonly current: number
  readonly best: number
  readonly todayDone: boolean
  /** Alive, but today's action is still owed. */
  readonly pending: boolean
}

const state = (summary: Summary, today: LocalDate, current: number, todayDone: boolean): State => ({
  mode: summary.mode,
  today,
  current,
  best: Math.max(summary.best, current),
  todayDone,
  pending: current > 0 && !todayDone
})

/**
 * The state at `now` for a member whose local date is taken in `zone`. Exact whenever today is
 * on or after the first day of the run ending at `lastActiveDay` (always, unless actions were
 * dated ahead of the member's today, e.g. by a flight west). Otherwise only that run is known
 * and today counts as outside it: current 0.
 */
export const evaluate = (summary: Summary, now: Date | number, zone: string): State => {
  const today = Calendar.localDate(now, zone)
  const last = summary.lastActiveDay
  if (last === undefined) return state(summary, today, 0, false)
  if (today === last) return state(summary, today, summary.run, true)
  if (today > last) {
    const alive = rulesOf(summary.mode).follows(last, today, zone)
    return state(summary, today, alive ? summary.run : 0, false)
  }
  // Today is before the last active day: walk back along the run (at most `run` steps, in
  // practice one or two) to see whether today belongs to it.
  let day = last
  let index = 0
  while (day > today && index < summary.run) {
    day = Calendar.previousDay(day, zone)
    index++
  }
  const inRun = day === today && index < summary.run
  return state(summary, today, inRun ? summary.run - index : 0, inRun)
}

/** The week strip of `today`'s ISO week, marking the days found in `activeDays`. */
export const week = (today: LocalDate, activeDays: ReadonlySet<string>): ReadonlyArray<WeekEntry> =>
  weekDays(today).map(({ dayNumber, isoDate, label }) => ({
    isoDate,
    label,
    dayNumber,
    isToday: isoDate === today,
    isCheckedIn: activeDays.has(isoDate)
  }))

// Every widget read shows the week of a today that rarely changes (a few at once, across zones):
// its dates and labels are worked out once per today rather than once per read.
const weeks = new Map<LocalDate, ReadonlyArray<Omit<WeekEntry, "isToday" | "isCheckedIn">>>()

const weekDays = (today: LocalDate) => {
  let days = weeks.get(today)
  if (days === undefined) {
    if (weeks.size >= 64) weeks.clear()
    days = Calendar.isoWeek(today).map((isoDate) => ({
      isoDate,
      label: Calendar.weekdayLabel(isoDate),
      dayNumber: Calendar.dayOfMonth(isoDate)
    }))
    weeks.set(today, days)
  }
  return days
}

/** Milestones whose target `current` has reached and that are not achieved yet, lowest target first. */
export const newlyCrossed = <M extends { readonly id: string; readonly target: number }>(
  milestones: ReadonlyArray<M>,
  current: number,
  achieved: ReadonlySet<string>
): ReadonlyArray<M> =>
  milestones.filter((m) => m.target <= current && !achieved.has(m.id)).sort((a, b) => a.target - b.target)

/** Which due events were already emitted for this streak (kept on the streak row). */
export interface Notified {
  /** The owed day for which at-risk was already sent. */
  readonly atRiskFor: LocalDate | undefined
  /** `lastActiveDay` of the run whose broken was already sent. */
  readonly brokenAfter: LocalDate | undefined
}

export type DueEvent =
  | { readonly _tag: "AtRisk"; readonly localDate: LocalDate /* the day still owed */ }
  | { readonly _tag: "Broken"; readonly endedRun: number; readonly lastActiveDate: LocalDate }

/** The day owed to keep the run alive, and the first day on which the run is over. */
const dueDays = (
  summary: Summary,
  zone: string
): { readonly owed: LocalDate; readonly broken: LocalDate } | undefined => {
  const last = summary.lastActiveDay
  if (last === undefined) return undefined
  const rules = rulesOf(summary.mode)
  const owed = rules.next(last, zone)
  return { owed, broken: rules.next(owed, zone) }
}

/** When the owed day starts (the run becomes at risk); undefined without activity. */
export const atRiskAt = (summary: Summary, zone: string): Date | undefined => {
  const days = dueDays(summary, zone)
  return days && Calendar.startOfDay(days.owed, zone)
}

/** When the day after the owed day starts (the run is broken); undefined without activity. */
export const brokenAt = (summary: Summary, zone: string): Date | undefined => {
  const days = dueDays(summary, zone)
  return days && Calendar.startOfDay(days.broken, zone)
}

/**
 * The instant the scheduler should index: `atRiskAt` unless at-risk was sent for the owed day,
 * else `brokenAt` unless broken was sent for this run, else undefined. Once broken is sent,
 * nothing is due for the run, not even an at-risk that was skipped by a catch-up: otherwise the
 * row would stay due in the past forever.
 */
export const nextDueAt = (summary: Summary, zone: string, notified: Notified): Date | undefined => {
  const days = dueDays(summary, zone)
  if (days === undefined || notified.brokenAfter === summary.lastActiveDay) return undefined
  return Calendar.startOfDay(notified.atRiskFor === days.owed ? days.broken : days.owed, zone)
}

/**
 * The event due at `now`, if any (CONTRACT §8). Broken once per run, from the first day after the
 * owed day on; at-risk once for the owed day, and only while it is today: a check that catches up
 * after downtime never warns about a day that is already over.
 */
export const dueEvent = (
  summary: Summary,
  zone: string,
  now: Date | number,
  notified: Notified
): DueEvent | undefined => {
  const days = dueDays(summary, zone)
  const last = summary.lastActiveDay
  if (days === undefined || last === undefined || notified.brokenAfter === last) return undefined
  const today = Calendar.localDate(now, zone)
  if (today >= days.broken) return { _tag: "Broken", endedRun: summary.run, lastActiveDate: last }
  if (today === days.owed && notified.atRiskFor !== days.owed) return { _tag: "AtRisk", localDate: days.owed }
  return undefined
}
