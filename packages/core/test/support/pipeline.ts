/**
 * The ingest/state/alias/due-check services on a fresh in-memory store, a tenant with known
 * credentials, and one helper per door that goes through the same decode + resolve + record steps
 * as the HTTP layer. Provide `layer` per test: every build starts empty.
 */
import { Context, Effect, Layer, Ref } from "effect"
import * as Aliases from "../../src/Aliases.js"
import * as Credentials from "../../src/Credentials.js"
import { StreakKey, type Ledger, type Program } from "../../src/Domain.js"
import * as DueChecks from "../../src/DueChecks.js"
import * as EventInput from "../../src/EventInput.js"
import * as Experiments from "../../src/Experiments.js"
import type { UserHash } from "../../src/Ids.js"
import * as Ingest from "../../src/Ingest.js"
import * as OutboxSignal from "../../src/OutboxSignal.js"
import { StorageError } from "../../src/Errors.js"
import type * as Ports from "../../src/Ports.js"
import {
  ActionLog,
  ExperimentStore,
  IdempotencyStore,
  Outbox,
  StreakStore,
  SubscriptionStore,
  Transactor
} from "../../src/Ports.js"
import * as SecretBox from "../../src/SecretBox.js"
import * as StateQuery from "../../src/StateQuery.js"
import * as Forgiveness from "../../src/Forgiveness.js"
import * as StreakPolicies from "../../src/StreakPolicies.js"
import * as MemoryStorage from "../../src/MemoryStorage.js"
import * as Storage from "../../src/Storage.js"
import { makeExperiment, makeSubscription, seedTenant, type Tenant } from "@streaks/storage-conformance/Fixtures"

export const SERVER_TOKEN = "sst_server_token_for_tests"
export const WEBHOOK_SECRET = "whi_webhook_secret_for_tests"
export const SIGNING_SECRET = "ass_signing_secret_for_tests"
export const ORIGIN = "https://app.example.com"

/** Counts `OutboxSignal.notify` calls, so tests can see the dispatcher being nudged. */
export class Nudges extends Context.Tag("test/Nudges")<Nudges, Ref.Ref<number>>() {}

const signal = Layer.effect(
  OutboxSignal.OutboxSignal,
  Effect.map(Nudges, (ref) => ({ notify: Ref.update(ref, (n) => n + 1) }))
)

/** The in-memory ports, before the stores core builds on them: overrides go here, so those stores see them. */
const memoryPorts = Layer.effectContext(MemoryStorage.make)

/** What the services need besides the stores: an ephemeral secret box and a counted outbox signal. */
const runtime = Layer.mergeAll(SecretBox.layerEphemeral, signal).pipe(
  Layer.provideMerge(Layer.effect(Nudges, Ref.make(0)))
)

/** The stores on `ports` (in memory, some of them changed), with the secret box and signal. */
const baseOn = <R>(ports: Layer.Layer<Ports.Storage, never, R>) => Layer.merge(Storage.layer(ports), runtime)

/** The in-memory store, an ephemeral secret box and a counted outbox signal: what the services need. */
export const base = baseOn(memoryPorts)

const services = Layer.mergeAll(
  Ingest.layer,
  StateQuery.layer,
  Aliases.layer,
  DueChecks.layer,
  StreakPolicies.layer,
  Forgiveness.layer
)

export const layer = services.pipe(Layer.provideMerge(base))

/** The in-memory ports with the idempotency store changed by `f` (one that fails, say). */
const portsWithKeys = (f: (store: IdempotencyStore["Type"]) => IdempotencyStore["Type"]) =>
  Layer.effect(IdempotencyStore, Effect.map(IdempotencyStore, f)).pipe(Layer.provideMerge(memoryPorts))

/** The services over an idempotency store changed by `f`. */
export const layerWithKeys = (f: (store: IdempotencyStore["Type"]) => IdempotencyStore["Type"]) =>
  services.pipe(Layer.provideMerge(baseOn(portsWithKeys(f))))

