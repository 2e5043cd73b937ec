/**
 * How domain values are shown over HTTP: never a hash or a sealed secret, dates as ISO strings.
 */
import type { Domain } from "@streaks/core"
import { Policy } from "@streaks/core"

export const milestone = (m: Domain.Milestone) => ({
  id: m.id,
  target: m.target,
  msg: m.msg,
  rewardType: m.rewardType,
  ...(m.rewardValue !== undefined ? { rewardValue: m.rewardValue } : {})
})

export const settings = (s: Domain.ProgramSettings) => ({
  theme: { name: s.theme.name },
  position: s.position,
  mainMessage: s.mainMessage
})

/**
 * A program's policy, whole: a program created without one shows the default policy it counts
 * with, so `policy` is always there and always complete (docs/streak-semantics.md#streak-policies).
 */
export const policy = (p: Domain.Program) => Policy.toJson(Policy.of(p))

/** The mode of a program's streaks, from the policy it counts with (the policy decides). */
export const mode = (p: Domain.Program) => Policy.modeOf(Policy.of(p))

export const program = (p: Domain.Program) => ({
  id: p.id,
  projectId: p.projectId,
  name: p.name,
  eventKey: p.eventKey,
  status: p.status,
  mode: mode(p),
  milestones: p.milestones.map(milestone),
  settings: settings(p.settings),
  policy: policy(p)
})

export const workspace = (w: Domain.Workspace) => ({ id: w.id, name: w.name, plan: w.plan })

export const project = (p: Domain.Project) => ({
  id: p.id,
  workspaceId: p.workspaceId,
  siteKey: p.siteKey,
  name: p.name,
  allowedOrigins: p.allowedOrigins,
  timezone: p.timezone,
  browserCounting: p.browserCounting,
  legacyNoOriginIngest: p.legacyNoOriginIngest
})

export const experiment = (e: Domain.Experiment) => ({
  id: e.id,
  programId: e.programId,
  holdoutPercent: e.holdoutPercent,
  startedAt: e.startedAt.toISOString(),
  ...(e.endedAt !== undefined ? { endedAt: e.endedAt.toISOString() } : {})
})

/** A page of the audit log (docs/accounts.md#audit-log). */
export const auditPage = (page: {
  readonly entries: ReadonlyArray<Domain.AuditEntry>
  readonly nextCursor?: string | undefined
}) => ({
  entries: page.entries.map((e) => ({
    id: e.id,
    at: e.at.toISOString(),
    workspaceId: e.workspaceId ?? null,
    actor: { kind: e.actor.kind, id: e.actor.id },
    clientAddress: e.clientAddress,
    action: e.action,
    target: e.target,
    details: e.details
  })),
  ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor })
})

/** A user as the operator sees it: never the password hash or the failed sign-ins. */
export const user = (u: Domain.User) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  workspaces: u.memberships.map((m) => ({ workspaceId: m.workspaceId, role: m.role })),
  hasPassword: u.passwordHash !== undefined,
  createdAt: u.createdAt.toISOString()
})
