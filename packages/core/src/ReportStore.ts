/**
 * The aggregate questions of reports and Proof, answered by the store: counts and sums over the
 * live ledger's activity, never a member's rows. A SQL adapter answers each in one statement
 * over indexed activity; the memory adapter walks its maps.
 *
 * The store does no calendar work: core resolves every date per time zone (activity days, the
 * day start, "yesterday") and hands the store plain dates per zone, so an adapter without zone
 * support (SQLite) answers the same. A member's zone is their streak row's `timezone`.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { LocalDate } from "./Calendar.js"
import type { StorageError } from "./Errors.js"
import type { ProgramId, ProjectId } from "./Ids.js"
import type { CohortQuery, Cohorts } from "./ProofReport.js"
import type { StoredSummary } from "./Streak.js"

export type { CohortQuery, Cohorts, GroupCohort, HorizonSums, ZoneWindow } from "./ProofReport.js"

type Io<A> = Effect.Effect<A, StorageError>

/** Active members of some programs in a span of activity days (both ends inclusive). */
export interface ActiveQuery {
  readonly programIds: ReadonlyArray<ProgramId>
  readonly from: LocalDate
  readonly to: LocalDate
}

/** Live streak rows that share what their current length depends on, and how many they are. */
export interface SummaryGroup {
  readonly programId: ProgramId
  readonly timezone: string
  /** `best` is not part of the group: it is 0 here. */
  readonly summary: StoredSummary
  readonly members: number
}

export class ReportStore extends Context.Tag("@streaks/core/ReportStore")<ReportStore, {
  /**
   * Distinct members (project and user hash, across the programs) with at least one live active
   * day in [from, to]. MUST count a member once whatever the number of programs and days.
   */
  readonly activeMembers: (query: ActiveQuery) => Io<number>
  /**
   * The live streak rows of the programs, grouped by program, zone and stored summary
   * (`lastActiveDay`, `run`, `periodDays`, `freezes`, `grants`, repairs and pauses; absent fields
   * stay absent), with the number of rows of each group; in no particular order. Rows no action
   * has counted on (no `lastActiveDay`, `run` 0, none of the optional fields, no repairs or
   * pauses) are in no group: their current length is 0 under every policy.
   */
  readonly streakSummaries: (programIds: ReadonlyArray<ProgramId>) => Io<ReadonlyArray<SummaryGroup>>
  /** The distinct zones of the program's live streak rows, in no particular order. */
  readonly zones: (projectId: ProjectId, programId: ProgramId) => Io<ReadonlyArray<string>>
  /** The experiment's cohorts (see `ProofReport.CohortQuery`); one statement in a SQL store. */
  readonly cohorts: (query: CohortQuery) => Io<Cohorts>
}>() {}