/** A Transactor whose first unit of work fails with a StorageError (a crash mid-action), then works. */
const flakyTransactor = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const real = yield* Transactor
    const failed = yield* Ref.make(false)
    return {
      withTransaction: <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Effect.flatMap(
          Ref.getAndSet(failed, true),
          (already) =>
            already ? real.withTransaction(self) : Effect.fail(new StorageError({ message: "injected failure" }))
        )
    }
  })
)

/** `layer`, but the first transaction fails; the idempotency store changed by `f`. */
export const layerFirstTransactionFailsWithKeys = (f: (store: IdempotencyStore["Type"]) => IdempotencyStore["Type"]) =>
  services.pipe(Layer.provideMerge(baseOn(flakyTransactor.pipe(Layer.provideMerge(portsWithKeys(f))))))

/** `layer`, but the first transaction fails. */
export const layerFirstTransactionFails = layerFirstTransactionFailsWithKeys((store) => store)

/** An action log that fails any write holding an action of `POISON`, and counts transactions. */
export const POISON = "poison"
export class Transactions extends Context.Tag("test/Transactions")<Transactions, Ref.Ref<number>>() {}

const poisonedLog = Layer.effect(
  ActionLog,
  Effect.map(ActionLog, (log) => ({
    ...log,
    append: (records) =>
      records.some((r) => r.userHash === POISON)
        ? Effect.fail(new StorageError({ message: "injected failure" }))
        : log.append(records)
  }))
)

const countedTransactor = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const real = yield* Transactor
    const count = yield* Transactions
    return { withTransaction: (self) => Effect.zipRight(Ref.update(count, (n) => n + 1), real.withTransaction(self)) }
  })
)

/** `layer`, but writes of actions of `POISON` fail, and `Transactions` counts transactions. */
export const layerPoisoned = services.pipe(
  Layer.provideMerge(baseOn(Layer.mergeAll(poisonedLog, countedTransactor).pipe(Layer.provideMerge(memoryPorts)))),
  Layer.provideMerge(Layer.effect(Transactions, Ref.make(0)))
)

type Overrides = Parameters<typeof seedTenant>[0]

/**
 * A workspace, project and program (test status unless overridden) whose server token, webhook
 * secret and signing secret are the constants above; allowed origins: ORIGIN and https://*.example.org.
 */
export const tenant = (overrides: Overrides = {}) =>
  Effect.gen(function*() {
    const box = yield* SecretBox.SecretBox
    return yield* seedTenant({
      ...overrides,
      project: {
        allowedOrigins: [ORIGIN, "https://*.example.org"],
        serverTokenHash: Credentials.hashToken(SERVER_TOKEN),
        signingSecretSealed: box.seal(SIGNING_SECRET),
        ...overrides.project
      },
      program: { webhookSecretHash: Credentials.hashToken(WEBHOOK_SECRET), ...overrides.program }
    })
  })

/** A live tenant (the usual case for outbound events), subscribed to every event type. */
export const liveTenant = (overrides: Overrides = {}) =>
  Effect.gen(function*() {
    const t = yield* tenant({ ...overrides, program: { status: "live", ...overrides.program } })
    yield* subscribe(t)
    return t
  })

export const subscribe = (t: Tenant, program: Program = t.program) =>
  Effect.flatMap(SubscriptionStore, (s) => s.create(makeSubscription({ ...t, program })))

const record = (siteKey: string, action: EventInput.Action, auth: Ingest.Auth) =>
  Effect.gen(function*() {
    const ingest = yield* Ingest.Ingest
    const project = yield* ingest.resolveProject(siteKey)
    return yield* ingest.record({ project, action, auth })
  })

/** `POST /v1/e` from an allowed origin (or `origin`, or none when `origin` is undefined). */
export const browser = (
  body: Record<string, unknown>,
  auth: { readonly origin?: string | undefined; readonly serverToken?: string } = { origin: ORIGIN }
) =>
  Effect.flatMap(EventInput.decodeEventRecord(body), (action) =>
    record(String(body["siteKey"]), action, {
      door: "browser",
      origin: "origin" in auth ? auth.origin : ORIGIN,
      serverToken: auth.serverToken
    }))

