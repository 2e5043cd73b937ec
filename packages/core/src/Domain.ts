/**
 * The entities of the streak service (docs/api.md#tenancy): tenants, programs and their
 * milestones, per-member streak rows, achievements, subscriptions, outbox messages, credentials,
 * experiments. Storage adapters persist these shapes; services reason about them.
 */
import { Schema } from "effect"
import { LocalDate } from "./Calendar.js"
import { Mode, Policy } from "./Policy.js"
import {
  ApiKeyId,
  AuthorizationCodeId,
  EventId,
  ExperimentId,
  McpTokenId,
  MessageId,
  MilestoneId,
  OAuthClientId,
  OAuthGrantId,
  OAuthTokenId,
  ProgramId,
  ProjectId,
  SiteKey,
  AuditEntryId,
  InviteId,
  SessionId,
  SubscriptionId,
  UserHash,
  UserId,
  WorkspaceId
} from "./Ids.js"

export const Plan = Schema.Literal("starter", "growth", "scale", "pro")
export type Plan = typeof Plan.Type

/** Active streakers per month that each plan includes (docs/api.md#get-usage). */
export const planLimit: Record<Plan, number> = { starter: 500, growth: 2_500, scale: 10_000, pro: 50_000 }

export class Workspace extends Schema.Class<Workspace>("Workspace")({
  id: WorkspaceId,
  name: Schema.String,
  plan: Plan,
  createdAt: Schema.DateFromSelf
}) {}

export const BrowserCounting = Schema.Literal("count", "display-only")
export type BrowserCounting = typeof BrowserCounting.Type

export class Project extends Schema.Class<Project>("Project")({
  id: ProjectId,
  workspaceId: WorkspaceId,
  siteKey: SiteKey,
  name: Schema.String,
  allowedOrigins: Schema.Array(Schema.String),
  /** Default zone of members who never sent `tz` (docs/streak-semantics.md#the-rules). */
  timezone: Schema.String,
  browserCounting: BrowserCounting,
  /** Deprecated compatibility mode: no-origin calls without a server token (docs/api.md#who-may-call). */
  legacyNoOriginIngest: Schema.Boolean,
  /** SHA-256 of the server ingest token `sst_…`. */
  serverTokenHash: Schema.String,
  /** The `ass_…` signing secret, sealed (it is an HMAC key, so a hash would not do). */
  signingSecretSealed: Schema.String,
  createdAt: Schema.DateFromSelf
}) {}

export const RewardType = Schema.Literal("message", "coupon", "link")
export type RewardType = typeof RewardType.Type

export class Milestone extends Schema.Class<Milestone>("Milestone")({
  id: MilestoneId,
  target: Schema.Int.pipe(Schema.between(1, 100_000)),
  msg: Schema.String,
  rewardType: RewardType,
  rewardValue: Schema.optional(Schema.String)
}) {}

/** A milestone carries a reward when it unlocks something: a coupon, a link, or a message with a value. */
export const hasReward = (m: Milestone): boolean => m.rewardValue !== undefined && m.rewardValue !== ""

export class ProgramSettings extends Schema.Class<ProgramSettings>("ProgramSettings")({
  theme: Schema.Struct({ name: Schema.String }),
  position: Schema.String,
  mainMessage: Schema.String
}) {}

export const defaultSettings = new ProgramSettings({
  theme: { name: "default" },
  position: "bottom-right",
  mainMessage: "Keep your streak going!"
})

export const ProgramStatus = Schema.Literal("test", "live")
export type ProgramStatus = typeof ProgramStatus.Type

/** `mode` of a program: "continuous" (daily), "weekly" or "monthly", following its policy's cadence. */
export const StreakMode = Mode
export type StreakMode = typeof StreakMode.Type

export class Program extends Schema.Class<Program>("Program")({
  id: ProgramId,
  projectId: ProjectId,
  name: Schema.String,
  eventKey: Schema.String,
  status: ProgramStatus,
  mode: StreakMode,
  /** SHA-256 of the webhook ingest secret `whi_…`. */
  webhookSecretHash: Schema.String,
  milestones: Schema.Array(Milestone),
  settings: ProgramSettings,
  /** How the program counts (docs/streak-semantics.md#streak-policies); absent: the default policy. */
  policy: Schema.optional(Policy),
  /** Outage windows declared for the program (docs/streak-semantics.md#forgiveness); absent: none. */
  outages: Schema.optional(Schema.Array(Schema.suspend((): Schema.Schema<Outage, OutageEncoded> => Outage))),
  /**
   * How many times `outages` changed (absent: never): each change compares and sets it, so that
   * of concurrent changes none is lost (`DirectoryStore.changeProgramOutages`).
   */
  outagesRevision: Schema.optional(Schema.Int),
  createdAt: Schema.DateFromSelf
}) {}

