/**
 * The due-check rule as one pure function: from a batch of claimed streak rows and what was read
 * about them (their programs and projects, who hears their programs' events), each row moved on
 * and the outbox messages of the events that fired (at-risk, freeze used, broken).
 */
import { type OutboxMessage, type Program, type Project, StreakRow } from "./Domain.js"
import type { MessageId, ProgramId, ProjectId } from "./Ids.js"
import { notifiedOf, rowDueAt, summaryOf } from "./internal/streakProgress.js"
import * as OutboundEvents from "./OutboundEvents.js"
import * as Policy from "./Policy.js"
import * as Streak from "./Streak.js"

/** The event types due checks emit: what `Input.audience` must hold subscriptions for. */
export const eventTypes = ["streak.at_risk", "streak.freeze_used", "streak.broken"] as const

/** Everything the planner reads. */
export interface Input {
  /** The instant of the sweep. */
  readonly now: Date
  /** The claimed rows, locked for the batch's transaction. */
  readonly rows: ReadonlyArray<StreakRow>
  /** The programs read so far; `undefined` for one that does not exist. */
  readonly programs: ReadonlyMap<ProgramId, Program | undefined>
  /** The projects read so far; `undefined` for one that does not exist. */
  readonly projects: ReadonlyMap<ProjectId, Project | undefined>
  /** Who hears the programs read so far (subscriptions listening to `eventTypes`). */
  readonly audience: OutboundEvents.Audience
  /** Fresh ids for the messages. */
  readonly messageId: () => MessageId
}

/** Events that fired: only those of live programs about members outside a control group. */
export interface Fired {
  readonly atRisk: number
  readonly broken: number
  readonly freezesUsed: number
}

export type Result =
  | {
    readonly _tag: "Planned"
    /** Every claimed row, moved on (what was notified, the next due instant). */
    readonly rows: ReadonlyArray<StreakRow>
    readonly outbox: ReadonlyArray<OutboxMessage>
    readonly fired: Fired
  }
  /** Plan again once these are read: programs and projects of the rows, audiences of programs that fire. */
  | {
    readonly _tag: "Needs"
    readonly programs: ReadonlyArray<ProgramId>
    readonly projects: ReadonlyArray<ProjectId>
    readonly audience: ReadonlyArray<ProgramId>
  }

/** A row may not be handed back by the same sweep: its next due instant is at least this far on. */
const MIN_STEP_MS = 1

const tallyOf = { AtRisk: "atRisk", Broken: "broken", FreezeUsed: "freezesUsed" } as const

/** The outbound event of a due event (docs/webhooks.md). */
export const outboundOf = (event: Streak.DueEvent, timezone: string, program: Program): OutboundEvents.Event => {
  switch (event._tag) {
    case "AtRisk":
      // A program without a policy sends the body without the policy's fields.
      return program.policy === undefined
        ? { type: "streak.at_risk", localDate: event.localDate, timezone }
        : {
          type: "streak.at_risk",
          localDate: event.localDate,
          timezone,
          policy: { freezesAvailable: event.freezesAvailable, periodEnd: event.period.end }
        }
    case "FreezeUsed":
      return { type: "streak.freeze_used", period: event.period, freezesLeft: event.freezesLeft, timezone }
    case "Broken":
      return { type: "streak.broken", endedRun: event.endedRun, lastActiveDate: event.lastActiveDate, timezone }
  }
}

/**
 * Plans one batch of due rows at `now`. For each row, under its program's policy (the default
 * for a program that no longer exists), `Streak.due` answers the events due and the next due
 * instant: at-risk once per period while its last chance day is today, then at its end a freeze
 * used or the break. Events fire as on ingest (`OutboundEvents.hearing`); the row records what
 * was notified either way, so that it is not due again for the same event, and always leaves the
 * sweep's window.
 */
export const plan = (input: Input): Result => {
  const { audience, now, programs, projects, rows } = input
  const neededPrograms = new Set<ProgramId>()
  const neededProjects = new Set<ProjectId>()
  const neededAudience = new Set<ProgramId>()
  const fired = { atRisk: 0, broken: 0, freezesUsed: 0 }
  const outbox: Array<OutboxMessage> = []
  const next: Array<StreakRow> = []

  for (const row of rows) {
    if (!programs.has(row.programId)) neededPrograms.add(row.programId)
    if (!projects.has(row.projectId)) neededProjects.add(row.projectId)
    if (neededPrograms.size + neededProjects.size > 0) continue
    const program = programs.get(row.programId)
    const project = projects.get(row.projectId)
    const zone = row.timezone
    const policy = program === undefined ? Policy.defaultPolicy : Policy.of(program)
    const summary = summaryOf(row, policy, program)
    const due = Streak.due(summary, zone, now, notifiedOf(row), policy)
    if (due.events.length > 0 && program !== undefined && project !== undefined) {
      const state = Streak.evaluate(summary, now, zone, policy)
      const subject: OutboundEvents.Subject = {
        project,
        program,
        userHash: row.userHash,
        ledger: row.ledger,
        streak: { current: state.current, best: state.best }
      }
      const heard = OutboundEvents.hearing(subject, audience)
      if (heard._tag === "NeedsAudience") neededAudience.add(heard.program)
      else if (heard._tag === "Heard" && neededAudience.size === 0) {
        for (const event of due.events) {
          fired[tallyOf[event._tag]]++
          const messages = OutboundEvents.deliveries(
            subject,
            [outboundOf(event, zone, program)],
            heard.subscriptions,
            now,
            input.messageId
          )
          for (const m of messages) outbox.push(m)
        }
      }
    }
    const moved = rowDueAt(row, summary, zone, due.notified, due.dueAt, now, row)
    // Whatever the calculus says, a claimed row must leave the sweep's window, or this very sweep
    // would claim it again and never end.
    const stuck = moved.dueAt !== undefined && moved.dueAt.getTime() <= now.getTime()
    next.push(stuck ? new StreakRow({ ...moved, dueAt: new Date(now.getTime() + MIN_STEP_MS) }) : moved)
  }

  if (neededPrograms.size + neededProjects.size + neededAudience.size > 0) {
    return {
      _tag: "Needs",
      programs: [...neededPrograms],
      projects: [...neededProjects],
      audience: [...neededAudience]
    }
  }
  return { _tag: "Planned", rows: next, outbox, fired }
}
