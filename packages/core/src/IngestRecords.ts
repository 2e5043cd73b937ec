/**
 * The records one group of actions reads and writes, apart from the port that stores them: what
 * `IngestStore.load` answers and `commit` takes, and what the pure planners plan over.
 */
import type { Option } from "effect"
import type { LocalDate } from "./Calendar.js"
import type {
  Achievement,
  ActionRecord,
  Ledger,
  OutboundEventType,
  OutboxMessage,
  StoredResponse,
  StreakKey,
  StreakRow
} from "./Domain.js"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "./Ids.js"
import type * as OutboundEvents from "./OutboundEvents.js"
import type { UsageEntry } from "./Usage.js"

/** The canonical member behind an id, with the member's stored zone. */
export interface Member {
  readonly userHash: UserHash
  readonly timezone: Option.Option<string>
}

export type IdempotencyClaim =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "InProgress" }
  | { readonly _tag: "Completed"; readonly response: StoredResponse }

/** An idempotency key to claim at `now`. */
export interface KeyRequest {
  readonly projectId: ProjectId
  readonly key: string
  readonly now: Date
}

/** The answer to store with a claimed idempotency key. */
export interface KeyAnswer {
  readonly projectId: ProjectId
  readonly key: string
  readonly response: StoredResponse
  readonly now: Date
}

/** One action's member as sent, and the streak it counts toward, if it counts. */
export interface MemberRequest {
  readonly projectId: ProjectId
  /** The id as the action names it: the store resolves aliases. */
  readonly userHash: UserHash
  /**
   * The position in `LoadRequest.keys` of the action's idempotency key: its streak is locked only
   * if the key is `Claimed` (a replay or a key in progress changes nothing).
   */
  readonly key?: number
  /** The program and ledger of the streak to lock, for an action that counts. */
  readonly streak?: {
    readonly programId: ProgramId
    readonly ledger: Ledger
    /** The zone of a row created empty because the key has none yet. */
    readonly timezone: string
    /** Whether to read the key's achieved milestones (its program has milestones). */
    readonly withAchieved: boolean
  }
}

/** What a group of actions needs read before it can be planned. */
export interface LoadRequest {
  /** One per action, in the group's order. */
  readonly members: ReadonlyArray<MemberRequest>
  /** Distinct keys, sorted by project then key (one lock order for every caller). */
  readonly keys: ReadonlyArray<KeyRequest>
}

/** A locked streak row (created empty when missing) with its achieved milestones. */
export interface LockedStreak {
  readonly key: StreakKey
  readonly row: StreakRow
  /** Empty unless asked for (`withAchieved`). */
  readonly achieved: ReadonlyArray<MilestoneId>
}

/** One action's member after alias resolution, and its locked streak where asked. */
export interface LoadedMember {
  readonly member: Member
  readonly streak: LockedStreak | undefined
}

/** What `load` read, in the request's order. */
export interface Snapshot {
  readonly members: ReadonlyArray<LoadedMember>
  readonly claims: ReadonlyArray<IdempotencyClaim>
  /**
   * What the store itself learnt in `load` and needs again in `commit`, opaque to everyone else:
   * the planner hands it on untouched as `Changes.forCommit`. Stores over the ports have none.
   */
  readonly forCommit?: unknown
}

/** The events ingest emits: a milestone reached, its reward, a freeze earned. */
export const eventTypes: ReadonlyArray<OutboundEventType> = [
  "milestone.achieved",
  "reward.unlocked",
  "streak.freeze_earned"
]

/**
 * Who hears a program's events (`OutboundEvents.Audience`): its running experiment (control
 * groups hear nothing) and its subscriptions that listen to an event ingest emits (`eventTypes`).
 */
export type Audience = OutboundEvents.Audience

/** An active day to record; it MUST be new (the row's lock guarantees it). */
export interface NewDay {
  readonly key: StreakKey
  readonly day: LocalDate
}

/** A member's zone, stored once per group. */
export interface ZoneChange {
  readonly projectId: ProjectId
  readonly userHash: UserHash
  readonly timezone: string
}

/** Everything a planned group changes, written by `commit` in the transaction of its `load`. */
export interface Changes {
  readonly days: ReadonlyArray<NewDay>
  /** Whole rows, one per key. */
  readonly rows: ReadonlyArray<StreakRow>
  /** New achievements (never recorded before: the row's lock guarantees it). */
  readonly achievements: ReadonlyArray<Achievement>
  readonly usage: ReadonlyArray<UsageEntry>
  readonly zones: ReadonlyArray<ZoneChange>
  readonly actions: ReadonlyArray<ActionRecord>
  readonly outbox: ReadonlyArray<OutboxMessage>
  readonly answers: ReadonlyArray<KeyAnswer>
  /** `Snapshot.forCommit` of the `load` the changes were planned from, as it was. */
  readonly forCommit?: unknown
}

export const noChanges: Changes = {
  days: [],
  rows: [],
  achievements: [],
  usage: [],
  zones: [],
  actions: [],
  outbox: [],
  answers: []
}

/** Whether an action's streak is locked: it has no key, or `load` claimed its key. */
export const goesAhead = (member: MemberRequest, claims: ReadonlyArray<IdempotencyClaim>): boolean =>
  member.key === undefined || claims[member.key]?._tag === "Claimed"

/** The name of a key, for maps keyed by streak (the planner's history, adapters). */
export const keyOf = (k: Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">): string =>
  `${k.projectId}\u0000${k.programId}\u0000${k.userHash}\u0000${k.ledger}`
