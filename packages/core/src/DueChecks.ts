/**
 * The hourly due checks (docs/streak-semantics.md#at-risk-and-broken, #streak-policies): claims the
 * streak rows whose due instant has passed, fires what is due (at-risk, freeze used, broken), and
 * moves each row on.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type OutboxMessage, type Program, type Project, StreakRow, type Subscription } from "./Domain.js"
import type { StorageError } from "./Errors.js"
import type { ProgramId, ProjectId } from "./Ids.js"
import { notifiedOf, nowDate, rowDueAt, summaryOf } from "./internal/streakProgress.js"
import * as OutboundEvents from "./OutboundEvents.js"
import { OutboxSignal } from "./OutboundEvents.js"
import { DirectoryStore, ExperimentStore, Outbox, StreakStore, SubscriptionStore, Transactor } from "./Ports.js"
import * as Policy from "./Policy.js"
import * as Streak from "./Streak.js"

export interface RunOptions {
  /** Rows claimed per transaction (default 500). */
  readonly batchSize?: number
  /** Batches claimed at once by this runner, each in its own transaction (default 4). */
  readonly concurrency?: number
}

/**
 * Events that fired in a run: only those of live programs about members outside a control group.
 * Rows of test programs, and of control members, are advanced all the same (so they are not due
 * again) but count for nothing, because no event fired for them.
 */
export interface RunResult {
  readonly atRisk: number
  readonly broken: number
  readonly freezesUsed: number
}

export class DueChecks extends Context.Tag("@streaks/core/DueChecks")<DueChecks, {
  /**
   * One sweep at `Clock` now, in batches of one transaction each until a batch comes back short.
   * At-risk fires once per member and period, and only while its last chance day is today (a
   * sweep catching up after downtime warns about no day that is over); a freeze used fires once
   * per frozen period and broken once per ended run, at the first sweep after their period ended.
   * Safe with any number of concurrent runners: `claimDue` never hands a row to two of them.
   */
  readonly run: (options?: RunOptions) => Effect.Effect<RunResult, StorageError>
}>() {}

export type Requirements =
  | Transactor
  | DirectoryStore
  | StreakStore
  | SubscriptionStore
  | Outbox
  | ExperimentStore
  | OutboxSignal

const DEFAULT_BATCH = 500
const DEFAULT_CONCURRENCY = 4
/** A row may not be handed back by the same sweep: its next due instant is at least this far on. */
const MIN_STEP_MS = 1

interface Tally {
  atRisk: number
  broken: number
  freezesUsed: number
  enqueued: number
}

const tallyOf = { AtRisk: "atRisk", Broken: "broken", FreezeUsed: "freezesUsed" } as const