/** `POST /v1/server/e` with the tenant's server token unless another (or none: `null`) is given. */
export const server = (body: Record<string, unknown>, serverToken: string | null = SERVER_TOKEN) =>
  Effect.flatMap(
    EventInput.decodeEventRecord(body),
    (action) => record(String(body["siteKey"]), action, { door: "server", serverToken: serverToken ?? undefined })
  )

/** `POST /v1/webhook/:siteKey/e` with the program's webhook secret unless another (or none: `null`) is given. */
export const webhook = (urlSiteKey: string, body: Record<string, unknown>, secret: string | null = WEBHOOK_SECRET) =>
  Effect.flatMap(
    EventInput.decodeWebhookEvent(body),
    (action) => record(urlSiteKey, action, { door: "webhook", secret: secret ?? undefined, urlSiteKey })
  )

/** `POST /v1/api/programs/{id}/events` (the REST layer has resolved the program's project). */
export const api = (t: Tenant, body: Record<string, unknown>, program: Program = t.program) =>
  Effect.flatMap(
    EventInput.decodeCountAction(body),
    (action) =>
      Effect.flatMap(Ingest.Ingest, (ingest) =>
        ingest.record({ project: t.project, action, auth: { door: "api", programId: program.id } }))
  )

/** The member's streak row, if any. */
export const rowOf = (t: Tenant, userHash: string, ledger: Ledger, program: Program = t.program) =>
  Effect.map(
    Effect.flatMap(StreakStore, (s) =>
      s.rows({
        keys: [
          new StreakKey({ projectId: t.project.id, programId: program.id, userHash: userHash as UserHash, ledger })
        ]
      })),
    (rows) => rows[0]
  )

/** The member's active days, as plain strings. */
export const daysOf = (t: Tenant, userHash: string, ledger: Ledger, program: Program = t.program) =>
  Effect.flatMap(StreakStore, (s) =>
    Effect.map(
      s.days(new StreakKey({ projectId: t.project.id, programId: program.id, userHash: userHash as UserHash, ledger })),
      (days): Array<string> => days.map(String)
    ))

/** The error code of the failure of `effect` (every client error carries one). */
export const codeOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => (e as { readonly code?: string }).code)

/** The action log of the program on one ledger: `count` actions per day and type, `counted` of them moved progress. */
export const logged = (t: Tenant, ledger: Ledger, program: Program = t.program) =>
  Effect.flatMap(
    ActionLog,
    (log) => log.countsByDay({ programIds: [program.id], from: new Date(0), to: new Date(8_000_000_000_000), ledger })
  )

/** Every pending outbox message (claimed with a far-future clock), parsed, oldest first. */
export const drainOutbox = Effect.gen(function*() {
  const outbox = yield* Outbox
  const far = new Date(8_000_000_000_000)
  // Leased past `far`, so a later drain sees only messages enqueued since.
  const { messages } = yield* outbox.claimDue(far, 10_000, new Date(far.getTime() + 1))
  return messages.map((m) => ({ message: m, body: JSON.parse(m.payload) as Record<string, any> }))
})

/**
 * Starts a running experiment (50 % holdout) and returns one member of its control group and one
 * of its treatment group.
 */
export const startExperiment = (program: Program) =>
  Effect.gen(function*() {
    const experiment = makeExperiment(program, { holdoutPercent: 50 })
    yield* Effect.flatMap(ExperimentStore, (s) => s.start(experiment))
    const candidates = Array.from({ length: 64 }, (_, i) => `member_${i}`)
    const control = candidates.find((u) => Experiments.isControl(experiment.id, u, 50))!
    const treatment = candidates.find((u) => !Experiments.isControl(experiment.id, u, 50))!
    return { experiment, control, treatment }
  })

/** Milliseconds of an ISO instant (for `TestClock.setTime`). */
export const at = (iso: string): number => new Date(iso).getTime()
