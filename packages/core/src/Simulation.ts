/**
 * Policy simulation (docs/operations.md#trying-a-policy-before-shipping-it): members' stored
 * activity days replayed under a policy with the streak calculus, summed into an `Outcome`.
 * Outcomes of batches of members combine (a monoid), so a program is replayed a page at a time.
 */
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"
import type { Policy } from "./Policy.js"
import * as Streak from "./Streak.js"

/** How many members have one current streak length. */
export interface LengthCount {
  readonly length: number
  readonly members: number
}

/** What a policy makes of a set of members' histories. */
export interface Outcome {
  /** Members replayed. */
  readonly members: number
  /** Members whose streak is above 0 at the end of the replay. */
  readonly alive: number
  /** Chains that ended in the replay. */
  readonly broken: number
  /** Freezes that carried a chain across a missed period, also in chains that ended later. */
  readonly freezesUsed: number
  /** (member, milestone) pairs whose target the member's longest run reached. */
  readonly milestonesAchieved: number
  /** One entry per distinct current length among the members (0 included), ascending; sums to `members`. */
  readonly lengthHistogram: ReadonlyArray<LengthCount>
}

/** No member. */
export const empty: Outcome = {
  members: 0,
  alive: 0,
  broken: 0,
  freezesUsed: 0,
  milestonesAchieved: 0,
  lengthHistogram: []
}

const mergeHistograms = (
  a: ReadonlyArray<LengthCount>,
  b: ReadonlyArray<LengthCount>
): ReadonlyArray<LengthCount> => {
  if (a.length === 0) return b
  if (b.length === 0) return a
  const out: Array<LengthCount> = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const x = a[i]
    const y = b[j]
    if (y === undefined || (x !== undefined && x.length < y.length)) {
      out.push(x!)
      i++
    } else if (x === undefined || y.length < x.length) {
      out.push(y)
      j++
    } else {
      out.push({ length: x.length, members: x.members + y.members })
      i++
      j++
    }
  }
  return out
}

/** The outcome of both sets of members together (associative, with `empty` as its unit). */
export const combine = (a: Outcome, b: Outcome): Outcome => ({
  members: a.members + b.members,
  alive: a.alive + b.alive,
  broken: a.broken + b.broken,
  freezesUsed: a.freezesUsed + b.freezesUsed,
  milestonesAchieved: a.milestonesAchieved + b.milestonesAchieved,
  lengthHistogram: mergeHistograms(a.lengthHistogram, b.lengthHistogram)
})

/** Every outcome combined. */
export const combineAll = (outcomes: Iterable<Outcome>): Outcome => {
  let out = empty
  for (const o of outcomes) out = combine(out, o)
  return out
}

/** One member's stored history, as the store pages it out. */
export interface History {
  /** The zone of the member's streak row. */
  readonly timezone: string
  /** Freezes granted through the API, dated. */
  readonly grants: ReadonlyArray<Streak.Grant>
  /** Active days, ascending. */
  readonly days: ReadonlyArray<LocalDate>
  /** The member's repairs and pauses (docs/streak-semantics.md#forgiveness); absent: none. */
  readonly repairs?: ReadonlyArray<{ readonly period: LocalDate }> | undefined
  readonly pauses?: ReadonlyArray<Streak.Period> | undefined
}

/** The days a replay keeps (both ends inclusive, either optional). */
export interface Window {
  readonly from?: LocalDate | undefined
  readonly to?: LocalDate | undefined
}

/** What a replay needs besides the histories. */
export interface Settings {
  readonly policy: Policy
  /** Milestone targets of the program (a member reaching one counts once). */
  readonly milestoneTargets: ReadonlyArray<number>
  /** The instant the state is read at. */
  readonly now: Date | number
  readonly window?: Window | undefined
  /** The program's outage windows (`Streak.windowsOf`); absent: none. */
  readonly outages?: ReadonlyArray<Streak.Window> | undefined
}

const inWindow = (days: ReadonlyArray<LocalDate>, window: Window | undefined): ReadonlyArray<LocalDate> => {
  if (window === undefined || (window.from === undefined && window.to === undefined)) return days
  const { from, to } = window
  return days.filter((d) => (from === undefined || d >= from) && (to === undefined || d <= to))
}

/**
 * The instant a member's state is read at: now, or with a window ending before the member's
 * today, the start of its last day (the streak as it stood on `to`).
 */
const readAt = (zone: string, settings: Settings): Date | number => {
  const to = settings.window?.to
  if (to === undefined) return settings.now
  const { dayStartHour } = settings.policy
  return Calendar.activityDay(settings.now, zone, dayStartHour) > to
    ? Calendar.startOfActivityDay(to, zone, dayStartHour)
    : settings.now
}

/** The outcome of replaying `histories` under `settings.policy`. */
export const outcome = (histories: Iterable<History>, settings: Settings): Outcome => {
  const tally = Streak.tally()
  const counts = new Map<number, number>()
  const targets = settings.milestoneTargets
  const outages = settings.outages ?? []
  let members = 0
  let alive = 0
  let milestones = 0
  for (const h of histories) {
    const days = inWindow(h.days, settings.window)
    const forgiveness = h.repairs === undefined && h.pauses === undefined && outages.length === 0
      ? undefined
      : Streak.forgivenessOfRow({ run: 0, best: 0, repairs: h.repairs, pauses: h.pauses }, outages)
    const { best, current } = Streak.replayAt(
      days,
      h.timezone,
      settings.policy,
      h.grants,
      forgiveness,
      readAt(h.timezone, settings),
      tally
    )
    members++
    if (current > 0) alive++
    counts.set(current, (counts.get(current) ?? 0) + 1)
    for (const t of targets) if (t <= best) milestones++
  }
  return {
    members,
    alive,
    broken: tally.broken,
    freezesUsed: tally.frozen,
    milestonesAchieved: milestones,
    lengthHistogram: Array.from(counts, ([length, n]) => ({ length, members: n })).sort((a, b) => a.length - b.length)
  }
}
