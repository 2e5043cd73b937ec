/**
 * Handlers of the admin group (docs/api.md#admin-routes): provisioning through core `Provisioning`,
 * a program's streak policy through `StreakPolicies`, the alias link, and the on-demand jobs.
 * Secrets appear in these answers once, at creation.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Accounts, Aliases, Provisioning, StreakPolicies } from "@streaks/core"
import { Effect } from "effect"
import { Api } from "./Api.js"
import * as ClientAddress from "./ClientAddress.js"
import { HttpConfig } from "./HttpConfig.js"
import { Jobs } from "./Jobs.js"
import * as Sessions from "./Sessions.js"
import * as Views from "./Views.js"

/** The operator, as the audit log names them: the admin token has no id of its own. */
export const operator = { kind: "admin", id: "admin" } as const

/** Who is writing on an admin route, for the audit log. */
export const byOperator = Effect.map(ClientAddress.current, (client) => ({
  actor: operator,
  clientAddress: client.address
}))

export const layer = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const provisioning = yield* Provisioning.Provisioning
    const aliases = yield* Aliases.Aliases
    const policies = yield* StreakPolicies.StreakPolicies
    const jobs = yield* Jobs
    const accounts = yield* Accounts.Accounts
    const config = yield* HttpConfig
    return handlers
      .handle("alias", ({ payload }) => Effect.asVoid(aliases.link(payload)))
      .handle("createWorkspace", ({ payload }) => Effect.map(provisioning.createWorkspace(payload), Views.workspace))
      .handle(
        "setPlan",
        ({ path, payload }) => Effect.map(provisioning.setPlan(path.id, payload.plan), Views.workspace)
      )
      .handle("createProject", ({ payload }) =>
        Effect.map(provisioning.createProject(payload), (created) => ({
          ...Views.project(created.project),
          serverToken: created.serverToken,
          signingSecret: created.signingSecret
        })))
      .handle("createProgram", ({ payload }) =>
        Effect.map(provisioning.createProgram(payload), (created) => ({
          ...Views.program(created.program),
          webhookSecret: created.webhookSecret
        })))
      .handle(
        "setProgramPolicy",
        ({ path, payload }) => Effect.map(policies.setPolicy(path.id, payload), Views.program)
      )
      .handle("rotateWebhookSecret", ({ path }) => provisioning.rotateWebhookSecret(path.id))
      .handle(
        "setProgramStatus",
        ({ path, payload }) => Effect.map(provisioning.setProgramStatus(path.id, payload.status), Views.program)
      )
      .handle("createApiKey", ({ path, payload }) => provisioning.createApiKey(path.id, payload.name))
      .handle("revokeApiKey", ({ path }) => provisioning.revokeApiKey(path.id))
      .handle("createGrant", ({ payload }) => provisioning.createOAuthGrant(payload))
      .handle("revokeGrant", ({ path }) => provisioning.revokeOAuthGrant(path.id))
      .handle("createUser", ({ payload }) =>
        Effect.gen(function*() {
          const created = yield* accounts.createUser(payload, yield* byOperator)
          const base = config.publicUrl ?? (yield* Sessions.originOf)
          return {
            id: created.user.id,
            email: created.user.email,
            ...(created.inviteToken === undefined
              ? {}
              : { inviteUrl: `${base}/invite?token=${encodeURIComponent(created.inviteToken)}` })
          }
        }))
      .handle("createMcpToken", ({ payload }) => provisioning.createMcpToken(payload))
      .handle("revokeMcpToken", ({ path }) => provisioning.revokeMcpToken(path.id))
      .handle("dueChecks", () => jobs.dueChecks)
      .handle("deliveries", () => jobs.deliveries)
  }))
