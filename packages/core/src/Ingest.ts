/**
 * The one ingest pipeline behind the four doors (`/v1/e`, `/v1/server/e`, `/v1/webhook/:siteKey/e`,
 * customer REST count-action): the checks of docs/api.md#order-of-checks in order, then a group
 * commit that loads what the group needs (`IngestStore.load`), plans it (`IngestPlan.plan`, pure)
 * and commits it.
 */
import { Cause, Clock, Context, Effect, Exit, Layer, type Scope } from "effect"
import type { Project } from "./Domain.js"
import { IdempotencyKeyInProgress, type InvalidBody, type InvalidSiteKey, StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import type { Action } from "./EventInput.js"
import * as Ids from "./Ids.js"
import * as IngestPlan from "./IngestPlan.js"
import { IngestStore, keyOf } from "./IngestStore.js"
import * as GroupCommit from "./internal/groupCommit.js"
import { type Auth, type AuthError, authorize, resolveProject as resolve } from "./internal/ingestAuth.js"
import { OutboxSignal } from "./OutboundEvents.js"
import { DirectoryStore, Transactor } from "./Ports.js"

export type { AnswerBody } from "./IngestPlan.js"
export { type Auth, browserAuth, originAllowed } from "./internal/ingestAuth.js"

/**
 * What a door answers with 202. Public doors: `{ok: true, counted, reason?, duplicate?}`; the
 * customer REST door: `{counted, reason?, duplicate?}`. `counted` says whether the action counts
 * toward the streak (its day is marked); `duplicate` that an earlier action already marked that
 * day, so nothing moved; `reason` why an action does not count (`PROGRAM_NOT_LIVE`,
 * `BROWSER_COUNTING_DISABLED`). `deprecation` asks the door for a `Deprecation: true` header.
 */
export interface IngestAnswer {
  readonly body: IngestPlan.AnswerBody
  readonly deprecation: boolean
}

export interface RecordInput {
  /** From `resolveProject` (browser/server: the body's siteKey; webhook: the URL's; REST: the program's). */
  readonly project: Project
  readonly action: Action
  readonly auth: Auth
}

/** Every client error `record` can answer with, each carrying its error code. */
export type RecordError = AuthError | InvalidBody | IdempotencyKeyInProgress

export class Ingest extends Context.Tag("@streaks/core/Ingest")<Ingest, {
  /**
   * The project of a siteKey, else INVALID_SITE_KEY (step 3). Doors call it first, so that rate
   * limits (step 4) can run between it and `record`.
   */
  readonly resolveProject: (siteKey: string) => Effect.Effect<Project, InvalidSiteKey | StorageError>
  /**
   * Records one action: a `ts` over 5 minutes ahead or before 1970 (INVALID_BODY), SITE_KEY_MISMATCH,
   * the door's auth, INVALID_WIDGET_KIND, then idempotency, in that order; then the whole change in
   * one transaction. A repeat of a completed idempotency key replays the first answer and changes
   * nothing; one still in progress fails with IDEMPOTENCY_KEY_IN_PROGRESS.
   *
   * Concurrent calls share transactions (see `BatchOptions`), with each member's actions applied
   * in arrival order, but never a fate: a defect while planning one action fails it alone, and a
   * failed transaction is retried one action at a time. A success means committed. Once called, an
   * action that passes its checks is committed even if its caller is interrupted while it waits.
   */
  readonly record: (input: RecordInput) => Effect.Effect<IngestAnswer, RecordError | StorageError>
}>() {}

/** The services `Ingest.layer` needs (`Storage.layer` provides the stores). */
export type Requirements = IngestStore | DirectoryStore | Transactor | OutboxSignal

/**
 * Concurrent actions share transactions (group commit): the actions that arrive while a group is
 * busy form the next one, loaded, planned and committed together, so a group costs a few
 * statements and one commit however many actions it holds. A lone action waits for nothing.
 */
export interface BatchOptions {
  /** Transactions open at once (default 1): the next group fills while one runs. */
  readonly workers?: number
  /**
   * With more than one worker, the fewest waiting actions for which a transaction opens beside
   * one in flight (default 1: at once); fewer wait to share the next group, so groups stay large.
   */
  readonly minBatchBeside?: number
  /** Most actions in one transaction (default 100). */
  readonly maxBatch?: number
  /**
   * Most actions waiting for a transaction (default 10,000). Past it an action is refused at once
   * with a `StorageError` (503 with `Retry-After`), rather than queueing without end.
   */
  readonly maxWaiting?: number
  /**
   * How a committed group hands each caller its answer (default: at once): called once per caller,
   * in order, after the next group has started. A runtime may defer answers so that the next
   * group's first statement goes out before the callers resume.
   */
  readonly handOff?: ((answer: () => void) => void) | undefined
  /** For tests: a check run on each action while it is planned; a throw is a defect of that action. */
  readonly planCheck?: ((work: IngestPlan.Work) => void) | undefined
}

const inProgress = () =>
  new IdempotencyKeyInProgress({ message: "the first request with this key is still processing" })

export const make = (options: BatchOptions = {}): Effect.Effect<Ingest["Type"], never, Requirements | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* IngestStore
    const directory = yield* DirectoryStore
    const transactor = yield* Transactor
    const signal = yield* OutboxSignal
    const clock = yield* Effect.clock

    const ids = (millis: number): IngestPlan.Ids => ({
      event: () => Ids.makeAt("EventId", millis),
      message: () => Ids.makeAt("MessageId", millis)
    })

    /** Load → plan → commit, in one transaction. */
    const apply = (work: ReadonlyArray<IngestPlan.Work>) =>
      transactor.withTransaction(Effect.gen(function*() {
        const request = IngestPlan.request(work)
        const snapshot = yield* store.load(request)
        const millis = yield* Clock.currentTimeMillis
        let input: IngestPlan.Input = {
          work,
          request,
          snapshot,
          history: new Map(),
          ids: ids(millis),
          check: options.planCheck
        }
        let result = IngestPlan.plan(input)
        // A late action needs its key's history, a crossed milestone its program's audience: read
        // what was asked, then plan again (a history read can reveal a crossing, hence a second turn).
        for (let turn = 0; result._tag === "Needs"; turn++) {
          if (turn === 2) {
            return yield* new StorageError({ message: "IngestStore: what the plan asked for was not answered" })
          }
          const { keys, programs } = result
          const known = input.history
          const [days, audience] = yield* Effect.all([
            keys.length === 0 ? Effect.succeed([]) : store.history(keys),
            programs.length === 0
              ? Effect.succeed(input.audience)
              : store.audience([...programs, ...(input.audience?.subscriptions.keys() ?? [])])
          ])
          input = {
            ...input,
            ids: ids(millis),
            history: new Map([...known, ...keys.map((k, n) => [keyOf(k), days[n]!] as const)]),
            audience
          }
          result = IngestPlan.plan(input)
        }
        // A defect is a bug in planning one action: roll the group back (freeing every key it
        // claimed, leaving no row it locked) so that each action is tried alone, and only that one fails.
        const defect = result.answers.find((a) => a._tag === "Defect")
        if (defect !== undefined) return yield* Effect.die(defect.defect)
        // Rare (a program's first real action): through the directory, so that a cache over it learns.
        for (const id of result.goLive) yield* directory.goLive(id)
        yield* store.commit(result.changes)
        return { answers: result.answers, enqueued: result.changes.outbox.length }
      }))

    // A group shares a transaction, never a fate: when its transaction fails, each action is tried
    // again in a transaction of its own (in order, so a member's actions keep their order), and only
    // an action whose own transaction fails answers that failure.
    const applyGroup = (
      work: ReadonlyArray<IngestPlan.Work>
    ): Effect.Effect<ReadonlyArray<Exit.Exit<IngestPlan.Answer, StorageError>>> =>
      apply(work).pipe(
        Effect.tap(({ enqueued }) => (enqueued > 0 ? signal.notify : Effect.void)),
        Effect.map(({ answers }) => answers.map((a) => Exit.succeed(a))),
        Effect.catchAllCause((cause) =>
          work.length === 1
            ? Effect.as(logFailure(cause), [Exit.failCause(cause)])
            : Effect.forEach(work, (w) => Effect.map(applyGroup([w]), (exits) => exits[0]!))
        )
      )

    const submit = yield* GroupCommit.make(applyGroup, {
      workers: options.workers ?? 1,
      minBatchBeside: options.minBatchBeside,
      maxBatch: options.maxBatch ?? 100,
      maxWaiting: options.maxWaiting ?? 10_000,
      overloaded: () => new StorageError({ message: "ingest is overloaded: too many actions wait for a transaction" }),
      handOff: options.handOff
    })

    const record = ({ action, auth, project }: RecordInput): Effect.Effect<IngestAnswer, RecordError | StorageError> =>
      Effect.suspend(() => {
        const now = new Date(clock.unsafeCurrentTimeMillis())
        // Step 2 again: embedders may build actions without the decode helpers.
        const invalid = EventInput.checkTimestamp(action, now)
        if (invalid !== undefined) return Effect.fail(invalid)
        return Effect.flatMap(
          authorize(directory, project, action, auth),
          ({ deprecation, program }) =>
            Effect.flatMap(submit({ project, program, action, door: auth.door, now }), (answer) => {
              switch (answer._tag) {
                case "Applied":
                  return Effect.succeed({ body: answer.body, deprecation })
                case "Replayed":
                  return Effect.succeed({ body: answer.response.body as IngestPlan.AnswerBody, deprecation })
                case "InProgress":
                  return Effect.fail(inProgress())
                case "Defect": // never answered: a group with a defect rolls back (see `apply`)
                  return Effect.die(answer.defect)
              }
            })
        )
      })

    return Ingest.of({ resolveProject: (siteKey) => resolve(directory, siteKey), record })
  })

const logFailure = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause)
    ? Effect.void
    : Cause.isDie(cause)
    ? Effect.logError("a defect while planning an action (it alone fails)", cause)
    : Effect.logWarning("an ingest transaction failed", cause)

/** `Ingest` with the default batching. */
export const layer: Layer.Layer<Ingest, never, Requirements> = Layer.scoped(Ingest, make())

/** `Ingest` with chosen batching. */
export const layerWith = (options: BatchOptions): Layer.Layer<Ingest, never, Requirements> =>
  Layer.scoped(Ingest, make(options))
