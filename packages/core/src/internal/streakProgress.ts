/**
 * What every change of a streak row shares (ingest, alias merge, due checks): reading the row as a
 * `Streak.Summary`, milestones reached and their events, and saving the row with its next due instant.
 */
import { Clock, Effect, Option } from "effect"
import * as Calendar from "../Calendar.js"
import {
  Achievement,
  type Milestone,
  type Program,
  type Project,
  type StreakKey,
  StreakRow,
  unsafeMake
} from "../Domain.js"
import type { StorageError } from "../Errors.js"
import * as OutboundEvents from "../OutboundEvents.js"
import { AchievementStore, type ExperimentStore, type Outbox, StreakStore, type SubscriptionStore } from "../Ports.js"
import * as Policy from "../Policy.js"
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

/** The row as the calculus sees it under the program's policy (absent fields take their defaults). */
export const summaryOf: (row: StreakRow, policy: Policy.Policy) => Streak.Summary = Streak.fromRow

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
  policy: Policy.Policy
): StreakRow => rowDueAt(key, summary, zone, notified, Streak.nextDueAt(summary, zone, notified, policy, now), now)

/** `rowOf` with its next due instant already known (the due checks work it out with the events). */
export const rowDueAt = (
  key: Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">,
  summary: Streak.Summary,
  zone: string,
  notified: Streak.Notified,
  dueAt: Date | undefined,
  now: Date
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
    ...(dueAt === undefined ? {} : { dueAt }),
    updatedAt: now
  })

export interface Settled {
  readonly state: Streak.State
  readonly enqueued: number
}

export interface Progress {
  readonly project: Project
  readonly program: Program
  readonly key: StreakKey
  readonly row: StreakRow
  readonly summary: Streak.Summary
  readonly zone: string
  readonly now: Date
}

/** The member's streak as it stands at `now` after the change (what milestones are judged on). */
export const stateOf = ({ now, program, summary, zone }: Progress): Streak.State =>
  Streak.evaluate(summary, now, zone, Policy.of(program))

/** Whether `state` reaches any milestone target of the program: only then are achievements read. */
export const reachesTarget = (program: Program, state: Streak.State): boolean =>
  program.milestones.some((m) => m.target <= state.current)

/**
 * Records the milestones that the new `summary` of a locked row reaches. Milestones are judged on
 * the state evaluated at `now` in `zone` (the member's streak as it stands, so a late action that
 * leaves today's streak unchanged reaches nothing); each is achieved once per member and ledger,
 * and fires its events through `OutboundEvents.emit`. The caller saves the row (`progressRow`).
 */
export const reach = (
  input: Progress
): Effect.Effect<Settled, StorageError, AchievementStore | SubscriptionStore | Outbox | ExperimentStore> =>
  Effect.gen(function*() {
    const state = stateOf(input)
    // Most actions reach no target at all: then the achievements need not be read.
    if (!reachesTarget(input.program, state)) return { state, enqueued: 0 }
    const achievements = yield* AchievementStore
    const [list] = yield* achievements.achieved([input.key])
    const achieved = new Set<string>(list!.map((a) => a.milestoneId))
    const crossed = Streak.newlyCrossed(input.program.milestones, state.current, achieved)
    return { state, enqueued: crossed.length === 0 ? 0 : yield* recordCrossed(input, state, crossed) }
  })

/**
 * Records `crossed`, the milestones `state` newly reaches on the locked row of `input` (see
 * `reach`), and fires their events; answers the outbox messages written. A milestone's events fire
 * only where this transaction added its achievement; the achievements and the reads of who
 * listens go out together, so a crossing costs one round trip, and a second where someone listens
 * (the outbox). A batch that read the achievements of many keys at once calls it directly.
 */
export const recordCrossed = (
  input: Progress,
  state: Streak.State,
  crossed: ReadonlyArray<Milestone>
): Effect.Effect<number, StorageError, AchievementStore | SubscriptionStore | Outbox | ExperimentStore> =>
  Effect.flatMap(AchievementStore, (achievements) => {
    const { key, now, program } = input
    const eventsOf = crossed.map(OutboundEvents.milestoneEvents)
    const added = achievements.add(
      crossed.map((milestone) => new Achievement({ ...key, milestoneId: milestone.id, achievedAt: now }))
    )
    return Effect.map(
      OutboundEvents.emitWhere(
        {
          project: input.project,
          program,
          userHash: key.userHash,
          ledger: key.ledger,
          streak: { current: state.current, best: state.best }
        },
        eventsOf.flat(),
        Effect.map(added, (news) => eventsOf.flatMap((events, i) => events.map(() => news[i]!)))
      ),
      (emitted) => emitted.enqueued
    )
  })

/** The row to save after `reach`: the new summary, with what was notified kept. */
export const progressRow = ({ key, now, program, row, summary, zone }: Progress): StreakRow =>
  rowOf(key, summary, zone, notifiedOf(row), now, Policy.of(program))

/** `reach`, then saves the row. */
export const settle = (
  input: Progress
): Effect.Effect<
  Settled,
  StorageError,
  StreakStore | AchievementStore | SubscriptionStore | Outbox | ExperimentStore
> => Effect.tap(reach(input), () => Effect.flatMap(StreakStore, (streaks) => streaks.save([progressRow(input)])))
