/**
 * The one ingest pipeline behind the four doors (`/v1/e`, `/v1/server/e`, `/v1/webhook/:siteKey/e`,
 * customer REST count-action): checks in the order of CONTRACT §2, idempotency (§4), test/live (§3).
 */
import { Context, Effect, Exit, Layer, type Scope } from "effect"
import type { Project } from "./Domain.js"
import { IdempotencyKeyInProgress, type InvalidSiteKey, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import * as Finished from "./Finished.js"
import type { Action } from "./EventInput.js"
import * as Coalesce from "./internal/coalesce.js"
import * as KeyClaims from "./internal/keyClaims.js"
import { applyAll as applyInOrder, type ApplyServices, type Outcome, type Work } from "./internal/ingestApply.js"
import type { AnswerBody } from "./internal/ingestPlan.js"
import { type Auth, type AuthError, authorize, resolveProject as resolve } from "./internal/ingestAuth.js"
import { OutboxSignal } from "./OutboundEvents.js"
import {
  AchievementStore,
  ActionLog,
  DirectoryStore,
  ExperimentStore,
  IdempotencyStore,
  MemberStore,
  Outbox,
  StreakStore,
  SubscriptionStore,
  Transactor,
  UsageStore
} from "./Ports.js"

export type { AnswerBody } from "./internal/ingestPlan.js"
export { type Auth, browserAuth, originAllowed } from "./internal/ingestAuth.js"

/**
 * What a door answers with 202. Public doors: `{ok: true, counted, reason?, duplicate?}`; the
 * customer REST door: `{counted, reason?, duplicate?}`. `counted` says whether the action counts
 * toward the streak (its day is marked); `duplicate` that an earlier action already marked that
 * day, so nothing moved; `reason` why an action does not count (`PROGRAM_NOT_LIVE`,
 * `BROWSER_COUNTING_DISABLED`). `deprecation` asks the door for a `Deprecation: true` header.
 */
export interface IngestAnswer {
  readonly body: AnswerBody
  readonly deprecation: boolean
}

export interface RecordInput {
  /** From `resolveProject` (browser/server: the body's siteKey; webhook: the URL's; REST: the program's). */
  readonly project: Project
  readonly action: Action
  readonly auth: Auth
}

/** Every client error `record` can answer with, each carrying its spec code. */
export type RecordError = AuthError | IdempotencyKeyInProgress

export class Ingest extends Context.Tag("@streaks/core/Ingest")<Ingest, {
  /**
   * The project of a siteKey, else INVALID_SITE_KEY (step 3). Doors call it first, so that rate
   * limits (step 4) can run between it and `record`.
   */
  readonly resolveProject: (siteKey: string) => Effect.Effect<Project, InvalidSiteKey | StorageError>
  /**
   * Records one action: a `ts` over 5 minutes ahead (INVALID_BODY), SITE_KEY_MISMATCH, the door's
   * auth, INVALID_WIDGET_KIND, then idempotency, in that order; then the whole change in one
   * transaction. A repeat of a completed idempotency key replays the first answer and changes
   * nothing; one still in progress fails with IDEMPOTENCY_KEY_IN_PROGRESS.
   *
   * Concurrent calls share transactions (see `BatchOptions`), with each member's actions applied
   * in arrival order; so a call commits on its own and does not join a transaction its caller
   * has open. Once called, an action that passes its checks is committed, even if its caller is
   * interrupted while it waits for the answer (see `recordCallback`).
   */
  readonly record: (input: RecordInput) => Effect.Effect<IngestAnswer, RecordError | StorageError>
  /**
   * `record` for a caller that is not a fiber (the server's fast path): `onExit` gets the exit
   * when the action's batch has committed, or at once when a check fails. With a warm directory
   * cache and no idempotency key, an action runs no fiber of its own; it joins the next batch
   * through a callback. Time is the `Clock` in context when the service was made. `onExit` must
   * not throw.
   */
  readonly recordCallback: (
    input: RecordInput,
    onExit: (exit: Exit.Exit<IngestAnswer, RecordError | StorageError>) => void
  ) => void
}>() {}

/**
 * A stored answer in the shape of the door asking now: the key's scope is the project, so a key
 * first used on another door replays its outcome with or without `ok` as this door answers.
 */
const replayed = (door: Auth["door"], stored: unknown): AnswerBody => {
  const { ok: _, ...rest } = stored as AnswerBody
  return door === "api" ? rest : { ok: true, ...rest }
}

/** How `recordCallback` answers its caller. */
type Done = (exit: Exit.Exit<IngestAnswer, RecordError | StorageError>) => void

/** The services `Ingest.layer` needs: the storage ports it touches and the outbox signal. */
export type Requirements = ApplyServices | Transactor | IdempotencyStore | OutboxSignal

/**
 * Concurrent actions share transactions (group commit): the actions that arrive while a batch is
 * busy form the next one, applied in one transaction through the ports' multi-row methods
 * (`lockMany`, `addDays`, `saveAll`, `markActiveMany`, `appendAll`), so a batch costs a few
 * statements and one commit however many actions it holds. A lone action waits for nothing.
 */
export interface BatchOptions {
  /**
   * Transactions open at once (default 1): the next batch fills while one runs. A second one that
   * took whatever waited made each request cost about 25 % more CPU (server and Postgres) for no
   * more throughput in `pnpm bench`: batches half the size pay the same fixed statements. See
   * `minBatchBeside`.
   */
  readonly workers?: number
  /**
   * With more than one worker, the fewest waiting actions for which a transaction opens beside
   * one in flight (default 1: at once); fewer wait to share the next batch. The reference server
   * opens a second at 24, about a usual batch under load, which used the CPU that one transaction
   * at a time leaves idle without making batches smaller (docs/performance.md).
   */
  readonly minBatchBeside?: number
  /** Most actions in one transaction (default 100). */
  readonly maxBatch?: number
  /**
   * How a committed batch hands each caller its answer (default: at once): called once per caller,
   * in order, after the next batch has started. On Node, `(answer) => process.nextTick(answer)`
   * lets the next batch's first statement go out before the callers resume and write their
   * responses (in `pnpm bench`, a batch's first statement left after 0.1 ms instead of 0.5, and
   * ingest gained about 5 %). The reference server goes further and queues each answer on
   * `Turns.shared.ahead` of `@streaks/http`, a few per turn of the event loop and ahead of the
   * action fronts queued there, so that writing 25 responses does not hold up the reply the next
   * batch waits for (docs/performance.md).
   */
  readonly handOff?: ((answer: () => void) => void) | undefined
}

export const make = (options: BatchOptions = {}): Effect.Effect<Ingest["Type"], never, Requirements | Scope.Scope> =>
  Effect.gen(function*() {
    // Only the services a batch uses: its fiber's services are copied once per SQL statement.
    const context = Context.pick(
      DirectoryStore,
      MemberStore,
      StreakStore,
      AchievementStore,
      ActionLog,
      SubscriptionStore,
      Outbox,
      UsageStore,
      ExperimentStore,
      IdempotencyStore,
      Transactor,
      OutboxSignal
    )(yield* Effect.context<Requirements>())
    const directory = yield* DirectoryStore
    const transactor = yield* Transactor
    const idempotency = yield* IdempotencyStore
    const signal = yield* OutboxSignal

    // With idempotency keys (§4), a batch claims its actions' keys inside its transaction, in its
    // first round trip, where the store can (`claimWithin`): a concurrent repeat still sees the
    // claim at once, and a rollback frees the key. Else `runBatch` claims them ahead of it.
    const claimInside = idempotency.claimWithin !== undefined

    const applyAll = (work: ReadonlyArray<Work>) =>
      Effect.provide(
        transactor.withTransaction(applyInOrder(work, {
          lookahead: work.length > 1,
          claimInside: claimInside && work.some((w) => w.idempotencyKey !== undefined)
        })),
        context
      )

    // A failed batch is retried one action per transaction, so one action's failure (or a
    // deadlock between two batches) fails only itself. A lone action goes without lookahead,
    // which asks the store about every day (see `applyAll`): so do the retries.
    const applyBatch = (jobs: ReadonlyArray<Work>): Effect.Effect<ReadonlyArray<Exit.Exit<Outcome, StorageError>>> =>
      applyAll(jobs).pipe(
        Effect.tap((answers) => answers.some((a) => "body" in a && a.enqueued > 0) ? signal.notify : Effect.void),
        Effect.map((answers) => answers.map(Exit.succeed)),
        Effect.catchAll((error) =>
          jobs.length === 1
            ? Effect.succeed([Exit.fail(error)])
            : Effect.forEach(jobs, (job) => Effect.map(applyBatch([job]), (exits) => exits[0]!))
        )
      )

    const claimAll = KeyClaims.claimAll(idempotency)

    // On a store without `claimWithin`, a batch first claims its actions' keys, together and in a
    // commit of their own ahead of its transaction, so that a concurrent repeat sees a claim at
    // once; then it applies the actions it claimed and those without a key. A claimed action that
    // failed releases its key before it is answered, so that a retry can claim it.
    const runBatch = (jobs: ReadonlyArray<Work>): Effect.Effect<ReadonlyArray<Exit.Exit<Outcome, StorageError>>> => {
      const keyed = claimInside ? [] : jobs.flatMap((w, i) => w.idempotencyKey === undefined ? [] : [i])
      if (keyed.length === 0) return applyBatch(jobs)
      return Effect.gen(function*() {
        const claims = yield* claimAll(keyed.map((i) => {
          const w = jobs[i]!
          return { projectId: w.project.id, key: w.idempotencyKey!, now: w.now }
        }))
        const outcomes = new Array<Exit.Exit<Outcome, StorageError>>(jobs.length)
        keyed.forEach((i, n) => {
          const claim = claims[n]!
          if (Exit.isFailure(claim)) outcomes[i] = Exit.failCause(claim.cause)
          else if (claim.value._tag !== "Claimed") outcomes[i] = Exit.succeed({ held: claim.value })
        })
        const go = jobs.flatMap((_, i) => outcomes[i] === undefined ? [i] : [])
        const exits = go.length === 0 ? [] : yield* applyBatch(go.map((i) => jobs[i]!))
        const released: Array<Work> = []
        go.forEach((i, n) => {
          const exit = exits[n]!
          outcomes[i] = exit
          if (Exit.isFailure(exit) && jobs[i]!.idempotencyKey !== undefined) released.push(jobs[i]!)
        })
        yield* Effect.forEach(released, (w) => Effect.ignore(idempotency.release(w.project.id, w.idempotencyKey!)), { discard: true })
        return outcomes
      })
    }

    const submit = yield* Coalesce.make(runBatch, {
      workers: options.workers ?? 1,
      minBatchBeside: options.minBatchBeside,
      maxBatch: options.maxBatch ?? 100,
      handOff: options.handOff
    })

    const resolveProject = (siteKey: string): Effect.Effect<Project, InvalidSiteKey | StorageError> =>
      resolve(directory, siteKey)

    const clock = yield* Effect.clock
    const run = Finished.runner(yield* Effect.runtime<never>())

    // Callbacks over checks that are values and a cached program that is a finished exit, not a
    // fiber per action: every action runs this, and a fiber waiting for its batch was the largest
    // cost left in front of it. Once submitted, an action is committed whether or not anyone still
    // waits for the answer (Coalesce).
    const recordCallback = ({ action, auth, project }: RecordInput, done: Done): void => {
      const now = new Date(clock.unsafeCurrentTimeMillis())
      // Step 2 again: embedders may build actions without the decode helpers.
      if (EventInput.isInFuture(action, now)) return done(Exit.fail(EventInput.tooFarAhead()))
      run(authorize(directory, project, action, auth), (authorized) => {
        if (Exit.isFailure(authorized)) return done(Exit.failCause(authorized.cause))
        const { deprecation, program } = authorized.value
        const work: Work = { project, program, action, door: auth.door, now, idempotencyKey: action.idempotencyKey }
        submit.submit(work, (exit) => {
          if (Exit.isFailure(exit)) return done(Exit.failCause(exit.cause))
          const outcome = exit.value
          if ("body" in outcome) return done(Exit.succeed({ body: outcome.body, deprecation }))
          if (outcome.held._tag === "Completed") {
            return done(Exit.succeed({ body: replayed(auth.door, outcome.held.response.body), deprecation }))
          }
          done(Exit.fail(new IdempotencyKeyInProgress({ message: "the first request with this key is still processing" })))
        })
      })
    }

    const record = (input: RecordInput) =>
      Effect.async<IngestAnswer, RecordError | StorageError>((resume) => recordCallback(input, resume))

    return Ingest.of({ resolveProject, record, recordCallback })
  })

/** `Ingest` with the default batching. */
export const layer: Layer.Layer<Ingest, never, Requirements> = Layer.scoped(Ingest, make())

/** `Ingest` with chosen batching. */
export const layerWith = (options: BatchOptions): Layer.Layer<Ingest, never, Requirements> =>
  Layer.scoped(Ingest, make(options))