/**
 * An outage window of a program: the instants [start, end) during which the service or the product
 * was down for everyone; `restored` counts the streaks it restored when it was declared.
 */
export const Outage = Schema.Struct({
  id: Schema.String,
  start: Schema.DateFromSelf,
  end: Schema.DateFromSelf,
  reason: Schema.String,
  restored: Schema.Int,
  createdAt: Schema.DateFromSelf
})
export type Outage = typeof Outage.Type
type OutageEncoded = typeof Outage.Encoded

/** A program's outage windows as adapters store them (JSON, instants as ISO text). */
export const OutagesJson = Schema.Array(Schema.Struct({
  id: Schema.String,
  start: Schema.Date,
  end: Schema.Date,
  reason: Schema.String,
  restored: Schema.Int,
  createdAt: Schema.Date
}))

/** Outage windows as JSON text, for an adapter's column. */
export const outagesToJson = (outages: ReadonlyArray<Outage>): string =>
  JSON.stringify(Schema.encodeSync(OutagesJson)(outages))

/** Outage windows read back from an adapter's column (parsed JSON or its text). */
export const outagesFromJson = (stored: unknown): ReadonlyArray<Outage> =>
  Schema.decodeUnknownSync(OutagesJson)(typeof stored === "string" ? JSON.parse(stored) : stored)

/**
 * An instance of a domain class from fields already known to be valid (built from checked parts,
 * or read back from storage), without running the class's constructor. With validation off, a
 * Schema class constructor still copies its fields twice and merges defaults, several times per
 * action on the ingest path. Equal, hashing and `instanceof`
 * behave as for `new`. Only for classes without constructor defaults (StreakKey, StreakRow,
 * ActionRecord; a test compares both ways for each).
 */
export const unsafeMake = <C extends abstract new(fields: never, options?: never) => object>(
  Class: C,
  fields: ConstructorParameters<C>[0]
): InstanceType<C> => Object.assign(Object.create(Class.prototype), fields)

/** Test progress never mixes with real progress (docs/api.md#test-and-live). */
export const Ledger = Schema.Literal("live", "test")
export type Ledger = typeof Ledger.Type

/** The identity of one streak: a member of a project, in one program, on one ledger. */
export class StreakKey extends Schema.Class<StreakKey>("StreakKey")({
  projectId: ProjectId,
  programId: ProgramId,
  userHash: UserHash,
  ledger: Ledger
}) {}

/** Freezes granted to a member on one activity day (docs/streak-semantics.md#streak-policies). */
export const FreezeGrant = Schema.Struct({ day: LocalDate, count: Schema.Int })
export type FreezeGrant = typeof FreezeGrant.Type

/**
 * A missed period made whole (docs/streak-semantics.md#forgiveness): the first day of the period,
 * when the repair was made (ISO instant, what the allowance counts) and why.
 */
export const Repair = Schema.Struct({ period: LocalDate, at: Schema.String, reason: Schema.String })
export type Repair = typeof Repair.Type

/** A member's pause (docs/streak-semantics.md#forgiveness): activity days from `start` to `end`. */
export const Pause = Schema.Struct({ id: Schema.String, start: LocalDate, end: LocalDate })
export type Pause = typeof Pause.Type

/**
 * The incremental state of one streak (docs/streak-semantics.md#the-rules): enough to count an
 * action in O(1) and to index the next due instant, without reading the member's history.
 */
