/**
 * The storage ports: everything the services need from a database, as `Context.Tag`s with
 * required methods. Each method's MUST rules are part of the contract and are checked by
 * `storageConformance` (see `@streaks/storage-conformance`); every failure is a typed `StorageError`.
 */
import type { Effect, Option, Schema } from "effect"
import { Context } from "effect"
import type { LocalDate } from "./Calendar.js"
import {
  type Achievement,
  type ActionRecord,
  ApiKey,
  AuthorizationCode,
  type AuditEntry,
  type CredentialRef,
  type DeliveryAttempt,
  type EventType,
  Experiment,
  Invite,
  type Membership,
  type FreezeGrant,
  type Pause,
  type Repair,
  type Ledger,
  OAuthClient,
  OAuthGrant,
  OAuthToken,
  type Outage,
  type OutboundEventType,
  type OutboxMessage,
  type Plan,
  Program,
  type ProgramStatus,
  Project,
  Session,
  type StreakMode,
  type StreakKey,
  type StreakRow,
  Subscription,
  User,
  Workspace
} from "./Domain.js"
import type { StorageError } from "./Errors.js"
import type { Policy } from "./Policy.js"
import type { ImportStore } from "./ImportStore.js"
import type { ReportStore } from "./ReportStore.js"
import type { UsageEntry } from "./Usage.js"
import type {
  ApiKeyId,
  AuthorizationCodeId,
  OAuthClientId,
  OAuthGrantId,
  OAuthTokenId,
  MessageId,
  MilestoneId,
  ProgramId,
  ProjectId,
  SiteKey,
  SubscriptionId,
  UserHash,
  WorkspaceId
} from "./Ids.js"
import type { IdempotencyClaim, KeyAnswer, KeyRequest, Member } from "./IngestRecords.js"

type Io<A> = Effect.Effect<A, StorageError>

/**
 * Runs a unit of work atomically. Every port call made inside `withTransaction` (on its fiber or
 * on fibers forked inside it, which issue calls side by side) MUST commit together or not at all;
 * nested calls join the outer transaction.
 */
export class Transactor extends Context.Tag("@streaks/core/Transactor")<Transactor, {
  readonly withTransaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}>() {}

/** The records of tenancy and configuration a `Catalog` keeps, by kind. */
export interface CatalogRecords {
  readonly workspace: Workspace
  readonly project: Project
  readonly program: Program
  readonly subscription: Subscription
  readonly apiKey: ApiKey
  readonly grant: OAuthGrant
  readonly experiment: Experiment
  readonly oauthClient: OAuthClient
  readonly authorizationCode: AuthorizationCode
  readonly oauthToken: OAuthToken
  readonly user: User
  readonly session: Session
  readonly invite: Invite
}

export type CatalogKind = keyof CatalogRecords

/** The schema class of each kind's records: a store that keeps them as documents decodes with it. */
export const catalogSchemas: {
  readonly [K in CatalogKind]:
    & Schema.Schema<CatalogRecords[K], any>
    & (new(fields: CatalogRecords[K]) => CatalogRecords[K])
} = {
  workspace: Workspace,
  project: Project,
  program: Program,
  subscription: Subscription,
  apiKey: ApiKey,
  grant: OAuthGrant,
  experiment: Experiment,
  oauthClient: OAuthClient,
  authorizationCode: AuthorizationCode,
  oauthToken: OAuthToken,
  user: User,
  session: Session,
  invite: Invite
}

/** The fields of each kind that a selection may name: a store keeps them where it can match them. */
export interface CatalogFields {
  readonly workspace: "id"
  readonly project: "id" | "siteKey" | "workspaceId"
  readonly program: "id" | "projectId" | "eventKey" | "status" | "outagesRevision"
  readonly subscription: "id" | "programId" | "workspaceId"
  readonly apiKey: "id" | "tokenHash" | "revokedAt" | "workspaceId"
  readonly grant: "id" | "tokenHash" | "revokedAt" | "clientId" | "userId"
  readonly experiment: "id" | "programId" | "endedAt"
  readonly oauthClient: "id" | "revokedAt"
  readonly authorizationCode: "id" | "codeHash" | "usedAt"
  readonly oauthToken: "id" | "tokenHash" | "grantId" | "usedAt" | "revokedAt"
  readonly user: "id" | "emailKey"
  readonly session: "id" | "tokenHash" | "userId"
  readonly invite: "id" | "tokenHash" | "userId" | "usedAt"
}

