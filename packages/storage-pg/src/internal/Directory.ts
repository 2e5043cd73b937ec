/**
 * Tenancy and identity ports on Postgres: workspaces, projects and programs (DirectoryStore),
 * member zones and aliases (MemberStore), customer credentials (CredentialStore) and monthly
 * active streakers (UsageStore).
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
import type {
  CredentialStore,
  DirectoryStore,
  MemberRef,
  MemberStore,
  MemberZone,
  UsageEntry,
  UsageStore
} from "@streaks/core/Ports"
import type { StorageError } from "@streaks/core/Errors"
import * as Policy from "@streaks/core/Policy"
import { Array as Arr, Effect, Option, Schema } from "effect"
import { firstOccurrences } from "./Batch.js"
import { type Ctx, io, jsonParam, lastPerKey, opt, toDate, toOptionalDate, trusted } from "./Sql.js"

type Row = Record<string, unknown>

const first = <A>(rows: ReadonlyArray<Row>, decode: (row: Row) => A): Option.Option<A> =>
  Option.map(Arr.head(rows), decode)

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

const decodeApiKey = (r: Row): ApiKey =>
  new ApiKey({
    id: r.id as ApiKeyId,
    workspaceId: r.workspace_id as WorkspaceId,
    name: r.name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptionalDate(r.revoked_at))
  }, trusted)

const decodeGrant = (r: Row): OAuthGrant =>
  new OAuthGrant({
    id: r.id as OAuthGrantId,
    workspaceIds: r.workspace_ids as ReadonlyArray<WorkspaceId>,
    appName: r.app_name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptionalDate(r.revoked_at))
  }, trusted)

const milestonesJson = (program: Program): string | null =>
  jsonParam(program.milestones.map((m) => ({
    id: m.id,
    target: m.target,
    msg: m.msg,
    rewardType: m.rewardType,
    ...(m.rewardValue === undefined ? {} : { rewardValue: m.rewardValue })
  })))

/** NULL for a program without a policy (it counts with the default one). */
const policyJson = (policy: Policy.Policy | undefined): string | null =>
  policy === undefined ? null : jsonParam(Policy.toJson(policy))

const settingsJson = (program: Program): string | null =>
  jsonParam({
    theme: { name: program.settings.theme.name },
    position: program.settings.position,
    mainMessage: program.settings.mainMessage
  })

