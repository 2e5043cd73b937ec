/**
 * The pure rules of Proof experiments: who is in the control group, the dates of an experiment
 * in a member's zone, what the store must count (`CohortQuery`), and the report built from those
 * counts with `ProofStatistics`. The rules are written out in docs/api.md, "Proof report".
 */
import { Schema } from "effect"
import { createHash } from "node:crypto"
import * as Calendar from "./Calendar.js"
import type { Experiment } from "./Domain.js"
import type { ExperimentId, ProgramId, ProjectId } from "./Ids.js"
import * as ProofStatistics from "./ProofStatistics.js"

/**
 * Whether the member is in the control group: the first 4 bytes of
 * SHA-256(`${experimentId}:${userHash}`), as an unsigned integer, mod 100 < holdoutPercent.
 * Stable across processes and versions; a new experiment reshuffles the groups.
 */
export const isControl = (experimentId: string, userHash: string, holdoutPercent: number): boolean =>
  createHash("sha256").update(`${experimentId}:${userHash}`, "utf8").digest().readUInt32BE(0) % 100 < holdoutPercent

/** The horizons of a report, in days after enrolment. */
export const horizons: ReadonlyArray<number> = [1, 7, 14, 30]
/** Days of the window in which a member counts as retained at a horizon. */
export const retentionDays = 7
/** Days before the start whose activity is CUPED's covariate. */
export const preDays = 28
/** The group summary's "retained": active again at least this many days after enrolment. */
export const returnAfter = 7
/** A sample-ratio mismatch is flagged below this p-value. */
export const mismatchBelow = 0.001

/** The dates of an experiment in one zone, as activity days of that zone. */
export interface ZoneWindow {
  readonly timezone: string
  /** The first day a member can enrol on: the start instant's activity day. */
  readonly start: Calendar.LocalDate
  /** The last day a member can enrol on: the end's activity day, or today while it runs. */
  readonly until: Calendar.LocalDate
  /** The last complete day: yesterday, or the end's activity day when earlier. */
  readonly lastComplete: Calendar.LocalDate
}

/**
 * The experiment's window in `zone` at `now`, days starting at `dayStartHour` (the program's
 * policy). An experiment that ended has its end's day as both its last enrolment day and, when
 * earlier than yesterday, its last complete day.
 */
export const windowOf = (experiment: Experiment, zone: string, dayStartHour: number, now: Date): ZoneWindow => {
  const start = Calendar.activityDay(experiment.startedAt, zone, dayStartHour)
  const today = Calendar.activityDay(now, zone, dayStartHour)
  const end = experiment.endedAt === undefined ? today : Calendar.activityDay(experiment.endedAt, zone, dayStartHour)
  const until = end < today ? end : today
  const yesterday = Calendar.addDays(today, -1)
  return { timezone: zone, start, until, lastComplete: end < yesterday ? end : yesterday }
}

/**
 * What the store counts for an experiment's report. A member (a live streak row of the program
 * whose zone has a window; other rows are in no cohort) is in the control group when
 * `isControl(experimentId, userHash, holdoutPercent)`. With the member's window:
 * - **enrolled** on e, their first active day in [start, until];
 * - **returned** when active on a day in [e + returnAfter, until];
 * - for each horizon h, **matured** when e + h + retentionDays − 1 ≤ lastComplete; a matured
 *   member is **retained** when active on a day in [e + h, e + h + retentionDays − 1], has
 *   y = active days in [e, e + h) and x = active days in [start − preDays, start).
 */
export interface CohortQuery {
  readonly projectId: ProjectId
  readonly programId: ProgramId
  readonly experimentId: ExperimentId
  readonly holdoutPercent: number
  readonly windows: ReadonlyArray<ZoneWindow>
  readonly horizons: ReadonlyArray<number>
  readonly retentionDays: number
  readonly returnAfter: number
  readonly preDays: number
}

/** One horizon of a group: matured and retained members, and the sums CUPED needs over the matured. */
export interface HorizonSums {
  readonly horizon: number
  readonly matured: number
  readonly retained: number
  readonly sumY: number
  readonly sumY2: number
  readonly sumX: number
  readonly sumX2: number
  readonly sumXY: number
}

export interface GroupCohort {
  readonly enrolled: number
  readonly returned: number
  /** One entry per horizon of the query, in its order (zeros when none matured). */
  readonly horizons: ReadonlyArray<HorizonSums>
}

