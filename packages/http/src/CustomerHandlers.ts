/**
 * Handlers of the customer REST API (`/v1/api`: docs/api.md#customer-rest-api-v1api). Every program
 * is looked up through the credential's reach, so a program outside it answers 404 like an unknown
 * one.
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import {
  Audit,
  Connections,
  Credentials,
  Errors,
  EventInput,
  Experiments,
  Forgiveness,
  Imports,
  Ingest,
  Metering,
  Provisioning,
  Reports,
  StateQuery,
  StreakPolicies,
  Subscriptions,
  WebhookSamples
} from "@streaks/core"
import { Effect, Option, Stream } from "effect"
import { Api, CurrentPrincipal } from "./Api.js"
import * as AuditTrail from "./AuditTrail.js"
import { HttpConfig } from "./HttpConfig.js"
import { checkParts } from "./IngestHandlers.js"
import * as S from "./ApiSchemas.js"
import * as JsonLimits from "./JsonLimits.js"
import * as Sessions from "./Sessions.js"
import * as Views from "./Views.js"

/** The format of an import body by its content type, else undefined. */
export const importFormat = (contentType: string | undefined): Imports.Format | undefined => {
  const type = contentType?.split(";")[0]?.trim().toLowerCase()
  return type === "application/x-ndjson" ? "ndjson" : type === "text/csv" ? "csv" : undefined
}

/** An imported line's parts are limited as an action body's (413 there: PAYLOAD_TOO_LARGE here). */
export const lineLimits = (u: unknown): string | undefined =>
  Option.isSome(JsonLimits.oversize(u)) ? "PAYLOAD_TOO_LARGE" : undefined

