/**
 * Idempotency keys claimed together (CONTRACT §4): the keyed actions that arrive while a claim is
 * out share the next one, one statement and commit (`IdempotencyStore.claimMany`) instead of one each.
 */
import { Effect, Exit, type Scope } from "effect"
import type { StorageError } from "../Errors.js"
import type * as Finished from "../Finished.js"
import type { IdempotencyClaim, IdempotencyStore, KeyClaim } from "../Ports.js"
import * as Coalesce from "./coalesce.js"

/** Claims one key and calls `onExit` with the answer, shared with the claims that arrive beside it. */
export type Claims = (claim: KeyClaim, onExit: (exit: Exit.Exit<IdempotencyClaim, StorageError>) => void) => void

export interface Options {
  /** Most keys in one claim. */
  readonly maxBatch: number
  /** See `Coalesce.Options.answering`. */
  readonly answering: (answerAll: () => void) => void
}

// Project ids hold no "/", so the first one in the pair ends the project.
const pairOf = (c: KeyClaim) => `${c.projectId}/${c.key}`

const byProjectThenKey = (a: KeyClaim, b: KeyClaim) =>
  a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0

const inProgress: IdempotencyClaim = { _tag: "InProgress" }

/**
 * Claims `claims` (in arrival order) with one `claimMany` of their distinct keys, sorted. A key
 * sent twice is claimed by the first; the later one finds it in progress, as it would one
 * statement later.
 */
const claimAll = (
  store: IdempotencyStore["Type"],
  claimMany: NonNullable<IdempotencyStore["Type"]["claimMany"]>,
  claims: ReadonlyArray<KeyClaim>
): Effect.Effect<ReadonlyArray<Exit.Exit<IdempotencyClaim, StorageError>>> => {
  const firsts = new Map<string, KeyClaim>()
  for (const c of claims) if (!firsts.has(pairOf(c))) firsts.set(pairOf(c), c)
  const distinct = [...firsts.values()].sort(byProjectThenKey)
  return claimMany(distinct).pipe(
    Effect.map((answers) => {
      const answerOf = new Map(distinct.map((c, i) => [pairOf(c), answers[i]!]))
      const seen = new Set<string>()
      return claims.map((c) => {
        const pair = pairOf(c)
        const answer = answerOf.get(pair)!
        if (!seen.has(pair)) {
          seen.add(pair)
          return Exit.succeed(answer)
        }
        return Exit.succeed(answer._tag === "Claimed" ? inProgress : answer)
      })
    }),
    // A failed statement is tried again one key at a time, so that it fails only the keys it must.
    Effect.catchAll(() => Effect.forEach(claims, (c) => Effect.exit(store.claim(c.projectId, c.key, c.now))))
  )
}

/** `Claims` on `store`: together through `claimMany` when the store has it, else one `claim` each. */
export const make = (
  store: IdempotencyStore["Type"],
  run: Finished.Runner,
  options: Options
): Effect.Effect<Claims, never, Scope.Scope> => {
  const claimMany = store.claimMany
  if (claimMany === undefined) {
    return Effect.succeed((c, onExit) => run(store.claim(c.projectId, c.key, c.now), onExit))
  }
  return Effect.map(
    Coalesce.make((claims: ReadonlyArray<KeyClaim>) => claimAll(store, claimMany, claims), {
      workers: 1,
      maxBatch: options.maxBatch,
      answering: options.answering
    }),
    (front) => front.submit
  )
}
