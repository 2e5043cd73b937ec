/**
 * The streak calculus (docs/streak-semantics.md#the-rules, #at-risk-and-broken, #streak-policies)
 * as pure functions over activity days and a program's `Policy`: count one day in O(1), recompute
 * from all days, evaluate the state at an instant, explain a history period by period, and compute
 * when (and which) due events fall due. Repairs, pauses and outage windows
 * (docs/streak-semantics.md#forgiveness) are inputs of the same functions. No I/O and no clock:
 * instants are passed in.
 */
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"
import { defaultPolicy, type Mode, modeOf, type Policy } from "./Policy.js"

export type { Mode } from "./Policy.js"

/** Freezes granted through the API, dated by the member's activity day when granted. */
export interface Grant {
  readonly day: LocalDate
  readonly count: number
}

/**
 * What a streak row keeps so that counting an action never reads the member's history: the chain
 * as judged through the period of `lastActiveDay` (that period is judged kept as soon as it is, and
 * missed only once a later period is reached).
 */
export interface Summary {
  readonly lastActiveDay: LocalDate | undefined
  /** Kept periods of the chain through the period of `lastActiveDay` (0 when there is no chain). */
  readonly run: number
  /** Longest run ever (never less than `run`). */
  readonly best: number
  /** Active days in the period of `lastActiveDay`. */
  readonly periodDays: number
  /**
   * The freeze bank once every period through that of `lastActiveDay` is judged, with the grants
   * dated up to its end (all grants, while there is no activity).
   */
  readonly freezes: number
  /** Every grant, in day order: a recomputation replays them, later ones are added when reached. */
  readonly grants: ReadonlyArray<Grant>
  /** Repairs, pauses and outage windows (absent: none); inputs, never changed by counting. */
  readonly forgiveness?: Forgiveness | undefined
}

const NO_GRANTS: ReadonlyArray<Grant> = []

/** An outage window of a program: the instants [start, end) in epoch milliseconds. */
export interface Window {
  readonly start: number
  readonly end: number
}

/**
 * What forgives a member's missed periods (docs/streak-semantics.md#forgiveness): the periods
 * repaired (by their first day), the member's pauses, and the program's outage windows.
 */
export interface Forgiveness {
  readonly repaired: ReadonlyArray<LocalDate>
  readonly pauses: ReadonlyArray<Period>
  readonly outages: ReadonlyArray<Window>
}

/** Nothing forgiven. */
export const noForgiveness: Forgiveness = { repaired: [], pauses: [], outages: [] }

// A program's windows as the calculus reads them, worked out once per program record.
const windowsCache = new WeakMap<object, ReadonlyArray<Window>>()
const NO_WINDOWS: ReadonlyArray<Window> = []

/** A program's outage windows (its `outages` records) as instants. */
export const windowsOf = (
  program: { readonly outages?: ReadonlyArray<{ readonly start: Date; readonly end: Date }> | undefined } | undefined
): ReadonlyArray<Window> => {
  if (program?.outages === undefined || program.outages.length === 0) return NO_WINDOWS
  let windows = windowsCache.get(program)
  if (windows === undefined) {
    windows = program.outages.map((o) => ({ start: o.start.getTime(), end: o.end.getTime() }))
    windowsCache.set(program, windows)
  }
  return windows
}

const forgivenessOf = (s: Summary): Forgiveness => s.forgiveness ?? noForgiveness

/** True when `f` forgives nothing (the common case: no judgement needs it). */
export const forgivesNothing = (f: Forgiveness): boolean =>
  f.repaired.length === 0 && f.pauses.length === 0 && f.outages.length === 0

/** No activity, under the default policy. */
export const empty: Summary = {
  lastActiveDay: undefined,
  run: 0,
  best: 0,
  periodDays: 0,
  freezes: 0,
  grants: NO_GRANTS
}

/** No activity under `policy`: the bank holds its initial freezes. */
export const emptyOf = (policy: Policy): Summary =>
  policy.freezes.initial === 0 ? empty : { ...empty, freezes: policy.freezes.initial }

/** What a stored streak row holds of a summary (`Domain.StreakRow`); absent fields are defaults. */
export interface StoredSummary {
  readonly lastActiveDay?: LocalDate | undefined
  readonly run: number
  readonly best: number
  readonly periodDays?: number | undefined
  readonly freezes?: number | undefined
  readonly grants?: ReadonlyArray<Grant> | undefined
  readonly repairs?: ReadonlyArray<{ readonly period: LocalDate }> | undefined
  readonly pauses?: ReadonlyArray<Period> | undefined
}

/** The forgiveness of a stored row (its repairs and pauses) under a program's outage windows. */
export const forgivenessOfRow = (row: StoredSummary, outages: ReadonlyArray<Window> = []): Forgiveness | undefined =>
  (row.repairs === undefined || row.repairs.length === 0) && (row.pauses === undefined || row.pauses.length === 0) &&
    outages.length === 0
    ? undefined
    : {
      repaired: (row.repairs ?? []).map((r) => r.period),
      pauses: (row.pauses ?? []).map((p) => ({ start: p.start, end: p.end })),
      outages
    }

/**
 * The summary of a stored row under `policy`: a row written before policies existed (or by an
 * adapter that keeps none of their fields) reads as one period day and the initial bank.
 */
