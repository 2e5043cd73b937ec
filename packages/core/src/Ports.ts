/**
 * The storage ports: everything the services need from a database, as `Context.Tag`s with
 * required methods. Each method's MUST rules are part of the contract and are checked by
 * `storageConformance` (see `@streaks/core/testing`); every failure is a typed `StorageError`.
 */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { LocalDate } from "./Calendar.js"
import type {
  Achievement,
  ActionRecord,
  ApiKey,
  CredentialRef,
  DeliveryAttempt,
  EventType,
  Experiment,
  Ledger,
  OAuthGrant,
  OutboundEventType,
  OutboxMessage,
  Plan,
  Program,
  ProgramStatus,
  Project,
  StoredResponse,
  StreakMode,
  StreakKey,
  StreakRow,
  Subscription,
  Workspace
} from "./Domain.js"
import type { StorageError } from "./Errors.js"
import type { Policy } from "./Policy.js"
import type {
  ApiKeyId,
  MessageId,
  MilestoneId,
  ProgramId,
  ProjectId,
  SiteKey,
  SubscriptionId,
  UserHash,
  WorkspaceId
} from "./Ids.js"

type Io<A> = Effect.Effect<A, StorageError>

/**
 * Runs a unit of work atomically. Every port call made inside `withTransaction` (on its fiber or
 * on fibers forked inside it, which issue calls side by side) MUST commit together or not at all;
 * nested calls join the outer transaction.
 */
export class Transactor extends Context.Tag("@streaks/core/Transactor")<Transactor, {
  readonly withTransaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}>() {}

/** Workspaces, projects and programs (with their milestones). */
export class DirectoryStore extends Context.Tag("@streaks/core/DirectoryStore")<DirectoryStore, {
  readonly createWorkspace: (workspace: Workspace) => Io<void>
  readonly workspace: (id: WorkspaceId) => Io<Option.Option<Workspace>>
  /** MUST return None for an unknown id. */
  readonly setPlan: (id: WorkspaceId, plan: Plan) => Io<Option.Option<Workspace>>
  readonly createProject: (project: Project) => Io<void>
  readonly project: (id: ProjectId) => Io<Option.Option<Project>>
  readonly projectBySiteKey: (siteKey: SiteKey) => Io<Option.Option<Project>>
  readonly projectsOfWorkspaces: (ids: ReadonlyArray<WorkspaceId>) => Io<ReadonlyArray<Project>>
  /** MUST reject nothing itself; services ensure `eventKey` is unique within the project. */
  readonly createProgram: (program: Program) => Io<void>
  readonly program: (id: ProgramId) => Io<Option.Option<Program>>
  /** The program of the project that counts exactly this event key (case-sensitive). */
  readonly programByEventKey: (projectId: ProjectId, eventKey: string) => Io<Option.Option<Program>>
  readonly programsOfProjects: (ids: ReadonlyArray<ProjectId>) => Io<ReadonlyArray<Program>>
  readonly setProgramStatus: (id: ProgramId, status: ProgramStatus) => Io<Option.Option<Program>>
  /**
   * Moves a `test` program to `live`. MUST be atomic: of concurrent callers exactly one gets
   * `true`; a program already live gives `false`.
   */
  readonly goLive: (id: ProgramId) => Io<boolean>
  readonly setWebhookSecretHash: (id: ProgramId, hash: string) => Io<Option.Option<Program>>
  /** Sets the program's policy and its `mode` (CONTRACT §16); MUST return None for an unknown id. */
  readonly setProgramPolicy: (id: ProgramId, policy: Policy, mode: StreakMode) => Io<Option.Option<Program>>
}>() {}

/** An id as an action names it. */
export interface MemberRef {
  readonly projectId: ProjectId
  readonly userHash: UserHash
}

/** A member's zone to store. */
export interface MemberZone extends MemberRef {
  readonly timezone: string
}

/** The canonical member behind an id, with the member's stored zone. */
export interface Member {
  readonly userHash: UserHash
  readonly timezone: Option.Option<string>
}

/** One member's key in one program, named by any id of the member (aliases are resolved by the store). */
export interface StandingRef {
  readonly projectId: ProjectId
  readonly programId: ProgramId
  readonly ledger: Ledger
  readonly userHash: UserHash
}

/** What a member's widget shows, read at once: see `StreakStore.standingMany`. */
export interface Standing {
  readonly member: Member
  readonly row: Option.Option<StreakRow>
  /** Active days in the asked range, ascending. */
  readonly days: ReadonlyArray<LocalDate>
  /** Ids of the milestones achieved on the key. */
  readonly achieved: ReadonlyArray<MilestoneId>
}

