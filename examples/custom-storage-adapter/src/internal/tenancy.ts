/**
 * Tenancy ports on SQLite: DirectoryStore, MemberStore, CredentialStore, UsageStore and
 * ExperimentStore.
 */
import type { BrowserCounting, Plan, ProgramStatus, RewardType, StreakMode } from "@streaks/core/Domain"
import {
  ApiKey,
  Experiment,
  Milestone,
  OAuthGrant,
  Program,
  ProgramSettings,
  Project,
  Workspace
} from "@streaks/core/Domain"
import type {
  ApiKeyId,
  ExperimentId,
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
  ExperimentStore,
  MemberStore,
  UsageEntry,
  UsageStore
} from "@streaks/core/Ports"
import * as Policy from "@streaks/core/Policy"
import { Effect, Option, Schema } from "effect"
import { bool, type Ctx, ms, nullable, opt, optMs, port, type Row, toDate, toOptDate, trusted } from "./sqlite.js"

const first = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>): Option.Option<A> =>
  rows.length === 0 ? Option.none() : Option.some(decode(rows[0]!))

const decodeWorkspace = (r: Row): Workspace =>
  new Workspace({
    id: r.id as WorkspaceId,
    name: r.name as string,
    plan: r.plan as Plan,
    createdAt: toDate(r.created_at)
  }, trusted)

const decodeProject = (r: Row): Project =>
  new Project({
    id: r.id as ProjectId,
    workspaceId: r.workspace_id as WorkspaceId,
    siteKey: r.site_key as SiteKey,
    name: r.name as string,
    allowedOrigins: JSON.parse(r.allowed_origins as string) as Array<string>,
    timezone: r.timezone as string,
    browserCounting: r.browser_counting as BrowserCounting,
    legacyNoOriginIngest: r.legacy_no_origin_ingest === 1,
    serverTokenHash: r.server_token_hash as string,
    signingSecretSealed: r.signing_secret_sealed as string,
    createdAt: toDate(r.created_at)
  }, trusted)

interface MilestoneJson {
  readonly id: string
  readonly target: number
  readonly msg: string
  readonly rewardType: RewardType
  readonly rewardValue?: string
}

// The policy is stored as `Policy.toJson` gives it; decoding it makes the Schema class again.
const decodePolicy = Schema.decodeUnknownSync(Policy.Policy)

const decodeProgram = (r: Row): Program => {
  const settings = JSON.parse(r.settings as string) as {
    theme: { name: string }
    position: string
    mainMessage: string
  }
  return new Program({
    id: r.id as ProgramId,
    projectId: r.project_id as ProjectId,
    name: r.name as string,
    eventKey: r.event_key as string,
    status: r.status as ProgramStatus,
    mode: r.mode as StreakMode,
    webhookSecretHash: r.webhook_secret_hash as string,
    milestones: (JSON.parse(r.milestones as string) as ReadonlyArray<MilestoneJson>).map((m) =>
      new Milestone({
        id: m.id as MilestoneId,
        target: m.target,
        msg: m.msg,
        rewardType: m.rewardType,
        ...opt("rewardValue", m.rewardValue)
      }, trusted)
    ),
    settings: new ProgramSettings({
      theme: { name: settings.theme.name },
      position: settings.position,
      mainMessage: settings.mainMessage
    }, trusted),
    ...opt("policy", r.policy === null ? undefined : decodePolicy(JSON.parse(r.policy as string))),
    createdAt: toDate(r.created_at)
  }, trusted)
}

const milestonesJson = (p: Program): string =>
  JSON.stringify(p.milestones.map((m) => ({
    id: m.id,
    target: m.target,
    msg: m.msg,
    rewardType: m.rewardType,
    ...(m.rewardValue === undefined ? {} : { rewardValue: m.rewardValue })
  })))

/** NULL for a program without a policy (it counts with the default one). */
const policyJson = (policy: Policy.Policy | undefined): string | null =>
  policy === undefined ? null : JSON.stringify(Policy.toJson(policy))

const settingsJson = (p: Program): string =>
  JSON.stringify({
    theme: { name: p.settings.theme.name },
    position: p.settings.position,
    mainMessage: p.settings.mainMessage
  })

