/**
 * Work the admin routes can trigger on demand (docs/api.md#admin-routes) and the readiness probe.
 * The server provides them from the scheduler, the webhook dispatcher and the storage adapter, so
 * the http package does not depend on those packages.
 */
import type { Errors } from "@streaks/core"
import { Context, Effect, Layer } from "effect"

type StorageError = Errors.StorageError

export interface DueChecksResult {
  readonly atRisk: number
  readonly broken: number
  readonly freezesUsed: number
}

export interface DeliveriesResult {
  readonly attempted: number
  readonly delivered: number
  readonly failed: number
  readonly retrying: number
}

export class Jobs extends Context.Tag("@streaks/http/Jobs")<Jobs, {
  /** One sweep of the due checks now: the at-risk, broken and freeze-used events it fired. */
  readonly dueChecks: Effect.Effect<DueChecksResult, StorageError>
  /** Drains the outbox once. */
  readonly deliveries: Effect.Effect<DeliveriesResult, StorageError>
  /** Storage reachable and migrations applied. */
  readonly ready: Effect.Effect<boolean>
}>() {}

export const layer = (jobs: Jobs["Type"]): Layer.Layer<Jobs> => Layer.succeed(Jobs, jobs)

/** For embedding without a scheduler or dispatcher: nothing runs, storage is assumed ready. */
export const layerNoop: Layer.Layer<Jobs> = layer({
  dueChecks: Effect.succeed({ atRisk: 0, broken: 0, freezesUsed: 0 }),
  deliveries: Effect.succeed({ attempted: 0, delivered: 0, failed: 0, retrying: 0 }),
  ready: Effect.succeed(true)
})