/** Member facts per project: aliases (anonymous → member) and the member's time zone. */
export class MemberStore extends Context.Tag("@streaks/core/MemberStore")<MemberStore, {
  /**
   * The canonical member behind `userHash` (itself unless it was linked as an anonymous id)
   * and that member's stored zone, in one read.
   */
  readonly lookup: (projectId: ProjectId, userHash: UserHash) => Io<Member>
  /** `lookup` of many ids at once (a batch of actions), answers in input order; one round trip where the store allows. */
  readonly lookupMany: (ids: ReadonlyArray<MemberRef>) => Io<ReadonlyArray<Member>>
  readonly setTimezone: (projectId: ProjectId, userHash: UserHash, timezone: string) => Io<void>
  /**
   * Links `anonymousId` to `userHash`. MUST be atomic: returns `"linked"` the first time,
   * `"unchanged"` when the same pair exists, and the other member when `anonymousId` is already
   * linked elsewhere (nothing changes then). On `"linked"`, ids that were linked to `anonymousId`
   * MUST now resolve to `userHash` too (chains never need more than one lookup).
   */
  readonly link: (
    projectId: ProjectId,
    anonymousId: UserHash,
    userHash: UserHash
  ) => Io<"linked" | "unchanged" | { readonly linkedTo: UserHash }>
}>() {}

/** Activity days and streak rows: the heart of the per-action path. */
export class StreakStore extends Context.Tag("@streaks/core/StreakStore")<StreakStore, {
  /**
   * The streak row of `key`, created empty (zone `timezone`) when missing. MUST lock the row for
   * the rest of the surrounding transaction so concurrent actions of one member serialise.
   */
  readonly lock: (key: StreakKey, timezone: string) => Io<StreakRow>
  /**
   * `lock` of many keys at once (a batch of actions), rows in input order; a key may repeat.
   * MUST take the locks in one deterministic order (so that two batches with overlapping keys
   * cannot deadlock); one round trip where the store allows.
   */
  readonly lockMany: (
    keys: ReadonlyArray<{ readonly key: StreakKey; readonly timezone: string }>
  ) => Io<ReadonlyArray<StreakRow>>
  readonly get: (key: StreakKey) => Io<Option.Option<StreakRow>>
  /** Inserts or replaces the row (all fields, including `dueAt`). */
  readonly save: (row: StreakRow) => Io<void>
  /** `save` for many rows at once (a due-check batch); one round trip where the store allows. */
  readonly saveAll: (rows: ReadonlyArray<StreakRow>) => Io<void>
  /** Records an active day. MUST return `true` only for the first insert of (key, day). */
  readonly addDay: (key: StreakKey, day: LocalDate) => Io<boolean>
  /**
   * `addDay` of many (key, day) pairs at once, answers in input order. MUST answer `true` only for
   * the first insert: a pair given twice is `true` at most at its first position.
   */
  readonly addDays: (
    days: ReadonlyArray<{ readonly key: StreakKey; readonly day: LocalDate }>
  ) => Io<ReadonlyArray<boolean>>
  /** Every active day of the streak, ascending. */
  readonly days: (key: StreakKey) => Io<ReadonlyArray<LocalDate>>
  /** Active days in [from, to] inclusive, ascending. */
  readonly daysBetween: (key: StreakKey, from: LocalDate, to: LocalDate) => Io<ReadonlyArray<LocalDate>>
  /**
   * The read of `GET /v1/state`, for many requests at once (the reads that arrive together share
   * it), answers in input order; a ref may repeat. For each ref: the member behind `ref.userHash`
   * (as `MemberStore.lookup`), and for that member's key in `ref.programId` on `ref.ledger` the row
   * (if any), the active days in [from, to] and the achieved milestones. One consistent read, one
   * round trip where the store allows.
   */
  readonly standingMany: (
    refs: ReadonlyArray<StandingRef>,
    from: LocalDate,
    to: LocalDate
  ) => Io<ReadonlyArray<Standing>>
  /** Every streak key of a member in a project (all programs, both ledgers). */
  readonly keysOfMember: (projectId: ProjectId, userHash: UserHash) => Io<ReadonlyArray<StreakKey>>
  /** Removes the row and the days of `key` (used when an anonymous id is merged away). */
  readonly remove: (key: StreakKey) => Io<void>
  /**
   * Rows whose `dueAt` ≤ `now`, oldest due first, at most `limit`. Inside a transaction the rows
   * MUST stay locked until it ends, and MUST never be handed to a concurrent caller (skip
   * locked rows): callers save each row with its next `dueAt` before committing.
   * Cost MUST follow the number of due rows, not the table size.
   */
  readonly claimDue: (now: Date, limit: number) => Io<ReadonlyArray<StreakRow>>
  /** Rows of a program on one ledger (reports and experiments). */
  readonly rowsOfProgram: (programId: ProgramId, ledger: Ledger) => Io<ReadonlyArray<StreakRow>>
}>() {}