export const makeDirectoryStore = ({ sql }: Ctx): DirectoryStore["Type"] => ({
  createWorkspace: (w) =>
    sql`INSERT INTO workspaces (id, name, plan, created_at) VALUES (${w.id}, ${w.name}, ${w.plan}, ${ms(w.createdAt)})`
      .pipe(Effect.asVoid, port(sql, "DirectoryStore.createWorkspace")),

  workspace: (id) =>
    sql`SELECT * FROM workspaces WHERE id = ${id}`
      .pipe(Effect.map(first(decodeWorkspace)), port(sql, "DirectoryStore.workspace")),

  setPlan: (id, plan) =>
    sql`UPDATE workspaces SET plan = ${plan} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(first(decodeWorkspace)), port(sql, "DirectoryStore.setPlan")),

  createProject: (p) =>
    sql`INSERT INTO projects (id, workspace_id, site_key, name, allowed_origins, timezone, browser_counting,
          legacy_no_origin_ingest, server_token_hash, signing_secret_sealed, created_at)
        VALUES (${p.id}, ${p.workspaceId}, ${p.siteKey}, ${p.name}, ${JSON.stringify(p.allowedOrigins)}, ${p.timezone},
          ${p.browserCounting}, ${bool(p.legacyNoOriginIngest)}, ${p.serverTokenHash}, ${p.signingSecretSealed},
          ${ms(p.createdAt)})`
      .pipe(Effect.asVoid, port(sql, "DirectoryStore.createProject")),

  project: (id) =>
    sql`SELECT * FROM projects WHERE id = ${id}`
      .pipe(Effect.map(first(decodeProject)), port(sql, "DirectoryStore.project")),

  projectBySiteKey: (siteKey) =>
    sql`SELECT * FROM projects WHERE site_key = ${siteKey}`
      .pipe(Effect.map(first(decodeProject)), port(sql, "DirectoryStore.projectBySiteKey")),

  projectsOfWorkspaces: (ids) =>
    ids.length === 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM projects WHERE workspace_id IN ${sql.in(ids)} ORDER BY created_at, id`
        .pipe(Effect.map((rows) => rows.map(decodeProject)), port(sql, "DirectoryStore.projectsOfWorkspaces")),

  createProgram: (p) =>
    sql`INSERT INTO programs (id, project_id, name, event_key, status, mode, webhook_secret_hash, milestones, settings,
          policy, created_at)
        VALUES (${p.id}, ${p.projectId}, ${p.name}, ${p.eventKey}, ${p.status}, ${p.mode}, ${p.webhookSecretHash},
          ${milestonesJson(p)}, ${settingsJson(p)}, ${policyJson(p.policy)}, ${ms(p.createdAt)})`
      .pipe(Effect.asVoid, port(sql, "DirectoryStore.createProgram")),

  program: (id) =>
    sql`SELECT * FROM programs WHERE id = ${id}`
      .pipe(Effect.map(first(decodeProgram)), port(sql, "DirectoryStore.program")),

  // SQLite compares TEXT with BINARY collation by default: exact and case-sensitive, as required.
  programByEventKey: (projectId, eventKey) =>
    sql`SELECT * FROM programs WHERE project_id = ${projectId} AND event_key = ${eventKey}
        ORDER BY created_at, id LIMIT 1`
      .pipe(Effect.map(first(decodeProgram)), port(sql, "DirectoryStore.programByEventKey")),

  programsOfProjects: (ids) =>
    ids.length === 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM programs WHERE project_id IN ${sql.in(ids)} ORDER BY created_at, id`
        .pipe(Effect.map((rows) => rows.map(decodeProgram)), port(sql, "DirectoryStore.programsOfProjects")),

  setProgramStatus: (id, status) =>
    sql`UPDATE programs SET status = ${status} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(first(decodeProgram)), port(sql, "DirectoryStore.setProgramStatus")),

  // One conditional UPDATE in an exclusive unit: exactly one concurrent caller sees a row back.
  goLive: (id) =>
    sql`UPDATE programs SET status = 'live' WHERE id = ${id} AND status = 'test' RETURNING id`
      .pipe(Effect.map((rows) => rows.length > 0), port(sql, "DirectoryStore.goLive")),

  setWebhookSecretHash: (id, hash) =>
    sql`UPDATE programs SET webhook_secret_hash = ${hash} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(first(decodeProgram)), port(sql, "DirectoryStore.setWebhookSecretHash")),

  setProgramPolicy: (id, policy, mode) =>
    sql`UPDATE programs SET policy = ${policyJson(policy)}, mode = ${mode} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(first(decodeProgram)), port(sql, "DirectoryStore.setProgramPolicy"))
})