export const makeDirectoryStore = ({ sql, t }: Ctx): DirectoryStore["Type"] => ({
  createWorkspace: (w) =>
    sql`INSERT INTO ${t.workspaces} (id, name, plan, created_at) VALUES (${w.id}, ${w.name}, ${w.plan}, ${w.createdAt})`
      .pipe(Effect.asVoid, io("DirectoryStore.createWorkspace")),

  workspace: (id) =>
    sql`SELECT * FROM ${t.workspaces} WHERE id = ${id}`
      .pipe(Effect.map((rows) => first(rows, decodeWorkspace)), io("DirectoryStore.workspace")),

  setPlan: (id, plan) =>
    sql`UPDATE ${t.workspaces} SET plan = ${plan} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeWorkspace)), io("DirectoryStore.setPlan")),

  createProject: (p) =>
    sql`INSERT INTO ${t.projects} (id, workspace_id, site_key, name, allowed_origins, timezone, browser_counting,
          legacy_no_origin_ingest, server_token_hash, signing_secret_sealed, created_at)
        VALUES (${p.id}, ${p.workspaceId}, ${p.siteKey}, ${p.name}, ${[...p.allowedOrigins]}::text[], ${p.timezone},
          ${p.browserCounting}, ${p.legacyNoOriginIngest}, ${p.serverTokenHash}, ${p.signingSecretSealed}, ${p.createdAt})`
      .pipe(Effect.asVoid, io("DirectoryStore.createProject")),

  project: (id) =>
    sql`SELECT * FROM ${t.projects} WHERE id = ${id}`
      .pipe(Effect.map((rows) => first(rows, decodeProject)), io("DirectoryStore.project")),

  projectBySiteKey: (siteKey) =>
    sql`SELECT * FROM ${t.projects} WHERE site_key = ${siteKey}`
      .pipe(Effect.map((rows) => first(rows, decodeProject)), io("DirectoryStore.projectBySiteKey")),

  projectsOfWorkspaces: (ids) =>
    ids.length === 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM ${t.projects} WHERE workspace_id = ANY(${[...ids]}::text[]) ORDER BY created_at, id`
        .pipe(Effect.map((rows) => rows.map(decodeProject)), io("DirectoryStore.projectsOfWorkspaces")),

  createProgram: (p) =>
    sql`INSERT INTO ${t.programs} (project_id, id, name, event_key, status, mode, webhook_secret_hash, milestones,
          settings, policy, created_at)
        VALUES (${p.projectId}, ${p.id}, ${p.name}, ${p.eventKey}, ${p.status}, ${p.mode}, ${p.webhookSecretHash},
          ${milestonesJson(p)}::jsonb, ${settingsJson(p)}::jsonb, ${policyJson(p.policy)}::jsonb, ${p.createdAt})`
      .pipe(Effect.asVoid, io("DirectoryStore.createProgram")),

  program: (id) =>
    sql`SELECT * FROM ${t.programs} WHERE id = ${id}`
      .pipe(Effect.map((rows) => first(rows, decodeProgram)), io("DirectoryStore.program")),

  // Several programs with one key cannot arise through the services; if they did, the oldest wins.
  programByEventKey: (projectId, eventKey) =>
    sql`SELECT * FROM ${t.programs} WHERE project_id = ${projectId} AND event_key = ${eventKey}
        ORDER BY created_at, id LIMIT 1`
      .pipe(Effect.map((rows) => first(rows, decodeProgram)), io("DirectoryStore.programByEventKey")),

  programsOfProjects: (ids) =>
    ids.length === 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM ${t.programs} WHERE project_id = ANY(${[...ids]}::text[]) ORDER BY created_at, id`
        .pipe(Effect.map((rows) => rows.map(decodeProgram)), io("DirectoryStore.programsOfProjects")),

  setProgramStatus: (id, status) =>
    sql`UPDATE ${t.programs} SET status = ${status} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeProgram)), io("DirectoryStore.setProgramStatus")),

  // One conditional UPDATE: the row lock makes concurrent callers queue, and each re-checks
  // `status = 'test'` on the committed row, so exactly one of them sees a returned row.
  goLive: (id) =>
    sql`UPDATE ${t.programs} SET status = 'live' WHERE id = ${id} AND status = 'test' RETURNING id`
      .pipe(Effect.map((rows) => rows.length > 0), io("DirectoryStore.goLive")),

  setWebhookSecretHash: (id, hash) =>
    sql`UPDATE ${t.programs} SET webhook_secret_hash = ${hash} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeProgram)), io("DirectoryStore.setWebhookSecretHash")),

  setProgramPolicy: (id, policy, mode) =>
    sql`UPDATE ${t.programs} SET policy = ${policyJson(policy)}::jsonb, mode = ${mode} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeProgram)), io("DirectoryStore.setProgramPolicy"))
})

/** What the Postgres ingest store uses beyond the port: many members' zones in one statement. */
export interface MemberExtras {
  readonly setTimezones: (zones: ReadonlyArray<MemberZone>) => Effect.Effect<void, StorageError>
}

