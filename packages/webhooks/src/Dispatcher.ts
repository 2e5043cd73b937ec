/**
 * Drains the outbox (docs/webhooks.md): claims due messages (several replicas never share one), signs
 * and sends each, records every attempt, then marks it delivered, schedules its retry, or fails
 * it; a 410 removes the subscription. A claim is a lease: a message whose send would start too
 * close to its lease's end has the lease renewed first, and every status update is checked against
 * the lease, so a dispatcher that lost a message to another one changes nothing of it. A fresh message wakes the loop at once, so events of an
 * action reach receivers within a second instead of waiting for a poll.
 */
import type { HttpClient } from "@effect/platform"
import { Domain, type Errors, OutboundEvents, Ports, SecretBox } from "@streaks/core"
import { Clock, Context, Duration, Effect, Layer, Option, Queue } from "effect"
import * as RetryPolicy from "./RetryPolicy.js"
import * as Sender from "./Sender.js"

export interface PassResult {
  readonly attempted: number
  readonly delivered: number
  readonly failed: number
  readonly retrying: number
}

export class Dispatcher extends Context.Tag("@streaks/webhooks/Dispatcher")<Dispatcher, {
  /** Delivers every message due now, batch after batch, until a claim comes back empty. */
  readonly runOnce: Effect.Effect<PassResult, Errors.StorageError>
}>() {}

export interface Options {
  /** Longest sleep between passes when nothing wakes the loop (other replicas enqueue too). Default 5 s. */
  readonly pollInterval?: Duration.DurationInput
  /** Messages claimed per batch (default 50). */
  readonly batchSize?: number
  /** Sends in flight at once (default 16). */
  readonly concurrency?: number
  /** Per-attempt timeout (default 15 s). */
  readonly timeout?: Duration.DurationInput
  /**
   * How long a claim keeps a message from other dispatchers (at least `timeout` + `leaseMargin`).
   * Default: long enough for the whole batch, `concurrency` sends at a time, each up to `timeout`,
   * plus `leaseMargin` (90 s with the other defaults). A dispatcher that dies gives its messages
   * back when their lease runs out.
   */
  readonly lease?: Duration.DurationInput
  /**
   * Time a lease must have left beyond `timeout` when a send starts, else it is renewed first
   * (default 30 s): room for the statements around the send (the subscription's lookup, the
   * attempt's record, the status update), each bounded by the pool's statement timeout.
   */
  readonly leaseMargin?: Duration.DurationInput
}

type Needs = Ports.Outbox | Ports.SubscriptionStore | SecretBox.SecretBox | HttpClient.HttpClient