export class StreakRow extends Schema.Class<StreakRow>("StreakRow")({
  projectId: ProjectId,
  programId: ProgramId,
  userHash: UserHash,
  ledger: Ledger,
  lastActiveDay: Schema.optional(LocalDate),
  /** Length of the run ending at `lastActiveDay`. */
  run: Schema.Int,
  best: Schema.Int,
  /** The zone the due instants were computed in (the member's zone at the last action). */
  timezone: Schema.String,
  /** The owed day for which `streak.at_risk` was already emitted. */
  atRiskNotifiedFor: Schema.optional(LocalDate),
  /** `lastActiveDay` of the run whose `streak.broken` was already emitted. */
  brokenNotifiedAfter: Schema.optional(LocalDate),
  /** Active days in the period of `lastActiveDay` (absent: 1 when there is one, else 0). */
  periodDays: Schema.optional(Schema.Int),
  /** The freeze bank as of that period (absent: the policy's initial freezes). */
  freezes: Schema.optional(Schema.Int),
  /** Freezes granted through the API, by activity day (absent: none). */
  grants: Schema.optional(Schema.Array(FreezeGrant)),
  /** The last day of the latest period whose `streak.freeze_used` was emitted. */
  frozenNotifiedThrough: Schema.optional(LocalDate),
  /** The member's repairs, in the order made (absent: none); inputs of the calculus. */
  repairs: Schema.optional(Schema.Array(Repair)),
  /** The member's pauses, by start day (absent: none); inputs of the calculus. */
  pauses: Schema.optional(Schema.Array(Pause)),
  /** When the scheduler must next look at this row; absent when nothing is due. */
  dueAt: Schema.optional(Schema.DateFromSelf),
  updatedAt: Schema.DateFromSelf
}) {}

export class Achievement extends Schema.Class<Achievement>("Achievement")({
  projectId: ProjectId,
  programId: ProgramId,
  userHash: UserHash,
  ledger: Ledger,
  milestoneId: MilestoneId,
  achievedAt: Schema.DateFromSelf
}) {}

export const EventType = Schema.Literal("streak_interaction", "widget_impression", "widget_interaction")
export type EventType = typeof EventType.Type

export const Source = Schema.Literal("widget", "api", "webhook", "automation", "mcp")
export type Source = typeof Source.Type

/** Which of the four ingest routes an action came through (docs/api.md#order-of-checks). */
export const Door = Schema.Literal("browser", "server", "webhook", "api")
export type Door = typeof Door.Type

/** One received action as stored in the append-only action log (counted or not). */
export class ActionRecord extends Schema.Class<ActionRecord>("ActionRecord")({
  id: EventId,
  projectId: ProjectId,
  programId: Schema.optional(ProgramId),
  userHash: UserHash,
  event: Schema.String,
  eventType: EventType,
  door: Door,
  ledger: Ledger,
  ts: Schema.DateFromSelf,
  receivedAt: Schema.DateFromSelf,
  localDate: LocalDate,
  timezone: Schema.String,
  /** True when the action moved the member's progress (a new active day). */
  counted: Schema.Boolean,
  source: Schema.optional(Schema.String),
  externalService: Schema.optional(Schema.String),
  integrationId: Schema.optional(Schema.String),
  sessionId: Schema.optional(Schema.String),
  idempotencyKey: Schema.optional(Schema.String),
  /** Analytics parts (meta, details, performance, error, consent) as received. */
  extra: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}) {}

export const OutboundEventType = Schema.Literal(
  "milestone.achieved",
  "reward.unlocked",
  "streak.at_risk",
  "streak.broken",
  "streak.freeze_used",
  "streak.freeze_earned",
  "streak.repaired"
)
export type OutboundEventType = typeof OutboundEventType.Type

/** Who created a subscription: revoking that credential removes it (docs/api.md#post-hooks-and-delete-hooksid). */
/** Who created a record: a credential (`api_key`, `oauth`), or a signed-in person (`user`, by user id). */
export const CredentialRef = Schema.Struct({
  type: Schema.Literal("api_key", "oauth", "user"),
  id: Schema.String
})
export type CredentialRef = typeof CredentialRef.Type

export class Subscription extends Schema.Class<Subscription>("Subscription")({
  id: SubscriptionId,
  workspaceId: WorkspaceId,
  projectId: ProjectId,
  programId: ProgramId,
  url: Schema.String,
  eventTypes: Schema.Array(OutboundEventType),
  /** The `whsec_…` signing secret, sealed: deliveries are signed with it. */
  secretSealed: Schema.String,
  createdBy: CredentialRef,
  createdAt: Schema.DateFromSelf
}) {}

