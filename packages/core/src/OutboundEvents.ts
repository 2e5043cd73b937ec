/**
 * Outbound events (docs/webhooks.md): the exact delivery bodies, and one outbox message per
 * listening subscription, written inside the caller's transaction so state and events commit together.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { LocalDate } from "./Calendar.js"
import {
  hasReward,
  type Ledger,
  type Milestone,
  OutboxMessage,
  type OutboundEventType,
  type Program,
  type Project,
  type Subscription
} from "./Domain.js"
import type { StorageError } from "./Errors.js"
import * as Experiments from "./Experiments.js"
import * as Ids from "./Ids.js"
import type { MessageId, UserHash } from "./Ids.js"
import { type ExperimentStore, Outbox, SubscriptionStore } from "./Ports.js"

/**
 * Nudges the outbox dispatcher after a commit that enqueued messages, so deliveries leave within a
 * second instead of at the next poll. Best effort: the dispatcher polls anyway.
 */
export class OutboxSignal extends Context.Tag("@streaks/core/OutboxSignal")<OutboxSignal, {
  readonly notify: Effect.Effect<void>
}>() {}

/** A signal nobody listens to: for embedders that deliver by polling, and for tests. */
export const layerNoop: Layer.Layer<OutboxSignal> = Layer.succeed(OutboxSignal, { notify: Effect.void })

/** One event about one member's streak, with what its type adds to `data`. */
export type Event =
  | { readonly type: "milestone.achieved"; readonly milestone: Milestone }
  | { readonly type: "reward.unlocked"; readonly milestone: Milestone }
  | {
    readonly type: "streak.at_risk"
    readonly localDate: LocalDate
    readonly timezone: string
    /**
     * Programs with a policy (docs/streak-semantics.md#streak-policies): freezes available, and the
     * period's last activity day.
     */
    readonly policy?: { readonly freezesAvailable: number; readonly periodEnd: LocalDate }
  }
  | {
    readonly type: "streak.broken"
    readonly endedRun: number
    readonly lastActiveDate: LocalDate
    readonly timezone: string
  }
  | {
    readonly type: "streak.freeze_used"
    readonly period: { readonly start: LocalDate; readonly end: LocalDate }
    readonly freezesLeft: number
    readonly timezone: string
  }
  | { readonly type: "streak.freeze_earned"; readonly freezesAvailable: number; readonly timezone: string }

/** Whose streak an event is about, and its state when the event fired. */
export interface Subject {
  readonly project: Project
  readonly program: Program
  readonly userHash: UserHash
  readonly ledger: Ledger
  readonly streak: { readonly current: number; readonly best: number }
}

/** The events of reaching a milestone: achieved, plus reward.unlocked when it carries a reward. */
export const milestoneEvents = (milestone: Milestone): ReadonlyArray<Event> =>
  hasReward(milestone)
    ? [{ type: "milestone.achieved", milestone }, { type: "reward.unlocked", milestone }]
    : [{ type: "milestone.achieved", milestone }]

const milestoneView = (m: Milestone) => ({ id: m.id, target: m.target, msg: m.msg, rewardType: m.rewardType })

const extra = (event: Event): Record<string, unknown> => {
  switch (event.type) {
    case "milestone.achieved":
      return { milestone: milestoneView(event.milestone) }
    case "reward.unlocked":
      // The value goes out in full: the receiver is the customer's own server (docs/api.md#reward-hiding).
      return {
        milestone: milestoneView(event.milestone),
        reward: { type: event.milestone.rewardType, value: event.milestone.rewardValue ?? null }
      }
    case "streak.at_risk":
      return event.policy === undefined
        ? { localDate: event.localDate, timezone: event.timezone }
        : {
          localDate: event.localDate,
          timezone: event.timezone,
          freezesAvailable: event.policy.freezesAvailable,
          periodEnd: event.policy.periodEnd
        }
    case "streak.freeze_used":
      return {
        period: { start: event.period.start, end: event.period.end },
        freezesLeft: event.freezesLeft,
        timezone: event.timezone
      }
    case "streak.freeze_earned":
      return { freezesAvailable: event.freezesAvailable, timezone: event.timezone }
    case "streak.broken":
      return { endedRun: event.endedRun, lastActiveDate: event.lastActiveDate, timezone: event.timezone }
  }
}

/** The delivery body (docs/webhooks.md#the-delivery), as an object (`JSON.stringify` it for the wire). */
export const body = (id: MessageId, timestamp: Date, subject: Subject, event: Event) => ({
  id,
  type: event.type as OutboundEventType,
  timestamp: timestamp.toISOString(),
  data: {
    programId: subject.program.id,
    projectId: subject.project.id,
    siteKey: subject.project.siteKey,
    userHash: subject.userHash,
    isTest: false as const,
    streak: { current: subject.streak.current, best: subject.streak.best },
    ...extra(event)
  }
})

/**
 * Whether events about this subject fire at all: a live program, the live ledger, and a member
 * outside the control group of a running Proof experiment (docs/webhooks.md#event-types).
 */
export const fires = (subject: Subject): Effect.Effect<boolean, StorageError, ExperimentStore> =>
  silent(subject)
    ? Effect.succeed(false)
    : Effect.map(Experiments.inControlGroup(subject.program.id, subject.userHash), (control) => !control)

