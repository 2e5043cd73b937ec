/**
 * The nudge that wakes the outbox dispatcher after a commit that wrote outbox messages, so that
 * deliveries leave within a second instead of at the next poll.
 */
import { Context, Effect, Layer } from "effect"

/** Best effort: the dispatcher polls anyway. Provided by `@streaks/webhooks`' dispatcher. */
export class OutboxSignal extends Context.Tag("@streaks/core/OutboxSignal")<OutboxSignal, {
  readonly notify: Effect.Effect<void>
}>() {}

/** A signal nobody listens to: for embedders that deliver by polling, and for tests. */
export const layerNoop: Layer.Layer<OutboxSignal> = Layer.succeed(OutboxSignal, { notify: Effect.void })
