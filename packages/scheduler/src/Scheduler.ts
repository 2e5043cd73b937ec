/**
 * Runs the due checks (at-risk / broken, docs/streak-semantics.md#at-risk-and-broken) every
 * interval, plus housekeeping of expired idempotency keys and old delivery attempts. Any number of
 * replicas may run it at once: `DueChecks` claims rows with `SKIP LOCKED`, so each due row is
 * handled by one of them.
 */
import { DueChecks, type Errors, Ports } from "@streaks/core"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"

export interface Options {
  /** Time between sweeps (`STREAKS_DUE_CHECK_INTERVAL`, default 1 hour: docs/operations.md#configuration). */
  readonly interval: Duration.DurationInput
  /** Rows claimed per transaction (default: DueChecks' own, 500). */
  readonly batchSize?: number
  /** Delivery attempts older than this are deleted (default 30 days). */
  readonly keepAttempts?: Duration.DurationInput
}

export interface SweepResult {
  readonly atRisk: number
  readonly broken: number
  readonly idempotencyKeysPurged: number
  readonly attemptsPurged: number
}

/** One sweep now: due checks first (they are what members notice), then housekeeping. */
export const sweep = (
  options: Pick<Options, "batchSize" | "keepAttempts"> = {}
): Effect.Effect<SweepResult, Errors.StorageError, DueChecks.DueChecks | Ports.IdempotencyStore | Ports.Outbox> =>
  Effect.gen(function*() {
    const due = yield* Effect.flatMap(
      DueChecks.DueChecks,
      (d) => d.run(options.batchSize === undefined ? {} : { batchSize: options.batchSize })
    )
    const now = new Date(yield* Clock.currentTimeMillis)
    const idempotencyKeysPurged = yield* Effect.flatMap(Ports.IdempotencyStore, (s) => s.purgeExpired(now))
    const keep = Duration.toMillis(options.keepAttempts ?? Duration.days(30))
    const attemptsPurged = yield* Effect.flatMap(Ports.Outbox, (o) => o.purgeAttempts(new Date(now.getTime() - keep)))
    return { ...due, idempotencyKeysPurged, attemptsPurged }
  }).pipe(Effect.withSpan("Scheduler.sweep"))

/**
 * Sweeps at start (so a restart after downtime catches up at once) and then every `interval`,
 * in a background fiber that ends with the layer's scope. A failed sweep is logged and retried at
 * the next tick; it never stops the loop.
 */
export const layer = (
  options: Options
): Layer.Layer<never, never, DueChecks.DueChecks | Ports.IdempotencyStore | Ports.Outbox> =>
  Layer.scopedDiscard(
    sweep(options).pipe(
      Effect.tap((r) =>
        r.atRisk + r.broken > 0
          ? Effect.logInfo("due checks", { atRisk: r.atRisk, broken: r.broken })
          : Effect.void
      ),
      Effect.catchAllCause((cause) => Effect.logError("due-check sweep failed", cause)),
      Effect.repeat(Schedule.spaced(options.interval)),
      Effect.forkScoped
    )
  )
