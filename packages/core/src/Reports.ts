/**
 * Customer reports (docs/api.md#get-reportsovervieweventsinsights): overview, events and insights
 * over a date range for the programs a credential reaches. Over the plan limit they pause (200 with
 * `paused: true`) and show everything tracked meanwhile once the plan is raised: counting never
 * stops, so the pause hides numbers but loses none.
 *
 * Common rules of the three reports:
 * - Only the live ledger is reported (test progress never mixes with real progress).
 * - The range is a span of calendar dates, both ends inclusive, `from` ≤ `to`, at most 366 days.
 *   Default: the 30 days ending today (UTC). Dates are the members' local dates — the dates their
 *   streaks count on — so a member in Tokyo who acts at 2026-05-01T20:00Z counts on 2026-05-02.
 *   Insights is the one exception: the action log can only group its sources by instant, so it
 *   selects the actions whose `ts` falls in the UTC days of the range (identical for UTC members,
 *   at most one day apart at the edges for others).
 * - Covered programs: `programId` when given (NotFound when the principal does not reach it,
 *   whether or not it exists), else every program of every workspace the principal reaches.
 * - Checks in order: range (InvalidBody), reach (NotFound), plan pause, then the report.
 * - Every number is an aggregate the store computes (`ActionLog`, `ReportStore`): no member's
 *   rows are read into the service, whatever the number of members.
 */
import { Context, DateTime, Effect, Either, Layer, Option, Schema } from "effect"
import * as Calendar from "./Calendar.js"
import * as Credentials from "./Credentials.js"
import * as EpochDay from "./internal/epochDay.js"
import type { Program } from "./Domain.js"
import { InvalidBody, type NotFound, type StorageError } from "./Errors.js"
import * as Metering from "./Metering.js"
import type { UsageStore } from "./Ports.js"
import { ActionLog, type ActionQuery, DirectoryStore } from "./Ports.js"
import * as Policy from "./Policy.js"
import { ReportStore } from "./ReportStore.js"
import * as Streak from "./Streak.js"

/** The query of a report: `from`/`to` are inclusive "YYYY-MM-DD" dates; `programId` narrows. */
export interface Range {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly programId?: string | undefined
}

/** The range a report actually covers (defaults filled in), echoed in every unpaused answer. */
export interface DateRange {
  readonly from: string
  readonly to: string
}

/**
 * The answer of every report while a workspace of the covered programs has more active
 * streakers this UTC month than its plan includes. `workspaceId` is the first such workspace;
 * `usage` is its usage this month (as `GET /v1/api/usage` shows it, minus `overLimit`).
 */
export interface Paused {
  readonly paused: true
  readonly reason: "PLAN_LIMIT_EXCEEDED"
  readonly workspaceId: string
  readonly usage: {
    readonly month: string
    readonly plan: string
    readonly limit: number
    readonly activeStreakers: number
  }
}

/** The streak length buckets of the overview, in this order. */
export const streakBuckets = ["1", "2-6", "7-29", "30+"] as const
export type StreakBucket = typeof streakBuckets[number]

/**
 * `GET /v1/api/reports/overview`.
 * - `activeStreakers`: distinct members (project + userHash, across the covered programs) with at
 *   least one counted live action (an active day) in the range.
 * - `countedActions`: live actions in the range that moved a streak (one per member, program and
 *   active day; duplicates and widget analytics are not counted).
 * - `streakLengths`: every bucket, always all four in order, with the number of live streaks
 *   (one per member and program) whose current length, evaluated now in the member's zone, falls
 *   in it. Broken streaks (current 0) are in no bucket. Independent of the range: it is "now".
 */
export interface Overview {
  readonly paused: false
  readonly range: DateRange
  readonly activeStreakers: number
  readonly countedActions: number
  readonly streakLengths: ReadonlyArray<{ readonly length: StreakBucket; readonly members: number }>
}

/**
 * `GET /v1/api/reports/events`: every live action received for the covered programs, counted or
 * not, per local date and event type (only pairs that occurred), ascending by date then type.
 * `count` is every action, `counted` those that moved a streak.
 */
export interface Events {
  readonly paused: false
  readonly range: DateRange
  readonly days: ReadonlyArray<{
    readonly date: string
    readonly eventType: string
    readonly count: number
    readonly counted: number
  }>
}

/**
 * `GET /v1/api/reports/insights`: counted live actions grouped by their source labels (`source`
 * of signed server events, `externalService`, `integrationId`; absent labels are `null`), most
 * first, ties by labels (null first). The counts add up to the counted actions of the range.
 */
export interface Insights {
  readonly paused: false
  readonly range: DateRange
  readonly sources: ReadonlyArray<{
    readonly source: string | null
    readonly externalService: string | null
    readonly integrationId: string | null
    readonly count: number
  }>
}