export interface Cohorts {
  readonly control: GroupCohort
  readonly treatment: GroupCohort
}

/** A group with nobody in it. */
export const emptyGroup = (hs: ReadonlyArray<number>): GroupCohort => ({
  enrolled: 0,
  returned: 0,
  horizons: hs.map((horizon) => ({ horizon, matured: 0, retained: 0, sumY: 0, sumY2: 0, sumX: 0, sumX2: 0, sumXY: 0 }))
})

/** The cohort query of an experiment over the given windows, with the report's constants. */
export const cohortQuery = (experiment: Experiment, windows: ReadonlyArray<ZoneWindow>): CohortQuery => ({
  projectId: experiment.projectId,
  programId: experiment.programId,
  experimentId: experiment.id,
  holdoutPercent: experiment.holdoutPercent,
  windows,
  horizons,
  retentionDays,
  returnAfter,
  preDays
})

// --- The report ---------------------------------------------------------------------------------

const Rate = Schema.NullOr(Schema.Number)

export const Interval = Schema.Struct({ estimate: Schema.Number, lower: Schema.Number, upper: Schema.Number })

/** A group's summary: enrolled members and those active again `returnAfter` days after enrolment. */
export const GroupSummary = Schema.Struct({
  members: Schema.Int,
  retained: Schema.Int,
  retention7d: Rate
})
export type GroupSummary = typeof GroupSummary.Type

export const HorizonGroup = Schema.Struct({ n: Schema.Int, retained: Schema.Int, rate: Rate })

export const CupedResult = Schema.Struct({
  control: Schema.Number,
  treatment: Schema.Number,
  difference: Interval,
  varianceReduction: Rate
})

export const Horizon = Schema.Struct({
  horizon: Schema.Int,
  control: HorizonGroup,
  treatment: HorizonGroup,
  difference: Schema.NullOr(Interval),
  relative: Schema.NullOr(Interval),
  pValue: Rate,
  mde: Rate,
  cuped: Schema.NullOr(CupedResult)
})
export type Horizon = typeof Horizon.Type

export const SampleRatio = Schema.Struct({
  control: Schema.Int,
  treatment: Schema.Int,
  chiSquare: Rate,
  pValue: Rate,
  mismatch: Schema.NullOr(Schema.Boolean)
})

export const Report = Schema.Struct({ horizons: Schema.Array(Horizon), srm: SampleRatio })
export type Report = typeof Report.Type

/** An experiment as the API answers it, with its groups and report. */
export const ExperimentReport = Schema.Struct({
  id: Schema.String,
  programId: Schema.String,
  holdoutPercent: Schema.Int,
  startedAt: Schema.String,
  endedAt: Schema.optional(Schema.String),
  control: GroupSummary,
  treatment: GroupSummary,
  report: Report
})
export type ExperimentReport = typeof ExperimentReport.Type

const finite = (x: number): number | null => Number.isFinite(x) ? x : null
const interval = (i: ProofStatistics.Interval) =>
  Number.isFinite(i.estimate) && Number.isFinite(i.lower) && Number.isFinite(i.upper)
    ? { estimate: i.estimate, lower: i.lower, upper: i.upper }
    : null

const momentsOf = (h: HorizonSums): ProofStatistics.Moments => ({
  n: h.matured,
  sumY: h.sumY,
  sumY2: h.sumY2,
  sumX: h.sumX,
  sumX2: h.sumX2,
  sumXY: h.sumXY
})

/** One horizon's comparison of treatment with control. */
export const horizonOf = (control: HorizonSums, treatment: HorizonSums): Horizon => {
  const group = (h: HorizonSums) => ({
    n: h.matured,
    retained: h.retained,
    rate: h.matured === 0 ? null : h.retained / h.matured
  })
  const both = control.matured > 0 && treatment.matured > 0
  const [xT, nT, xC, nC] = [treatment.retained, treatment.matured, control.retained, control.matured]
  const cuped = ProofStatistics.cuped(momentsOf(treatment), momentsOf(control))
  return {
    horizon: control.horizon,
    control: group(control),
    treatment: group(treatment),
    difference: both ? interval(ProofStatistics.differenceInterval(xT, nT, xC, nC)) : null,
    relative: both && xC > 0 ? interval(ProofStatistics.relativeLiftInterval(xT, nT, xC, nC)) : null,
    pValue: both ? finite(ProofStatistics.twoProportionPValue(xT, nT, xC, nC)) : null,
    mde: both ? finite(ProofStatistics.minimumDetectableEffect(nT, nC, (xT + xC) / (nT + nC))) : null,
    cuped: cuped === null ? null : {
      control: cuped.control,
      treatment: cuped.treatment,
      difference: cuped.difference,
      varianceReduction: cuped.varianceReduction === null ? null : finite(cuped.varianceReduction)
    }
  }
}

