/**
 * Handlers of the admin group (docs/api.md#admin-routes): provisioning through core `Provisioning`,
 * a program's streak policy through `StreakPolicies`, its outage windows through `Forgiveness`, the
 * alias link, and the on-demand jobs. Secrets appear in these answers once, at creation. Every write
 * is recorded in the audit log with the operator as its actor, in the change's own transaction.
 */
import { HttpApiBuilder } from "@effect/platform"
import {
  Accounts,
  Aliases,
  Audit,
  Forgiveness,
  Ids,
  OAuthServer,
  Ports,
  Provisioning,
  StreakPolicies
} from "@streaks/core"
import { Effect } from "effect"
import { Api } from "./Api.js"
import * as AuditTrail from "./AuditTrail.js"
import { HttpConfig } from "./HttpConfig.js"
import { Jobs } from "./Jobs.js"
import * as Sessions from "./Sessions.js"
import * as Views from "./Views.js"

export const layer = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning.Provisioning
    const aliases = yield* Aliases.Aliases
    const policies = yield* StreakPolicies.StreakPolicies
    const jobs = yield* Jobs
    const forgiveness = yield* Forgiveness.Forgiveness
    const oauth = yield* OAuthServer.OAuthServer
    const accounts = yield* Accounts.Accounts
    const audit = yield* Audit.Audit
    const directory = yield* Ports.DirectoryStore
    const config = yield* HttpConfig

    const audited =
      <A, E, R>(self: Effect.Effect<A, E, R>) => (change: (a: A) => Audit.Change | ReadonlyArray<Audit.Change>) =>
        AuditTrail.audited(AuditTrail.byOperator, change, self)

    const workspaceOfProject = (id: string) =>
      Effect.map(directory.project(Ids.unsafe("ProjectId", id)), (p) =>
        p._tag === "Some" ? p.value.workspaceId : undefined)
    const perWorkspace = (ids: ReadonlyArray<string>, change: Omit<Audit.Change, "workspaceId">) =>
      ids.map((id) => ({ ...change, workspaceId: Ids.unsafe("WorkspaceId", id) }))

    return handlers
      .handle("alias", ({ payload }) =>
        audited(Effect.asVoid(aliases.link(payload)))(() => ({
          action: "alias.link",
          target: payload.anonymousId,
          details: { siteKey: payload.siteKey, userHash: payload.userHash }
        })))
      .handle("createWorkspace", ({ payload }) =>
        audited(Effect.map(provisioning.createWorkspace(payload), Views.workspace))((w) => ({
          action: "workspace.create",
          target: w.id,
          workspaceId: w.id,
          details: { name: w.name, plan: w.plan }
        })))
      .handle("setPlan", ({ path, payload }) =>
        audited(Effect.map(provisioning.setPlan(path.id, payload.plan), Views.workspace))((w) => ({
          action: "workspace.set_plan",
          target: w.id,
          workspaceId: w.id,
          details: { plan: w.plan }
        })))
      .handle("createProject", ({ payload }) =>
        audited(Effect.map(provisioning.createProject(payload), (created) => ({
          ...Views.project(created.project),
          serverToken: created.serverToken,
          signingSecret: created.signingSecret
        })))((p) => ({
          action: "project.create",
          target: p.id,
          workspaceId: p.workspaceId,
          details: { name: p.name }
        })))
      .handle("createProgram", ({ payload }) =>
        Effect.flatMap(workspaceOfProject(payload.projectId), (workspaceId) =>
          audited(Effect.map(provisioning.createProgram(payload), (created) => ({
            ...Views.program(created.program),
            webhookSecret: created.webhookSecret
          })))((p) => ({
            action: "program.create",
            target: p.id,
            workspaceId,
            details: { name: p.name, eventKey: p.eventKey }
          }))))
      .handle("setProgramPolicy", ({ path, payload }) =>
        Effect.flatMap(AuditTrail.workspaceOfProgram(path.id), (workspaceId) =>
          audited(Effect.map(policies.setPolicy(path.id, payload), Views.program))((p) => ({
            action: "program.set_policy",
            target: p.id,
            workspaceId,
            details: { policy: p.policy }
          }))))
      .handle("rotateWebhookSecret", ({ path }) =>
        Effect.flatMap(AuditTrail.workspaceOfProgram(path.id), (workspaceId) =>
          audited(provisioning.rotateWebhookSecret(path.id))(() => ({
            action: "program.rotate_webhook_secret",
            target: path.id,
            workspaceId
          }))))
      .handle("setProgramStatus", ({ path, payload }) =>
        Effect.flatMap(AuditTrail.workspaceOfProgram(path.id), (workspaceId) =>
          audited(Effect.map(provisioning.setProgramStatus(path.id, payload.status), Views.program))((p) => ({
            action: "program.set_status",
            target: p.id,
            workspaceId,
            details: { status: p.status }
          }))))
      .handle("createApiKey", ({ path, payload }) =>
        audited(provisioning.createApiKey(path.id, payload.name))((k) => ({
          action: "api_key.create",
          target: k.id,
          workspaceId: Ids.unsafe("WorkspaceId", path.id),
          details: { name: payload.name }
        })))
      .handle("revokeApiKey", ({ path }) =>
        audited(provisioning.revokeApiKey(path.id))(() => ({ action: "api_key.revoke", target: path.id })))
      .handle("createGrant", ({ payload }) =>
        audited(provisioning.createOAuthGrant(payload))((g) =>
          perWorkspace(payload.workspaceIds, {
            action: "oauth_grant.create",
            target: g.id,
            details: { appName: payload.appName }
          })
        ))
      .handle("revokeGrant", ({ path }) =>
        audited(provisioning.revokeOAuthGrant(path.id))(() => ({ action: "oauth_grant.revoke", target: path.id })))
      .handle("createOAuthClient", ({ payload }) =>
        Effect.map(
          Effect.flatMap(
            AuditTrail.byOperator,
            (by) =>
              oauth.registerClient({ name: payload.name, redirectUris: payload.redirectUris, confidential: true }, by)
          ),
          ({ client, clientSecret }) => ({ clientId: client.id, clientSecret: clientSecret ?? "" })
        ))
      .handle("revokeOAuthClient", ({ path }) =>
        Effect.flatMap(AuditTrail.byOperator, (by) =>
          oauth.revokeClient(path.id, by)))
      .handle("createUser", ({ payload }) =>
        Effect.gen(function*() {
          // Accounts records the user's creation itself, in its own transaction.
          const created = yield* accounts.createUser(payload, yield* AuditTrail.byOperator)
          const base = config.publicUrl ?? (yield* Sessions.originOf)
          return {
            id: created.user.id,
            email: created.user.email,
            ...(created.inviteToken === undefined
              ? {}
              : { inviteUrl: `${base}/invite?token=${encodeURIComponent(created.inviteToken)}` })
          }
        }))
      .handle("users", () =>
        Effect.map(accounts.users, (users) => ({ users: users.map(Views.user) })))
      .handle("setUserRoles", ({ path, payload }) =>
        Effect.map(
          Effect.flatMap(AuditTrail.byOperator, (by) =>
            accounts.setMemberships(path.id, payload.workspaces, by)),
          Views.user
        ))
      .handle("removeUser", ({ path }) =>
        Effect.flatMap(AuditTrail.byOperator, (by) =>
          accounts.removeUser(path.id, by)))
      .handle("createMcpToken", ({ payload }) =>
        audited(provisioning.createMcpToken(payload))((t) =>
          perWorkspace(payload.workspaceIds, {
            action: "mcp_token.create",
            target: t.id,
            details: { name: payload.name }
          })
        ))
      .handle("revokeMcpToken", ({ path }) =>
        audited(provisioning.revokeMcpToken(path.id))(() => ({ action: "mcp_token.revoke", target: path.id })))
      .handle("createOutage", ({ path, payload }) =>
        Effect.flatMap(AuditTrail.workspaceOfProgram(path.id), (workspaceId) =>
          audited(forgiveness.addOutage(path.id, payload))((outage) => ({
            action: "outage.create",
            target: outage.id,
            workspaceId,
            details: { programId: path.id, start: outage.start, end: outage.end, restored: outage.restored }
          }))))
      .handle("outages", ({ path }) =>
        forgiveness.outages(path.id))
      .handle("dueChecks", () =>
        jobs.dueChecks)
      .handle("deliveries", () =>
        jobs.deliveries)
      .handle("audit", ({ urlParams }) =>
        Effect.map(
          audit.read({
            from: urlParams.from === undefined ? undefined : new Date(urlParams.from),
            to: urlParams.to === undefined ? undefined : new Date(urlParams.to),
            cursor: urlParams.cursor,
            limit: urlParams.limit
          }),
          Views.auditPage
        ))
  }))
