/**
 * The services of the credentials/provisioning/metering/experiments/subscriptions suites on a
 * fresh in-memory store with an ephemeral SecretBox, and the tenant fixture most tests start from.
 * Provide `layer` per test: every build starts empty, so tests never see each other's data.
 */
import { Effect, Layer } from "effect"
import * as Audit from "../../src/Audit.js"
import * as Credentials from "../../src/Credentials.js"
import * as Experiments from "../../src/Experiments.js"
import * as MemoryStorage from "../../src/MemoryStorage.js"
import * as Metering from "../../src/Metering.js"
import * as OAuthServer from "../../src/OAuthServer.js"
import * as OutboxSignal from "../../src/OutboxSignal.js"
import * as Provisioning from "../../src/Provisioning.js"
import * as SecretBox from "../../src/SecretBox.js"
import * as Subscriptions from "../../src/Subscriptions.js"

export const layer = Layer.mergeAll(
  Credentials.layer,
  Provisioning.layer,
  Metering.layer,
  Experiments.layer,
  Subscriptions.layer,
  OAuthServer.layer
).pipe(
  Layer.provideMerge(Audit.layer),
  Layer.provideMerge(Layer.mergeAll(MemoryStorage.layer, SecretBox.layerEphemeral, OutboxSignal.layerNoop))
)

/** A workspace with one project, one program and one API key (the usual starting point). */
export const tenant = (
  options?: { readonly plan?: "starter" | "growth" | "scale" | "pro"; readonly eventKey?: string }
) =>
  Effect.gen(function*() {
    const admin = yield* Provisioning.Provisioning
    const workspace = yield* admin.createWorkspace({ name: "Acme", plan: options?.plan ?? "starter" })
    const created = yield* admin.createProject({
      workspaceId: workspace.id,
      name: "Acme web",
      allowedOrigins: ["https://acme.example"]
    })
    const { program, webhookSecret } = yield* admin.createProgram({
      projectId: created.project.id,
      name: "Daily lesson",
      eventKey: options?.eventKey ?? "lesson_done",
      milestones: [{ target: 7, msg: "One week!" }]
    })
    const apiKey = yield* admin.createApiKey(workspace.id, "zapier")
    return { workspace, ...created, program, webhookSecret, apiKey }
  })

/** The principal of a bearer token, through the real `authenticate`. */
export const principalOf = (token: string) =>
  Effect.flatMap(Credentials.Credentials, (c) => c.authenticate(`Bearer ${token}`))

/** Production setting: HTTPS subscription URLs only. */
export const httpsOnly = { allowInsecureUrls: false } as const
