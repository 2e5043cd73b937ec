/**
 * The unit of work of one accepted action (CONTRACT §2–§4, §6–§8, §11): which ledger it feeds, the
 * per-day dedup, the streak row, milestones, usage and the action log. Runs inside one transaction.
 */
import { Effect, Option } from "effect"
import * as Calendar from "../Calendar.js"
import { ActionRecord, type Door, type Ledger, Program, type Project, StreakKey } from "../Domain.js"
import type { StorageError } from "../Errors.js"
import type { Action } from "../EventInput.js"
import * as Ids from "../Ids.js"
import * as Metering from "../Metering.js"
import {
  AchievementStore,
  ActionLog,
  DirectoryStore,
  ExperimentStore,
  MemberStore,
  Outbox,
  StreakStore,
  SubscriptionStore,
  UsageStore
} from "../Ports.js"
import * as Streak from "../Streak.js"
import { memberZone, notifiedOf, rowOf, settle, summaryOf } from "./streakProgress.js"

/** The body a door answers with (public doors add `ok: true`; the REST door does not). */
export interface AnswerBody {
  readonly ok?: true
  readonly counted?: boolean
  readonly reason?: string
  readonly duplicate?: boolean
}

export type ApplyServices =
  | DirectoryStore
  | MemberStore
  | StreakStore
  | AchievementStore
  | ActionLog
  | SubscriptionStore
  | Outbox
  | UsageStore
  | ExperimentStore

interface Plan {
  readonly ledger: Ledger
  /** Whether the action marks a day of the streak at all. */
  readonly counting: boolean
  /** A real action in a test program: it goes to the live ledger and, if it moves progress, makes the program live. */
  readonly promote: boolean
  readonly reason?: string
}

/** The ledger and counting rule of an action (CONTRACT §3, §5 `browserCounting`). */
export const plan = (project: Project, program: Program, action: Action, door: Door): Plan => {
  const ledger: Ledger = action.test || program.status === "test" ? "test" : "live"
  if (action.eventType !== "streak_interaction") return { ledger, counting: false, promote: false }
  if (door === "api" && !action.test && program.status === "test") {
    return { ledger: "test", counting: false, promote: false, reason: "PROGRAM_NOT_LIVE" }
  }
  if (door === "browser" && project.browserCounting === "display-only") {
    return { ledger, counting: false, promote: false, reason: "BROWSER_COUNTING_DISABLED" }
  }
  if (action.test || program.status === "live") return { ledger, counting: true, promote: false }
  // A test program: the webhook door counts test progress and never makes it live; a real action
  // from the member's site or sender is the first one on the live ledger.
  return door === "browser" || door === "server"
    ? { ledger: "live", counting: true, promote: true }
    : { ledger: "test", counting: true, promote: false }
}

const answer = (door: Door, counted: boolean, reason: string | undefined, duplicate: boolean): AnswerBody => ({
  ...(door === "api" ? {} : { ok: true as const }),
  counted,
  ...(reason === undefined ? {} : { reason }),
  ...(duplicate ? { duplicate: true } : {})
})

export interface Applied {
  readonly body: AnswerBody
  /** Outbox messages written: the caller nudges the dispatcher after the commit. */
  readonly enqueued: number
}

/**
 * Applies one authorised action at `now`. The zone of the action is its `tz` (which also becomes
 * the member's zone), else the member's, else the project's, else UTC; its day is the local date
 * of `ts` there. Every action is appended to the log, counted or not.
 */
export const apply = (
  project: Project,
  program: Program,
  action: Action,
  door: Door,
  now: Date
): Effect.Effect<Applied, StorageError, ApplyServices> =>
  Effect.gen(function*() {
    const members = yield* MemberStore
    const member = yield* members.lookup(project.id, action.userHash)
    const userHash = member.userHash
    if (action.tz !== undefined && Option.getOrUndefined(member.timezone) !== action.tz) {
      yield* members.setTimezone(project.id, userHash, action.tz)
    }
    const zone = action.tz ?? memberZone(member.timezone, project)
    const at = action.ts ?? now
    const day = Calendar.localDate(at, zone)
    const p = plan(project, program, action, door)

    let moved = false
    let enqueued = 0
    if (p.counting) {
      const streaks = yield* StreakStore
      const key = new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger: p.ledger })
      const row = yield* streaks.lock(key, zone)
      moved = yield* streaks.addDay(key, day)
      if (moved) {
        let counting = program
        if (p.promote) {
          // Of concurrent first actions only one flips the status, but every one of them is real.
          yield* Effect.flatMap(DirectoryStore, (d) => d.goLive(program.id))
          counting = new Program({ ...program, status: "live" })
        }
        const before = summaryOf(row, program.mode)
        const applied = Streak.applyDay(before, day, zone)
        // A late day may join or merge older runs: only then is the history read.
        const summary = applied._tag === "Applied"
          ? applied.summary
          : Streak.fromDays(yield* streaks.days(key), zone, before.mode)
        enqueued = (yield* settle({ project, program: counting, key, row, summary, zone, now })).enqueued
        if (p.ledger === "live") yield* Metering.recordActive(project.workspaceId, project.id, userHash, at)
      } else if (row.timezone !== zone) {
        // Nothing moved, but the member's zone did: due instants follow it.
        yield* streaks.save(rowOf(key, summaryOf(row, program.mode), zone, notifiedOf(row), now))
      }
    }

    yield* Effect.flatMap(ActionLog, (log) =>
      Effect.flatMap(Ids.make("EventId"), (id) =>
        log.append(
          new ActionRecord({
            id,
            projectId: project.id,
            programId: program.id,
            userHash,
            event: action.event ?? program.eventKey,
            eventType: action.eventType,
            door,
            ledger: p.ledger,
            ts: at,
            receivedAt: now,
            localDate: day,
            timezone: zone,
            counted: moved,
            // `source` is a label of signed server events (spec §2.1); a browser cannot vouch for it.
            ...(action.source === undefined || door !== "server" ? {} : { source: action.source }),
            ...(action.externalService === undefined ? {} : { externalService: action.externalService }),
            ...(action.integrationId === undefined ? {} : { integrationId: action.integrationId }),
            ...(action.sessionId === undefined ? {} : { sessionId: action.sessionId }),
            ...(action.idempotencyKey === undefined ? {} : { idempotencyKey: action.idempotencyKey }),
            ...(action.extra === undefined ? {} : { extra: action.extra })
          })
        )))

    return { body: answer(door, p.counting, p.reason, p.counting && !moved), enqueued }
  })