export class AchievementStore extends Context.Tag("@streaks/core/AchievementStore")<AchievementStore, {
  readonly list: (key: StreakKey) => Io<ReadonlyArray<Achievement>>
  /**
   * The ids of the milestones achieved on each key (a batch of actions), in input order; a key may
   * repeat, an unknown key has none. One round trip where the store allows.
   */
  readonly achievedMany: (keys: ReadonlyArray<StreakKey>) => Io<ReadonlyArray<ReadonlyArray<MilestoneId>>>
  /** MUST return `true` only the first time (key, milestone) is recorded. */
  readonly add: (key: StreakKey, milestoneId: MilestoneId, at: Date) => Io<boolean>
  readonly remove: (key: StreakKey) => Io<void>
}>() {}

export interface ActionQuery {
  readonly programIds: ReadonlyArray<ProgramId>
  readonly from: Date
  /** Exclusive. */
  readonly to: Date
  readonly ledger: Ledger
}

/** The append-only log of received actions, and the reads that reports need. */
export class ActionLog extends Context.Tag("@streaks/core/ActionLog")<ActionLog, {
  readonly append: (record: ActionRecord) => Io<void>
  /** `append` of many records at once; one round trip where the store allows. */
  readonly appendAll: (records: ReadonlyArray<ActionRecord>) => Io<void>
  /** Counts per local date and event type. */
  readonly countsByDay: (query: ActionQuery) => Io<
    ReadonlyArray<{
      readonly date: LocalDate
      readonly eventType: EventType
      readonly count: number
      readonly counted: number
    }>
  >
  /** Counted actions grouped by their source labels. */
  readonly sources: (query: ActionQuery) => Io<
    ReadonlyArray<{
      readonly source: string | undefined
      readonly externalService: string | undefined
      readonly integrationId: string | undefined
      readonly count: number
    }>
  >
}>() {}

export type IdempotencyClaim =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "InProgress" }
  | { readonly _tag: "Completed"; readonly response: StoredResponse }

/** Idempotency keys shared by every replica (CONTRACT §4). */
export class IdempotencyStore extends Context.Tag("@streaks/core/IdempotencyStore")<IdempotencyStore, {
  /**
   * Claims (project, key) at `now`. MUST be atomic across concurrent callers: exactly one gets
   * `Claimed`. A completed record younger than 24 h replays; an in-progress claim older than
   * 30 s, or any record older than 24 h, is claimed afresh.
   */
  readonly claim: (projectId: ProjectId, key: string, now: Date) => Io<IdempotencyClaim>
  readonly complete: (projectId: ProjectId, key: string, response: StoredResponse, now: Date) => Io<void>
  /** Drops an in-progress claim whose work failed, so a retry can run. */
  readonly release: (projectId: ProjectId, key: string) => Io<void>
  /** Deletes records older than 24 h at `now`; returns how many. */
  readonly purgeExpired: (now: Date) => Io<number>
}>() {}

export class SubscriptionStore extends Context.Tag("@streaks/core/SubscriptionStore")<SubscriptionStore, {
  readonly create: (subscription: Subscription) => Io<void>
  readonly get: (id: SubscriptionId) => Io<Option.Option<Subscription>>
  /** MUST return the removed subscription, or None when it did not exist. */
  readonly remove: (id: SubscriptionId) => Io<Option.Option<Subscription>>
  /** Subscriptions of the program that listen to `type`. */
  readonly forEvent: (programId: ProgramId, type: OutboundEventType) => Io<ReadonlyArray<Subscription>>
  /** Removes every subscription created with the credential; returns them. */
  readonly removeCreatedBy: (credential: CredentialRef) => Io<ReadonlyArray<Subscription>>
}>() {}