/** The outbound event of a due event (docs/streak-semantics.md#at-risk-and-broken, #streak-policies). */
const outboundOf = (event: Streak.DueEvent, timezone: string, program: Program): OutboundEvents.Event => {
  switch (event._tag) {
    case "AtRisk":
      // A program without a policy sends the delivery body of docs/webhooks.md#the-delivery exactly.
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

export const make: Effect.Effect<DueChecks["Type"], never, Requirements> = Effect.gen(function*() {
  const context = yield* Effect.context<Requirements>()
  const transactor = yield* Transactor
  const directory = yield* DirectoryStore
  const streaks = yield* StreakStore
  const signal = yield* OutboxSignal

  /** Programs and projects are read once per sweep, not once per row. */
  const cached = <K, A>(load: (k: K) => Effect.Effect<Option.Option<A>, StorageError>) => {
    const seen = new Map<K, A | undefined>()
    return (k: K): Effect.Effect<A | undefined, StorageError> =>
      seen.has(k)
        ? Effect.succeed(seen.get(k))
        : Effect.map(load(k), (found) => {
          seen.set(k, Option.getOrUndefined(found))
          return Option.getOrUndefined(found)
        })
  }

  const subscriptions = yield* SubscriptionStore
  const experiments = yield* ExperimentStore
  const outbox = yield* Outbox

  /**
   * What `OutboundEvents.emit` reads, read once per sweep instead of once per row (a sweep may
   * touch 100k rows of a handful of programs), and its outbox writes buffered so that a batch
   * writes its messages in one statement.
   */
  const sweepContext = (pending: Array<OutboxMessage>) => {
    const running = cached((id: ProgramId) => Effect.map(experiments.running(id), Option.some))
    const listeners = new Map<string, ReadonlyArray<Subscription>>()
    return Context.empty().pipe(
      Context.add(ExperimentStore, {
        ...experiments,
        running: (id) => Effect.map(running(id), (found) => found ?? Option.none())
      }),
      Context.add(SubscriptionStore, {
        ...subscriptions,
        forEvent: (programId, type) => {
          const k = `${programId} ${type}`
          const hit = listeners.get(k)
          return hit !== undefined
            ? Effect.succeed(hit)
            : Effect.tap(subscriptions.forEvent(programId, type), (found) => Effect.sync(() => listeners.set(k, found)))
        }
      }),
      Context.add(Outbox, { ...outbox, enqueue: (messages) => Effect.sync(() => void pending.push(...messages)) })
    )
  }

  const advance = (
    row: StreakRow,
    now: Date,
    programOf: (id: ProgramId) => Effect.Effect<Program | undefined, StorageError>,
    projectOf: (id: ProjectId) => Effect.Effect<Project | undefined, StorageError>,
    tally: Tally
  ): Effect.Effect<StreakRow, StorageError, ExperimentStore | SubscriptionStore | Outbox> =>
    Effect.gen(function*() {
      const program = yield* programOf(row.programId)
      const project = yield* projectOf(row.projectId)
      const zone = row.timezone
      const policy = program === undefined ? Policy.defaultPolicy : Policy.of(program)
      const summary = summaryOf(row, policy)
      const due = Streak.due(summary, zone, now, notifiedOf(row), policy)
      const state = due.events.length === 0 ? undefined : Streak.evaluate(summary, now, zone, policy)
      for (const event of due.events) {
        if (program === undefined || project === undefined) continue
        const emitted = yield* OutboundEvents.emit({
          project,
          program,
          userHash: row.userHash,
          ledger: row.ledger,
          streak: { current: state!.current, best: state!.best }
        }, [outboundOf(event, zone, program)])
        if (emitted.fired > 0) tally[tallyOf[event._tag]]++
        tally.enqueued += emitted.enqueued
      }
      const next = rowDueAt(row, summary, zone, due.notified, due.dueAt, now)
      // Whatever the calculus says, a claimed row must leave the sweep's window, or this very
      // sweep would claim it again and never end.
      const stuck = next.dueAt !== undefined && next.dueAt.getTime() <= now.getTime()
      return stuck ? new StreakRow({ ...next, dueAt: new Date(now.getTime() + MIN_STEP_MS) }) : next
    })

  const run = (options?: RunOptions): Effect.Effect<RunResult, StorageError> =>
    Effect.gen(function*() {
      const batch = Math.max(1, Math.floor(options?.batchSize ?? DEFAULT_BATCH))
      const workers = Math.max(1, Math.floor(options?.concurrency ?? DEFAULT_CONCURRENCY))
      const now = yield* nowDate
      const programOf = cached((id: ProgramId) => directory.program(id))
      const projectOf = cached((id: ProjectId) => directory.project(id))
      const total = { atRisk: 0, broken: 0, freezesUsed: 0 }

      // One batch: claim, advance every row, then one write of the rows and one of the messages.
      const oneBatch = Effect.gen(function*() {
        const tally: Tally = { atRisk: 0, broken: 0, freezesUsed: 0, enqueued: 0 }
        const pending: Array<OutboxMessage> = []
        const emitContext = sweepContext(pending)
        // The sweep's caches are provided once per batch: providing services merges them into the
        // fiber's whole context, which per row cost more than the rest of a row's work.
        const advanceAll = (rows: ReadonlyArray<StreakRow>) =>
          Effect.forEach(rows, (row) => advance(row, now, programOf, projectOf, tally)).pipe(
            Effect.provide(emitContext)
          )
        const claimed = yield* transactor.withTransaction(Effect.gen(function*() {
          const rows = yield* streaks.claimDue(now, batch)
          const next = yield* advanceAll(rows)
          yield* streaks.save(next)
          if (pending.length > 0) yield* outbox.enqueue(pending)
          return rows.length
        }))
        // Counted only once the batch has committed: a rolled-back batch fired nothing.
        total.atRisk += tally.atRisk
        total.broken += tally.broken
        total.freezesUsed += tally.freezesUsed
        if (tally.enqueued > 0) yield* signal.notify
        return claimed
      })

      // Each worker claims until a batch comes back short; SKIP LOCKED keeps their rows apart.
      const worker = Effect.iterate(batch, { while: (claimed) => claimed >= batch, body: () => oneBatch })
      yield* Effect.all(Array.from({ length: workers }, () => worker), { concurrency: "unbounded", discard: true })
      return total
    }).pipe(Effect.provide(context))

  return DueChecks.of({ run })
})

export const layer: Layer.Layer<DueChecks, never, Requirements> = Layer.effect(DueChecks, make)