export const fromRow = (row: StoredSummary, policy: Policy, outages: ReadonlyArray<Window> = []): Summary => {
  const forgiveness = forgivenessOfRow(row, outages)
  const summary: Summary = {
    lastActiveDay: row.lastActiveDay,
    run: row.run,
    best: row.best,
    periodDays: row.periodDays ?? (row.lastActiveDay === undefined ? 0 : 1),
    freezes: row.freezes ?? policy.freezes.initial,
    grants: row.grants ?? NO_GRANTS
  }
  return forgiveness === undefined ? summary : { ...summary, forgiveness }
}

/** The outcome of counting one active day against a summary. */
export type Applied =
  /** The day is the newest so far: the summary moved in O(1); `earned` when it earned a freeze. */
  | { readonly _tag: "Applied"; readonly summary: Summary; readonly earned: boolean }
  /** The day is `lastActiveDay`: nothing changes. */
  | { readonly _tag: "Duplicate" }
  /** The day is older than `lastActiveDay` (late action): recompute with `fromDays`. */
  | { readonly _tag: "NeedsHistory" }

// ---------------------------------------------------------------------------------------------
// Periods

/** A period's first and last activity day. */
export interface Period {
  readonly start: LocalDate
  readonly end: LocalDate
}

/** The first activity day of the period containing `day`. */
export const periodStart = (day: LocalDate, policy: Policy): LocalDate =>
  policy.cadence === "daily" ? day : policy.cadence === "weekly" ? Calendar.weekStart(day) : Calendar.monthStart(day)

/** The last activity day of the period starting at `start`. */
export const periodEnd = (start: LocalDate, policy: Policy): LocalDate =>
  policy.cadence === "daily"
    ? start
    : policy.cadence === "weekly"
    ? Calendar.addDays(start, 6)
    : Calendar.monthEnd(start)

/** The period containing `day`. */
export const periodOf = (day: LocalDate, policy: Policy): Period => {
  const start = periodStart(day, policy)
  return { start, end: periodEnd(start, policy) }
}

const nextPeriod = (start: LocalDate, policy: Policy): LocalDate => Calendar.addDays(periodEnd(start, policy), 1)

/**
 * A period without activity that neither keeps nor breaks a chain: a daily rest day, or a day the
 * member's zone skipped (Pacific/Apia 2011-12-30), which no one could have been active on.
 */
const isRest = (start: LocalDate, policy: Policy, zone: string): boolean =>
  policy.cadence === "daily" &&
  ((policy.restDays.length > 0 && policy.restDays.includes(Calendar.isoWeekday(start))) ||
    !Calendar.activityDayExists(start, zone, policy.dayStartHour))

/** A period wholly inside one of the member's pauses. */
export const isPaused = (start: LocalDate, policy: Policy, f: Forgiveness): boolean => {
  if (f.pauses.length === 0) return false
  const end = periodEnd(start, policy)
  return f.pauses.some((p) => p.start <= start && end <= p.end)
}

const inPause = (day: LocalDate, f: Forgiveness): boolean => f.pauses.some((p) => p.start <= day && day <= p.end)

/**
 * The last chance day of a period holding `done` active days: the first day on which the days
 * left, that day included, equal the days still needed.
 */
const lastChanceDay = (start: LocalDate, done: number, policy: Policy): LocalDate => {
  const day = Calendar.addDays(periodEnd(start, policy), 1 - Math.max(1, policy.target - done))
  return day < start ? start : day
}

/** An outage window overlaps the activity day `day` of `zone`. */
const outageOn = (day: LocalDate, zone: string, policy: Policy, f: Forgiveness): boolean => {
  if (f.outages.length === 0) return false
  const from = Calendar.startOfActivityDay(day, zone, policy.dayStartHour).getTime()
  const to = Calendar.startOfActivityDay(Calendar.addDays(day, 1), zone, policy.dayStartHour).getTime()
  return f.outages.some((w) => w.start < to && w.end > from)
}

/** A period not kept whose last chance day an outage window overlaps: it counts as rest. */
const isForgiven = (start: LocalDate, done: number, policy: Policy, zone: string, f: Forgiveness): boolean =>
  f.outages.length > 0 && outageOn(lastChanceDay(start, done, policy), zone, policy, f)

/** The outage window `now` is inside, if any. */
export const outageAt = (now: number, f: Forgiveness): Window | undefined =>
  f.outages.find((w) => w.start <= now && now < w.end)

// ---------------------------------------------------------------------------------------------
// The chain, judged period by period

/**
 * What a replay of history counts as its periods are judged (mutable): freezes that carried a
 * chain across a missed period, and chains that ended. A simulation sums them over members.
 */
export interface Tally {
  frozen: number
  broken: number
}

/** A tally at zero. */
export const tally = (): Tally => ({ frozen: 0, broken: 0 })

/** The chain while periods are judged in order (mutable, local to one computation). */
interface Chain {
  run: number
  best: number
  freezes: number
  earned: number
  /** Counts misses when a caller asked (a replay for a simulation). */
  readonly tally: Tally | undefined
}

const chainOf = (s: Summary, tally?: Tally): Chain => ({
  run: s.run,
  best: s.best,
  freezes: s.freezes,
  earned: 0,
  tally
})

const grantsIn = (grants: ReadonlyArray<Grant>, from: LocalDate | undefined, to: LocalDate): number => {
  let n = 0
  for (const g of grants) if ((from === undefined || g.day >= from) && g.day <= to) n += g.count
  return n
}

const addFreezes = (c: Chain, n: number, policy: Policy): void => {
  if (n > 0) c.freezes = Math.min(policy.freezes.max, c.freezes + n)
}