/** The sample-ratio check of the enrolled counts against holdoutPercent : 100 − holdoutPercent. */
export const sampleRatioOf = (cohorts: Cohorts, holdoutPercent: number): typeof SampleRatio.Type => {
  const control = cohorts.control.enrolled
  const treatment = cohorts.treatment.enrolled
  if (control + treatment === 0) return { control, treatment, chiSquare: null, pValue: null, mismatch: null }
  const { chiSquare, pValue } = ProofStatistics.srm([control, treatment], [holdoutPercent, 100 - holdoutPercent])
  return { control, treatment, chiSquare, pValue, mismatch: pValue < mismatchBelow }
}

const summaryOf = (g: GroupCohort): GroupSummary => ({
  members: g.enrolled,
  retained: g.returned,
  retention7d: g.enrolled === 0 ? null : g.returned / g.enrolled
})

/** The experiment's answer from its cohorts (the store's counts). */
export const experimentReport = (experiment: Experiment, cohorts: Cohorts): ExperimentReport => ({
  id: experiment.id,
  programId: experiment.programId,
  holdoutPercent: experiment.holdoutPercent,
  startedAt: experiment.startedAt.toISOString(),
  ...(experiment.endedAt === undefined ? {} : { endedAt: experiment.endedAt.toISOString() }),
  control: summaryOf(cohorts.control),
  treatment: summaryOf(cohorts.treatment),
  report: {
    horizons: cohorts.control.horizons.map((c, i) => horizonOf(c, cohorts.treatment.horizons[i]!)),
    srm: sampleRatioOf(cohorts, experiment.holdoutPercent)
  }
})

/** A member as the reference computation of cohorts reads them: their zone and active days. */
export interface MemberDays {
  readonly userHash: string
  readonly timezone: string
  /** Live active days, in any order. */
  readonly days: Iterable<Calendar.LocalDate>
}

/**
 * The cohorts of `query` over members given one by one: the definition of `CohortQuery` as code,
 * which the memory adapter answers with and SQL adapters are checked against.
 */
export const cohortsOf = (query: CohortQuery, members: Iterable<MemberDays>): Cohorts => {
  const windows = new Map(query.windows.map((w) => [w.timezone, w]))
  const groups = { control: emptyGroup(query.horizons), treatment: emptyGroup(query.horizons) }
  const sums = {
    control: groups.control.horizons.map((h) => ({ ...h })),
    treatment: groups.treatment.horizons.map((h) => ({ ...h }))
  }
  const counts = { control: { enrolled: 0, returned: 0 }, treatment: { enrolled: 0, returned: 0 } }
  for (const member of members) {
    const w = windows.get(member.timezone)
    if (w === undefined) continue
    const days = [...member.days].sort()
    const e = days.find((d) => d >= w.start && d <= w.until)
    if (e === undefined) continue
    const side = isControl(query.experimentId, member.userHash, query.holdoutPercent) ? "control" : "treatment"
    const within = (from: string, to: string) => days.filter((d) => d >= from && d <= to).length
    counts[side].enrolled += 1
    if (within(Calendar.addDays(e, query.returnAfter), w.until) > 0) counts[side].returned += 1
    const x = within(Calendar.addDays(w.start, -query.preDays), Calendar.addDays(w.start, -1))
    query.horizons.forEach((h, i) => {
      if (Calendar.addDays(e, h + query.retentionDays - 1) > w.lastComplete) return
      const s = sums[side][i]!
      const y = within(e, Calendar.addDays(e, h - 1))
      s.matured += 1
      if (within(Calendar.addDays(e, h), Calendar.addDays(e, h + query.retentionDays - 1)) > 0) s.retained += 1
      s.sumY += y
      s.sumY2 += y * y
      s.sumX += x
      s.sumX2 += x * x
      s.sumXY += x * y
    })
  }
  return {
    control: { ...counts.control, horizons: sums.control },
    treatment: { ...counts.treatment, horizons: sums.treatment }
  }
}