export type ReportError = InvalidBody | NotFound | StorageError

export class Reports extends Context.Tag("@streaks/core/Reports")<Reports, {
  readonly overview: (principal: Credentials.Principal, range: Range) => Effect.Effect<Overview | Paused, ReportError>
  readonly events: (principal: Credentials.Principal, range: Range) => Effect.Effect<Events | Paused, ReportError>
  readonly insights: (principal: Credentials.Principal, range: Range) => Effect.Effect<Insights | Paused, ReportError>
}>() {}

/** The longest range, in days (both ends included). */
export const maxRangeDays = 366
/** The default range, in days ending `to`. */
export const defaultRangeDays = 30

const DAY_MS = 86_400_000
const isLocalDate = Schema.is(Calendar.LocalDate)
const firstDate = Calendar.unsafeLocalDate("0001-01-01")

/**
 * The dates `range` covers at `now` (defaults filled in), or the message of its InvalidBody:
 * a malformed or unreal date, `from` after `to`, or more than {@link maxRangeDays} days.
 */
export const resolveRange = (range: Range, now: Date): Either.Either<DateRange, string> => {
  const today = Calendar.localDate(now, "UTC")
  const to = range.to ?? today
  if (!isLocalDate(to)) return Either.left("to must be a date YYYY-MM-DD")
  let from: Calendar.LocalDate
  if (range.from === undefined) {
    const back = Calendar.daysBetween(firstDate, to)
    from = Calendar.addDays(to, -Math.min(defaultRangeDays - 1, back))
  } else {
    if (!isLocalDate(range.from)) return Either.left("from must be a date YYYY-MM-DD")
    from = range.from
  }
  const span = Calendar.daysBetween(from, to) + 1
  if (span < 1) return Either.left("from must not be after to")
  if (span > maxRangeDays) return Either.left(`a range covers at most ${maxRangeDays} days`)
  return Either.right({ from, to })
}

/** Epoch ms of UTC midnight starting `date` (plain arithmetic: valid for every LocalDate). */
const utcStart = (date: string): number => EpochDay.toEpochDay(date) * DAY_MS

/**
 * The action-log query of the range. `byLocalDate`: widened by a day on each side (zones are
 * within ±14 h of UTC), for reads whose rows carry the local date and are filtered by it;
 * otherwise exactly the UTC days of the range.
 */
const actionQuery = (programs: ReadonlyArray<Program>, r: DateRange, byLocalDate: boolean): ActionQuery => {
  const margin = byLocalDate ? DAY_MS : 0
  return {
    programIds: programs.map((p) => p.id),
    from: new Date(utcStart(r.from) - margin),
    to: new Date(utcStart(r.to) + DAY_MS + margin),
    ledger: "live"
  }
}

const bucketOf = (current: number): number =>
  current <= 0 ? -1 : current === 1 ? 0 : current <= 6 ? 1 : current <= 29 ? 2 : 3

