/**
 * The bridge between this backend and the streak engine. Everything Streaks needs lives in one
 * `ManagedRuntime`, built once at start-up from layers (core services + a storage adapter) and
 * disposed at shutdown; route handlers run small Effect programs on it and get Promises back.
 *
 * Nothing here knows about HTTP: `app.ts` maps results and errors to responses.
 */
import { EventInput, Ids, Ingest, OutboundEvents, Provisioning, SecretBox, Services, StateQuery } from "@streaks/core"
import type { Complete } from "@streaks/core/Storage"
import { Effect, Layer, ManagedRuntime } from "effect"

/** The runtime the routes use: every core service is available to programs run on it. */
export type StreaksRuntime = ManagedRuntime.ManagedRuntime<Services.Services, unknown>

/**
 * Every core service on `storage` (`MemoryStorage.layer`, `PgStorage.layer()`, your own adapter's ports
 * completed with `Storage.layer`).
 * `secretBox` seals the project's signing secret; the default key lives only as long as the
 * process, which is fine while nothing reads sealed secrets back (identity tokens of the widget
 * do): give a persistent key in production, e.g. `SecretBox.layer(Redacted.make(key))`.
 * Outbound webhooks are not delivered here (`layerNoop`): run `@streaks/webhooks`' dispatcher
 * if you subscribe to them.
 */
export const layer = <E>(
  storage: Layer.Layer<Complete, E>,
  secretBox: Layer.Layer<SecretBox.SecretBox> = SecretBox.layerEphemeral
): Layer.Layer<Services.Services, E> =>
  Services.layer.pipe(
    Layer.provide(OutboundEvents.layerNoop),
    Layer.provide(secretBox),
    Layer.provide(storage)
  )

/** Builds the runtime; its resources (pool, embedded database) start on first use or `runtime.runtime()`. */
export const makeRuntime = <E>(
  storage: Layer.Layer<Complete, E>,
  secretBox?: Layer.Layer<SecretBox.SecretBox>
): StreaksRuntime => ManagedRuntime.make(layer(storage, secretBox))

/** Which program this backend counts into. Provisioned once, then kept in your config. */
export interface Tenant {
  readonly siteKey: string
  readonly programId: string
}

/**
 * One-time setup: a workspace, a project and a program counting `lesson_completed`, with two
 * milestones. The program is set live at once: the in-process "api" door counts only for live
 * programs (a test program answers `counted: false, reason: "PROGRAM_NOT_LIVE"`).
 */
export const provisionTenant: Effect.Effect<Tenant, unknown, Provisioning.Provisioning> = Effect.gen(function*() {
  const provisioning = yield* Provisioning.Provisioning
  const workspace = yield* provisioning.createWorkspace({ name: "Lessons backend", plan: "starter" })
  const { project } = yield* provisioning.createProject({
    workspaceId: workspace.id,
    name: "Lessons",
    allowedOrigins: [],
    timezone: "UTC"
  })
  const { program } = yield* provisioning.createProgram({
    projectId: project.id,
    name: "Daily lesson",
    eventKey: "lesson_completed",
    milestones: [{ target: 3, msg: "Three days in a row!" }, { target: 7, msg: "A whole week!" }]
  })
  yield* provisioning.setProgramStatus(program.id, "live")
  return { siteKey: project.siteKey, programId: program.id }
})

/**
 * The saved tenant if its program exists in this database, else a freshly provisioned one (first
 * start, or a new database behind the same config).
 */
export const ensureTenant = (saved: Tenant | undefined) =>
  saved === undefined ? provisionTenant : Effect.gen(function*() {
    const state = yield* StateQuery.StateQuery
    return yield* state.memberStreak(saved.programId, "startup-probe").pipe(
      Effect.as(saved),
      Effect.catchTag("NotFound", () => provisionTenant)
    )
  })

export interface LessonCompleted {
  /** Your user id; it becomes the streak's `userHash` (opaque, ≤ 256 chars, never an e-mail). */
  readonly userId: string
  /** The member's IANA zone ("Europe/Paris"); it decides which local day the action counts for. */
  readonly tz?: string | undefined
  /** When it happened (ISO 8601 with offset); default now. Up to 5 minutes ahead is accepted. */
  readonly completedAt?: string | undefined
  /** A retry with the same key replays the first answer instead of counting twice. */
  readonly idempotencyKey?: string | undefined
}

/**
 * Records one completed lesson through the "api" door: the same pipeline as the HTTP doors
 * (validation, idempotency, per-day dedup, milestones, metering), in-process. Fails with
 * `InvalidBody` (bad id, zone or time), `NotFound` (unknown program), `IdempotencyKeyInProgress`
 * or `StorageError`.
 */
export const recordLesson = (tenant: Tenant, input: LessonCompleted) =>
  Effect.gen(function*() {
    const ingest = yield* Ingest.Ingest
    // The decoder of the REST door: it checks userHash, tz, ts and the 5-minute skew rule.
    const action = yield* EventInput.decodeCountAction({
      userHash: input.userId,
      ...(input.tz === undefined ? {} : { tz: input.tz }),
      ...(input.completedAt === undefined ? {} : { ts: input.completedAt }),
      ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey })
    })
    const project = yield* ingest.resolveProject(tenant.siteKey)
    const answer = yield* ingest.record({
      project,
      action,
      auth: { door: "api", programId: Ids.unsafe("ProgramId", tenant.programId) }
    })
    return answer.body
  })

/** The member's streak now: current and best run, today done or still owed, last active date. */
export const memberStreak = (tenant: Tenant, userId: string) =>
  Effect.flatMap(StateQuery.StateQuery, (state) => state.memberStreak(tenant.programId, userId))