/** Outbound messages written with the state change that caused them (CONTRACT §8). */
export class Outbox extends Context.Tag("@streaks/core/Outbox")<Outbox, {
  readonly enqueue: (messages: ReadonlyArray<OutboxMessage>) => Io<void>
  /**
   * Pending messages with `nextAttemptAt` ≤ `now`, oldest first, at most `limit`. MUST never hand
   * a message to two concurrent callers: claimed messages get `nextAttemptAt = leaseUntil`, so a
   * worker that dies releases them when the lease runs out.
   */
  readonly claimDue: (now: Date, limit: number, leaseUntil: Date) => Io<ReadonlyArray<OutboxMessage>>
  readonly recordAttempt: (attempt: DeliveryAttempt) => Io<void>
  readonly attempts: (messageId: MessageId) => Io<ReadonlyArray<DeliveryAttempt>>
  /**
   * The status updates of a held message: `held.leaseUntil` is the lease its holder got (the
   * `nextAttemptAt` its claim returned, or the time of the holder's last `reschedule`). Each MUST
   * change the message only while it is still `pending` with `nextAttemptAt` = `held.leaseUntil`,
   * in one atomic step, and answer whether it did: a holder whose lease ran out, and which another
   * claimer has since claimed, delivered or failed, changes nothing (`false`). Since a claim
   * happens only after the lease ran out, a later claim always holds a later `leaseUntil`.
   */
  readonly markDelivered: (
    held: { readonly id: MessageId; readonly leaseUntil: Date },
    attempts: number,
    at: Date
  ) => Io<boolean>
  /** Back to pending until `nextAttemptAt` (see `markDelivered`); with `attempts` unchanged, this renews a lease. */
  readonly reschedule: (
    held: { readonly id: MessageId; readonly leaseUntil: Date },
    attempts: number,
    nextAttemptAt: Date
  ) => Io<boolean>
  /** Failed for good (see `markDelivered`). */
  readonly markFailed: (held: { readonly id: MessageId; readonly leaseUntil: Date }, attempts: number) => Io<boolean>
  readonly get: (id: MessageId) => Io<Option.Option<OutboxMessage>>
  /** Delivered messages of a program and type, newest first by creation. */
  readonly recentDelivered: (
    programId: ProgramId,
    type: OutboundEventType,
    limit: number
  ) => Io<ReadonlyArray<OutboxMessage>>
  /** The earliest `nextAttemptAt` of a pending message, to sleep exactly until then. */
  readonly nextDueAt: Io<Option.Option<Date>>
  /** Deletes delivery attempts older than `before`; returns how many. */
  readonly purgeAttempts: (before: Date) => Io<number>
}>() {}

/** Customer REST credentials: only hashes are stored. */
export class CredentialStore extends Context.Tag("@streaks/core/CredentialStore")<CredentialStore, {
  readonly createApiKey: (key: ApiKey) => Io<void>
  /** An unrevoked key with this token hash. */
  readonly apiKeyByHash: (tokenHash: string) => Io<Option.Option<ApiKey>>
  /** Marks the key revoked; None if unknown or already revoked. */
  readonly revokeApiKey: (id: ApiKeyId, at: Date) => Io<Option.Option<ApiKey>>
  readonly createGrant: (grant: OAuthGrant) => Io<void>
  readonly grantByHash: (tokenHash: string) => Io<Option.Option<OAuthGrant>>
  readonly revokeGrant: (id: OAuthGrant["id"], at: Date) => Io<Option.Option<OAuthGrant>>
}>() {}

export interface UsageEntry {
  readonly workspaceId: WorkspaceId
  readonly month: string
  readonly member: string
}

/** Active streakers per workspace and UTC month (CONTRACT §11). */
export class UsageStore extends Context.Tag("@streaks/core/UsageStore")<UsageStore, {
  /** MUST return `true` only the first time `member` is marked in (workspace, month). */
  readonly markActive: (workspaceId: WorkspaceId, month: string, member: string) => Io<boolean>
  /**
   * `markActive` of many entries at once, answers in input order (`true` at most at the first
   * position of an entry given twice). MUST insert in one deterministic order, so that concurrent
   * batches cannot deadlock.
   */
  readonly markActiveMany: (entries: ReadonlyArray<UsageEntry>) => Io<ReadonlyArray<boolean>>
  readonly activeCount: (workspaceId: WorkspaceId, month: string) => Io<number>
}>() {}

export class ExperimentStore extends Context.Tag("@streaks/core/ExperimentStore")<ExperimentStore, {
  /** MUST refuse (return false) when the program already has a running experiment. */
  readonly start: (experiment: Experiment) => Io<boolean>
  readonly running: (programId: ProgramId) => Io<Option.Option<Experiment>>
  /** Ends the running experiment of the program at `at`; None if none was running. */
  readonly end: (programId: ProgramId, at: Date) => Io<Option.Option<Experiment>>
}>() {}

/** Every port: what a storage adapter layer provides. */
export type Storage =
  | Transactor
  | DirectoryStore
  | MemberStore
  | StreakStore
  | AchievementStore
  | ActionLog
  | IdempotencyStore
  | SubscriptionStore
  | Outbox
  | CredentialStore
  | UsageStore
  | ExperimentStore