const keep = (c: Chain, policy: Policy): void => {
  c.run++
  if (c.run > c.best) c.best = c.run
  const every = policy.freezes.earnEvery
  if (every > 0 && c.run % every === 0 && c.freezes < policy.freezes.max) {
    c.freezes++
    c.earned++
  }
}

type Missed = "none" | "frozen" | "broken"

type Judged = Missed | "kept" | "repaired" | "paused" | "rest" | "forgiven"

/**
 * Judges a period that has ended with `done` active days, once the chain counted it if it was kept
 * (a paused period never is): paused, kept, repaired (kept), rest, forgiven, else missed.
 */
const judgeEnded = (
  c: Chain,
  start: LocalDate,
  done: number,
  policy: Policy,
  zone: string,
  f: Forgiveness
): Judged => {
  if (f.pauses.length > 0 && isPaused(start, policy, f)) return "paused"
  if (done >= policy.target) return "kept"
  if (f.repaired.length > 0 && f.repaired.includes(start)) {
    keep(c, policy)
    return "repaired"
  }
  if (done === 0 && isRest(start, policy, zone)) return "rest"
  if (isForgiven(start, done, policy, zone, f)) return "forgiven"
  return miss(c)
}

/** A period counts its active days towards the chain (it is not paused). */
const countsDays = (start: LocalDate, policy: Policy, f: Forgiveness): boolean =>
  f.pauses.length === 0 || !isPaused(start, policy, f)

const miss = (c: Chain): Missed => {
  if (c.run === 0) return "none"
  if (c.freezes > 0) {
    c.freezes--
    if (c.tally !== undefined) c.tally.frozen++
    return "frozen"
  }
  c.run = 0
  if (c.tally !== undefined) c.tally.broken++
  return "broken"
}

/**
 * Judges the periods without activity from the one after `after` to the one before `before`
 * (period starts), adding the grants dated in each. Once the chain is over only grants matter,
 * so the walk stops there: its length is bounded by the bank, not by the gap.
 */
const gap = (
  c: Chain,
  after: LocalDate,
  before: LocalDate,
  grants: ReadonlyArray<Grant>,
  policy: Policy,
  zone: string,
  f: Forgiveness = noForgiveness
): void => {
  let p = nextPeriod(after, policy)
  while (p < before) {
    // A repaired period starts a chain again: only then must the walk go on past a break.
    if (c.run === 0 && !f.repaired.some((r) => r >= p && r < before)) {
      addFreezes(c, grantsIn(grants, p, Calendar.addDays(before, -1)), policy)
      return
    }
    const end = periodEnd(p, policy)
    if (grants.length > 0) addFreezes(c, grantsIn(grants, p, end), policy)
    judgeEnded(c, p, 0, policy, zone, f)
    p = Calendar.addDays(end, 1)
  }
}

const summaryFrom = (
  day: LocalDate,
  c: Chain,
  periodDays: number,
  before: Summary
): Summary =>
  before.forgiveness === undefined
    ? { lastActiveDay: day, run: c.run, best: c.best, periodDays, freezes: c.freezes, grants: before.grants }
    : {
      lastActiveDay: day,
      run: c.run,
      best: c.best,
      periodDays,
      freezes: c.freezes,
      grants: before.grants,
      forgiveness: before.forgiveness
    }

const DUPLICATE: Applied = { _tag: "Duplicate" }
const NEEDS_HISTORY: Applied = { _tag: "NeedsHistory" }

/**
 * Counts one active day (its activity day under `policy`; `zone` is the member's zone, used to
 * tell which days exist). O(1) for a day after `lastActiveDay`; an older day may fill a gap or a
 * period, which the summary cannot know, so it answers `NeedsHistory` and the caller recomputes
 * with `fromDays`.
 */
export const applyDay = (before: Summary, day: LocalDate, zone: string, policy: Policy = defaultPolicy): Applied => {
  // Without activity the bank holds every grant; one dated after this day's period must come later.
  if (
    before.lastActiveDay === undefined && before.grants.length > 0 &&
    before.grants.some((g) => g.day > periodEnd(periodStart(day, policy), policy))
  ) return NEEDS_HISTORY
  return step(before, day, zone, policy)
}

/** `applyDay` once the bank is known to hold exactly the grants dated up to `day`'s period. */
const step = (before: Summary, day: LocalDate, zone: string, policy: Policy, tally?: Tally): Applied => {
  const last = before.lastActiveDay
  const f = forgivenessOf(before)
  if (last === undefined) {
    const c = chainOf(before, tally)
    if (policy.target <= 1 && countsDays(periodStart(day, policy), policy, f)) keep(c, policy)
    return { _tag: "Applied", summary: summaryFrom(day, c, 1, before), earned: c.earned > 0 }
  }
  if (day === last) return DUPLICATE
  if (day < last) return NEEDS_HISTORY
  const lastStart = periodStart(last, policy)
  const c = chainOf(before, tally)
  if (day <= periodEnd(lastStart, policy)) {
    // Another day of the same period: it is kept once it holds `target` days (unless paused).
    const periodDays = before.periodDays + 1
    if (periodDays === policy.target && countsDays(lastStart, policy, f)) keep(c, policy)
    return { _tag: "Applied", summary: summaryFrom(day, c, periodDays, before), earned: c.earned > 0 }
  }
  // A later period: the last one ended (missed unless kept or forgiven), then the empty ones between.
  judgeEnded(c, lastStart, before.periodDays, policy, zone, f)
  const start = periodStart(day, policy)
  gap(c, lastStart, start, before.grants, policy, zone, f)
  if (before.grants.length > 0) addFreezes(c, grantsIn(before.grants, start, periodEnd(start, policy)), policy)
  if (policy.target <= 1 && countsDays(start, policy, f)) keep(c, policy)
  return { _tag: "Applied", summary: summaryFrom(day, c, 1, before), earned: c.earned > 0 }
}

