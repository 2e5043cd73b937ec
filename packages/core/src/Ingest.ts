/**
 * The one ingest pipeline behind the four doors (`/v1/e`, `/v1/server/e`, `/v1/webhook/:siteKey/e`,
 * customer REST count-action): checks in the order of CONTRACT §2, idempotency (§4), test/live (§3).
 */
import { Context, Effect, Layer } from "effect"
import type { Project } from "./Domain.js"
import { IdempotencyKeyInProgress, type InvalidSiteKey, type StorageError } from "./Errors.js"
import * as EventInput from "./EventInput.js"
import type { Action } from "./EventInput.js"
import { type AnswerBody, apply, type ApplyServices } from "./internal/ingestApply.js"
import { type Auth, type AuthError, authorize, resolveProject as resolve } from "./internal/ingestAuth.js"
import { nowDate } from "./internal/streakProgress.js"
import { OutboxSignal } from "./OutboundEvents.js"
import { DirectoryStore, IdempotencyStore, Transactor } from "./Ports.js"

export type { AnswerBody } from "./internal/ingestApply.js"
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
   */
  readonly record: (input: RecordInput) => Effect.Effect<IngestAnswer, RecordError | StorageError>
}>() {}

/**
 * A stored answer in the shape of the door asking now: the key's scope is the project, so a key
 * first used on another door replays its outcome with or without `ok` as this door answers.
 */
const replayed = (door: Auth["door"], stored: unknown): AnswerBody => {
  const { ok: _, ...rest } = stored as AnswerBody
  return door === "api" ? rest : { ok: true, ...rest }
}

/** The services `Ingest.layer` needs: the storage ports it touches and the outbox signal. */
export type Requirements = ApplyServices | Transactor | IdempotencyStore | OutboxSignal

export const make: Effect.Effect<Ingest["Type"], never, Requirements> = Effect.gen(function*() {
  const context = yield* Effect.context<Requirements>()
  const directory = yield* DirectoryStore
  const transactor = yield* Transactor
  const idempotency = yield* IdempotencyStore
  const signal = yield* OutboxSignal

  const resolveProject = (siteKey: string): Effect.Effect<Project, InvalidSiteKey | StorageError> =>
    Effect.provideService(resolve(siteKey), DirectoryStore, directory)

  const record = ({ action, auth, project }: RecordInput): Effect.Effect<IngestAnswer, RecordError | StorageError> =>
    Effect.gen(function*() {
      // Step 2 again: embedders may build actions without the decode helpers.
      yield* EventInput.checkNotInFuture(action)
      const { deprecation, program } = yield* authorize(project, action, auth)
      const now = yield* nowDate
      const work = apply(project, program, action, auth.door, now)
      const key = action.idempotencyKey

      if (key === undefined) {
        const done = yield* transactor.withTransaction(work)
        if (done.enqueued > 0) yield* signal.notify
        return { body: done.body, deprecation }
      }

      // The claim is taken outside the transaction, so a concurrent repeat sees it at once.
      const claim = yield* idempotency.claim(project.id, key, now)
      if (claim._tag === "Completed") return { body: replayed(auth.door, claim.response.body), deprecation }
      if (claim._tag === "InProgress") {
        return yield* new IdempotencyKeyInProgress({ message: "the first request with this key is still processing" })
      }
      const done = yield* transactor.withTransaction(
        // Storing the answer in the same transaction makes "done" and "answer stored" one fact.
        Effect.tap(work, (d) => idempotency.complete(project.id, key, { status: 202, body: d.body }, now))
      ).pipe(Effect.onError(() => Effect.ignore(idempotency.release(project.id, key))))
      if (done.enqueued > 0) yield* signal.notify
      return { body: done.body, deprecation }
    }).pipe(Effect.provide(context))

  return Ingest.of({ resolveProject, record })
})

export const layer: Layer.Layer<Ingest, never, Requirements> = Layer.effect(Ingest, make)
