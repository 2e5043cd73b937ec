/**
 * The unit of work of accepted actions (CONTRACT §2–§4, §6–§8, §11): which ledger each feeds, the
 * per-day dedup, the streak rows, milestones, usage and the action log. Runs inside one transaction.
 */
import { Clock, Effect, Exit, Option, Runtime } from "effect"
import * as Calendar from "../Calendar.js"
import { ActionRecord, type Door, type Ledger, Program, type Project, StreakKey, type StreakRow, unsafeMake } from "../Domain.js"
import type { StorageError } from "../Errors.js"
import type { Action } from "../EventInput.js"
import * as Ids from "../Ids.js"
import type { UserHash } from "../Ids.js"
import * as Metering from "../Metering.js"
import {
  AchievementStore,
  ActionLog,
  DirectoryStore,
  ExperimentStore,
  IdempotencyStore,
  type Member,
  MemberStore,
  Outbox,
  StreakStore,
  SubscriptionStore,
  type UsageEntry,
  UsageStore
} from "../Ports.js"
import * as Streak from "../Streak.js"
import {
  memberZone,
  notifiedOf,
  type Progress,
  progressRow,
  reachesTarget,
  recordCrossed,
  rowOf,
  stateOf,
  summaryOf
} from "./streakProgress.js"

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
  | IdempotencyStore

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

// Built without a leading spread, which costs a promotion per answer on V8 11 (see `Streak.ts`).
const answer = (door: Door, counted: boolean, reason: string | undefined, duplicate: boolean): AnswerBody => {
  const body: { ok?: true; counted: boolean; reason?: string; duplicate?: true } = door === "api"
    ? { counted }
    : { ok: true, counted }
  if (reason !== undefined) body.reason = reason
  if (duplicate) body.duplicate = true
  return body
}

export interface Applied {
  readonly body: AnswerBody
  /** Outbox messages written: the caller nudges the dispatcher after the commit. */
  readonly enqueued: number
}

/** One authorised action, ready to apply. */
export interface Work {
  readonly project: Project
  readonly program: Program
  readonly action: Action
  readonly door: Door
  readonly now: Date
  /** The idempotency key claimed for it: the answer is stored in the same transaction. */
  readonly idempotencyKey: string | undefined
}

/**
 * Which actions may be applied side by side: the first action of each member goes in the first
 * round, the second in the next, and so on, so one member's actions apply in input order.
 */
const roundsOf = (work: ReadonlyArray<Work>, members: ReadonlyArray<Member>): Array<Array<number>> => {
  const seen = new Map<string, number>()
  const rounds: Array<Array<number>> = []
  work.forEach((w, i) => {
    const who = `${w.project.id} ${members[i]!.userHash}`
    const round = seen.get(who) ?? 0
    seen.set(who, round + 1)
    ;(rounds[round] ??= []).push(i)
  })
  return rounds
}

// The hot path builds its keys and records from parts that were validated already (the decoded
// action, the directory's rows, the calculus' output): `unsafeMake`, not the Schema constructor.

/** One action within its round: where and when it counts, and what it did. */
interface Step {
  readonly i: number
  readonly work: Work
  readonly userHash: UserHash
  readonly zone: string
  readonly at: Date
  readonly day: Calendar.LocalDate
  readonly plan: Plan
  readonly key: StreakKey
  moved: boolean
  enqueued: number
}

const stepOf = (i: number, work: Work, member: Member): Step => {
  const { action, door, now, program, project } = work
  const zone = action.tz ?? memberZone(member.timezone, project)
  const at = action.ts ?? now
  const p = plan(project, program, action, door)
  return {
    i,
    work,
    userHash: member.userHash,
    zone,
    at,
    day: Calendar.localDate(at, zone),
    plan: p,
    key: unsafeMake(StreakKey, { projectId: project.id, programId: program.id, userHash: member.userHash, ledger: p.ledger }),
    moved: false,
    enqueued: 0
  }
}