export const makeMemberStore = ({ hot, sql, t }: Ctx): MemberStore["Type"] & MemberExtras => {
  // One round trip for a batch: resolve each id's alias (if any), then the canonical member's zone,
  // each a primary-key seek (LATERAL with LIMIT, which the planner cannot turn into a join): joins
  // let a plan made while the tables were small scan both of them at every call, for the life of
  // the connection (generic plans, `PgConnection`).
  const lookupMany = (inputs: ReadonlyArray<MemberRef>) =>
    Effect.map(
      hot(sql`SELECT i.n, coalesce(a.user_hash, i.user_hash) AS user_hash, m.timezone
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
    lookup: (projectId, userHash) =>
      Effect.map(lookupMany([{ projectId, userHash }]), (found) => found[0]!).pipe(io("MemberStore.lookup")),

    lookupMany: (ids) => ids.length === 0 ? Effect.succeed([]) : lookupMany(ids).pipe(io("MemberStore.lookupMany")),

    setTimezone: (projectId, userHash, timezone) =>
      hot(sql`INSERT INTO ${t.members} (project_id, user_hash, timezone) VALUES (${projectId}, ${userHash}, ${timezone})
        ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`)
        .pipe(Effect.asVoid, io("MemberStore.setTimezone")),

    // One statement; a member given twice keeps the last zone (an upsert may not touch a row twice).
    setTimezones: (zones: ReadonlyArray<MemberZone>) => {
      if (zones.length === 0) return Effect.void
      const last = lastPerKey(zones, (z) => `${z.projectId}\u0000${z.userHash}`)
      return hot(sql`INSERT INTO ${t.members} (project_id, user_hash, timezone)
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

export const makeCredentialStore = ({ sql, t }: Ctx): CredentialStore["Type"] => ({
  createApiKey: (k) =>
    sql`INSERT INTO ${t.api_keys} (id, workspace_id, name, token_hash, created_at, revoked_at)
        VALUES (${k.id}, ${k.workspaceId}, ${k.name}, ${k.tokenHash}, ${k.createdAt}, ${k.revokedAt ?? null})`
      .pipe(Effect.asVoid, io("CredentialStore.createApiKey")),

  apiKeyByHash: (tokenHash) =>
    sql`SELECT * FROM ${t.api_keys} WHERE token_hash = ${tokenHash} AND revoked_at IS NULL LIMIT 1`
      .pipe(Effect.map((rows) => first(rows, decodeApiKey)), io("CredentialStore.apiKeyByHash")),

  revokeApiKey: (id, at) =>
    sql`UPDATE ${t.api_keys} SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeApiKey)), io("CredentialStore.revokeApiKey")),

  createGrant: (g) =>
    sql`INSERT INTO ${t.oauth_grants} (id, workspace_ids, app_name, token_hash, created_at, revoked_at)
        VALUES (${g.id}, ${[...g.workspaceIds]}::text[], ${g.appName}, ${g.tokenHash}, ${g.createdAt},
          ${g.revokedAt ?? null})`
      .pipe(Effect.asVoid, io("CredentialStore.createGrant")),

  grantByHash: (tokenHash) =>
    sql`SELECT * FROM ${t.oauth_grants} WHERE token_hash = ${tokenHash} AND revoked_at IS NULL LIMIT 1`
      .pipe(Effect.map((rows) => first(rows, decodeGrant)), io("CredentialStore.grantByHash")),

  revokeGrant: (id, at) =>
    sql`UPDATE ${t.oauth_grants} SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL RETURNING *`
      .pipe(Effect.map((rows) => first(rows, decodeGrant)), io("CredentialStore.revokeGrant"))
})

export const makeUsageStore = ({ hot, sql, t }: Ctx): UsageStore["Type"] => {
  // One statement for a batch, inserting in one order so that concurrent batches cannot deadlock.
  const markActiveMany = (inputs: ReadonlyArray<UsageEntry>) => {
    const keyOf = (i: { readonly workspaceId: string; readonly month: string; readonly member: string }) =>
      `${i.workspaceId}\u0000${i.month}\u0000${i.member}`
    const sorted = inputs
      .map((i) => ({ workspaceId: i.workspaceId, month: i.month, member: i.member, key: keyOf(i) }))
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    return Effect.map(
      hot(sql`INSERT INTO ${t.usage} (workspace_id, month, member)
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
    markActive: (workspaceId, month, member) =>
      Effect.map(markActiveMany([{ workspaceId, month, member }]), (marked) => marked[0]!).pipe(
        io("UsageStore.markActive")
      ),

    markActiveMany: (entries) =>
      entries.length === 0 ? Effect.succeed([]) : markActiveMany(entries).pipe(io("UsageStore.markActiveMany")),

    activeCount: (workspaceId, month) =>
      sql`SELECT count(*)::int AS n FROM ${t.usage} WHERE workspace_id = ${workspaceId} AND month = ${month}`
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("UsageStore.activeCount"))
  }
}
