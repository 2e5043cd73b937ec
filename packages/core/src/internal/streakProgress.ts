/**
 * What every planner of a streak row shares (ingest, alias merge, due checks): reading the row as a
 * `Streak.Summary`, and the row to save with its next due instant.
 */
import { Clock, Effect, Option } from "effect"
import * as Calendar from "../Calendar.js"
import { type Program, type Project, type StreakKey, StreakRow, unsafeMake } from "../Domain.js"
import { NotFound } from "../Errors.js"
import * as Ids from "../Ids.js"
import type { ProgramId, ProjectId } from "../Ids.js"
import type * as Policy from "../Policy.js"
import * as Streak from "../Streak.js"

/** The current instant from `Clock`, as a Date (tests drive it with `TestClock`). */
export const nowDate: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/** The zone used when neither the event, the member nor the project names a valid one. */
export const defaultZone = "UTC"

/**
 * The zone of a member (docs/streak-semantics.md#the-rules): their stored zone, else the project's,
 * else UTC. Stored values are re-checked so that a bad row degrades to a default instead of failing
 * every action.
 */
export const memberZone = (stored: Option.Option<string>, project: Project): string => {
  if (Option.isSome(stored) && Calendar.isValidZone(stored.value)) return stored.value
  return Calendar.isValidZone(project.timezone) ? project.timezone : defaultZone
}

/** A program and its project by the program's id, or `NotFound` (the operations on one program start here). */
export const programAndProjectIn = <E>(directory: {
  readonly program: (id: ProgramId) => Effect.Effect<Option.Option<Program>, E>
  readonly project: (id: ProjectId) => Effect.Effect<Option.Option<Project>, E>
}) =>
(programId: string) =>
  Effect.gen(function*() {
    const program = Option.getOrUndefined(yield* directory.program(Ids.unsafe("ProgramId", programId)))
    const project = program && Option.getOrUndefined(yield* directory.project(program.projectId))
    if (program === undefined || project === undefined) return yield* new NotFound({ message: "program not found" })
    return { program, project }
  })

/** A program's outage windows as instants (docs/streak-semantics.md#forgiveness). */
export const windowsOf: (program: Pick<Program, "outages"> | undefined) => ReadonlyArray<Streak.Window> =
  Streak.windowsOf

/**
 * The row as the calculus sees it under the program's policy (absent fields take their defaults),
 * with its repairs and pauses and the program's outage windows.
 */
export const summaryOf = (
  row: StreakRow,
  policy: Policy.Policy,
  program?: Pick<Program, "outages"> | undefined
): Streak.Summary => Streak.fromRow(row, policy, windowsOf(program))

/** The forgiveness of a row (repairs, pauses) under a program's windows, for a recomputation. */
export const forgivenessOf = (
  row: Pick<StreakRow, "repairs" | "pauses"> | undefined,
  program: Pick<Program, "outages"> | undefined
): Streak.Forgiveness | undefined => Streak.forgivenessOfRow({ run: 0, best: 0, ...row }, windowsOf(program))

/** What a row keeps of forgiveness beyond the calculus (reasons, ids): carried to the row saved. */
export type Forgiven = Pick<StreakRow, "repairs" | "pauses">

export const notifiedOf = (row: StreakRow): Streak.Notified => ({
  atRiskFor: row.atRiskNotifiedFor,
  brokenAfter: row.brokenNotifiedAfter,
  frozenThrough: row.frozenNotifiedThrough
})

/** The row holding `summary`, computed in `zone`, with `dueAt` following from what was notified. */
export const rowOf = (
  key: Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">,
  summary: Streak.Summary,
  zone: string,
  notified: Streak.Notified,
  now: Date,
  policy: Policy.Policy,
  forgiven?: Forgiven | undefined
): StreakRow =>
  rowDueAt(key, summary, zone, notified, Streak.nextDueAt(summary, zone, notified, policy, now), now, forgiven)

/** `rowOf` with its next due instant already known (the due checks work it out with the events). */
export const rowDueAt = (
  key: Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">,
  summary: Streak.Summary,
  zone: string,
  notified: Streak.Notified,
  dueAt: Date | undefined,
  now: Date,
  forgiven?: Forgiven | undefined
): StreakRow =>
  // Built from a validated key and the calculus' output: no constructor on the hot path.
  unsafeMake(StreakRow, {
    projectId: key.projectId,
    programId: key.programId,
    userHash: key.userHash,
    ledger: key.ledger,
    ...(summary.lastActiveDay === undefined ? {} : { lastActiveDay: summary.lastActiveDay }),
    run: summary.run,
    best: summary.best,
    timezone: zone,
    ...(notified.atRiskFor === undefined ? {} : { atRiskNotifiedFor: notified.atRiskFor }),
    ...(notified.brokenAfter === undefined ? {} : { brokenNotifiedAfter: notified.brokenAfter }),
    periodDays: summary.periodDays,
    freezes: summary.freezes,
    ...(summary.grants.length === 0 ? {} : { grants: summary.grants }),
    ...(notified.frozenThrough === undefined ? {} : { frozenNotifiedThrough: notified.frozenThrough }),
    ...(forgiven?.repairs === undefined || forgiven.repairs.length === 0 ? {} : { repairs: forgiven.repairs }),
    ...(forgiven?.pauses === undefined || forgiven.pauses.length === 0 ? {} : { pauses: forgiven.pauses }),
    ...(dueAt === undefined ? {} : { dueAt }),
    updatedAt: now
  })