const isAscending = (days: ReadonlyArray<LocalDate>): boolean => {
  for (let i = 1; i < days.length; i++) if (days[i - 1]! >= days[i]!) return false
  return true
}

const byDay = (a: Grant, b: Grant) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)

/**
 * Recomputes a summary from every active day and grant: order-independent, duplicate days ignored.
 * Every step is the O(1) path of `applyDay` in ascending order, so both share one definition.
 */
export const fromDays = (
  days: Iterable<LocalDate>,
  zone: string,
  policy: Policy = defaultPolicy,
  grants: ReadonlyArray<Grant> = NO_GRANTS,
  forgiveness?: Forgiveness
): Summary => replay(days, zone, policy, grants, forgiveness).summary

/**
 * `fromDays`, with how many freezes the history earned (a late action compares two replays);
 * `tally`, when given, counts the freezes used and the chains ended along the way.
 */
export const replay = (
  days: Iterable<LocalDate>,
  zone: string,
  policy: Policy = defaultPolicy,
  grants: ReadonlyArray<Grant> = NO_GRANTS,
  forgiveness?: Forgiveness,
  tally?: Tally
): { readonly summary: Summary; readonly earned: number } => {
  // Stores hand days over ascending and distinct: then there is nothing to sort.
  const sorted = Array.isArray(days) && isAscending(days)
    ? days as ReadonlyArray<LocalDate>
    : Array.from(new Set(days)).sort()
  const ordered = grants.length === 0 ? NO_GRANTS : [...grants].sort(byDay)
  const empty = emptyOf(policy)
  const initial = forgiveness === undefined || forgivesNothing(forgiveness) ? empty : { ...empty, forgiveness }
  if (sorted.length === 0) {
    const c = chainOf(initial)
    addFreezes(c, grantsIn(ordered, undefined, Calendar.unsafeLocalDate("9999-12-31")), policy)
    return { summary: { ...initial, freezes: c.freezes, grants: ordered }, earned: 0 }
  }
  // The bank before the first period holds the grants dated up to its end; later ones come in turn.
  const c = chainOf(initial)
  addFreezes(c, grantsIn(ordered, undefined, periodEnd(periodStart(sorted[0]!, policy), policy)), policy)
  let summary: Summary = { ...initial, freezes: c.freezes, grants: ordered }
  let earned = 0
  for (const day of sorted) {
    const r = step(summary, day, zone, policy, tally)
    if (r._tag === "Applied") {
      summary = r.summary
      if (r.earned) earned++
    }
  }
  return { summary, earned }
}

// ---------------------------------------------------------------------------------------------
// The state at an instant

/** One cell of the week strip (Monday..Sunday of today's ISO week). */
export interface WeekEntry {
  readonly isoDate: LocalDate
  readonly label: string
  readonly dayNumber: number
  readonly isToday: boolean
  readonly isCheckedIn: boolean
  /** A day of a missed period that a freeze kept the chain across (programs with a policy). */
  readonly isFrozen?: boolean
  /** A daily rest day (docs/streak-semantics.md#streak-policies; programs with a policy). */
  readonly isRestDay?: boolean
  /** A day inside one of the member's pauses (docs/streak-semantics.md#forgiveness). */
  readonly isPaused?: boolean
}

/** The current period as answers show it. */
export interface PeriodState extends Period {
  /** Active days in it so far. */
  readonly done: number
  readonly target: number
}

/** The member-facing state at an instant (docs/streak-semantics.md#the-rules, #streak-policies). */
export interface State {
  readonly mode: Mode
  /** The member's activity day at the instant. */
  readonly today: LocalDate
  readonly current: number
  readonly best: number
  readonly todayDone: boolean
  /** Alive, but the current period is not kept yet (and is not a rest day). */
  readonly pending: boolean
  /** Freezes available now. */
  readonly freezes: number
  readonly period: PeriodState
}

/**
 * The state at `now` for a member whose activity day is taken in `zone`. Exact whenever today is in
 * or after the period of `lastActiveDay`. Before it (actions dated ahead of the member's today,
 * e.g. by a flight west), a daily streak walks back along its run; a weekly or monthly one shows
 * the chain as it stands at its last active period.
 */
