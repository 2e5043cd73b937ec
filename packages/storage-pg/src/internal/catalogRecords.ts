/**
 * The `Catalog`'s records as rows of their tables: decoding each kind's row, and the JSON texts
 * of a program's columns (`catalog.ts` describes the tables and builds the statements).
 */
import {
  ApiKey,
  AuthorizationCode,
  Experiment,
  Invite,
  Milestone,
  OAuthClient,
  OAuthGrant,
  OAuthToken,
  outagesFromJson,
  Program,
  ProgramSettings,
  Project,
  Session,
  Subscription,
  User,
  Workspace
} from "@streaks/core/Domain"
import type {
  BrowserCounting,
  CredentialRef,
  Membership,
  OutboundEventType,
  Plan,
  ProgramStatus,
  StreakMode
} from "@streaks/core/Domain"
import type {
  ApiKeyId,
  AuthorizationCodeId,
  ExperimentId,
  InviteId,
  MilestoneId,
  OAuthClientId,
  OAuthGrantId,
  OAuthTokenId,
  ProgramId,
  ProjectId,
  SessionId,
  SiteKey,
  SubscriptionId,
  UserId,
  WorkspaceId
} from "@streaks/core/Ids"
import * as Policy from "@streaks/core/Policy"
import { Schema } from "effect"
import { jsonParam, opt, toDate, toOptionalDate, trusted } from "./sql.js"

type Row = Record<string, unknown>

export const decodeWorkspace = (r: Row): Workspace =>
  new Workspace({
    id: r.id as WorkspaceId,
    name: r.name as string,
    plan: r.plan as Plan,
    createdAt: toDate(r.created_at)
  }, trusted)

export const decodeProject = (r: Row): Project =>
  new Project({
    id: r.id as ProjectId,
    workspaceId: r.workspace_id as WorkspaceId,
    siteKey: r.site_key as SiteKey,
    name: r.name as string,
    allowedOrigins: r.allowed_origins as ReadonlyArray<string>,
    timezone: r.timezone as string,
    browserCounting: r.browser_counting as BrowserCounting,
    legacyNoOriginIngest: r.legacy_no_origin_ingest as boolean,
    serverTokenHash: r.server_token_hash as string,
    signingSecretSealed: r.signing_secret_sealed as string,
    createdAt: toDate(r.created_at)
  }, trusted)

interface MilestoneJson {
  readonly id: string
  readonly target: number
  readonly msg: string
  readonly rewardType: Milestone["rewardType"]
  readonly rewardValue?: string | null
}

const decodeMilestone = (m: MilestoneJson): Milestone =>
  new Milestone({
    id: m.id as MilestoneId,
    target: m.target,
    msg: m.msg,
    rewardType: m.rewardType,
    ...opt("rewardValue", m.rewardValue)
  }, trusted)

// The stored policy is `Policy.toJson`'s, every field present; decoding makes the Schema class.
const decodePolicy = Schema.decodeUnknownSync(Policy.Policy)

export const decodeProgram = (r: Row): Program => {
  const settings = r.settings as ProgramSettings
  return new Program({
    id: r.id as ProgramId,
    projectId: r.project_id as ProjectId,
    name: r.name as string,
    eventKey: r.event_key as string,
    status: r.status as ProgramStatus,
    mode: r.mode as StreakMode,
    webhookSecretHash: r.webhook_secret_hash as string,
    milestones: (r.milestones as ReadonlyArray<MilestoneJson>).map(decodeMilestone),
    settings: new ProgramSettings({
      theme: { name: settings.theme.name },
      position: settings.position,
      mainMessage: settings.mainMessage
    }, trusted),
    ...opt("policy", r.policy === null || r.policy === undefined ? undefined : decodePolicy(r.policy)),
    ...opt("outages", r.outages === null || r.outages === undefined ? undefined : outagesFromJson(r.outages)),
    ...opt(
      "outagesRevision",
      r.outages_revision === null || r.outages_revision === undefined
        ? undefined
        : Number(r.outages_revision)
    ),
    createdAt: toDate(r.created_at)
  }, trusted)
}

export const decodeApiKey = (r: Row): ApiKey =>
  new ApiKey({
    id: r.id as ApiKeyId,
    workspaceId: r.workspace_id as WorkspaceId,
    name: r.name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptionalDate(r.revoked_at))
  }, trusted)