const recordOf = ({ at, day, moved, plan: p, userHash, work, zone }: Step, id: Ids.EventId): ActionRecord => {
  const { action, door, now, program, project } = work
  return unsafeMake(ActionRecord, {
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
}

/**
 * Runs statements of one transaction side by side and answers their results in order, or the first
 * failure. They are issued in order, and a store that pipelines (Postgres) sends them in one round
 * trip and runs them in that order; only statements that do not need each other's answers go
 * together. Each runs to its end even when another fails: interrupting a statement already on the
 * wire would cost a cancel request, and the transaction is rolled back anyway.
 */
type Statements = ReadonlyArray<Effect.Effect<unknown, StorageError, ApplyServices>>
type Successes<T extends Statements> = { -readonly [K in keyof T]: Effect.Effect.Success<T[K]> }

const together = <const T extends Statements>(effects: T): Effect.Effect<Successes<T>, StorageError, ApplyServices> =>
  // A fiber per statement on the caller's runtime (its transaction and services), joined through
  // one callback. `Effect.all` with concurrency forked one fiber more per call and kept sets,
  // arrays and scheduler tasks per statement: measured 11 % of the server's CPU per action.
  // Uninterruptible, as the statements are: the caller waits for every one of them.
  Effect.uninterruptible(Effect.flatMap(Effect.runtime<ApplyServices>(), (runtime) =>
    Effect.async<Successes<T>, StorageError>((resume) => {
      const exits = new Array<Exit.Exit<unknown, StorageError>>(effects.length)
      let left = effects.length
      const settle = () => {
        const failed = exits.find(Exit.isFailure) as Exit.Failure<never, StorageError> | undefined
        resume(failed ?? Effect.succeed(exits.map((e) => (e as Exit.Success<unknown, never>).value) as Successes<T>))
      }
      if (left === 0) return settle()
      const run = Runtime.runCallback(runtime)
      effects.forEach((effect, i) =>
        run(effect, {
          onExit: (exit) => {
            exits[i] = exit
            if (--left === 0) settle()
          }
        })
      )
    })
  ))

/**
 * Applies authorised actions inside the caller's transaction, with the same outcome as applying
 * them one after another in input order, but with a few multi-row statements per round instead of
 * several statements per action. The zone of an action is its `tz` (which also becomes the
 * member's zone), else the member's, else the project's, else UTC; its day is the local date of
 * `ts` there. Every action is appended to the log, counted or not.
 */
export const applyAll = (
  work: ReadonlyArray<Work>
): Effect.Effect<ReadonlyArray<Applied>, StorageError, ApplyServices> =>
  Effect.gen(function*() {
    const members = yield* MemberStore
    const streaks = yield* StreakStore
    const achievements = yield* AchievementStore
    const found = yield* members.lookupMany(work.map((w) => ({ projectId: w.project.id, userHash: w.action.userHash })))
    const steps: Array<Step> = []

    // A member's zone as it stands after their earlier actions of this batch.
    const zones = new Map<string, Option.Option<string>>()
    // Writes whose answers nothing waits for: issued together before the next round reads its
    // rows, or at the end.
    const writes: Array<Effect.Effect<unknown, StorageError, ApplyServices>> = []
    const whoOf = (i: number) => `${work[i]!.project.id} ${found[i]!.userHash}`

    for (const round of roundsOf(work, found)) {
      const here = round.map((i) =>
        stepOf(i, work[i]!, { userHash: found[i]!.userHash, timezone: zones.get(whoOf(i)) ?? found[i]!.timezone })
      )
      steps.push(...here)
      for (const { i, userHash, work: { action, project } } of here) {
        const stored = Option.getOrUndefined(zones.get(whoOf(i)) ?? found[i]!.timezone)
        if (action.tz === undefined || stored === action.tz) continue
        yield* members.setTimezone(project.id, userHash, action.tz)
        zones.set(whoOf(i), Option.some(action.tz))
      }
      const counting = here.filter((s) => s.plan.counting)
      if (counting.length === 0) continue
      // The rows an earlier round saved are read again by this one.
      yield* together(writes.splice(0))
      // Independent statements of one transaction are issued together: a store that pipelines
      // (Postgres) sends them in one round trip and still runs them in this order. The
      // achievements of every key that may cross a milestone are read with them, after the lock:
      // a seek per key that crosses nothing costs less than one more round trip for those that do.
      const asked = counting.filter((s) => s.work.program.milestones.length > 0)
      const [rows, moved, achieved] = yield* together([
        streaks.lockMany(counting.map((s) => ({ key: s.key, timezone: s.zone }))),
        streaks.addDays(counting.map((s) => ({ key: s.key, day: s.day }))),
        asked.length === 0 ? Effect.succeed([]) : achievements.achievedMany(asked.map((s) => s.key))
      ])
      const achievedOf = new Map(asked.map((s, n) => [s, achieved[n]!]))
      const saves: Array<StreakRow> = []
      const active: Array<UsageEntry> = []
      const progressed: Array<{ readonly step: Step; readonly progress: Progress; readonly state: Streak.State }> = []
      for (let n = 0; n < counting.length; n++) {
        const step = counting[n]!
        const row = rows[n]!
        const { now, program, project } = step.work
        step.moved = moved[n]!
        if (!step.moved) {
          // Nothing moved, but the member's zone did: due instants follow it.
          if (row.timezone !== step.zone) {
            saves.push(rowOf(step.key, summaryOf(row, program.mode), step.zone, notifiedOf(row), now))
          }
          continue
        }
        let counted = program
        if (step.plan.promote) {
          // Of concurrent first actions only one flips the status, but every one of them is real.
          yield* Effect.flatMap(DirectoryStore, (d) => d.goLive(program.id))
          counted = new Program({ ...program, status: "live" })
        }
        const before = summaryOf(row, program.mode)
        const applied = Streak.applyDay(before, step.day, step.zone)
        // A late day may join or merge older runs: only then is the history read.
        const summary = applied._tag === "Applied"
          ? applied.summary
          : Streak.fromDays(yield* streaks.days(step.key), step.zone, before.mode)
        const progress = { project, program: counted, key: step.key, row, summary, zone: step.zone, now }
        progressed.push({ step, progress, state: stateOf(progress) })
      }
      for (const { progress, state, step } of progressed) {
        const achievedHere = achievedOf.get(step)
        const crossed = achievedHere === undefined || !reachesTarget(progress.program, state)
          ? []
          : Streak.newlyCrossed(progress.program.milestones, state.current, new Set(achievedHere))
        // Most actions cross no new milestone: then there is nothing to record or fire.
        if (crossed.length > 0) step.enqueued = yield* recordCrossed(progress, state, crossed)
        saves.push(progressRow(progress))
        if (step.plan.ledger === "live") {
          active.push(Metering.activeEntry(progress.project.workspaceId, progress.project.id, step.userHash, step.at))
        }
      }
      if (saves.length > 0) writes.push(streaks.saveAll(saves))
      if (active.length > 0) writes.push(Effect.flatMap(UsageStore, (usage) => usage.markActiveMany(active)))
    }

    const millis = yield* Clock.currentTimeMillis
    const records = steps.map((step) => recordOf(step, Ids.makeAt("EventId", millis)))
    writes.push(Effect.flatMap(ActionLog, (log) => log.appendAll(records)))

    const answers = new Array<Applied>(work.length)
    for (const { enqueued, i, moved, plan: p, work: w } of steps) {
      const body = answer(w.door, p.counting, p.reason, p.counting && !moved)
      answers[i] = { body, enqueued }
      // Storing the answer in the same transaction makes "done" and "answer stored" one fact.
      if (w.idempotencyKey !== undefined) {
        writes.push(Effect.flatMap(IdempotencyStore, (keys) =>
          keys.complete(w.project.id, w.idempotencyKey!, { status: 202, body }, w.now)))
      }
    }
    // The last writes need no answer before the commit, so they go out together.
    yield* together(writes)
    return answers
  })