export const evaluate = (
  summary: Summary,
  now: Date | number,
  zone: string,
  policy: Policy = defaultPolicy
): State => {
  const today = Calendar.activityDay(now, zone, policy.dayStartHour)
  const start = periodStart(today, policy)
  const last = summary.lastActiveDay
  if (last === undefined) return stateAt(summary, policy, today, start, 0, false, summary.freezes, 0, false)
  const lastStart = periodStart(last, policy)
  const f = forgivenessOf(summary)
  if (start === lastStart) {
    const kept = summary.periodDays >= policy.target || isPaused(start, policy, f)
    return stateAt(
      summary,
      policy,
      today,
      start,
      summary.run,
      today === last,
      summary.freezes,
      summary.periodDays,
      kept
    )
  }
  if (start > lastStart) {
    // On a rest day nothing is owed, so nothing is pending.
    const rest = (policy.restDays.length > 0 && isRest(start, policy, zone)) || isPaused(start, policy, f)
    // The usual read: the period after a kept one, nothing granted since. Nothing to judge.
    if (summary.periodDays >= policy.target && summary.grants.length === 0 && nextPeriod(lastStart, policy) === start) {
      return stateAt(summary, policy, today, start, summary.run, false, summary.freezes, 0, rest)
    }
    const c = judgedThrough(summary, lastStart, start, zone, policy)
    // A repaired period after the last active day may have made the chain longer than ever.
    return stateAt(summary, policy, today, start, c.run, false, c.freezes, 0, rest, c.best)
  }
  if (policy.cadence !== "daily" || policy.restDays.length > 0 || policy.freezes.max > 0) {
    return stateAt(summary, policy, today, start, summary.run, false, summary.freezes, 0, false)
  }
  // Today is before the last active day: walk back along the run (at most `run` steps, in
  // practice one or two) to see whether today belongs to it.
  let day = last
  let index = 0
  while (day > today && index < summary.run) {
    day = previousDay(day, zone, policy)
    index++
  }
  const inRun = day === today && index < summary.run
  return stateAt(
    summary,
    policy,
    today,
    start,
    inRun ? summary.run - index : 0,
    inRun,
    summary.freezes,
    inRun ? 1 : 0,
    inRun
  )
}

/**
 * The chain once every period from that of the last active day (starting `lastStart`) up to the
 * one starting `start` is judged, with the grants dated through the end of `start`'s period.
 */
const judgedThrough = (
  summary: Summary,
  lastStart: LocalDate,
  start: LocalDate,
  zone: string,
  policy: Policy,
  tally?: Tally
): Chain => {
  const c = chainOf(summary, tally)
  const f = forgivenessOf(summary)
  judgeEnded(c, lastStart, summary.periodDays, policy, zone, f)
  gap(c, lastStart, start, summary.grants, policy, zone, f)
  if (summary.grants.length > 0) addFreezes(c, grantsIn(summary.grants, start, periodEnd(start, policy)), policy)
  return c
}

/** What a replay of one member's history under a policy comes to at an instant. */
export interface Replayed {
  /** The streak at the instant, as `evaluate` answers it. */
  readonly current: number
  /** The longest run of the replay, as `evaluate` answers it. */
  readonly best: number
}

/**
 * Replays a member's active days, grants and forgiveness under `policy` and evaluates the result
 * at `now` (docs/operations.md#trying-a-policy-before-shipping-it), adding to `tally` the freezes
 * used and the chains ended, also those that the time since the last active day judges.
 */
export const replayAt = (
  days: Iterable<LocalDate>,
  zone: string,
  policy: Policy,
  grants: ReadonlyArray<Grant>,
  forgiveness: Forgiveness | undefined,
  now: Date | number,
  tally: Tally
): Replayed => {
  const { summary } = replay(days, zone, policy, grants, forgiveness, tally)
  const last = summary.lastActiveDay
  if (last !== undefined) {
    const start = periodStart(Calendar.activityDay(now, zone, policy.dayStartHour), policy)
    const lastStart = periodStart(last, policy)
    if (start > lastStart) {
      const c = judgedThrough(summary, lastStart, start, zone, policy, tally)
      return { current: c.run, best: Math.max(summary.best, c.best, c.run) }
    }
  }
  const state = evaluate(summary, now, zone, policy)
  return { current: state.current, best: state.best }
}

/** The state answer; `settled`: the current period is kept, or rests: then nothing is pending. */
const stateAt = (
  summary: Summary,
  policy: Policy,
  today: LocalDate,
  start: LocalDate,
  current: number,
  todayDone: boolean,
  freezes: number,
  done: number,
  settled: boolean,
  best: number = summary.best
): State => ({
  mode: modeOf(policy),
  today,
  current,
  best: Math.max(best, current),
  todayDone,
  pending: current > 0 && !settled,
  freezes,
  period: { start, end: periodEnd(start, policy), done, target: policy.target }
})

const previousDay = (day: LocalDate, zone: string, policy: Policy): LocalDate => {
  let p = Calendar.addDays(day, -1)
  for (let i = 0; i < 7 && !Calendar.activityDayExists(p, zone, policy.dayStartHour); i++) p = Calendar.addDays(p, -1)
  return p
}

/**
 * The week strip of `today`'s ISO week, marking the days found in `activeDays`; given a policy
 * (a program that has one), also its rest days and the days of `frozen` periods.
 */
export const week = (
  today: LocalDate,
  activeDays: ReadonlySet<string>,
  policy?: Policy,
  frozen: ReadonlyArray<Period> = [],
  pauses: ReadonlyArray<Period> = []
): ReadonlyArray<WeekEntry> =>
  weekDays(today).map(({ dayNumber, isoDate, label }) =>
    policy === undefined
      ? {
        isoDate,
        label,
        dayNumber,
        isToday: isoDate === today,
        isCheckedIn: activeDays.has(isoDate),
        ...(pauses.length === 0 ? {} : { isPaused: pauses.some((p) => p.start <= isoDate && isoDate <= p.end) })
      }
      : {
        isoDate,
        label,
        dayNumber,
        isToday: isoDate === today,
        isCheckedIn: activeDays.has(isoDate),
        isFrozen: frozen.some((p) => p.start <= isoDate && isoDate <= p.end),
        isRestDay: policy.cadence === "daily" && policy.restDays.includes(Calendar.isoWeekday(isoDate)),
        ...(pauses.length === 0 ? {} : { isPaused: pauses.some((p) => p.start <= isoDate && isoDate <= p.end) })
      }
  )

