/**
 * Handlers of the customer REST API (`/v1/api`: docs/api.md#customer-rest-api-v1api). Every program
 * is looked up through the credential's reach, so a program outside it answers 404 like an unknown
 * one.
 */
import { HttpApiBuilder } from "@effect/platform"
import {
  Credentials,
  Errors,
  EventInput,
  Experiments,
  Ingest,
  Metering,
  Reports,
  StateQuery,
  StreakPolicies,
  Subscriptions,
  WebhookSamples
} from "@streaks/core"
import { Effect, Option } from "effect"
import { Api, CurrentPrincipal } from "./Api.js"
import { HttpConfig } from "./HttpConfig.js"
import { checkParts } from "./IngestHandlers.js"
import * as S from "./ApiSchemas.js"
import * as Sessions from "./Sessions.js"
import * as Views from "./Views.js"

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
    const sessions = yield* Sessions.Sessions

    const reach = (programId: string) =>
      Effect.flatMap(CurrentPrincipal, (principal) => Credentials.reach(principal, programId))

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
          const changed = yield* policies.setPolicy(program.id, payload).pipe(
            Effect.catchTag("InvalidBody", (error) =>
              Effect.fail(S.policyRefused(error.message)))
          )
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
        Effect.flatMap(reach(path.programId), ({ program }) =>
          policies.grantFreezes(program.id, path.userHash, payload.count)))
      .handle("createHook", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const created = yield* subscriptions.create(principal, payload, {
            allowInsecureUrls: config.allowInsecureWebhookUrls
          })
          return { ...created, createdAt: created.createdAt.toISOString() }
        }))
      .handle("deleteHook", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (principal) =>
          subscriptions.remove(principal, path.id)))
      .handle("webhookSamples", ({ path, urlParams }) =>
        Effect.flatMap(reach(path.programId), ({ program, project }) =>
          WebhookSamples.samples(project, program, urlParams.type)))
      .handle("usage", ({ urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const workspaceId = principal.workspaceIds[0]
          if (workspaceId === undefined) {
            return yield* new Errors.NotFound({ message: "no workspace" })
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
        Effect.flatMap(reach(path.programId), ({ program }) =>
          Effect.map(experiments.start(program.id, payload.holdoutPercent), Views.experiment)))
      .handle("currentExperiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          experiments.current(program.id)))
      .handle("listExperiments", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          Effect.map(experiments.history(program.id), (all) => ({ experiments: all }))))
      .handle("experiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          experiments.get(program.id, path.experimentId)))
      .handle("stopExperiment", ({ path }) =>
        Effect.flatMap(reach(path.programId), ({ program }) =>
          experiments.stop(program.id)))
  }))
