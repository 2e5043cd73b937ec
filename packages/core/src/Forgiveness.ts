/**
 * Repairs, pauses and outage windows at work (docs/streak-semantics.md#forgiveness): each one
 * checked by `ForgivenessPlan`, stored as an input of the streak calculus, and the streaks it
 * touches recomputed in the same transaction; repairs and restored streaks send `streak.repaired`.
 */
import { Context, Effect, Layer, Option } from "effect"
import * as Calendar from "./Calendar.js"
import type { LocalDate } from "./Calendar.js"
import { type Outage, type Pause, Program, type Project, StreakKey, type StreakRow } from "./Domain.js"
import { InvalidBody, NotFound, NotRepairable, PauseOverlaps, PauseStarted, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import * as ForgivenessPlan from "./ForgivenessPlan.js"
import * as Ids from "./Ids.js"
import * as Audience from "./internal/audience.js"
import { memberZone, nowDate, programAndProjectIn } from "./internal/streakProgress.js"
import { IngestStore } from "./IngestStore.js"
import * as OutboundEvents from "./OutboundEvents.js"
import { OutboxSignal } from "./OutboxSignal.js"
import * as Policy from "./Policy.js"
import type { ExperimentStore, SubscriptionStore } from "./Ports.js"
import { DirectoryStore, MemberStore, Outbox, StreakStore, Transactor } from "./Ports.js"
import * as Streak from "./Streak.js"

/** `POST …/members/{userHash}/repairs` */
export interface RepairBody {
  readonly period: string
  readonly reason: string
}

/** `POST …/members/{userHash}/pauses` */
export interface PauseBody {
  readonly start: string
  readonly end: string
}

/** `POST …/outages` */
export interface OutageBody {
  readonly start: string
  readonly end: string
  readonly reason: string
}

/** A pause as answers show it. */
export interface PauseView {
  readonly id: string
  readonly start: string
  readonly end: string
}

/** An outage window as answers show it. */
export interface OutageView {
  readonly id: string
  readonly start: string
  readonly end: string
  readonly reason: string
  readonly restored: number
}

/** The event forgiveness emits: what the audience read holds subscriptions for. */
export const eventTypes = ["streak.repaired"] as const

/** Streaks recomputed per read of their days and write of their rows when a window is declared. */
const RESTORE_BATCH = 1000

export class Forgiveness extends Context.Tag("@streaks/core/Forgiveness")<Forgiveness, {
  /**
   * Repairs the missed period holding `period`, or fails with `NotRepairable`: the member repaired
   * (aliases resolved), whose answer `StateQuery.memberStreak` reads after.
   */
  readonly repair: (
    programId: string,
    userHash: string,
    body: RepairBody
  ) => Effect.Effect<{ readonly userHash: string }, InvalidBody | NotFound | NotRepairable | StorageError>
  readonly addPause: (
    programId: string,
    userHash: string,
    body: PauseBody
  ) => Effect.Effect<PauseView, InvalidBody | NotFound | PauseOverlaps | StorageError>
  readonly pauses: (
    programId: string,
    userHash: string
  ) => Effect.Effect<{ readonly pauses: ReadonlyArray<PauseView> }, InvalidBody | NotFound | StorageError>
  readonly removePause: (
    programId: string,
    userHash: string,
    pauseId: string
  ) => Effect.Effect<void, InvalidBody | NotFound | PauseStarted | StorageError>
  /** Declares an outage window and restores the streaks it forgives, in one transaction. */
  readonly addOutage: (
    programId: string,
    body: OutageBody
  ) => Effect.Effect<OutageView, InvalidBody | NotFound | StorageError>
  readonly outages: (
    programId: string
  ) => Effect.Effect<{ readonly outages: ReadonlyArray<OutageView> }, NotFound | StorageError>
}>() {}

export type Requirements =
  | DirectoryStore
  | StreakStore
  | MemberStore
  | IngestStore
  | Transactor
  | Outbox
  | OutboxSignal
  | ExperimentStore
  | SubscriptionStore

const invalid = (message: string) => new InvalidBody({ message })

const decodeDate = (name: string, value: unknown): Effect.Effect<LocalDate, InvalidBody> => {
  if (typeof value === "string") {
    try {
      return Effect.succeed(Calendar.unsafeLocalDate(value))
    } catch {
      // falls through to the failure below
    }
  }
  return Effect.fail(invalid(`${name} must be a date YYYY-MM-DD`))
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/

const decodeInstant = (name: string, value: unknown): Effect.Effect<Date, InvalidBody> => {
  const ms = typeof value === "string" && ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN
  return Number.isNaN(ms) ? Effect.fail(invalid(`${name} must be an ISO 8601 instant`)) : Effect.succeed(new Date(ms))
}

const decodeReason = (value: unknown): Effect.Effect<string, InvalidBody> =>
  typeof value === "string" && value.trim().length >= 1 && value.length <= ForgivenessPlan.maxReasonLength &&
    Ids.isWellFormedText(value)
    ? Effect.succeed(value)
    : Effect.fail(invalid(`reason must be text of 1 to ${ForgivenessPlan.maxReasonLength} characters`))

const pauseView = (p: Pause): PauseView => ({ id: p.id, start: p.start, end: p.end })

export const outageView = (o: Outage): OutageView => ({
  id: o.id,
  start: o.start.toISOString(),
  end: o.end.toISOString(),
  reason: o.reason,
  restored: o.restored
})

const keyOf = (row: StreakRow) =>
  new StreakKey({ projectId: row.projectId, programId: row.programId, userHash: row.userHash, ledger: row.ledger })

export const make: Effect.Effect<Forgiveness["Type"], never, Requirements> = Effect.gen(function*() {
  const context = yield* Effect.context<ExperimentStore | SubscriptionStore>()
  const directory = yield* DirectoryStore
  const streaks = yield* StreakStore
  const members = yield* MemberStore
  const transactor = yield* Transactor
  const outbox = yield* Outbox
  const signal = yield* OutboxSignal
  const history = (yield* IngestStore).history

  const programAndProject = programAndProjectIn(directory)

  /** The member behind `userHash` (aliases resolved), locked, with what a check reads. */
  const lockedMember = (program: Program, project: Project, userHash: string) =>
    Effect.gen(function*() {
      const hash = yield* EventInput.decodeUserHash("userHash", userHash)
      const [member] = yield* members.lookup([{ projectId: project.id, userHash: hash }])
      const zone = memberZone(member!.timezone, project)
      const key = new StreakKey({
        projectId: project.id,
        programId: program.id,
        userHash: member!.userHash,
        ledger: program.status
      })
      const [row] = yield* streaks.lock([{ key, timezone: zone }])
      const days = yield* streaks.days(key)
      const now = yield* nowDate
      const m: ForgivenessPlan.Member = { row, days, zone, policy: Policy.of(program), program, now }
      return { key, row: row!, m }
    })

  /** The `streak.repaired` deliveries of `restored` members, for those who are heard. */
  const repairedMessages = (
    project: Project,
    program: Program,
    restored: ReadonlyArray<{ readonly row: StreakRow; readonly period: Streak.Period; current: number; best: number }>,
    now: Date
  ) =>
    Effect.gen(function*() {
      const live = restored.filter((r) => r.row.ledger === "live")
      if (live.length === 0 || program.status !== "live") return []
      const audience = yield* Effect.provide(Audience.read([program.id], eventTypes), context)
      const out = []
      for (const r of live) {
        const subject: OutboundEvents.Subject = {
          project,
          program,
          userHash: r.row.userHash,
          ledger: r.row.ledger,
          streak: { current: r.current, best: r.best }
        }
        const heard = OutboundEvents.hearing(subject, audience)
        if (heard._tag !== "Heard") continue
        const event: OutboundEvents.Event = { type: "streak.repaired", period: r.period, current: r.current }
        out.push(...OutboundEvents.deliveries(subject, [event], heard.subscriptions, now, () =>
          Ids.makeAt("MessageId", now.getTime())))
      }
      return out
    })

  const repair = (programId: string, userHash: string, body: RepairBody) =>
    Effect.gen(function*() {
      const day = yield* decodeDate("period", body.period)
      const reason = yield* decodeReason(body.reason)
      const { program, project } = yield* programAndProject(programId)
      const sent = yield* transactor.withTransaction(Effect.gen(function*() {
        const { m, row } = yield* lockedMember(program, project, userHash)
        const check = ForgivenessPlan.repairCheck(m, day)
        if (check._tag === "Refused") return yield* new NotRepairable({ message: check.why })
        const forgiven = ForgivenessPlan.withRepair(row, {
          period: check.value.start,
          at: m.now.toISOString(),
          reason
        })
        const next = ForgivenessPlan.recomputed(row, m.days, m.policy, program, m.now, forgiven)
        yield* streaks.save([next.row])
        const state = Streak.evaluate(next.summary, m.now, m.zone, m.policy)
        const messages = yield* repairedMessages(project, program, [{
          row: next.row,
          period: check.value,
          current: state.current,
          best: state.best
        }], m.now)
        if (messages.length > 0) yield* outbox.enqueue(messages)
        return { messages: messages.length, userHash: row.userHash }
      }))
      if (sent.messages > 0) yield* signal.notify
      return { userHash: sent.userHash }
    })

  const addPause = (programId: string, userHash: string, body: PauseBody) =>
    Effect.gen(function*() {
      const start = yield* decodeDate("start", body.start)
      const end = yield* decodeDate("end", body.end)
      const { program, project } = yield* programAndProject(programId)
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const { m, row } = yield* lockedMember(program, project, userHash)
        const check = ForgivenessPlan.pauseCheck(m, start, end)
        if (check._tag === "Refused") return yield* invalid(check.why)
        if (check.value === "overlaps") {
          return yield* new PauseOverlaps({ message: "the pause overlaps another of the member's" })
        }
        const pause: Pause = { id: Ids.makeAt("PauseId", m.now.getTime()), start, end }
        const forgiven = ForgivenessPlan.withPauses(row, [...(row.pauses ?? []), pause])
        yield* streaks.save([ForgivenessPlan.recomputed(row, m.days, m.policy, program, m.now, forgiven).row])
        return pauseView(pause)
      }))
    })

  const pauses = (programId: string, userHash: string) =>
    Effect.gen(function*() {
      const { program, project } = yield* programAndProject(programId)
      const hash = yield* EventInput.decodeUserHash("userHash", userHash)
      const [member] = yield* members.lookup([{ projectId: project.id, userHash: hash }])
      const key = new StreakKey({
        projectId: project.id,
        programId: program.id,
        userHash: member!.userHash,
        ledger: program.status
      })
      const [row] = yield* streaks.rows({ keys: [key] })
      return { pauses: (row?.pauses ?? []).map(pauseView) }
    })

  const removePause = (programId: string, userHash: string, pauseId: string) =>
    Effect.gen(function*() {
      const { program, project } = yield* programAndProject(programId)
      yield* transactor.withTransaction(Effect.gen(function*() {
        const { m, row } = yield* lockedMember(program, project, userHash)
        const pause = (row.pauses ?? []).find((p) => p.id === pauseId)
        if (pause === undefined) return yield* new NotFound({ message: "pause not found" })
        if (!ForgivenessPlan.removable(m, pause)) {
          return yield* new PauseStarted({ message: "the pause has started: it can no longer be removed" })
        }
        const forgiven = ForgivenessPlan.withPauses(row, (row.pauses ?? []).filter((p) => p.id !== pauseId))
        yield* streaks.save([ForgivenessPlan.recomputed(row, m.days, m.policy, program, m.now, forgiven).row])
      }))
    })

  const addOutage = (programId: string, body: OutageBody) =>
    Effect.gen(function*() {
      const start = yield* decodeInstant("start", body.start)
      const end = yield* decodeInstant("end", body.end)
      const reason = yield* decodeReason(body.reason)
      const now = yield* nowDate
      const problem = ForgivenessPlan.outageProblem(start, end, now)
      if (problem !== undefined) return yield* invalid(problem)
      const { program: reached, project } = yield* programAndProject(programId)
      const outage: Outage = {
        id: Ids.makeAt("OutageId", now.getTime()),
        start,
        end,
        reason,
        restored: 0,
        createdAt: now
      }
      const result = yield* transactor.withTransaction(Effect.gen(function*() {
        // Added atomically: a window declared at the same time is neither lost nor overwritten. The
        // program as the store answers it is the one judged, with the windows declared meanwhile.
        const with0 = yield* directory.changeProgramOutages(reached.id, { add: [outage] })
        if (Option.isNone(with0)) return yield* new NotFound({ message: "program not found" })
        const after = with0.value
        const before = new Program({ ...after, outages: (after.outages ?? []).filter((o) => o.id !== outage.id) })
        const policy = Policy.of(after)
        let restored = 0
        let messages = 0
        for (const ledger of ["live", "test"] as const) {
          const rows = yield* streaks.rows({ programId: before.id, ledger })
          for (let i = 0; i < rows.length; i += RESTORE_BATCH) {
            const batch = rows.slice(i, i + RESTORE_BATCH)
            // Locked like ingest locks them, so that no action counts in between with the old windows.
            const locked = yield* streaks.lock(batch.map((row) => ({ key: keyOf(row), timezone: row.timezone })))
            const days = yield* history(locked.map(keyOf))
            const plan = ForgivenessPlan.restore(locked, days, policy, before, after, now)
            yield* streaks.save(plan.rows)
            restored += plan.restored.length
            const out = yield* repairedMessages(project, after, plan.restored, now)
            if (out.length > 0) yield* outbox.enqueue(out)
            messages += out.length
          }
        }
        const counted = { ...outage, restored }
        yield* directory.changeProgramOutages(reached.id, { add: [counted] })
        return { outage: counted, messages }
      }))
      if (result.messages > 0) yield* signal.notify
      return outageView(result.outage)
    })

  // Oldest first: windows declared at the same time are stored in the order their changes won.
  const outages = (programId: string) =>
    Effect.map(programAndProject(programId), ({ program }) => ({
      outages: [...(program.outages ?? [])]
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .map(outageView)
    }))

  return Forgiveness.of({ repair, addPause, pauses, removePause, addOutage, outages })
})

export const layer: Layer.Layer<Forgiveness, never, Requirements> = Layer.effect(Forgiveness, make)