/**
 * The daily periods from `from` to `to` that a freeze carried the chain across, as far as the
 * summary and the active days of that window tell: after the last active day by judging the
 * empty days, before it by walking back along the run (a day missed inside a chain that still
 * holds kept days before it was frozen). `to` is the last day that has ended. Weekly and monthly
 * strips show one period: none.
 */
export const frozenDays = (
  summary: Summary,
  activeDays: ReadonlySet<string>,
  from: LocalDate,
  to: LocalDate,
  zone: string,
  policy: Policy = defaultPolicy
): ReadonlyArray<Period> => {
  const last = summary.lastActiveDay
  if (last === undefined || policy.cadence !== "daily" || policy.freezes.max === 0) return []
  const out: Array<Period> = []
  const f = forgivenessOf(summary)
  // Before the last active day: walk back while the run still has kept days to account for.
  let remaining = summary.run
  for (let d = last; d >= from && remaining > 0; d = Calendar.addDays(d, -1)) {
    if (isPaused(d, policy, f)) continue
    if (activeDays.has(d) || d === last || f.repaired.includes(d)) remaining--
    else if (!isRest(d, policy, zone) && !isForgiven(d, 0, policy, zone, f) && d <= to) out.push({ start: d, end: d })
  }
  // After it: the empty days judged in turn, as `evaluate` does.
  const c = chainOf(summary)
  for (let d = Calendar.addDays(last, 1); d <= to && c.run > 0; d = Calendar.addDays(d, 1)) {
    if (summary.grants.length > 0) addFreezes(c, grantsIn(summary.grants, d, d), policy)
    if (judgeEnded(c, d, 0, policy, zone, f) === "frozen" && d >= from) out.push({ start: d, end: d })
  }
  return out.sort((a, b) => (a.start < b.start ? -1 : 1))
}

// Every widget read shows the week of a today that rarely changes (a few at once, across zones):
// its dates and labels are worked out once per today rather than once per read.
const weeks = new Map<LocalDate, ReadonlyArray<{ isoDate: LocalDate; label: string; dayNumber: number }>>()

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

// ---------------------------------------------------------------------------------------------
// The ledger: a history explained period by period

export type PeriodStatus = "kept" | "frozen" | "rest" | "missed" | "current" | "repaired" | "paused" | "forgiven"

export interface LedgerPeriod extends Period {
  readonly status: PeriodStatus
  readonly activeDays: number
  readonly target: number
}

/**
 * Every period from the first active one (or `from`'s) through today's, each with its status:
 * kept, frozen (a freeze carried the chain across), rest, missed, or current (today's, not kept
 * yet), and with forgiveness repaired (counts as kept), paused or forgiven (count as rest). A
 * missed period outside a chain is missed too: nothing was at stake, but nothing was done.
 */