export const decodeGrant = (r: Row): OAuthGrant =>
  new OAuthGrant({
    id: r.id as OAuthGrantId,
    workspaceIds: r.workspace_ids as ReadonlyArray<WorkspaceId>,
    appName: r.app_name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptionalDate(r.revoked_at)),
    ...opt("clientId", (r.client_id ?? undefined) as OAuthClientId | undefined),
    ...opt("userId", (r.user_id ?? undefined) as string | undefined)
  }, trusted)

export const decodeOAuthClient = (r: Row): OAuthClient =>
  new OAuthClient({
    id: r.id as OAuthClientId,
    name: r.name as string,
    redirectUris: r.redirect_uris as ReadonlyArray<string>,
    ...opt("secretHash", (r.secret_hash ?? undefined) as string | undefined),
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptionalDate(r.revoked_at))
  }, trusted)

export const decodeAuthorizationCode = (r: Row): AuthorizationCode =>
  new AuthorizationCode({
    id: r.id as AuthorizationCodeId,
    codeHash: r.code_hash as string,
    clientId: r.client_id as OAuthClientId,
    userId: r.user_id as string,
    redirectUri: r.redirect_uri as string,
    codeChallenge: r.code_challenge as string,
    workspaceIds: r.workspace_ids as ReadonlyArray<WorkspaceId>,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    ...opt("usedAt", toOptionalDate(r.used_at)),
    ...opt("grantId", (r.grant_id ?? undefined) as OAuthGrantId | undefined)
  }, trusted)

export const decodeOAuthToken = (r: Row): OAuthToken =>
  new OAuthToken({
    id: r.id as OAuthTokenId,
    tokenHash: r.token_hash as string,
    kind: r.kind as OAuthToken["kind"],
    grantId: r.grant_id as OAuthGrantId,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    ...opt("usedAt", toOptionalDate(r.used_at)),
    ...opt("revokedAt", toOptionalDate(r.revoked_at))
  }, trusted)

/** A program's milestones as stored (`milestones` jsonb): `rewardValue` only where the milestone has one. */
export const milestonesJson = (milestones: Program["milestones"]): string | null =>
  jsonParam(milestones.map((m) => ({
    id: m.id,
    target: m.target,
    msg: m.msg,
    rewardType: m.rewardType,
    ...(m.rewardValue === undefined ? {} : { rewardValue: m.rewardValue })
  })))

/** NULL for a program without a policy (it counts with the default one). */
export const policyJson = (policy: Policy.Policy | undefined): string | null =>
  policy === undefined ? null : jsonParam(Policy.toJson(policy))

export const settingsJson = (settings: ProgramSettings): string | null =>
  jsonParam({
    theme: { name: settings.theme.name },
    position: settings.position,
    mainMessage: settings.mainMessage
  })

export const decodeSubscription = (r: Row): Subscription =>
  new Subscription({
    id: r.id as SubscriptionId,
    workspaceId: r.workspace_id as WorkspaceId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    url: r.url as string,
    eventTypes: r.event_types as ReadonlyArray<OutboundEventType>,
    secretSealed: r.secret_sealed as string,
    createdBy: { type: r.created_by_type as CredentialRef["type"], id: r.created_by_id as string },
    createdAt: toDate(r.created_at)
  }, trusted)

export const decodeExperiment = (r: Row): Experiment =>
  new Experiment({
    id: r.id as ExperimentId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    holdoutPercent: r.holdout_percent as number,
    startedAt: toDate(r.started_at),
    ...opt("endedAt", toOptionalDate(r.ended_at))
  }, trusted)

export const decodeUser = (r: Row): User =>
  new User({
    id: r.id as UserId,
    email: r.email as string,
    emailKey: r.email_key as string,
    name: r.name as string,
    memberships: r.memberships as ReadonlyArray<Membership>,
    ...opt("passwordHash", r.password_hash as string | null),
    failedSignIns: (r.failed_sign_ins as ReadonlyArray<unknown>).map(toDate),
    createdAt: toDate(r.created_at)
  }, trusted)

export const decodeSession = (r: Row): Session =>
  new Session({
    id: r.id as SessionId,
    userId: r.user_id as UserId,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    lastSeenAt: toDate(r.last_seen_at),
    expiresAt: toDate(r.expires_at)
  }, trusted)

export const decodeInvite = (r: Row): Invite =>
  new Invite({
    id: r.id as InviteId,
    userId: r.user_id as UserId,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    expiresAt: toDate(r.expires_at),
    ...opt("usedAt", toOptionalDate(r.used_at))
  }, trusted)

export const membershipsJson = (memberships: ReadonlyArray<Membership>): string | null =>
  jsonParam(memberships.map((m) => ({ workspaceId: m.workspaceId, role: m.role })))