export const MessageStatus = Schema.Literal("pending", "delivered", "failed")
export type MessageStatus = typeof MessageStatus.Type

/** One delivery of one event to one subscription; `id` is the stable `webhook-id`. */
export class OutboxMessage extends Schema.Class<OutboxMessage>("OutboxMessage")({
  id: MessageId,
  subscriptionId: SubscriptionId,
  projectId: ProjectId,
  programId: ProgramId,
  type: OutboundEventType,
  /** The exact JSON body sent (docs/webhooks.md#the-delivery). */
  payload: Schema.String,
  status: MessageStatus,
  attempts: Schema.Int,
  nextAttemptAt: Schema.DateFromSelf,
  createdAt: Schema.DateFromSelf,
  deliveredAt: Schema.optional(Schema.DateFromSelf)
}) {}

export class DeliveryAttempt extends Schema.Class<DeliveryAttempt>("DeliveryAttempt")({
  messageId: MessageId,
  attempt: Schema.Int,
  at: Schema.DateFromSelf,
  status: Schema.optional(Schema.Int),
  latencyMs: Schema.Number,
  error: Schema.optional(Schema.String)
}) {}

export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: ApiKeyId,
  workspaceId: WorkspaceId,
  name: Schema.String,
  tokenHash: Schema.String,
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.optional(Schema.DateFromSelf)
}) {}

/**
 * Access to whole workspaces held by a bearer token: an OAuth app's (`oag_…` id, `svc_oat_…` token)
 * or an operator-issued MCP token's (`mcp_…` id, `svc_mcp_…` token; `appName` is its name). The
 * id's prefix tells which: the two share one store and never answer for each other.
 */
/**
 * A grant of an app (or an MCP token) over workspaces. An operator-issued one carries its token's
 * hash; one a user consented to (docs/oauth.md) names its client and user, and its tokens are
 * `OAuthToken` records (its own `tokenHash` is the hash of a secret never handed out).
 */
export class OAuthGrant extends Schema.Class<OAuthGrant>("OAuthGrant")({
  id: Schema.Union(OAuthGrantId, McpTokenId),
  workspaceIds: Schema.Array(WorkspaceId),
  appName: Schema.String,
  tokenHash: Schema.String,
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.optional(Schema.DateFromSelf),
  /** The client it was consented to. */
  clientId: Schema.optional(OAuthClientId),
  /** The user who consented: the grant reaches no more than the user does, then and later. */
  userId: Schema.optional(Schema.String)
}) {}

/**
 * A client of the authorization server (docs/oauth.md#clients). Confidential when it has a
 * secret (registered by the operator), public otherwise (Dynamic Client Registration, PKCE only).
 * Redirect URIs are compared exactly.
 */
export class OAuthClient extends Schema.Class<OAuthClient>("OAuthClient")({
  id: OAuthClientId,
  name: Schema.String,
  redirectUris: Schema.Array(Schema.String),
  secretHash: Schema.optional(Schema.String),
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.optional(Schema.DateFromSelf)
}) {}

/**
 * An authorization code as issued on consent (docs/oauth.md#codes): single-use, short-lived, bound
 * to its client, redirect URI and PKCE challenge. `usedAt` is set by the one exchange that wins;
 * `grantId` names the grant it produced, so that a second presentation can revoke it.
 */
export class AuthorizationCode extends Schema.Class<AuthorizationCode>("AuthorizationCode")({
  id: AuthorizationCodeId,
  codeHash: Schema.String,
  clientId: OAuthClientId,
  userId: Schema.String,
  redirectUri: Schema.String,
  codeChallenge: Schema.String,
  workspaceIds: Schema.Array(WorkspaceId),
  createdAt: Schema.DateFromSelf,
  expiresAt: Schema.DateFromSelf,
  usedAt: Schema.optional(Schema.DateFromSelf),
  grantId: Schema.optional(OAuthGrantId)
}) {}

export const OAuthTokenKind = Schema.Literal("access", "refresh")
export type OAuthTokenKind = typeof OAuthTokenKind.Type

/**
 * An access (`svc_oat_…`) or refresh (`svc_ort_…`) token of a consented grant, stored as a hash.
 * A refresh token is spent once (`usedAt`); an access token expires (`expiresAt`).
 */
