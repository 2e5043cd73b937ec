/**
 * The hourly due checks (docs/streak-semantics.md#at-risk-and-broken, #streak-policies): claims the
 * streak rows whose due instant has passed, plans them with `DuePlan` (pure: what fires, who hears
 * it, each row's next due instant) and writes the plan in the batch's transaction.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Program, Project } from "./Domain.js"
import * as DuePlan from "./DuePlan.js"
import type { StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import type { ProgramId, ProjectId } from "./Ids.js"
import * as Audience from "./internal/audience.js"
import { nowDate } from "./internal/streakProgress.js"
import * as OutboundEvents from "./OutboundEvents.js"
import { OutboxSignal } from "./OutboxSignal.js"
import type { ExperimentStore, SubscriptionStore } from "./Ports.js"
import { DirectoryStore, Outbox, StreakStore, Transactor } from "./Ports.js"

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

export const make: Effect.Effect<DueChecks["Type"], never, Requirements> = Effect.gen(function*() {
  const context = yield* Effect.context<Requirements>()
  const transactor = yield* Transactor
  const directory = yield* DirectoryStore
  const streaks = yield* StreakStore
  const outbox = yield* Outbox
  const signal = yield* OutboxSignal

  const run = (options?: RunOptions): Effect.Effect<RunResult, StorageError> =>
    Effect.gen(function*() {
      const batch = Math.max(1, Math.floor(options?.batchSize ?? DEFAULT_BATCH))
      const workers = Math.max(1, Math.floor(options?.concurrency ?? DEFAULT_CONCURRENCY))
      const now = yield* nowDate
      const millis = now.getTime()
      const total = { atRisk: 0, broken: 0, freezesUsed: 0 }
      // What the planner asks for is read once per sweep, not once per row or batch: a sweep may
      // claim 100k rows of a handful of programs.
      const programs = new Map<ProgramId, Program | undefined>()
      const projects = new Map<ProjectId, Project | undefined>()
      let audience = OutboundEvents.noAudience

      const readNeeds = (needs: Extract<DuePlan.Result, { _tag: "Needs" }>) =>
        Effect.all([
          Effect.forEach(
            needs.programs,
            (id) => Effect.map(directory.program(id), (found) => programs.set(id, Option.getOrUndefined(found)))
          ),
          Effect.forEach(
            needs.projects,
            (id) => Effect.map(directory.project(id), (found) => projects.set(id, Option.getOrUndefined(found)))
          ),
          needs.audience.length === 0 ? Effect.void : Effect.map(
            Audience.read(needs.audience, DuePlan.eventTypes),
            (read) => {
              audience = OutboundEvents.mergeAudience(audience, read)
            }
          )
        ], { discard: true })

      /** Plans the claimed rows, reading what the plan asks for until it has all it needs. */
      const planned = (rows: DuePlan.Input["rows"]) =>
        Effect.suspend(function loop(): Effect.Effect<
          Extract<DuePlan.Result, { _tag: "Planned" }>,
          StorageError,
          ExperimentStore | SubscriptionStore
        > {
          const result = DuePlan.plan({
            now,
            rows,
            programs,
            projects,
            audience,
            messageId: () => Ids.makeAt("MessageId", millis)
          })
          return result._tag === "Planned" ? Effect.succeed(result) : Effect.flatMap(readNeeds(result), loop)
        })

      // One batch: claim, plan, then one write of the rows and one of the messages.
      const oneBatch = Effect.gen(function*() {
        const [claimed, plan] = yield* transactor.withTransaction(Effect.gen(function*() {
          const rows = yield* streaks.claimDue(now, batch)
          if (rows.length === 0) return [0, undefined] as const
          const plan = yield* planned(rows)
          yield* streaks.save(plan.rows)
          if (plan.outbox.length > 0) yield* outbox.enqueue(plan.outbox)
          return [rows.length, plan] as const
        }))
        if (plan === undefined) return claimed
        // Counted only once the batch has committed: a rolled-back batch fired nothing.
        total.atRisk += plan.fired.atRisk
        total.broken += plan.fired.broken
        total.freezesUsed += plan.fired.freezesUsed
        if (plan.outbox.length > 0) yield* signal.notify
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