export const layer = HttpApiBuilder.group(Api, "customer", (handlers) =>
  Effect.gen(function*() {
    const credentials = yield* Credentials.Credentials
    const ingest = yield* Ingest.Ingest
    const stateQuery = yield* StateQuery.StateQuery
    const subscriptions = yield* Subscriptions.Subscriptions
    const metering = yield* Metering.Metering
    const experiments = yield* Experiments.Experiments
    const reports = yield* Reports.Reports
    const policies = yield* StreakPolicies.StreakPolicies
    const config = yield* HttpConfig
    const forgiveness = yield* Forgiveness.Forgiveness
    const sessions = yield* Sessions.Sessions
    const connections = yield* Connections.Connections
    const provisioning = yield* Provisioning.Provisioning
    const audit = yield* Audit.Audit

    /** The change `change` makes of the result, recorded with the request's credential as actor. */
    const audited =
      <A, E, R>(self: Effect.Effect<A, E, R>) => (change: (a: A) => Audit.Change | ReadonlyArray<Audit.Change>) =>
        AuditTrail.audited(AuditTrail.byPrincipal, change, self)

    const sessionOnlyError = new Errors.Forbidden({ message: "this route takes a signed-in session only" })
    /** The principal, when it is a session; an API key or OAuth token gets 403. */
    const sessionOnly = Effect.flatMap(CurrentPrincipal, (principal) =>
      principal.kind === "session" ? Effect.succeed(principal) : Effect.fail(sessionOnlyError))

    /** Forbidden when the session's user is only a viewer of `workspaceId`. */
    const writable = (principal: Credentials.Principal, workspaceId: string) =>
      (principal.readOnlyWorkspaceIds ?? []).includes(workspaceId as never)
        ? Effect.fail(new Errors.Forbidden({ message: "a viewer reads only" }))
        : Effect.void

    const imports = yield* Imports.Imports

    const reach = (programId: string) =>
      Effect.flatMap(CurrentPrincipal, (principal) =>
        Credentials.reach(principal, programId))

    return handlers
      .handle("me", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          if (principal.kind === "session") {
            const signedIn = yield* sessions.current
            if (Option.isNone(signedIn)) return yield* new Errors.Unauthorized({ message: "session ended" })
            const user = signedIn.value
            return {
              credential: { kind: "session" as const, userId: user.userId, email: user.email },
              workspaces: user.workspaces.map((w) => ({ id: w.id, name: w.name, plan: w.plan, role: w.role })),
              csrfToken: user.csrfToken
            }
          }
          const workspaces = (yield* credentials.workspaces(principal)).map(Views.workspace)
          const credential = { type: principal.kind, id: principal.credential.id }
          if (principal.kind === "api_key" && workspaces[0] !== undefined) {
            return { workspace: workspaces[0], credential: { type: "api_key" as const, id: credential.id } }
          }
          return { workspaces, credential: { type: "oauth" as const, id: credential.id } }
        }))
      .handle("programs", () =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(credentials.reachablePrograms(principal), (list) =>
            list.map(({ program, project }) => ({
              id: program.id,
              name: program.name,
              eventKey: program.eventKey,
              status: program.status,
              mode: Views.mode(program),
              policy: Views.policy(program),
              project: { id: project.id, siteKey: project.siteKey, name: project.name }
            })))))
      .handle("countAction", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* checkParts(payload)
          const { program, project } = yield* reach(path.programId)
          const action = yield* EventInput.fromCountAction(payload)
          const answer = yield* ingest.record({ project, action, auth: { door: "api", programId: program.id } })
          const { counted, duplicate, reason } = answer.body
          return {
            counted: counted ?? false,
            ...(reason === "PROGRAM_NOT_LIVE" ? { reason } : {}),
            ...(duplicate !== undefined ? { duplicate } : {})
          }
        }))
      .handle("member", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          stateQuery.memberStreak(program.id, path.userHash)))
      .handle("setPolicy", ({ path, payload }) =>
        Effect.gen(function*() {
          const { program, project } = yield* reach(path.programId)
          const changed = yield* audited(policies.setPolicy(program.id, payload))((p) => ({
            action: "program.set_policy",
            target: p.id,
            workspaceId: project.workspaceId,
            details: { policy: Views.policy(p) }
          })).pipe(Effect.catchTag("InvalidBody", (error) =>
            Effect.fail(S.policyRefused(error.message))))
          return {
            id: changed.id,
            name: changed.name,
            eventKey: changed.eventKey,
            status: changed.status,
            mode: Views.mode(changed),
            policy: Views.policy(changed),
            project: { id: project.id, siteKey: project.siteKey, name: project.name }
          }
        }))
      .handle("ledger", ({ path, urlParams }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          policies.ledger(program.id, path.userHash, urlParams)))
      .handle("grantFreezes", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(policies.grantFreezes(program.id, path.userHash, payload.count))(() => ({
            action: "freezes.grant",
            target: program.id,
            workspaceId: project.workspaceId,
            details: { userHash: path.userHash, count: payload.count }
          }))))
      .handle("simulatePolicy", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          policies.simulate(program.id, payload)))
      .handle("repairStreak", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          Effect.flatMap(
            audited(forgiveness.repair(program.id, path.userHash, payload))(() => ({
              action: "streak.repair",
              target: program.id,
              workspaceId: project.workspaceId,
              details: { userHash: path.userHash }
            })),
            // Read once the repair is committed: state reads are batched on connections of their own.
            (repaired) =>
              stateQuery.memberStreak(program.id, repaired.userHash)
          )))
      .handle("createPause", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(forgiveness.addPause(program.id, path.userHash, payload))((pause) => ({
            action: "pause.create",
            target: pause.id,
            workspaceId: project.workspaceId,
            details: { programId: program.id, userHash: path.userHash }
          }))))
      .handle("pauses", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          forgiveness.pauses(program.id, path.userHash)))
      .handle("deletePause", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(forgiveness.removePause(program.id, path.userHash, path.pauseId))(() => ({
            action: "pause.delete",
            target: path.pauseId,
            workspaceId: project.workspaceId,
            details: { programId: program.id, userHash: path.userHash }
          }))))
      .handle("createOutage", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(forgiveness.addOutage(program.id, payload))((outage) => ({
            action: "outage.create",
            target: outage.id,
            workspaceId: project.workspaceId,
            details: { programId: program.id, start: outage.start, end: outage.end, restored: outage.restored }
          }))))
      .handle("outages", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          forgiveness.outages(program.id)))
      .handle("createHook", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const created = yield* audited(Effect.gen(function*() {
            const made = yield* subscriptions.create(principal, payload, {
              allowInsecureUrls: config.allowInsecureWebhookUrls
            })
            return { created: made, workspaceId: yield* AuditTrail.workspaceOfProgram(made.programId) }
          }))((c) => ({
            action: "subscription.create",
            target: c.created.id,
            workspaceId: c.workspaceId,
            details: { programId: c.created.programId, url: c.created.url, eventTypes: c.created.eventTypes }
          }))
          return { ...created.created, createdAt: created.created.createdAt.toISOString() }
        }))
      .handle("deleteHook", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          audited(Effect.gen(function*() {
            const hook = (yield* subscriptions.listAll(principal)).find((h) =>
              h.id === path.id
            )
            yield* subscriptions.remove(principal, path.id)
            return hook === undefined ? undefined : yield* AuditTrail.workspaceOfProgram(hook.programId)
          }))((workspaceId) => ({ action: "subscription.delete", target: path.id, workspaceId })).pipe(Effect.asVoid)))
      .handle("webhookSamples", ({ path, urlParams }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          WebhookSamples.samples(project, program, urlParams.type)))
      .handle("usage", ({ urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const asked = urlParams.workspaceId
          const workspaceId = asked === undefined
            ? principal.workspaceIds[0]
            : principal.workspaceIds.find((id) =>
              id === asked
            )
          if (workspaceId === undefined) {
            return yield* new Errors.NotFound({ message: "no such workspace within reach" })
          }
          return yield* metering.usage(workspaceId, urlParams.month)
        }))
      .handle("report", ({ path, urlParams }) =>
        Effect.flatMap(
          CurrentPrincipal,
          (principal): Effect.Effect<unknown, Errors.InvalidBody | Errors.NotFound | Errors.StorageError> => {
            const range = {
              ...(urlParams.from !== undefined ? { from: urlParams.from } : {}),
              ...(urlParams.to !== undefined ? { to: urlParams.to } : {}),
              ...(urlParams.programId !== undefined ? { programId: urlParams.programId } : {})
            }
            return path.report === "overview"
              ? reports.overview(principal, range)
              : path.report === "events"
              ? reports.events(principal, range)
              : reports.insights(principal, range)
          }
        ))
      .handle("startExperiment", ({ path, payload }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(Effect.map(experiments.start(program.id, payload.holdoutPercent), Views.experiment))((e) => ({
            action: "experiment.start",
            target: e.id,
            workspaceId: project.workspaceId,
            details: { programId: program.id, holdoutPercent: payload.holdoutPercent }
          }))))
      .handle("currentExperiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          experiments.current(program.id)))
      .handle("listExperiments", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          Effect.map(experiments.history(program.id), (all) => ({ experiments: all }))))
      .handle("experiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          experiments.get(program.id, path.experimentId)))
      .handle("startImport", ({ path }) =>
        Effect.gen(function*() {
          // The body's type is checked before the program, as a body is everywhere.
          const request = yield* HttpServerRequest.HttpServerRequest
          const format = importFormat(request.headers["content-type"])
          if (format === undefined) {
            return yield* new Errors.InvalidBody({ message: "content-type: send application/x-ndjson or text/csv" })
          }
          const { program, project } = yield* reach(path.programId)
          const job = yield* audited(imports.start(program.id))((started) => ({
            action: "import.start",
            target: started.id,
            workspaceId: project.workspaceId,
            details: { programId: program.id, format }
          }))
          const loaded = yield* imports.load(
            job,
            Imports.lines(Stream.decodeText(
              Stream.mapError(request.stream, () =>
                new Errors.InvalidBody({ message: "body: could not be read" }))
            )),
            {
              format,
              checkLine: lineLimits
            }
          )
          // The recomputation outlives the request: the import is followed with its id.
          yield* Effect.forkDaemon(imports.finish(loaded))
          return { importId: job.id }
        }))
      .handle("import", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          Effect.map(imports.get(program.id, path.importId), Imports.view)))
      .handle("stopExperiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          audited(experiments.stop(program.id))(() => ({
            action: "experiment.stop",
            target: program.id,
            workspaceId: project.workspaceId
          }))))
      .handle("listApiKeys", () =>
        Effect.flatMap(sessionOnly, (principal) =>
          Effect.map(connections.apiKeys(principal.workspaceIds), (keys) => ({
            apiKeys: keys.map((k) => ({
              id: k.id,
              name: k.name,
              workspaceId: k.workspaceId,
              createdAt: k.createdAt.toISOString()
            }))
          }))))
      .handle("createApiKey", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* sessionOnly
          yield* writable(principal, payload.workspaceId)
          const created = yield* audited(connections.createApiKey(principal.workspaceIds, payload))((c) => ({
            action: "api_key.create",
            target: c.apiKey.id,
            workspaceId: c.apiKey.workspaceId,
            details: { name: c.apiKey.name }
          }))
          return { id: created.apiKey.id, key: created.key }
        }))
      .handle("revokeApiKey", ({ path }) =>
        Effect.flatMap(sessionOnly, (principal) =>
          audited(connections.revokeApiKey(principal.workspaceIds, path.id))((key) => ({
            action: "api_key.revoke",
            target: key.id,
            workspaceId: key.workspaceId
          })).pipe(Effect.asVoid)))
      .handle("connectedApps", () =>
        Effect.flatMap(sessionOnly, (principal) =>
          Effect.map(connections.apps(principal.workspaceIds), (apps) => ({
            apps: apps.map((a) => ({
              grantId: a.grantId,
              appName: a.appName,
              clientId: a.clientId ?? null,
              workspaceIds: a.workspaceIds,
              createdAt: a.createdAt.toISOString(),
              lastUsedAt: a.lastUsedAt?.toISOString() ?? null
            }))
          }))))
      .handle("disconnectApp", ({ path }) =>
        Effect.flatMap(sessionOnly, (principal) =>
          audited(Effect.gen(function*() {
            const app = (yield* connections.apps(principal.workspaceIds)).find((a) =>
              a.grantId === path.grantId
            )
            const done = yield* connections.disconnect(principal.workspaceIds, path.grantId)
            return { ...done, before: app?.workspaceIds ?? [] }
          }))((d) =>
            principal.workspaceIds.filter((w) =>
              d.before.includes(w)
            ).map((workspaceId) => ({
              action: "connected_app.disconnect",
              target: d.grant.id,
              workspaceId,
              details: { appName: d.grant.appName, revoked: d.revoked, subscriptionsRemoved: d.subscriptionsRemoved }
            }))
          ).pipe(Effect.asVoid)))
      .handle("rotateWebhookSecret", ({ path }) =>
        Effect.gen(function*() {
          yield* sessionOnly
          const { program, project } = yield* reach(path.programId)
          return yield* audited(provisioning.rotateWebhookSecret(program.id))(() => ({
            action: "program.rotate_webhook_secret",
            target: program.id,
            workspaceId: project.workspaceId
          }))
        }))
      .handle("listHooks", () =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(subscriptions.listAll(principal), (hooks) => ({
            hooks: hooks.map((h) => ({
              id: h.id,
              programId: h.programId,
              url: h.url,
              eventTypes: h.eventTypes,
              createdAt: h.createdAt.toISOString(),
              createdBy: { kind: h.createdBy.type, id: h.createdBy.id }
            }))
          }))))
      .handle("hookDeliveries", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(subscriptions.deliveries(principal, path.id), (log) => ({
            deliveries: log.map(({ attempts, message }) => ({
              messageId: message.id,
              type: message.type,
              status: message.status,
              createdAt: message.createdAt.toISOString(),
              attempts: attempts.map((a) => ({
                attempt: a.attempt,
                at: a.at.toISOString(),
                statusCode: a.status ?? null,
                durationMs: a.latencyMs,
                error: a.error ?? null
              }))
            }))
          }))))
      .handle("redeliver", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          audited(subscriptions.redeliver(principal, path.id, path.messageId))((subscription) => ({
            action: "delivery.redeliver",
            target: path.messageId,
            workspaceId: subscription.workspaceId,
            details: { subscriptionId: subscription.id }
          })).pipe(Effect.as({ messageId: path.messageId, status: "pending" as const }))))
      .handle("audit", ({ urlParams }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          Effect.map(
            audit.read({
              workspaceIds: principal.workspaceIds,
              from: urlParams.from === undefined ? undefined : new Date(urlParams.from),
              to: urlParams.to === undefined ? undefined : new Date(urlParams.to),
              cursor: urlParams.cursor,
              limit: urlParams.limit
            }),
            Views.auditPage
          )))
  }))
