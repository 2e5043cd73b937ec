/**
 * Tenancy and identity on Postgres: the rows of workspaces, projects, programs and credentials as
 * records (read and written by the `Catalog`, `Catalog.ts`), member zones and aliases
 * (MemberStore) and monthly active streakers (UsageStore).
 */
import { ApiKey, Milestone, OAuthGrant, Program, ProgramSettings, Project, Workspace } from "@streaks/core/Domain"
import type { BrowserCounting, Plan, ProgramStatus, StreakMode } from "@streaks/core/Domain"
import type {
  ApiKeyId,
  MilestoneId,
  OAuthGrantId,
  ProgramId,
  ProjectId,
  SiteKey,
  UserHash,
  WorkspaceId
} from "@streaks/core/Ids"
import type { MemberRef, MemberStore, MemberZone, UsageEntry, UsageStore } from "@streaks/core/Ports"
import type { StorageError } from "@streaks/core/Errors"
import * as Policy from "@streaks/core/Policy"
import { Effect, Option, Schema } from "effect"
import { firstOccurrences } from "./Batch.js"
import { type Ctx, io, jsonParam, lastPerKey, opt, toDate, toOptionalDate, trusted } from "./Sql.js"

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

/** What the Postgres ingest store uses beyond the port: many members' zones in one statement. */
export interface MemberExtras {
  readonly setTimezones: (zones: ReadonlyArray<MemberZone>) => Effect.Effect<void, StorageError>
}

export const makeMemberStore = ({ query, sql, t }: Ctx): MemberStore["Type"] & MemberExtras => {
  // One round trip for a batch: resolve each id's alias (if any), then the canonical member's zone,
  // each a primary-key seek (LATERAL with LIMIT, which the planner cannot turn into a join): joins
  // let a plan made while the tables were small scan both of them at every call, for the life of
  // the connection (generic plans, `PgConnection`).
  const lookup = (inputs: ReadonlyArray<MemberRef>) =>
    Effect.map(
      query(sql`SELECT i.n, coalesce(a.user_hash, i.user_hash) AS user_hash, m.timezone
            FROM unnest(${inputs.map((i) => i.projectId)}::text[], ${inputs.map((i) => i.userHash)}::text[],
              ${inputs.map((_, n) => n)}::int[]) AS i (project_id, user_hash, n)
            LEFT JOIN LATERAL (SELECT user_hash FROM ${t.aliases}
              WHERE project_id = i.project_id AND anonymous_id = i.user_hash LIMIT 1) a ON true
            LEFT JOIN LATERAL (SELECT timezone FROM ${t.members}
              WHERE project_id = i.project_id AND user_hash = coalesce(a.user_hash, i.user_hash) LIMIT 1) m ON true`),
      (rows) => {
        const out = inputs.map((i) => ({ userHash: i.userHash, timezone: Option.none<string>() }))
        for (const r of rows) {
          out[Number(r.n)] = {
            userHash: r.user_hash as UserHash,
            timezone: Option.fromNullable(r.timezone as string | null | undefined)
          }
        }
        return out
      }
    )
  return {
    lookup: (ids) => ids.length === 0 ? Effect.succeed([]) : lookup(ids).pipe(io("MemberStore.lookup")),

    setTimezone: (projectId, userHash, timezone) =>
      query(
        sql`INSERT INTO ${t.members} (project_id, user_hash, timezone) VALUES (${projectId}, ${userHash}, ${timezone})
        ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`
      )
        .pipe(Effect.asVoid, io("MemberStore.setTimezone")),

    // One statement; a member given twice keeps the last zone (an upsert may not touch a row twice).
    setTimezones: (zones: ReadonlyArray<MemberZone>) => {
      if (zones.length === 0) return Effect.void
      const last = lastPerKey(zones, (z) => `${z.projectId}\u0000${z.userHash}`)
      return query(sql`INSERT INTO ${t.members} (project_id, user_hash, timezone)
        SELECT * FROM unnest(${last.map((z) => z.projectId)}::text[], ${last.map((z) => z.userHash)}::text[],
          ${last.map((z) => z.timezone)}::text[])
        ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`)
        .pipe(Effect.asVoid, io("MemberStore.setTimezones"))
    },

    // The primary key decides: the first insert wins; a concurrent second one waits for it and then
    // does nothing, so its follow-up read sees the committed link.
    link: (projectId, anonymousId, userHash) =>
      Effect.gen(function*() {
        const inserted = yield* sql`INSERT INTO ${t.aliases} (project_id, anonymous_id, user_hash)
        VALUES (${projectId}, ${anonymousId}, ${userHash})
        ON CONFLICT (project_id, anonymous_id) DO NOTHING RETURNING 1 AS ok`
        if (inserted.length > 0) {
          // Ids that pointed at the anonymous id now point at its member: one lookup resolves any chain.
          yield* sql`UPDATE ${t.aliases} SET user_hash = ${userHash}
          WHERE project_id = ${projectId} AND user_hash = ${anonymousId}`
          return "linked" as const
        }
        const existing = yield* sql`SELECT user_hash FROM ${t.aliases}
        WHERE project_id = ${projectId} AND anonymous_id = ${anonymousId}`
        const current = existing[0]?.user_hash as UserHash | undefined
        if (current === undefined || current === userHash) return "unchanged" as const
        return { linkedTo: current }
      }).pipe(io("MemberStore.link"))
  }
}

export const makeUsageStore = ({ query, sql, t }: Ctx): UsageStore["Type"] => {
  // One statement for a batch, inserting in one order so that concurrent batches cannot deadlock.
  const markActive = (inputs: ReadonlyArray<UsageEntry>) => {
    const keyOf = (i: { readonly workspaceId: string; readonly month: string; readonly member: string }) =>
      `${i.workspaceId}\u0000${i.month}\u0000${i.member}`
    const sorted = inputs
      .map((i) => ({ workspaceId: i.workspaceId, month: i.month, member: i.member, key: keyOf(i) }))
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    return Effect.map(
      query(sql`INSERT INTO ${t.usage} (workspace_id, month, member)
            SELECT * FROM unnest(${sorted.map((i) => i.workspaceId)}::text[], ${sorted.map((i) => i.month)}::text[],
              ${sorted.map((i) => i.member)}::text[])
            ON CONFLICT DO NOTHING RETURNING workspace_id, month, member`),
      (rows) =>
        firstOccurrences(
          inputs,
          keyOf,
          new Set(rows.map((r) =>
            keyOf({
              workspaceId: r.workspace_id as string,
              month: r.month as string,
              member: r.member as string
            })
          ))
        )
    )
  }
  return {
    markActive: (entries) =>
      entries.length === 0 ? Effect.succeed([]) : markActive(entries).pipe(io("UsageStore.markActive")),

    activeCount: (workspaceId, month) =>
      sql`SELECT count(*)::int AS n FROM ${t.usage} WHERE workspace_id = ${workspaceId} AND month = ${month}`
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("UsageStore.activeCount"))
  }
}
