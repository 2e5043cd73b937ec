/**
 * The unit of work of accepted actions (CONTRACT §2–§4, §6–§8, §11): which ledger each feeds, the
 * per-day dedup, the streak rows, milestones, usage and the action log. Runs inside one transaction.
 */
import { Clock, Effect, Option } from "effect"
import * as Calendar from "../Calendar.js"
import { ActionRecord, type Door, Program, type Project, StreakKey, type StreakRow, unsafeMake } from "../Domain.js"
import { StorageError } from "../Errors.js"
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
  type KeyCompletion,
  type Member,
  MemberStore,
  type MemberZone,
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
import { answer, type AnswerBody, plan, type Plan } from "./ingestPlan.js"
import { type Ahead, type Held, lookup } from "./ingestLookup.js"
import { together } from "./together.js"

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

export interface Applied {
  readonly body: AnswerBody
  /** Outbox messages written: the caller nudges the dispatcher after the commit. */
  readonly enqueued: number
}

/** What became of an action: applied, or not, its idempotency key held (`Held`). */
export type Outcome = Applied | { readonly held: Held }

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

/** New days must be new: the row's last active day said so (see `applyAll`). */
const allNew = (added: ReadonlyArray<boolean>) =>
  added.every(Boolean) ? Effect.void : Effect.fail(
    new StorageError({
      message: "StreakStore: an active day after the row's last active day was already recorded (the batch is retried without lookahead)"
    })
  )

/**
 * A round's writes of its rows and of the active days that the rows' last active days showed new:
 * one statement where the store can (`saveAllWithDays`), else two.
 */
const saveRound = (
  streaks: StreakStore["Type"],
  saves: ReadonlyArray<StreakRow>,
  newDays: ReadonlyArray<Step>
): Array<Effect.Effect<unknown, StorageError>> => {
  const days = newDays.map((s) => ({ key: s.key, day: s.day }))
  if (streaks.saveAllWithDays !== undefined && saves.length > 0 && days.length > 0) {
    return [Effect.flatMap(streaks.saveAllWithDays(saves, days), allNew)]
  }
  return [
    ...(days.length > 0 ? [Effect.flatMap(streaks.addDays(days), allNew)] : []),
    ...(saves.length > 0 ? [streaks.saveAll(saves)] : [])
  ]
}

/**
 * Applies authorised actions inside the caller's transaction, with the same outcome as applying
 * them one after another in input order, but with a few multi-row statements per round instead of
 * several statements per action. The zone of an action is its `tz` (which also becomes the
 * member's zone), else the member's, else the project's, else UTC; its day is the local date of
 * `ts` there. Every action is appended to the log, counted or not.
 *
 * With `lookahead` (and a store with `lockExisting`), the first round's rows are locked with the
 * members' lookup, and the day of a row locked so is not asked of the store when its last active
 * day answers it: a later day is new (it is recorded with the writes), the same day a repeat, as
 * `Streak.applyDay` has it; only an older day is asked. So a batch of members who act daily costs
 * three round trips with its commit, not four. Should the store hold a day after a row's last
 * active day (nothing in this service writes one), the batch fails, and `Ingest` retries its
 * actions one by one, each without lookahead (it asks the store about every day).
 *
 * With `claimInside` (and a store with `claimWithin`), the keyed actions' idempotency keys are
 * claimed in the first round trip, inside the transaction; an action whose key is held is not
 * applied, and answers `{ held }`. Without, the caller has claimed every key already.
 */
export const applyAll = (
  work: ReadonlyArray<Work>,
  options: { readonly lookahead: boolean; readonly claimInside: boolean }
): Effect.Effect<ReadonlyArray<Outcome>, StorageError, ApplyServices> =>
  Effect.flatMap(lookup(work, options.lookahead, options.claimInside), ({ ahead, found, held }): Effect.Effect<
    ReadonlyArray<Outcome>,
    StorageError,
    ApplyServices
  > => {
    if (held.size === 0) return applyFound(work, found, ahead)
    // The actions whose key is held are not applied; the others are, as if sent alone.
    const go = work.flatMap((_, i) => (held.has(i) ? [] : [i]))
    const at = new Map(go.map((i, n) => [i, n]))
    const kept = new Map([...ahead].flatMap(([i, a]) => (at.has(i) ? [[at.get(i)!, a] as const] : [])))
    return Effect.map(
      go.length === 0 ? Effect.succeed([]) : applyFound(go.map((i) => work[i]!), go.map((i) => found[i]!), kept),
      (applied) => work.map((_, i): Outcome => {
        const h = held.get(i)
        return h === undefined ? applied[at.get(i)!]! : { held: h }
      })
    )
  })