export class OAuthToken extends Schema.Class<OAuthToken>("OAuthToken")({
  id: OAuthTokenId,
  tokenHash: Schema.String,
  kind: OAuthTokenKind,
  grantId: OAuthGrantId,
  createdAt: Schema.DateFromSelf,
  expiresAt: Schema.DateFromSelf,
  /** A refresh token: when it was spent (rotated). An access token: when it was last used, to the minute. */
  usedAt: Schema.optional(Schema.DateFromSelf),
  revokedAt: Schema.optional(Schema.DateFromSelf)
}) {}

export class Experiment extends Schema.Class<Experiment>("Experiment")({
  id: ExperimentId,
  projectId: ProjectId,
  programId: ProgramId,
  holdoutPercent: Schema.Int.pipe(Schema.between(1, 50)),
  startedAt: Schema.DateFromSelf,
  endedAt: Schema.optional(Schema.DateFromSelf)
}) {}

/** The answer stored with an idempotency key, replayed verbatim on a repeat (docs/api.md#idempotency). */
export const StoredResponse = Schema.Struct({ status: Schema.Int, body: Schema.Unknown })
export type StoredResponse = typeof StoredResponse.Type

// --- Accounts (docs/accounts.md) ------------------------------------------------------------------

/** A user's role in a workspace: `owner` everything, `admin` everything but users, `viewer` read only. */
export const Role = Schema.Literal("owner", "admin", "viewer")
export type Role = typeof Role.Type

export const Membership = Schema.Struct({ workspaceId: WorkspaceId, role: Role })
export type Membership = typeof Membership.Type

/** A person who signs in, with the workspaces they belong to. */
export class User extends Schema.Class<User>("User")({
  id: UserId,
  /** As given when the user was created. */
  email: Schema.String,
  /** The e-mail address lowercased: unique among users (addresses compare case-insensitively). */
  emailKey: Schema.String,
  name: Schema.String,
  memberships: Schema.Array(Membership),
  /** The argon2id PHC string; absent until the user accepts the invite. */
  passwordHash: Schema.optional(Schema.String),
  /** Failed sign-ins within the lockout window, oldest first (docs/accounts.md#sign-in). */
  failedSignIns: Schema.Array(Schema.DateFromSelf),
  createdAt: Schema.DateFromSelf
}) {}

/** A signed-in browser: only the hash of its cookie's token is stored. */
export class Session extends Schema.Class<Session>("Session")({
  id: SessionId,
  userId: UserId,
  tokenHash: Schema.String,
  createdAt: Schema.DateFromSelf,
  /** Last request seen (kept to the minute): the idle limit counts from it. */
  lastSeenAt: Schema.DateFromSelf,
  /** The absolute end, whatever the activity. */
  expiresAt: Schema.DateFromSelf
}) {}

/** A one-time link where a user sets their password. */
export class Invite extends Schema.Class<Invite>("Invite")({
  id: InviteId,
  userId: UserId,
  tokenHash: Schema.String,
  createdAt: Schema.DateFromSelf,
  expiresAt: Schema.DateFromSelf,
  usedAt: Schema.optional(Schema.DateFromSelf)
}) {}

/**
 * What made a change (docs/accounts.md#audit-log): the operator (`admin`, also on the command
 * line), a customer credential (`api_key`, `oauth`; a session as its `user`), an operator-issued MCP
 * token (`mcp_token`), an invite accepted, an OAuth client or a dynamic registration.
 */
export const ActorKind = Schema.Literal(
  "admin",
  "api_key",
  "oauth",
  "mcp_token",
  "user",
  "invite",
  "oauth_client",
  "registration"
)
export type ActorKind = typeof ActorKind.Type

/** Who made a change: its kind and id. */
export const Actor = Schema.Struct({ kind: ActorKind, id: Schema.String })
export type Actor = typeof Actor.Type

/** One write, as the audit log keeps it (docs/accounts.md#audit-log). */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: AuditEntryId,
  at: Schema.DateFromSelf,
  /** The workspace the change belongs to; absent for the operator's changes outside any workspace. */
  workspaceId: Schema.optional(WorkspaceId),
  actor: Actor,
  clientAddress: Schema.String,
  /** What was done, `<noun>.<verb>` (`api_key.create`, `session.sign_in`). */
  action: Schema.String,
  /** The id of what it was done to. */
  target: Schema.String,
  details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}) {}