const compareLabel = (a: string | null, b: string | null): number =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const actions = yield* ActionLog
  const aggregates = yield* ReportStore
  // One definition of "over the plan" (Metering's), on the same stores.
  const metering = yield* Metering.make

  const covered = (principal: Credentials.Principal, range: Range) =>
    range.programId !== undefined
      ? Effect.map(
        Effect.provideService(Credentials.reach(principal, range.programId), DirectoryStore, directory),
        (r) => [r]
      )
      : Effect.gen(function*() {
        // What `Credentials.reachablePrograms` answers, without requiring the credential store.
        const projects = yield* directory.projectsOfWorkspaces(principal.workspaceIds)
        if (projects.length === 0) return []
        const programs = yield* directory.programsOfProjects(projects.map((p) => p.id))
        const byId = new Map(projects.map((p) => [p.id, p]))
        return programs.flatMap((program) => {
          const project = byId.get(program.projectId)
          return project === undefined ? [] : [{ program, project }]
        })
      })

  /** The first of the workspaces that is over its plan limit in `month`, as the paused answer. */
  const pauseOf = (
    workspaceIds: ReadonlyArray<string>,
    month: string
  ): Effect.Effect<Option.Option<Paused>, StorageError> =>
    Effect.gen(function*() {
      for (const id of workspaceIds) {
        const usage = yield* metering.usage(id, month).pipe(
          Effect.map(Option.some),
          // A workspace that vanished (or a malformed month, impossible here) pauses nothing.
          Effect.catchTags({ NotFound: () => Effect.succeedNone, InvalidBody: () => Effect.succeedNone })
        )
        if (Option.isSome(usage) && usage.value.overLimit) {
          const { activeStreakers, limit, plan } = usage.value
          return Option.some<Paused>({
            paused: true,
            reason: "PLAN_LIMIT_EXCEEDED",
            workspaceId: id,
            usage: { month: usage.value.month, plan, limit, activeStreakers }
          })
        }
      }
      return Option.none()
    })

  const report = <A>(
    principal: Credentials.Principal,
    range: Range,
    build: (programs: ReadonlyArray<Program>, r: DateRange, now: Date) => Effect.Effect<A, StorageError>
  ): Effect.Effect<A | Paused, ReportError> =>
    Effect.gen(function*() {
      const now = DateTime.toDateUtc(yield* DateTime.now)
      const resolved = resolveRange(range, now)
      if (Either.isLeft(resolved)) return yield* new InvalidBody({ message: resolved.left })
      const reached = yield* covered(principal, range)
      const workspaceIds = [...new Set(reached.map((r) => r.project.workspaceId))]
      const paused = yield* pauseOf(workspaceIds, Calendar.month(now))
      if (Option.isSome(paused)) return paused.value
      return yield* build(reached.map((r) => r.program), resolved.right, now)
    })

  /** Live actions per local date and event type, restricted to the dates of the range. */
  const countsInRange = (programs: ReadonlyArray<Program>, r: DateRange) =>
    programs.length === 0
      ? Effect.succeed([])
      : Effect.map(
        actions.countsByDay(actionQuery(programs, r, true)),
        (rows) => rows.filter((row) => row.date >= r.from && row.date <= r.to)
      )

  const overview = (principal: Credentials.Principal, range: Range) =>
    report(principal, range, (programs, r, now) =>
      Effect.gen(function*() {
        const programIds = programs.map((p) => p.id)
        if (programIds.length === 0) {
          return {
            paused: false as const,
            range: r,
            activeStreakers: 0,
            countedActions: 0,
            streakLengths: streakBuckets.map((length) => ({ length, members: 0 }))
          }
        }
        const [activeStreakers, groups, counts] = yield* Effect.all([
          aggregates.activeMembers({
            programIds,
            from: r.from as Calendar.LocalDate,
            to: r.to as Calendar.LocalDate
          }),
          aggregates.streakSummaries(programIds),
          countsInRange(programs, r)
        ], { concurrency: 3 })
        // Rows that share a summary and a zone share their current length: one evaluation per group.
        const policies = new Map(programs.map((p) => [p.id as string, Policy.of(p)]))
        const windows = new Map(programs.map((p) => [p.id as string, Streak.windowsOf(p)]))
        const lengths = streakBuckets.map(() => 0)
        for (const group of groups) {
          const policy = policies.get(group.programId)
          if (policy === undefined) continue
          const { current } = Streak.evaluate(
            Streak.fromRow(group.summary, policy, windows.get(group.programId)),
            now,
            group.timezone,
            policy
          )
          const bucket = bucketOf(current)
          if (bucket >= 0) lengths[bucket]! += group.members
        }
        return {
          paused: false as const,
          range: r,
          activeStreakers,
          countedActions: counts.reduce((sum, c) => sum + c.counted, 0),
          streakLengths: streakBuckets.map((length, i) => ({ length, members: lengths[i]! }))
        }
      }))

  const events = (principal: Credentials.Principal, range: Range) =>
    report(principal, range, (programs, r) =>
      Effect.map(countsInRange(programs, r), (rows) => ({
        paused: false as const,
        range: r,
        days: [...rows]
          .sort((a, b) => compareLabel(a.date, b.date) || compareLabel(a.eventType, b.eventType))
          .map((row) => ({
            date: row.date as string,
            eventType: row.eventType as string,
            count: row.count,
            counted: row.counted
          }))
      })))

  const insights = (principal: Credentials.Principal, range: Range) =>
    report(
      principal,
      range,
      (programs, r) =>
        Effect.map(
          programs.length === 0 ? Effect.succeed([]) : actions.sources(actionQuery(programs, r, false)),
          (rows) => ({
            paused: false as const,
            range: r,
            sources: rows
              .map((row) => ({
                source: row.source ?? null,
                externalService: row.externalService ?? null,
                integrationId: row.integrationId ?? null,
                count: row.count
              }))
              .sort((a, b) =>
                b.count - a.count ||
                compareLabel(a.source, b.source) ||
                compareLabel(a.externalService, b.externalService) ||
                compareLabel(a.integrationId, b.integrationId)
              )
          })
        )
    )

  return Reports.of({ overview, events, insights })
})

/** Reports on the storage ports and the store's aggregates (Metering's rules are built in, on the same stores). */
export const layer: Layer.Layer<Reports, never, DirectoryStore | ActionLog | ReportStore | UsageStore> = Layer.effect(
  Reports,
  make
)