/** Events about test progress or a program in test never fire, whoever listens. */
const silent = (subject: Subject): boolean => subject.ledger !== "live" || subject.program.status !== "live"

/** Whether events about this subject may fire: a live program and the live ledger (control groups aside). */
export const mayFire = (subject: Subject): boolean => !silent(subject)

/** The pending outbox message of one event for one listening subscription, due at `now`. */
export const message = (
  id: MessageId,
  subscription: Subscription,
  now: Date,
  subject: Subject,
  event: Event
): OutboxMessage =>
  new OutboxMessage({
    id,
    subscriptionId: subscription.id,
    projectId: subject.project.id,
    programId: subject.program.id,
    type: event.type,
    payload: JSON.stringify(body(id, now, subject, event)),
    status: "pending",
    attempts: 0,
    nextAttemptAt: now,
    createdAt: now
  })

export interface Emitted {
  /** Events that fired (whether or not anyone listens): 0 for test programs and control members. */
  readonly fired: number
  /** Outbox messages written: one per fired event and listening subscription. */
  readonly enqueued: number
}

const none: Effect.Effect<Emitted> = Effect.succeed({ fired: 0, enqueued: 0 })

/**
 * Fires `events` about `subject`: unless `fires` says no, enqueues one pending message per
 * subscription listening to each event's type, due now. Call inside the transaction of the state
 * change, then `OutboxSignal.notify` after the commit when `enqueued > 0`.
 */
export const emit = (
  subject: Subject,
  events: ReadonlyArray<Event>
): Effect.Effect<Emitted, StorageError, SubscriptionStore | Outbox | ExperimentStore> =>
  // Plain `flatMap`s rather than a generator: a sweep emits for each of its rows, and a generator
  // here costs measurably more per row (docs/decisions/0008-due-sweep-by-index.md).
  events.length === 0 ? none : Effect.flatMap(fires(subject), (fire) => (fire ? toListeners(subject, events) : none))

/**
 * `emit` for events that each fire only if `kept` says so once it answers (one flag per event): for
 * events that follow from writes of the same transaction, such as a milestone's, which fire only
 * where the achievement's insert was this transaction's. The reads that decide whether and to whom
 * they fire go out with those writes, so a store that pipelines sends them all in one round trip
 * rather than one after another.
 */
export const emitWhere = <R>(
  subject: Subject,
  events: ReadonlyArray<Event>,
  kept: Effect.Effect<ReadonlyArray<boolean>, StorageError, R>
): Effect.Effect<Emitted, StorageError, R | SubscriptionStore | Outbox | ExperimentStore> =>
  silent(subject) ?
    Effect.as(kept, { fired: 0, enqueued: 0 }) :
    Effect.flatMap(SubscriptionStore, (subscriptions) =>
      Effect.flatMap(
        Effect.all([
          kept,
          Experiments.inControlGroup(subject.program.id, subject.userHash),
          Effect.all(events.map((event) => subscriptions.forEvent(subject.program.id, event.type)), {
            concurrency: "unbounded"
          })
        ], { concurrency: "unbounded" }),
        ([keep, control, listening]) => {
          const firing = events.filter((_, i) => keep[i])
          if (control || firing.length === 0) return none
          return toHeard(subject, firing, listening.filter((_, i) => keep[i]))
        }
      ))

/** Events that fire, to the subscriptions listening to each. */
const toListeners = (
  subject: Subject,
  events: ReadonlyArray<Event>
): Effect.Effect<Emitted, StorageError, SubscriptionStore | Outbox> =>
  Effect.flatMap(SubscriptionStore, (subscriptions) =>
    Effect.flatMap(
      Effect.forEach(events, (event) => subscriptions.forEvent(subject.program.id, event.type)),
      (listening) => toHeard(subject, events, listening)
    ))

/**
 * Events that fire, with who listens to each: most have no listener (at-risk and broken in a sweep
 * of 100k rows, say), and then they cost no clock read, ids or messages, which were most of the
 * cost of an event.
 */
const toHeard = (
  subject: Subject,
  events: ReadonlyArray<Event>,
  listening: ReadonlyArray<ReadonlyArray<Subscription>>
): Effect.Effect<Emitted, StorageError, Outbox> =>
  listening.every((l) => l.length === 0)
    ? Effect.succeed({ fired: events.length, enqueued: 0 })
    : enqueue(subject, events, listening)

/** One pending message per listening subscription of each event, due now. */
const enqueue = (
  subject: Subject,
  events: ReadonlyArray<Event>,
  listening: ReadonlyArray<ReadonlyArray<Subscription>>
): Effect.Effect<Emitted, StorageError, Outbox> =>
  Effect.gen(function*() {
    const now = new Date(yield* Clock.currentTimeMillis)
    const messages: Array<OutboxMessage> = []
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!
      for (const subscription of listening[i]!) {
        messages.push(message(yield* Ids.make("MessageId"), subscription, now, subject, event))
      }
    }
    if (messages.length > 0) yield* Effect.flatMap(Outbox, (outbox) => outbox.enqueue(messages))
    return { fired: events.length, enqueued: messages.length }
  })