export const ledger = (
  days: Iterable<LocalDate>,
  grants: ReadonlyArray<Grant>,
  today: LocalDate,
  zone: string,
  policy: Policy = defaultPolicy,
  f: Forgiveness = noForgiveness
): ReadonlyArray<LedgerPeriod> => {
  const sorted = Array.from(new Set(days)).filter((d) => d <= today).sort()
  const ordered = [...grants].sort(byDay)
  const todayStart = periodStart(today, policy)
  const out: Array<LedgerPeriod> = []
  if (sorted.length === 0) return out
  const counts = new Map<LocalDate, number>()
  for (const d of sorted) {
    const s = periodStart(d, policy)
    counts.set(s, (counts.get(s) ?? 0) + 1)
  }
  const c = chainOf(emptyOf(policy))
  let p = periodStart(sorted[0]!, policy)
  addFreezes(c, grantsIn(ordered, undefined, Calendar.addDays(p, -1)), policy)
  while (p <= todayStart) {
    const end = periodEnd(p, policy)
    addFreezes(c, grantsIn(ordered, p, end), policy)
    const active = counts.get(p) ?? 0
    let status: PeriodStatus
    if (isPaused(p, policy, f)) status = "paused"
    else if (active >= policy.target) {
      keep(c, policy)
      status = "kept"
    } else if (p === todayStart) status = "current"
    else {
      const judged = judgeEnded(c, p, active, policy, zone, f)
      status = judged === "repaired" || judged === "rest" || judged === "forgiven" || judged === "frozen"
        ? judged
        : "missed"
    }
    out.push({ start: p, end, status, activeDays: active, target: policy.target })
    p = Calendar.addDays(end, 1)
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Due events (docs/streak-semantics.md#at-risk-and-broken, #streak-policies)

/** Which due events were already emitted for this streak (kept on the streak row). */
export interface Notified {
  /** The first day of the period for which at-risk was already sent. */
  readonly atRiskFor: LocalDate | undefined
  /**
   * The end of the latest run whose `streak.broken` was already sent (see `DueEvent` Broken's
   * `runEnd`): every break of a run that ended on or before it is sent.
   */
  readonly brokenAfter: LocalDate | undefined
  /** The last day of the latest period whose `streak.freeze_used` was already sent. */
  readonly frozenThrough?: LocalDate | undefined
}

export type DueEvent =
  | {
    readonly _tag: "AtRisk"
    /** The last chance day (with the default policy, the day still owed). */
    readonly localDate: LocalDate
    readonly period: Period
    readonly freezesAvailable: number
  }
  | { readonly _tag: "FreezeUsed"; readonly period: Period; readonly freezesLeft: number }
  | {
    readonly _tag: "Broken"
    readonly endedRun: number
    readonly lastActiveDate: LocalDate
    /**
     * The last day of the run's last repaired period, when a repair carried it past the last
     * active day (absent otherwise: the run ends on `lastActiveDate`). What tells two breaks apart.
     */
    readonly runEnd?: LocalDate
  }

/**
 * The instant the wall clock reads `atRiskHour` within the activity day `day`
 * (docs/streak-semantics.md#streak-policies).
 */
const atRiskInstant = (day: LocalDate, zone: string, policy: Policy): number =>
  policy.atRiskHour >= policy.dayStartHour
    ? Calendar.startOfHour(day, policy.atRiskHour, zone).getTime()
    : Calendar.startOfHour(Calendar.addDays(day, 1), policy.atRiskHour, zone).getTime()

const periodStartsAt = (start: LocalDate, zone: string, policy: Policy): number =>
  Calendar.startOfActivityDay(start, zone, policy.dayStartHour).getTime()

/**
 * The events a streak will owe if no action comes, in order, with their instants: for each period
 * from that of `lastActiveDay` on that is not kept, at-risk on its last chance day (the first day
 * on which the days left equal the days still needed), then at its end a freeze used or the chain
 * broken. A repaired period counts as an action would: it carries the chain on, or starts one
 * again after a break, and the periods after it are owed in turn. A chain that is over, with no
 * repaired period ahead, owes nothing. `visit` answers false to stop.
 */
const timeline = (
  summary: Summary,
  zone: string,
  policy: Policy,
  visit: (event: DueEvent, at: number) => boolean
): void => {
  const last = summary.lastActiveDay
  if (last === undefined) return
  const f = forgivenessOf(summary)
  const c = chainOf(summary)
  let p = periodStart(last, policy)
  let done = summary.periodDays
  let first = true
  // The last day the chain reached: the last active day, or the end of a later repaired period.
  let through = last
  // A live chain ends within (bank + grants + 1) periods that are not rest, and a week has at
  // least one day that is not rest; the bound only guards against a bug.
  for (let i = 0; i < 100_000; i++) {
    const end = periodEnd(p, policy)
    if (!first && summary.grants.length > 0) addFreezes(c, grantsIn(summary.grants, p, end), policy)
    if (c.run === 0 && !f.repaired.some((r) => r >= p)) return
    const rest = (!first && isRest(p, policy, zone)) || isPaused(p, policy, f)
    if (done < policy.target && !rest && f.repaired.includes(p)) {
      keep(c, policy)
      through = end
    } else if (c.run > 0 && done < policy.target && !rest && !isForgiven(p, done, policy, zone, f)) {
      const period = { start: p, end }
      const needed = policy.target - done
      const lastChance = Calendar.addDays(end, 1 - needed)
      // No at-risk inside a pause: the member said they are away.
      if (lastChance >= p && !inPause(lastChance, f)) {
        const atRisk: DueEvent = { _tag: "AtRisk", localDate: lastChance, period, freezesAvailable: c.freezes }
        if (!visit(atRisk, atRiskInstant(lastChance, zone, policy))) return
      }
      const endsAt = periodStartsAt(Calendar.addDays(end, 1), zone, policy)
      const run = c.run
      const outcome = miss(c)
      const event: DueEvent = outcome === "frozen"
        ? { _tag: "FreezeUsed", period, freezesLeft: c.freezes }
        : through === last
        ? { _tag: "Broken", endedRun: run, lastActiveDate: last }
        : { _tag: "Broken", endedRun: run, lastActiveDate: last, runEnd: through }
      if (!visit(event, endsAt)) return
    }
    first = false
    done = 0
    p = Calendar.addDays(end, 1)
  }
}

/** The end of the last run the timeline walks (`runEnd` of its last break). */
const lastRunEnd = (summary: Summary, last: LocalDate, policy: Policy): LocalDate => {
  const from = periodStart(last, policy)
  let end = last
  for (const r of forgivenessOf(summary).repaired) {
    if (r >= from) {
      const e = periodEnd(r, policy)
      if (e > end) end = e
    }
  }
  return end
}

/** Every break the timeline can owe was sent: nothing is due for the streak. */
const allBrokenSent = (summary: Summary, notified: Notified, policy: Policy): boolean =>
  notified.brokenAfter !== undefined && summary.lastActiveDay !== undefined &&
  lastRunEnd(summary, summary.lastActiveDay, policy) <= notified.brokenAfter

const wasSent = (e: DueEvent, notified: Notified): boolean => {
  switch (e._tag) {
    case "AtRisk":
      return notified.atRiskFor === e.period.start
    case "FreezeUsed":
      return notified.frozenThrough !== undefined && e.period.end <= notified.frozenThrough
    case "Broken":
      return notified.brokenAfter !== undefined && (e.runEnd ?? e.lastActiveDate) <= notified.brokenAfter
  }
}

/** The instant of the first owed event of a kind, if no action comes. */
const firstAt = (summary: Summary, zone: string, policy: Policy, tag: DueEvent["_tag"]): Date | undefined => {
  let found: number | undefined
  timeline(summary, zone, policy, (event, at) => {
    if (event._tag !== tag) return true
    found = at
    return false
  })
  return found === undefined ? undefined : new Date(found)
}

/** When the first period owed starts being at risk (its at-risk instant); undefined without activity. */
export const atRiskAt = (summary: Summary, zone: string, policy: Policy = defaultPolicy): Date | undefined =>
  firstAt(summary, zone, policy, "AtRisk")

/** When the chain breaks if no action comes; undefined without activity or a live chain. */
export const brokenAt = (summary: Summary, zone: string, policy: Policy = defaultPolicy): Date | undefined =>
  firstAt(summary, zone, policy, "Broken")

/** What is due for a streak at an instant, and what comes next. */
export interface Due {
  /** Events due and not sent yet, in order. */
  readonly events: ReadonlyArray<DueEvent>
  /** `notified` once they are sent. */
  readonly notified: Notified
  /** The instant of the first owed event not sent after them (what the scheduler indexes). */
  readonly dueAt: Date | undefined
}

const NOTHING_DUE: ReadonlyArray<DueEvent> = []

/**
 * Every event due at `now` and not sent yet, in order, and the instant of the next one, in one
 * walk. At-risk fires only while its last chance day is today (a check catching up after downtime
 * warns about no day that is over); freezes used and the break fire at the first check after their
 * period ended. Once broken is sent, nothing is due for the run.
 */
export const due = (
  summary: Summary,
  zone: string,
  now: Date | number,
  notified: Notified,
  policy: Policy = defaultPolicy
): Due => {
  if (allBrokenSent(summary, notified, policy)) return { events: NOTHING_DUE, notified, dueAt: undefined }
  const ms = typeof now === "number" ? now : now.getTime()
  const today = Calendar.activityDay(ms, zone, policy.dayStartHour)
  let events: Array<DueEvent> | undefined
  let after = notified
  let dueAt: number | undefined
  timeline(summary, zone, policy, (event, at) => {
    if (wasSent(event, notified)) return true
    // An at-risk whose last chance day is not today is over (or, ahead of it, not yet due).
    if (event._tag === "AtRisk" && event.localDate < today) return true
    if (at > ms || (event._tag === "AtRisk" && event.localDate !== today)) {
      dueAt = at
      return false
    }
    ;(events ??= []).push(event)
    after = sent(after, event)
    return true
  })
  // While an outage window is open nothing fires: the row is looked at again when it closes.
  const outage = events === undefined ? undefined : outageAt(ms, forgivenessOf(summary))
  if (outage !== undefined) return { events: NOTHING_DUE, notified, dueAt: new Date(outage.end) }
  return { events: events ?? NOTHING_DUE, notified: after, dueAt: dueAt === undefined ? undefined : new Date(dueAt) }
}

/**
 * The instant the scheduler should index: that of the first owed event not sent yet, or
 * undefined. Given `now`, an at-risk whose last chance day is already over is passed over (it
 * would never fire). Once broken is sent, nothing is due for the run.
 */
export const nextDueAt = (
  summary: Summary,
  zone: string,
  notified: Notified,
  policy: Policy = defaultPolicy,
  now?: Date | number
): Date | undefined => {
  if (allBrokenSent(summary, notified, policy)) return undefined
  const today = now === undefined ? undefined : Calendar.activityDay(now, zone, policy.dayStartHour)
  let found: number | undefined
  timeline(summary, zone, policy, (event, at) => {
    if (wasSent(event, notified)) return true
    if (event._tag === "AtRisk" && today !== undefined && event.localDate < today) return true
    found = at
    return false
  })
  return found === undefined ? undefined : new Date(found)
}

/** The events `due` answers at `now`. */
export const dueEvents = (
  summary: Summary,
  zone: string,
  now: Date | number,
  notified: Notified,
  policy: Policy = defaultPolicy
): ReadonlyArray<DueEvent> => due(summary, zone, now, notified, policy).events

/** The first event `dueEvents` answers, if any. */
export const dueEvent = (
  summary: Summary,
  zone: string,
  now: Date | number,
  notified: Notified,
  policy: Policy = defaultPolicy
): DueEvent | undefined => dueEvents(summary, zone, now, notified, policy)[0]

/** `notified` once `event` is sent. */
export const sent = (notified: Notified, event: DueEvent): Notified => {
  switch (event._tag) {
    case "AtRisk":
      return { atRiskFor: event.period.start, brokenAfter: notified.brokenAfter, frozenThrough: notified.frozenThrough }
    case "FreezeUsed":
      return { atRiskFor: notified.atRiskFor, brokenAfter: notified.brokenAfter, frozenThrough: event.period.end }
    case "Broken":
      return {
        atRiskFor: notified.atRiskFor,
        brokenAfter: event.runEnd ?? event.lastActiveDate,
        frozenThrough: notified.frozenThrough
      }
  }
}

/**
 * `notified` with every event that fell due before `now` counted as sent: after a policy change
 * the past is recomputed, and no event is emitted for it (docs/streak-semantics.md#streak-policies).
 */
export const settledAt = (summary: Summary, zone: string, now: Date | number, policy: Policy): Notified => {
  const ms = typeof now === "number" ? now : now.getTime()
  let notified: Notified = { atRiskFor: undefined, brokenAfter: undefined, frozenThrough: undefined }
  timeline(summary, zone, policy, (event, at) => {
    if (at > ms) return false
    notified = sent(notified, event)
    return true
  })
  return notified
}