const makePasses = (options: Options) =>
  Effect.gen(function*() {
    const outbox = yield* Ports.Outbox
    const subscriptions = yield* Ports.SubscriptionStore
    const box = yield* SecretBox.SecretBox
    const context = yield* Effect.context<HttpClient.HttpClient>()
    const batchSize = options.batchSize ?? 50
    const concurrency = options.concurrency ?? 16
    const sendTimeout = Duration.toMillis(options.timeout ?? Sender.defaultTimeout)
    // A send may start only while its lease still covers the send and the statements around it.
    const needed = sendTimeout + Duration.toMillis(options.leaseMargin ?? Duration.seconds(30))
    const waves = Math.ceil(batchSize / Math.max(1, concurrency))
    const leaseMillis = Math.max(
      options.lease === undefined ? waves * sendTimeout + needed - sendTimeout : Duration.toMillis(options.lease),
      needed
    )

    const lost = (message: Domain.OutboxMessage) =>
      Effect.logWarning("webhook delivery: lease lost to another dispatcher; leaving the message to it").pipe(
        Effect.annotateLogs({ messageId: message.id })
      )

    const deliver = (message: Domain.OutboxMessage, tally: { -readonly [K in keyof PassResult]: PassResult[K] }) =>
      Effect.gen(function*() {
        const attempt = message.attempts + 1
        // The lease this dispatcher holds: the claim's, until renewed below.
        let held = { id: message.id, leaseUntil: message.nextAttemptAt }
        const subscription = yield* subscriptions.get(message.subscriptionId)
        const secret = Option.flatMapNullable(subscription, (s) => box.open(s.secretSealed))
        if (Option.isNone(subscription) || Option.isNone(secret)) {
          // Removed (410, DELETE, revoked credential) since the message was written: nobody to tell.
          if (yield* outbox.settle(held, { _tag: "Failed", attempts: message.attempts })) tally.failed++
          return
        }
        const startedAt = yield* Clock.currentTimeMillis
        if (held.leaseUntil.getTime() - startedAt < needed) {
          // Earlier sends of this pass took long: renew before sending, or leave it to its new holder.
          const renewed = { id: message.id, leaseUntil: new Date(startedAt + leaseMillis) }
          const renewal = { _tag: "Pending", attempts: message.attempts, nextAttemptAt: renewed.leaseUntil } as const
          if (!(yield* outbox.settle(held, renewal))) return yield* lost(message)
          held = renewed
        }
        const now = new Date(startedAt)
        const sent = yield* Sender.send({
          url: subscription.value.url,
          id: message.id,
          body: message.payload,
          secret: secret.value,
          now,
          ...(options.timeout !== undefined ? { timeout: options.timeout } : {})
        }).pipe(Effect.provide(context))
        tally.attempted++
        const record = new Domain.DeliveryAttempt({
          messageId: message.id,
          attempt,
          at: now,
          latencyMs: sent.latencyMs,
          ...(sent.status !== undefined ? { status: sent.status } : {}),
          ...(sent.error !== undefined ? { error: sent.error } : {})
        })
        const settled = (settlement: Ports.Settlement) => outbox.settle(held, settlement, record)
        if (sent.outcome === "delivered") {
          if (yield* settled({ _tag: "Delivered", attempts: attempt, at: now })) tally.delivered++
          else yield* lost(message)
          return
        }
        if (sent.outcome === "gone") {
          yield* subscriptions.remove(subscription.value.id)
          if (yield* settled({ _tag: "Failed", attempts: attempt })) tally.failed++
          else yield* lost(message)
          return
        }
        const delay = RetryPolicy.nextAttemptDelay(attempt, sent.retryAfter)
        if (Option.isNone(delay)) {
          if (yield* settled({ _tag: "Failed", attempts: attempt })) tally.failed++
          else yield* lost(message)
          return
        }
        const next = new Date(now.getTime() + Duration.toMillis(delay.value))
        if (yield* settled({ _tag: "Pending", attempts: attempt, nextAttemptAt: next })) tally.retrying++
        else yield* lost(message)
      })

    // A pass ends on an empty claim, which also tells when the next message falls due.
    const pass = Effect.gen(function*() {
      const tally = { attempted: 0, delivered: 0, failed: 0, retrying: 0 }
      while (true) {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* outbox.claimDue(new Date(now), batchSize, new Date(now + leaseMillis))
        if (claimed.messages.length === 0) return { result: tally as PassResult, nextDueAt: claimed.nextDueAt }
        yield* Effect.forEach(claimed.messages, (m) => deliver(m, tally), { concurrency, discard: true })
      }
    })

    return { pass, runOnce: Effect.map(pass, ({ result }) => result) }
  })

/** The dispatcher: delivers every message due now (see `Dispatcher`). */
export const make = (options: Options = {}): Effect.Effect<Dispatcher["Type"], never, Needs> =>
  Effect.map(makePasses(options), ({ runOnce }) => Dispatcher.of({ runOnce }))
/**
 * The dispatcher with its background loop and the `OutboxSignal` that wakes it. The loop runs a
 * pass when woken, else sleeps until the next retry is due, at most `pollInterval`. Failures are
 * logged and never stop it.
 */
export const layer = (options: Options = {}): Layer.Layer<Dispatcher | OutboundEvents.OutboxSignal, never, Needs> =>
  Layer.scopedContext(Effect.gen(function*() {
    const { pass, runOnce } = yield* makePasses(options)
    const wake = yield* Queue.sliding<void>(1)
    const poll = Duration.toMillis(options.pollInterval ?? Duration.seconds(5))
    yield* Effect.gen(function*() {
      const next = yield* pass.pipe(
        Effect.map(({ nextDueAt }) => nextDueAt),
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logError("webhook delivery pass failed", cause), Option.none<Date>())
        )
      )
      const now = yield* Clock.currentTimeMillis
      const wait = Option.match(next, {
        onNone: () => poll,
        onSome: (at) => Math.min(poll, Math.max(0, at.getTime() - now))
      })
      yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(Duration.millis(wait)))
    }).pipe(Effect.forever, Effect.forkScoped)
    return Context.make(Dispatcher, Dispatcher.of({ runOnce })).pipe(
      Context.add(OutboundEvents.OutboxSignal, { notify: Queue.offer(wake, undefined).pipe(Effect.asVoid) })
    )
  }))

/** Only `runOnce` and a signal that does nothing: for tests and on-demand passes. */
export const layerNoLoop = (
  options: Options = {}
): Layer.Layer<Dispatcher | OutboundEvents.OutboxSignal, never, Needs> =>
  Layer.merge(Layer.effect(Dispatcher, make(options)), OutboundEvents.layerNoop)