/** `applyAll` once the first round trip has answered, for the actions that go ahead. */
const applyFound = (
  work: ReadonlyArray<Work>,
  found: ReadonlyArray<Member>,
  ahead: ReadonlyMap<number, Ahead>
): Effect.Effect<ReadonlyArray<Applied>, StorageError, ApplyServices> =>
  Effect.gen(function*() {
    const members = yield* MemberStore
    const streaks = yield* StreakStore
    const achievements = yield* AchievementStore
    const steps: Array<Step> = []

    // The zones that earlier actions of this batch gave their members. Nothing in the batch reads
    // them back from the store, so each is stored once, with the last writes.
    const zoneChanges = new Map<string, MemberZone>()
    // Writes whose answers nothing waits for: issued together before the next round reads its
    // rows, or at the end.
    const writes: Array<Effect.Effect<unknown, StorageError, ApplyServices>> = []
    const whoOf = (i: number) => `${work[i]!.project.id} ${found[i]!.userHash}`
    const zoneOf = (i: number) => {
      const changed = zoneChanges.get(whoOf(i))
      return changed === undefined ? found[i]!.timezone : Option.some(changed.timezone)
    }

    for (const [r, round] of roundsOf(work, found).entries()) {
      const here = round.map((i) =>
        stepOf(i, work[i]!, { userHash: found[i]!.userHash, timezone: zoneOf(i) })
      )
      steps.push(...here)
      for (const { i, userHash, work: { action, project } } of here) {
        if (action.tz === undefined || Option.getOrUndefined(zoneOf(i)) === action.tz) continue
        zoneChanges.set(whoOf(i), { projectId: project.id, userHash, timezone: action.tz })
      }
      const counting = here.filter((s) => s.plan.counting)
      if (counting.length === 0) continue
      // The rows an earlier round saved are read again by this one.
      yield* together(writes.splice(0))
      // Rows locked ahead serve the first round where the lookup confirmed their key (no alias).
      // For those the row tells the day apart, by `Streak.applyDay`'s own rule: a later day is
      // new, the row's day a repeat, and only an older day is asked of the store. The verdict is
      // kept for the step's progress below, which would otherwise work it out again.
      const known = new Map<Step, { readonly row: StreakRow; readonly ahead: Ahead; readonly applied: Streak.Applied }>()
      for (const step of r === 0 ? counting : []) {
        const a = ahead.get(step.i)
        if (a === undefined || Option.isNone(a.row) || a.key.userHash !== step.key.userHash) continue
        const row = a.row.value
        known.set(step, { row, ahead: a, applied: Streak.applyDay(summaryOf(row, step.work.program.mode), step.day, step.zone) })
      }
      const toLock = counting.filter((s) => !known.has(s))
      const toAsk = counting.filter((s) => known.get(s)?.applied._tag === "NeedsHistory")
      const toDate = [...toLock, ...toAsk]
      // Independent statements of one transaction are issued together: a store that pipelines
      // (Postgres) sends them in one round trip and still runs them in this order. The
      // achievements of every key that may cross a milestone are read with them, after the lock:
      // a seek per key that crosses nothing costs less than one more round trip for those that do.
      // Rows locked ahead came with theirs, unless the store did not know them with the row.
      const hasMilestones = (s: Step) => s.work.program.milestones.length > 0
      const asked = [
        ...toLock.filter(hasMilestones),
        ...[...known].flatMap(([s, k]) => (k.ahead.achieved === undefined && hasMilestones(s) ? [s] : []))
      ]
      const [locked, added, achieved] = toDate.length + asked.length === 0 ? [[], [], []] : yield* together([
        toLock.length === 0 ? Effect.succeed([]) : streaks.lockMany(toLock.map((s) => ({ key: s.key, timezone: s.zone }))),
        toDate.length === 0 ? Effect.succeed([]) : streaks.addDays(toDate.map((s) => ({ key: s.key, day: s.day }))),
        asked.length === 0 ? Effect.succeed([]) : achievements.achievedMany(asked.map((s) => s.key))
      ])
      const rows = new Map(toLock.map((s, n) => [s, locked[n]!]))
      const moved = new Map(toDate.map((s, n) => [s, added[n]!]))
      const achievedOf = new Map(asked.map((s, n) => [s, achieved[n]!]))
      const newDays: Array<Step> = []
      for (const [step, { ahead: { achieved }, applied: { _tag: day }, row }] of known) {
        rows.set(step, row)
        if (achieved !== undefined) achievedOf.set(step, achieved)
        if (day === "NeedsHistory") continue
        moved.set(step, day === "Applied")
        if (day === "Applied") newDays.push(step)
      }
      const saves: Array<StreakRow> = []
      const active: Array<UsageEntry> = []
      const progressed: Array<{ readonly step: Step; readonly progress: Progress; readonly state: Streak.State }> = []
      for (const step of counting) {
        const row = rows.get(step)!
        const { now, program, project } = step.work
        step.moved = moved.get(step)!
        if (!step.moved) {
          // Nothing moved, but the member's zone did: due instants follow it.
          if (row.timezone !== step.zone) {
            saves.push(rowOf(step.key, summaryOf(row, program.mode), step.zone, notifiedOf(row), now, row.meteredMonth))
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
        const applied = known.get(step)?.applied ?? Streak.applyDay(before, step.day, step.zone)
        // A late day may join or merge older runs: only then is the history read.
        const summary = applied._tag === "Applied"
          ? applied.summary
          : Streak.fromDays(yield* streaks.days(step.key), step.zone, before.mode)
        const progress = { project, program: counted, key: step.key, row, summary, zone: step.zone, now }
        progressed.push({ step, progress, state: stateOf(progress) })
      }
      const crossings: Array<Effect.Effect<void, StorageError, ApplyServices>> = []
      for (const { progress, state, step } of progressed) {
        const achievedHere = achievedOf.get(step)
        const crossed = achievedHere === undefined || !reachesTarget(progress.program, state)
          ? []
          : Streak.newlyCrossed(progress.program.milestones, state.current, new Set(achievedHere))
        // Most actions cross no new milestone: then there is nothing to record or fire.
        if (crossed.length > 0) {
          crossings.push(Effect.map(recordCrossed(progress, state, crossed), (enqueued) => {
            step.enqueued = enqueued
          }))
        }
        if (step.plan.ledger !== "live") {
          saves.push(progressRow(progress))
          continue
        }
        // A member is counted once a month: a row that says its member was marked this month
        // (in a transaction that also saved the row) spares the batch that mark.
        const usage = Metering.activeEntry(progress.project.workspaceId, progress.project.id, step.userHash, step.at)
        if (progress.row.meteredMonth !== usage.month) active.push(usage)
        saves.push(progressRow(progress, usage.month))
      }
      // The members of a round are distinct, so their crossings go out side by side, before the
      // rows are saved, as one member's alone would.
      if (crossings.length > 0) yield* together(crossings)
      writes.push(...saveRound(streaks, saves, newDays))
      if (active.length > 0) writes.push(Effect.flatMap(UsageStore, (usage) => usage.markActiveMany(active)))
    }

    if (zoneChanges.size > 0) {
      // In one order (by member), so that batches storing the zones of the same members cannot deadlock.
      const changed = [...zoneChanges].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, z]) => z)
      writes.push(...(members.setTimezones === undefined
        ? changed.map((z) => members.setTimezone(z.projectId, z.userHash, z.timezone))
        : [members.setTimezones(changed)]))
    }
    const millis = yield* Clock.currentTimeMillis
    const records = steps.map((step) => recordOf(step, Ids.makeAt("EventId", millis)))
    writes.push(Effect.flatMap(ActionLog, (log) => log.appendAll(records)))

    const answers = new Array<Applied>(work.length)
    const completions: Array<KeyCompletion> = []
    for (const { enqueued, i, moved, plan: p, work: w } of steps) {
      const body = answer(w.door, p.counting, p.reason, p.counting && !moved)
      answers[i] = { body, enqueued }
      if (w.idempotencyKey !== undefined) {
        completions.push({ projectId: w.project.id, key: w.idempotencyKey, response: { status: 202, body }, now: w.now })
      }
    }
    // Storing the answers in the same transaction makes "done" and "answer stored" one fact.
    if (completions.length > 0) {
      const keys = yield* IdempotencyStore
      writes.push(...(keys.completeMany === undefined
        ? completions.map((c) => keys.complete(c.projectId, c.key, c.response, c.now))
        : [keys.completeMany(completions)]))
    }
    // The last writes need no answer before the commit, so they go out together.
    yield* together(writes)
    return answers
  })
