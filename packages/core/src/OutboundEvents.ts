/**
 * Outbound events (docs/webhooks.md): the exact delivery bodies, and the one rule every planner
 * uses for who hears an event (`hearing`, `deliveries`). Pure: the messages are written by the
 * caller, inside the transaction of the state change; `OutboxSignal` wakes the dispatcher after.
 */
import type { LocalDate } from "./Calendar.js"
import {
  type Experiment,
  hasReward,
  type Ledger,
  type Milestone,
  OutboxMessage,
  type OutboundEventType,
  type Program,
  type Project,
  type Subscription
} from "./Domain.js"
import { isControl } from "./ProofReport.js"
import type { MessageId, ProgramId, UserHash } from "./Ids.js"

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
  /** A missed period made whole, by a repair or an outage window (docs/streak-semantics.md#forgiveness). */
  | {
    readonly type: "streak.repaired"
    readonly period: { readonly start: LocalDate; readonly end: LocalDate }
    readonly current: number
  }

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
    case "streak.repaired":
      return { period: { start: event.period.start, end: event.period.end }, current: event.current }
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

/**
 * Who may hear the events of some programs, as a planner is given it: the running experiment of
 * each program that has one (its control group hears nothing), and the subscriptions of each
 * program that listen to the event types the planner emits. A program missing from
 * `subscriptions` has not been read.
 */
export interface Audience {
  readonly experiments: ReadonlyMap<ProgramId, Experiment>
  readonly subscriptions: ReadonlyMap<ProgramId, ReadonlyArray<Subscription>>
}

/** An audience of no program: every planner's starting point. */
export const noAudience: Audience = { experiments: new Map(), subscriptions: new Map() }

/** Audiences merged: the later one's programs win. */
export const mergeAudience = (a: Audience | undefined, b: Audience): Audience =>
  a === undefined ? b : {
    experiments: new Map([...a.experiments, ...b.experiments]),
    subscriptions: new Map([...a.subscriptions, ...b.subscriptions])
  }

/** Who hears events about one subject. */
export type Hearing =
  /** They do not fire at all: a program in test, the test ledger, or a member of a control group. */
  | { readonly _tag: "Silent" }
  /** They fire, to these subscriptions of the program (each hears the types it listens to). */
  | { readonly _tag: "Heard"; readonly subscriptions: ReadonlyArray<Subscription> }
  /** The program's audience was not read: read it (see `Audience`) and plan again. */
  | { readonly _tag: "NeedsAudience"; readonly program: ProgramId }

const silentHearing: Hearing = { _tag: "Silent" }

/**
 * The one rule for who hears an event, shared by every planner (ingest, due checks, alias
 * merges): events fire only for a live program on the live ledger, about a member outside the
 * control group of the program's running Proof experiment, and go to each subscription of the
 * program that listens to their type (docs/webhooks.md).
 */
export const hearing = (subject: Subject, audience: Audience | undefined): Hearing => {
  if (silent(subject)) return silentHearing
  const subscriptions = audience?.subscriptions.get(subject.program.id)
  if (subscriptions === undefined) return { _tag: "NeedsAudience", program: subject.program.id }
  const experiment = audience!.experiments.get(subject.program.id)
  return experiment !== undefined && isControl(experiment.id, subject.userHash, experiment.holdoutPercent)
    ? silentHearing
    : { _tag: "Heard", subscriptions }
}

/**
 * The pending messages of `events` about `subject`, one per subscription listening to each
 * event's type, due at `now`, with ids from `nextId`: what a planner writes for a `Heard` subject.
 */
export const deliveries = (
  subject: Subject,
  events: ReadonlyArray<Event>,
  subscriptions: ReadonlyArray<Subscription>,
  now: Date,
  nextId: () => MessageId
): ReadonlyArray<OutboxMessage> => {
  if (subscriptions.length === 0) return []
  const messages: Array<OutboxMessage> = []
  for (const event of events) {
    for (const subscription of subscriptions) {
      if (subscription.eventTypes.includes(event.type)) {
        messages.push(message(nextId(), subscription, now, subject, event))
      }
    }
  }
  return messages
}
