/**
 * The alias merge as one pure function: from the streaks of an anonymous id and the member's
 * streaks they merge into (locked, with their days and achievements), the changes to write and
 * the outbox messages of the milestones the merged streaks reach.
 */
import type * as Calendar from "./Calendar.js"
import {
  Achievement,
  type OutboxMessage,
  type Program,
  type Project,
  type StreakKey,
  type StreakRow
} from "./Domain.js"
import type { MessageId, ProgramId, UserHash } from "./Ids.js"
import type { NewDay } from "./IngestRecords.js"
import { forgivenessOf, notifiedOf, rowOf } from "./internal/streakProgress.js"
import * as OutboundEvents from "./OutboundEvents.js"
import * as Policy from "./Policy.js"
import * as Streak from "./Streak.js"

/** The event types a merge emits: what `Input.audience` must hold subscriptions for. */
export const eventTypes = ["milestone.achieved", "reward.unlocked"] as const

/** One streak as read for a merge: its locked row, its active days and its achievements. */
export interface LockedStreak {
  readonly key: StreakKey
  readonly row: StreakRow
  readonly days: ReadonlyArray<Calendar.LocalDate>
  readonly achieved: ReadonlyArray<Achievement>
}

/** One streak of the anonymous id (`from`) and the member's streak of the same program and ledger (`to`). */
export interface Pair {
  readonly from: LockedStreak
  readonly to: LockedStreak
  /** The program of both; `undefined` when it no longer exists. */
  readonly program: Program | undefined
}

/** Everything the planner reads. */
export interface Input {
  /** The project; `undefined` when it no longer exists. */
  readonly project: Project | undefined
  /** The member the anonymous id now counts for. */
  readonly member: UserHash
  /** The member's zone (see `Aliases.link`). */
  readonly zone: string
  readonly now: Date
  readonly pairs: ReadonlyArray<Pair>
  /** Who hears the programs read so far (subscriptions listening to `eventTypes`). */
  readonly audience: OutboundEvents.Audience
  readonly messageId: () => MessageId
}

/** What a merge writes, in its transaction. */
export interface Changes {
  /** The anonymous id's days that the member's streak did not have. */
  readonly days: ReadonlyArray<NewDay>
  /** The anonymous id's achievements the member did not have, then the milestones newly reached. */
  readonly achievements: ReadonlyArray<Achievement>
  /** The member's rows recomputed from all their days. */
  readonly rows: ReadonlyArray<StreakRow>
  /** The anonymous id's streaks, merged away (rows, days, achievements). */
  readonly removed: ReadonlyArray<StreakKey>
  readonly outbox: ReadonlyArray<OutboxMessage>
}

export type Result =
  | { readonly _tag: "Planned"; readonly changes: Changes }
  /** Plan again once the audience of these programs is read (a merged streak reached a milestone). */
  | { readonly _tag: "Needs"; readonly audience: ReadonlyArray<ProgramId> }

/**
 * Plans a merge: every streak of the anonymous id (each program and ledger) moves into the
 * member's. Active days are unioned and the member's row recomputed from all of them, with the
 * freezes granted to either id; achievements of either id stay achieved (a person reaches a
 * milestone once, whichever id they used); milestones newly reached by the merged streak, judged
 * on its state at `now`, are achieved and fire as on ingest (`OutboundEvents.hearing`); the
 * anonymous streaks are removed. A pair whose days add nothing to the member's, or whose program
 * or project is gone, only moves its achievements and is removed.
 */
export const plan = (input: Input): Result => {
  const { member, now, project, zone } = input
  const days: Array<NewDay> = []
  const achievements: Array<Achievement> = []
  const rows: Array<StreakRow> = []
  const outbox: Array<OutboxMessage> = []
  const needed = new Set<ProgramId>()

  for (const { from, program, to } of input.pairs) {
    const achieved = new Set<string>(to.achieved.map((a) => a.milestoneId))
    for (const a of from.achieved) {
      if (achieved.has(a.milestoneId)) continue
      achieved.add(a.milestoneId)
      achievements.push(new Achievement({ ...a, userHash: to.key.userHash }))
    }
    const known = new Set(to.days)
    const added = from.days.filter((day) => !known.has(day))
    for (const day of added) days.push({ key: to.key, day })
    if (added.length === 0 || program === undefined || project === undefined) continue

    const policy = Policy.of(program)
    // Freezes granted to the anonymous id go with its days.
    const grants = [...(to.row.grants ?? []), ...(from.row.grants ?? [])]
    // So do its repairs and pauses (a period repaired on either counts as kept).
    const forgiven = {
      repairs: [...(to.row.repairs ?? []), ...(from.row.repairs ?? [])],
      pauses: [...(to.row.pauses ?? []), ...(from.row.pauses ?? [])]
    }
    const summary = Streak.fromDays(
      [...to.days, ...added].sort(),
      zone,
      policy,
      grants,
      forgivenessOf(forgiven, program)
    )
    rows.push(rowOf(to.key, summary, zone, notifiedOf(to.row), now, policy, forgiven))
    const state = Streak.evaluate(summary, now, zone, policy)
    const crossed = Streak.newlyCrossed(program.milestones, state.current, achieved)
    if (crossed.length === 0) continue
    for (const m of crossed) {
      achievements.push(new Achievement({ ...to.key, milestoneId: m.id, achievedAt: now }))
    }
    const subject: OutboundEvents.Subject = {
      project,
      program,
      userHash: member,
      ledger: to.key.ledger,
      streak: { current: state.current, best: state.best }
    }
    const heard = OutboundEvents.hearing(subject, input.audience)
    if (heard._tag === "NeedsAudience") needed.add(heard.program)
    else if (heard._tag === "Heard") {
      const events = crossed.flatMap(OutboundEvents.milestoneEvents)
      for (const m of OutboundEvents.deliveries(subject, events, heard.subscriptions, now, input.messageId)) {
        outbox.push(m)
      }
    }
  }

  if (needed.size > 0) return { _tag: "Needs", audience: [...needed] }
  return {
    _tag: "Planned",
    changes: { days, achievements, rows, removed: input.pairs.map((p) => p.from.key), outbox }
  }
}