/**
 * Which records of a kind a call is about: every field named MUST match. A value matches itself, an
 * array any of its values (an empty array nothing), `null` a field that is absent.
 */
export type Selection<K extends CatalogKind> = {
  readonly [F in CatalogFields[K]]?:
    | Exclude<CatalogRecords[K][F & keyof CatalogRecords[K]], undefined>
    | ReadonlyArray<Exclude<CatalogRecords[K][F & keyof CatalogRecords[K]], undefined>>
    | null
}

/** Fields to set on selected records (the id never changes). */
export type CatalogChanges<K extends CatalogKind> = Partial<Omit<CatalogRecords[K], "id">>

/**
 * Workspaces, projects, programs, subscriptions, credentials and experiments: few, small records,
 * read by equality on a handful of fields (`CatalogFields`). Core builds the directory,
 * subscription, credential and experiment stores on these four calls (`Storage.layer`).
 *
 * Uniqueness rules `insert` MUST keep, also among concurrent callers: the `id` of every kind; a
 * project's `siteKey`; one experiment without `endedAt` per `programId`; a user's `emailKey`.
 */
export class Catalog extends Context.Tag("@streaks/core/Catalog")<Catalog, {
  /** Stores a new record exactly (every field round-trips); `false`, storing nothing, when it breaks a uniqueness rule. */
  readonly insert: <K extends CatalogKind>(kind: K, record: CatalogRecords[K]) => Io<boolean>
  /** The records of `kind` that match `where`, ordered by id. */
  readonly find: <K extends CatalogKind>(kind: K, where: Selection<K>) => Io<ReadonlyArray<CatalogRecords[K]>>
  /**
   * Sets `changes` on the records that match `where` and returns them as updated, ordered by id.
   * MUST match and change each record in one atomic step: of concurrent updates whose `where`
   * names a field the others change (`{ id, status: "test" }` → `{ status: "live" }`), exactly
   * one changes the record.
   */
  readonly update: <K extends CatalogKind>(
    kind: K,
    where: Selection<K>,
    changes: CatalogChanges<K>
  ) => Io<ReadonlyArray<CatalogRecords[K]>>
  /** Deletes the records that match `where`; returns them, ordered by id. */
  readonly remove: <K extends CatalogKind>(kind: K, where: Selection<K>) => Io<ReadonlyArray<CatalogRecords[K]>>
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

/** One member's key in one program, named by any id of the member (aliases are resolved by the store). */
export interface StandingRef {
  readonly projectId: ProjectId
  readonly programId: ProgramId
  readonly ledger: Ledger
  readonly userHash: UserHash
}

/** What a member's widget shows, read at once: see `StateStore.standing`. */
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
   * For each id, in input order (an id may repeat): the canonical member behind it (itself unless
   * it was linked as an anonymous id) and that member's stored zone. One round trip where the
   * store allows.
   */
  readonly lookup: (ids: ReadonlyArray<MemberRef>) => Io<ReadonlyArray<Member>>
  /** Stores each member's zone (a member given twice keeps the last); one round trip where the store allows. */
  readonly setTimezones: (zones: ReadonlyArray<MemberZone>) => Io<void>
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

/** Which streak rows `StreakStore.rows` reads. */
export type RowQuery =
  /** The rows of these keys that exist. */
  | { readonly keys: ReadonlyArray<StreakKey> }
  /** Every row of a program on one ledger (reports, experiments, a policy change). */
  | { readonly programId: ProgramId; readonly ledger: Ledger }
  /** Every row of a member in a project: all programs, both ledgers (an alias merge). */
  | { readonly projectId: ProjectId; readonly userHash: UserHash }

/** Which streaks `StreakStore.histories` reads: one page of a program's members on one ledger. */
export interface HistoryPage {
  readonly projectId: ProjectId
  readonly programId: ProgramId
  readonly ledger: Ledger
  /** The page starts after this member (user hashes in byte order); absent: the first page. */
  readonly after?: UserHash | undefined
  /** Most members in the page (at least 1). */
  readonly limit: number
  /** Only the active days from `from` through `to` (both inclusive, either optional). */
  readonly from?: LocalDate | undefined
  readonly to?: LocalDate | undefined
}

/** One member's streak as a replay needs it (docs/operations.md#trying-a-policy-before-shipping-it). */
export interface StreakHistory {
  readonly userHash: UserHash
  /** The row's zone. */
  readonly timezone: string
  /** The row's granted freezes (none when it has none). */
  readonly grants: ReadonlyArray<FreezeGrant>
  /** Active days in the asked range, ascending. */
  readonly days: ReadonlyArray<LocalDate>
  /** The row's repairs and pauses (docs/streak-semantics.md#forgiveness); absent when it has none. */
  readonly repairs?: ReadonlyArray<Repair> | undefined
  readonly pauses?: ReadonlyArray<Pause> | undefined
}

/** Streak rows, their active days and their achievements: the heart of the per-action path. */
export class StreakStore extends Context.Tag("@streaks/core/StreakStore")<StreakStore, {
  /**
   * The streak row of each key, in input order (a key may repeat), created empty (zone
   * `timezone`) when missing. Inside a transaction the rows MUST stay locked until it ends, so
   * concurrent actions of one member serialise, and MUST be locked in one deterministic order, so
   * that two transactions with overlapping keys cannot deadlock. One round trip where the store
   * allows.
   */
  readonly lock: (
    keys: ReadonlyArray<{ readonly key: StreakKey; readonly timezone: string }>
  ) => Io<ReadonlyArray<StreakRow>>
  /** Inserts or replaces each row (every field, including `dueAt`); one round trip where the store allows. */
  readonly save: (rows: ReadonlyArray<StreakRow>) => Io<void>
  /**
   * Records active days, answers in input order. MUST answer `true` only for the first insert of
   * (key, day), also among concurrent callers: a pair given twice is `true` at most at its first
   * position.
   */
  readonly addDays: (
    days: ReadonlyArray<{ readonly key: StreakKey; readonly day: LocalDate }>
  ) => Io<ReadonlyArray<boolean>>
  /** The active days of the key, ascending: all of them, or those in [from, to] (both inclusive). */
  readonly days: (
    key: StreakKey,
    range?: { readonly from: LocalDate; readonly to: LocalDate }
  ) => Io<ReadonlyArray<LocalDate>>
  /** The rows a query names (see `RowQuery`), in no particular order. */
  readonly rows: (query: RowQuery) => Io<ReadonlyArray<StreakRow>>
  /**
   * A page of the program's streak rows on `ledger`, each with its active days (see
   * `HistoryPage`): rows ordered by user hash in byte order, those after `after`, at most `limit`;
   * a row without days in the range is in the page with none. Paging until a page comes back
   * shorter than `limit` reads every row once, so a caller holds one page at a time.
   */
  readonly histories: (page: HistoryPage) => Io<ReadonlyArray<StreakHistory>>
  /** Removes the row of `key` with its days and achievements (an anonymous id merged away). */
  readonly remove: (key: StreakKey) => Io<void>
  /**
   * Rows whose `dueAt` ≤ `now`, oldest due first, at most `limit`. Inside a transaction the rows
   * MUST stay locked until it ends, and MUST never be handed to a concurrent caller (skip
   * locked rows): callers save each row with its next `dueAt` before committing.
   * Cost MUST follow the number of due rows, not the table size.
   */
  readonly claimDue: (now: Date, limit: number) => Io<ReadonlyArray<StreakRow>>
}>() {}

/** The milestones reached on each streak key. */
export class AchievementStore extends Context.Tag("@streaks/core/AchievementStore")<AchievementStore, {
  /** The achievements of each key, in input order (a key may repeat; an unknown key has none). One round trip where the store allows. */
  readonly achieved: (keys: ReadonlyArray<StreakKey>) => Io<ReadonlyArray<ReadonlyArray<Achievement>>>
  /**
   * Records achievements, answers in input order. MUST answer `true` only the first time (key,
   * milestone) is recorded, also among concurrent callers.
   */
  readonly add: (achievements: ReadonlyArray<Achievement>) => Io<ReadonlyArray<boolean>>
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
  /** Stores the records (nothing reads one back by id); one round trip where the store allows. */
  readonly append: (records: ReadonlyArray<ActionRecord>) => Io<void>
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

/** Idempotency keys shared by every replica (docs/api.md#idempotency). */
export class IdempotencyStore extends Context.Tag("@streaks/core/IdempotencyStore")<IdempotencyStore, {
  /**
   * Claims each (project, key) at its `now`, answers in input order. MUST be atomic across
   * concurrent callers: exactly one gets `Claimed`; a key given twice is `Claimed` at most at its
   * first position and `InProgress` after. A completed record younger than 24 h replays; an
   * in-progress claim older than 30 s, or any record older than 24 h, is claimed afresh. Made
   * inside a transaction, the claim is part of it: a rollback frees the key. One round trip
   * where the store allows.
   */
  readonly claim: (keys: ReadonlyArray<KeyRequest>) => Io<ReadonlyArray<IdempotencyClaim>>
  /**
   * Stores each key's answer (a key given twice keeps the last), keeping the key's first receipt
   * as the start of its 24 h; one round trip where the store allows.
   */
  readonly complete: (answers: ReadonlyArray<KeyAnswer>) => Io<void>
  /** Deletes records older than 24 h at `now`; returns how many. */
  readonly purgeExpired: (now: Date) => Io<number>
}>() {}

/** A message a dispatcher holds under a lease: the `nextAttemptAt` its claim (or last renewal) set. */
export interface Held {
  readonly id: MessageId
  readonly leaseUntil: Date
}

/** What became of a held message. */
export type Settlement =
  /** Delivered at `at` after `attempts` attempts. */
  | { readonly _tag: "Delivered"; readonly attempts: number; readonly at: Date }
  /** Still pending, due again at `nextAttemptAt` (with `attempts` unchanged, a renewed lease). */
  | { readonly _tag: "Pending"; readonly attempts: number; readonly nextAttemptAt: Date }
  /** Failed for good: never claimed again. */
  | { readonly _tag: "Failed"; readonly attempts: number }

/** What `Outbox.claimDue` handed out, and when the next message falls due. */
export interface Claimed {
  readonly messages: ReadonlyArray<OutboxMessage>
  /** The earliest `nextAttemptAt` of a pending message not in `messages`, so a dispatcher can sleep exactly until then. */
  readonly nextDueAt: Option.Option<Date>
}

/**
 * Outbound messages written with the state change that caused them
 * (docs/webhooks.md#at-least-once-deduplicate-by-webhook-id).
 */
export class Outbox extends Context.Tag("@streaks/core/Outbox")<Outbox, {
  /** Stores the messages (inside the caller's transaction); `payload` byte for byte. */
  readonly enqueue: (messages: ReadonlyArray<OutboxMessage>) => Io<void>
  /**
   * Pending messages with `nextAttemptAt` ≤ `now`, oldest first, at most `limit`. MUST never hand
   * a message to two concurrent callers: claimed messages get `nextAttemptAt = leaseUntil`, so a
   * worker that dies releases them when the lease runs out.
   */
  readonly claimDue: (now: Date, limit: number, leaseUntil: Date) => Io<Claimed>
  /**
   * Records `attempt` (when given: the send happened, whatever the answer) and settles the held
   * message. MUST change the message only while it is still `pending` with `nextAttemptAt` =
   * `held.leaseUntil`, in one atomic step, and answer whether it did: a holder whose lease ran
   * out, and which another claimer has since claimed, delivered or failed, changes nothing
   * (`false`). Since a claim happens only after the lease ran out, a later claim always holds a
   * later `leaseUntil`.
   */
  readonly settle: (held: Held, settlement: Settlement, attempt?: DeliveryAttempt) => Io<boolean>
  /** Delivered messages of a program and type, newest first by creation, at most `limit`. */
  readonly recentDelivered: (
    programId: ProgramId,
    type: OutboundEventType,
    limit: number
  ) => Io<ReadonlyArray<OutboxMessage>>
  /** Deletes delivery attempts older than `before`; returns how many. */
  readonly purgeAttempts: (before: Date) => Io<number>
  /**
   * The subscription's messages of any status, newest first by creation (then id), at most
   * `limit`, each with its recorded attempts in attempt order.
   */
  readonly ofSubscription: (subscriptionId: SubscriptionId, limit: number) => Io<ReadonlyArray<MessageHistory>>
  /**
   * Makes the subscription's message `id` due again at `now`: a delivered or failed message becomes
   * `pending` with `nextAttemptAt = now` (attempts and their records kept, so the next attempt has
   * the next number); a pending one is left as it is. `false` when the subscription has no such message.
   */
  readonly redeliver: (subscriptionId: SubscriptionId, id: MessageId, now: Date) => Io<boolean>
}>() {}

/** A message and the attempts made to deliver it. */
export interface MessageHistory {
  readonly message: OutboxMessage
  readonly attempts: ReadonlyArray<DeliveryAttempt>
}

/** One member active in one UTC month of a workspace (defined with the rules that make it, in `Usage`). */
export type { UsageEntry } from "./Usage.js"
export type { IdempotencyClaim, KeyAnswer, KeyRequest, Member }

/** Active streakers per workspace and UTC month (docs/api.md#get-usage). */
export class UsageStore extends Context.Tag("@streaks/core/UsageStore")<UsageStore, {
  /**
   * Marks members active, answers in input order. MUST answer `true` only the first time a member
   * is marked in (workspace, month), also among concurrent callers (a repeated entry is `true` at
   * most at its first position), and insert in one deterministic order, so that concurrent
   * batches cannot deadlock.
   */
  readonly markActive: (entries: ReadonlyArray<UsageEntry>) => Io<ReadonlyArray<boolean>>
  readonly activeCount: (workspaceId: WorkspaceId, month: string) => Io<number>
}>() {}

/** Which audit entries a read is about, newest first (docs/accounts.md#audit-log). */
export interface AuditQuery {
  /** Entries of these workspaces only; absent: every entry (the operator's read). */
  readonly workspaceIds?: ReadonlyArray<WorkspaceId> | undefined
  /** Inclusive lower bound of `at`. */
  readonly from?: Date | undefined
  /** Exclusive upper bound of `at`. */
  readonly to?: Date | undefined
  /** Entries strictly older than this one in the order (`at` descending, then `id` descending). */
  readonly before?: { readonly at: Date; readonly id: string } | undefined
  readonly limit: number
}

/**
 * The audit log: an append-only record of every write by a credential. `append` called inside
 * `Transactor.withTransaction` MUST commit or roll back with the change it records.
 */
export class AuditLog extends Context.Tag("@streaks/core/AuditLog")<AuditLog, {
  readonly append: (entries: ReadonlyArray<AuditEntry>) => Io<void>
  /** At most `limit` entries matching the query, ordered by `at` then `id`, both descending. */
  readonly list: (query: AuditQuery) => Io<ReadonlyArray<AuditEntry>>
}>() {}

/** Every port: what a storage adapter implements (`Storage.layer` builds the rest of `Stores` on it). */
export type Storage =
  | Transactor
  | Catalog
  | MemberStore
  | StreakStore
  | AchievementStore
  | ActionLog
  | IdempotencyStore
  | Outbox
  | UsageStore
  | ReportStore
  | AuditLog
  | ImportStore

// Stores core builds on the `Catalog` (`Storage.layer`): services read and write tenancy through
// them; an adapter does not implement them.

/** Workspaces, projects and programs (with their milestones), on the `Catalog`. */
export class DirectoryStore extends Context.Tag("@streaks/core/DirectoryStore")<DirectoryStore, {
  readonly createWorkspace: (workspace: Workspace) => Io<void>
  readonly workspace: (id: WorkspaceId) => Io<Option.Option<Workspace>>
  /** None for an unknown id. */
  readonly setPlan: (id: WorkspaceId, plan: Plan) => Io<Option.Option<Workspace>>
  readonly createProject: (project: Project) => Io<void>
  readonly project: (id: ProjectId) => Io<Option.Option<Project>>
  readonly projectBySiteKey: (siteKey: SiteKey) => Io<Option.Option<Project>>
  readonly projectsOfWorkspaces: (ids: ReadonlyArray<WorkspaceId>) => Io<ReadonlyArray<Project>>
  /** Rejects nothing itself; services keep `eventKey` unique within the project. */
  readonly createProgram: (program: Program) => Io<void>
  readonly program: (id: ProgramId) => Io<Option.Option<Program>>
  /** The program of the project that counts exactly this event key (case-sensitive). */
  readonly programByEventKey: (projectId: ProjectId, eventKey: string) => Io<Option.Option<Program>>
  readonly programsOfProjects: (ids: ReadonlyArray<ProjectId>) => Io<ReadonlyArray<Program>>
  readonly setProgramStatus: (id: ProgramId, status: ProgramStatus) => Io<Option.Option<Program>>
  /** Moves a `test` program to `live`; of concurrent callers exactly one gets `true`. */
  readonly goLive: (id: ProgramId) => Io<boolean>
  readonly setWebhookSecretHash: (id: ProgramId, hash: string) => Io<Option.Option<Program>>
  /** Sets the program's policy and its `mode` (docs/streak-semantics.md#streak-policies); None for an unknown id. */
  readonly setProgramPolicy: (id: ProgramId, policy: Policy, mode: StreakMode) => Io<Option.Option<Program>>
  /**
   * Adds and removes outage windows of a program (docs/streak-semantics.md#forgiveness) in one
   * atomic step, and answers the program after (None for an unknown id): each window of `add`
   * replaces the one with its id, else comes last; `remove` names windows by id. Of concurrent
   * changes none is lost: each applies to the windows as the others left them.
   */
  readonly changeProgramOutages: (id: ProgramId, change: OutagesChange) => Io<Option.Option<Program>>
}>() {}

/** Windows to add (or replace, by id) and ids of windows to remove. */
export interface OutagesChange {
  readonly add?: ReadonlyArray<Outage> | undefined
  readonly remove?: ReadonlyArray<string> | undefined
}

/** Webhook subscriptions, on the `Catalog`. */
export class SubscriptionStore extends Context.Tag("@streaks/core/SubscriptionStore")<SubscriptionStore, {
  readonly create: (subscription: Subscription) => Io<void>
  readonly get: (id: SubscriptionId) => Io<Option.Option<Subscription>>
  /** The removed subscription, or None when it did not exist. */
  readonly remove: (id: SubscriptionId) => Io<Option.Option<Subscription>>
  /** Subscriptions of the program that listen to `type`. */
  readonly forEvent: (programId: ProgramId, type: OutboundEventType) => Io<ReadonlyArray<Subscription>>
  /** Every subscription of these workspaces, by id. */
  readonly ofWorkspaces: (workspaceIds: ReadonlyArray<WorkspaceId>) => Io<ReadonlyArray<Subscription>>
  /** Removes every subscription of the workspace created with the credential; returns them. */
  readonly removeCreatedBy: (workspaceIds: ReadonlyArray<WorkspaceId>, credential: CredentialRef) => Io<
    ReadonlyArray<Subscription>
  >
}>() {}

/** Customer REST credentials (only hashes are stored), on the `Catalog`. */
export class CredentialStore extends Context.Tag("@streaks/core/CredentialStore")<CredentialStore, {
  readonly createApiKey: (key: ApiKey) => Io<void>
  /** An unrevoked key with this token hash. */
  readonly apiKeyByHash: (tokenHash: string) => Io<Option.Option<ApiKey>>
  /** Marks the key revoked; None if unknown or already revoked. */
  readonly revokeApiKey: (id: ApiKeyId, at: Date) => Io<Option.Option<ApiKey>>
  readonly createGrant: (grant: OAuthGrant) => Io<void>
  readonly grantByHash: (tokenHash: string) => Io<Option.Option<OAuthGrant>>
  readonly revokeGrant: (id: OAuthGrant["id"], at: Date) => Io<Option.Option<OAuthGrant>>
  /** The unrevoked API keys of these workspaces, by id. */
  readonly apiKeysOfWorkspaces: (workspaceIds: ReadonlyArray<WorkspaceId>) => Io<ReadonlyArray<ApiKey>>
  /** Every unrevoked grant (OAuth apps' and MCP tokens'), by id. */
  readonly liveGrants: Io<ReadonlyArray<OAuthGrant>>
  /** Sets the workspaces an unrevoked grant reaches; None if unknown or revoked. */
  readonly setGrantWorkspaces: (
    id: OAuthGrant["id"],
    workspaceIds: ReadonlyArray<WorkspaceId>
  ) => Io<Option.Option<OAuthGrant>>
}>() {}

/**
 * The records of the OAuth authorization server (docs/oauth.md), on the `Catalog`: clients,
 * authorization codes, consented grants and their access and refresh tokens (hashes only).
 */
export class OAuthStore extends Context.Tag("@streaks/core/OAuthStore")<OAuthStore, {
  readonly createClient: (client: OAuthClient) => Io<void>
  /** An unrevoked client. */
  readonly client: (id: OAuthClientId) => Io<Option.Option<OAuthClient>>
  /** Marks the client revoked; None if unknown or already revoked. */
  readonly revokeClient: (id: OAuthClientId, at: Date) => Io<Option.Option<OAuthClient>>
  /** The unrevoked grants consented to the client. */
  readonly grantsOfClient: (id: OAuthClientId) => Io<ReadonlyArray<OAuthGrant>>
  /** The unrevoked grants the user consented to. */
  readonly grantsOfUser: (userId: string) => Io<ReadonlyArray<OAuthGrant>>
  /** An unrevoked grant by id. */
  readonly grant: (id: OAuthGrant["id"]) => Io<Option.Option<OAuthGrant>>
  readonly createCode: (code: AuthorizationCode) => Io<void>
  /** The code with this hash, spent or not. */
  readonly codeByHash: (codeHash: string) => Io<Option.Option<AuthorizationCode>>
  /**
   * Spends an unspent code, recording the grant it produces. MUST be atomic: of concurrent callers
   * exactly one gets the code; the others (and every later caller) get None.
   */
  readonly spendCode: (id: AuthorizationCodeId, at: Date, grantId: OAuthGrantId) => Io<Option.Option<AuthorizationCode>>
  readonly createToken: (token: OAuthToken) => Io<void>
  /** The token with this hash, spent, revoked or expired alike. */
  readonly tokenByHash: (tokenHash: string) => Io<Option.Option<OAuthToken>>
  /** Spends an unspent, unrevoked refresh token; atomic as `spendCode`. */
  readonly spendToken: (id: OAuthTokenId, at: Date) => Io<Option.Option<OAuthToken>>
  /** Marks the token revoked; None if unknown or already revoked. */
  readonly revokeToken: (id: OAuthTokenId, at: Date) => Io<Option.Option<OAuthToken>>
  /**
   * Records that an unrevoked access token was used at `at` (its `usedAt`); None if unknown or
   * revoked. Only for access tokens: a refresh token's `usedAt` means spent (`spendToken`).
   */
  readonly touchToken: (id: OAuthTokenId, at: Date) => Io<Option.Option<OAuthToken>>
  /** Every token issued for the grant, spent, revoked or expired alike. */
  readonly tokensOfGrant: (grantId: OAuthGrantId) => Io<ReadonlyArray<OAuthToken>>
  /** The user's workspaces and roles as they stand now; None for an unknown user. */
  readonly memberships: (userId: string) => Io<Option.Option<ReadonlyArray<Membership>>>
}>() {}

/** Holdout experiments, on the `Catalog`. */
export class ExperimentStore extends Context.Tag("@streaks/core/ExperimentStore")<ExperimentStore, {
  /** Refuses (false) when the program already has a running experiment. */
  readonly start: (experiment: Experiment) => Io<boolean>
  readonly running: (programId: ProgramId) => Io<Option.Option<Experiment>>
  /** Ends the running experiment of the program at `at`; None if none was running. */
  readonly end: (programId: ProgramId, at: Date) => Io<Option.Option<Experiment>>
  /** Every experiment of the program, running or ended, newest start first. */
  readonly history: (programId: ProgramId) => Io<ReadonlyArray<Experiment>>
}>() {}

/** Every store services use: the ports and what `Storage.layer` builds on them. */
export type Stores =
  | Storage
  | DirectoryStore
  | SubscriptionStore
  | CredentialStore
  | ExperimentStore
  | OAuthStore