// One statement: resolve the alias (if any), then the canonical member's zone.
export const lookup = (sql: Ctx["sql"], projectId: ProjectId, userHash: UserHash) =>
  sql`WITH canonical AS (
        SELECT coalesce(
          (SELECT user_hash FROM aliases WHERE project_id = ${projectId} AND anonymous_id = ${userHash}),
          ${userHash}) AS user_hash
      )
      SELECT c.user_hash AS user_hash, m.timezone AS timezone
      FROM canonical c LEFT JOIN members m ON m.project_id = ${projectId} AND m.user_hash = c.user_hash`.pipe(
    Effect.map((rows) => ({
      userHash: (rows[0]?.user_hash ?? userHash) as UserHash,
      timezone: Option.fromNullable(rows[0]?.timezone as string | null | undefined)
    }))
  )

export const makeMemberStore = ({ sql }: Ctx): MemberStore["Type"] => ({
  lookup: (projectId, userHash) => lookup(sql, projectId, userHash).pipe(port(sql, "MemberStore.lookup")),
  lookupMany: (ids) =>
    Effect.forEach(ids, (id) => lookup(sql, id.projectId, id.userHash)).pipe(port(sql, "MemberStore.lookupMany")),

  setTimezone: (projectId, userHash, timezone) =>
    sql`INSERT INTO members (project_id, user_hash, timezone) VALUES (${projectId}, ${userHash}, ${timezone})
        ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`
      .pipe(Effect.asVoid, port(sql, "MemberStore.setTimezone")),

  // The primary key decides, and the read that follows is in the same exclusive unit.
  link: (projectId, anonymousId, userHash) =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO aliases (project_id, anonymous_id, user_hash)
        VALUES (${projectId}, ${anonymousId}, ${userHash}) ON CONFLICT DO NOTHING RETURNING 1 AS ok`
      if (inserted.length > 0) {
        yield* sql`UPDATE aliases SET user_hash = ${userHash} WHERE project_id = ${projectId} AND user_hash = ${anonymousId}`
        return "linked" as const
      }
      const existing =
        yield* sql`SELECT user_hash FROM aliases WHERE project_id = ${projectId} AND anonymous_id = ${anonymousId}`
      const current = existing[0]?.user_hash as UserHash | undefined
      return current === undefined || current === userHash ? "unchanged" as const : { linkedTo: current }
    }).pipe(port(sql, "MemberStore.link"))
})

const decodeApiKey = (r: Row): ApiKey =>
  new ApiKey({
    id: r.id as ApiKeyId,
    workspaceId: r.workspace_id as WorkspaceId,
    name: r.name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptDate(r.revoked_at))
  }, trusted)

const decodeGrant = (r: Row): OAuthGrant =>
  new OAuthGrant({
    id: r.id as OAuthGrantId,
    workspaceIds: JSON.parse(r.workspace_ids as string) as Array<WorkspaceId>,
    appName: r.app_name as string,
    tokenHash: r.token_hash as string,
    createdAt: toDate(r.created_at),
    ...opt("revokedAt", toOptDate(r.revoked_at))
  }, trusted)

export const makeCredentialStore = ({ sql }: Ctx): CredentialStore["Type"] => ({
  createApiKey: (k) =>
    sql`INSERT INTO api_keys (id, workspace_id, name, token_hash, created_at, revoked_at)
        VALUES (${k.id}, ${k.workspaceId}, ${k.name}, ${k.tokenHash}, ${ms(k.createdAt)}, ${optMs(k.revokedAt)})`
      .pipe(Effect.asVoid, port(sql, "CredentialStore.createApiKey")),

  apiKeyByHash: (tokenHash) =>
    sql`SELECT * FROM api_keys WHERE token_hash = ${tokenHash} AND revoked_at IS NULL LIMIT 1`
      .pipe(Effect.map(first(decodeApiKey)), port(sql, "CredentialStore.apiKeyByHash")),

  revokeApiKey: (id, at) =>
    sql`UPDATE api_keys SET revoked_at = ${ms(at)} WHERE id = ${id} AND revoked_at IS NULL RETURNING *`
      .pipe(Effect.map(first(decodeApiKey)), port(sql, "CredentialStore.revokeApiKey")),

  createGrant: (g) =>
    sql`INSERT INTO oauth_grants (id, workspace_ids, app_name, token_hash, created_at, revoked_at)
        VALUES (${g.id}, ${JSON.stringify(g.workspaceIds)}, ${g.appName}, ${g.tokenHash}, ${ms(g.createdAt)},
          ${optMs(g.revokedAt)})`
      .pipe(Effect.asVoid, port(sql, "CredentialStore.createGrant")),

  grantByHash: (tokenHash) =>
    sql`SELECT * FROM oauth_grants WHERE token_hash = ${tokenHash} AND revoked_at IS NULL LIMIT 1`
      .pipe(Effect.map(first(decodeGrant)), port(sql, "CredentialStore.grantByHash")),

  revokeGrant: (id, at) =>
    sql`UPDATE oauth_grants SET revoked_at = ${ms(at)} WHERE id = ${id} AND revoked_at IS NULL RETURNING *`
      .pipe(Effect.map(first(decodeGrant)), port(sql, "CredentialStore.revokeGrant"))
})

const markActive = (sql: Ctx["sql"], { member, month, workspaceId }: UsageEntry) =>
  sql`INSERT INTO usage (workspace_id, month, member) VALUES (${workspaceId}, ${month}, ${member})
      ON CONFLICT DO NOTHING RETURNING 1 AS ok`.pipe(Effect.map((rows) => rows.length > 0))

export const makeUsageStore = ({ sql }: Ctx): UsageStore["Type"] => ({
  markActive: (workspaceId, month, member) =>
    markActive(sql, { workspaceId, month, member }).pipe(port(sql, "UsageStore.markActive")),
  markActiveMany: (entries) =>
    Effect.forEach(entries, (e) => markActive(sql, e)).pipe(port(sql, "UsageStore.markActiveMany")),

  activeCount: (workspaceId, month) =>
    sql`SELECT count(*) AS n FROM usage WHERE workspace_id = ${workspaceId} AND month = ${month}`
      .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), port(sql, "UsageStore.activeCount"))
})

const decodeExperiment = (r: Row): Experiment =>
  new Experiment({
    id: r.id as ExperimentId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    holdoutPercent: r.holdout_percent as number,
    startedAt: toDate(r.started_at),
    ...opt("endedAt", toOptDate(r.ended_at))
  }, trusted)

export const makeExperimentStore = ({ sql }: Ctx): ExperimentStore["Type"] => ({
  // The partial unique index (program_id WHERE ended_at IS NULL) refuses a second running one.
  start: (e) =>
    sql`INSERT INTO experiments (id, project_id, program_id, holdout_percent, started_at, ended_at)
        VALUES (${e.id}, ${e.projectId}, ${e.programId}, ${e.holdoutPercent}, ${ms(e.startedAt)}, ${
      nullable(optMs(e.endedAt))
    })
        ON CONFLICT DO NOTHING RETURNING 1 AS ok`
      .pipe(Effect.map((rows) => rows.length > 0), port(sql, "ExperimentStore.start")),

  running: (programId) =>
    sql`SELECT * FROM experiments WHERE program_id = ${programId} AND ended_at IS NULL`
      .pipe(Effect.map(first(decodeExperiment)), port(sql, "ExperimentStore.running")),

  end: (programId, at) =>
    sql`UPDATE experiments SET ended_at = ${ms(at)} WHERE program_id = ${programId} AND ended_at IS NULL RETURNING *`
      .pipe(Effect.map(first(decodeExperiment)), port(sql, "ExperimentStore.end"))
})
