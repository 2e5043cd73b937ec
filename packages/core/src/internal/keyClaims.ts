/**
 * Idempotency keys claimed together (CONTRACT §4): a batch's keyed actions claim their keys in one
 * statement, inside the batch's transaction (`IdempotencyStore.claimWithin`) or ahead of it in a
 * commit of their own (`claimMany`), instead of one each.
 */
import { Effect, Exit } from "effect"
import type { StorageError } from "../Errors.js"
import type { IdempotencyClaim, IdempotencyStore, KeyClaim } from "../Ports.js"

// Project ids hold no "/", so the first one in the pair ends the project.
const pairOf = (c: KeyClaim) => `${c.projectId}/${c.key}`

const byProjectThenKey = (a: KeyClaim, b: KeyClaim) =>
  a.projectId < b.projectId ? -1 : a.projectId > b.projectId ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0

const inProgress: IdempotencyClaim = { _tag: "InProgress" }

const claimOne = (store: IdempotencyStore["Type"]) => (c: KeyClaim) => Effect.exit(store.claim(c.projectId, c.key, c.now))

type ClaimMany = (claims: ReadonlyArray<KeyClaim>) => Effect.Effect<ReadonlyArray<IdempotencyClaim>, StorageError>

/**
 * Claims `claims` (in arrival order) with one call of `many` for their distinct keys, sorted (so
 * that concurrent calls take their locks in one order). A key sent twice is claimed by the first;
 * the later one finds it in progress, as it would one statement later.
 */
export const claimDistinct = (many: ClaimMany, claims: ReadonlyArray<KeyClaim>): Effect.Effect<ReadonlyArray<IdempotencyClaim>, StorageError> => {
  const firsts = new Map<string, KeyClaim>()
  for (const c of claims) if (!firsts.has(pairOf(c))) firsts.set(pairOf(c), c)
  const distinct = [...firsts.values()].sort(byProjectThenKey)
  return Effect.map(many(distinct), (answers) => {
    const answerOf = new Map(distinct.map((c, i) => [pairOf(c), answers[i]!]))
    const seen = new Set<string>()
    return claims.map((c) => {
      const pair = pairOf(c)
      const answer = answerOf.get(pair)!
      if (seen.has(pair)) return answer._tag === "Claimed" ? inProgress : answer
      seen.add(pair)
      return answer
    })
  })
}

/**
 * Claims keys (in arrival order) ahead of a transaction: in one `claimMany` where the store has it
 * (a failed one is tried again one key at a time, so that it fails only the keys it must), else
 * with one `claim` per key, side by side; answers in input order.
 */
export const claimAll = (store: IdempotencyStore["Type"]) => {
  const claimMany = store.claimMany
  if (claimMany !== undefined) {
    return (claims: ReadonlyArray<KeyClaim>): Effect.Effect<ReadonlyArray<Exit.Exit<IdempotencyClaim, StorageError>>> =>
      claimDistinct(claimMany, claims).pipe(
        Effect.map((answers) => answers.map(Exit.succeed)),
        Effect.catchAll(() => Effect.forEach(claims, claimOne(store)))
      )
  }
  return (claims: ReadonlyArray<KeyClaim>): Effect.Effect<ReadonlyArray<Exit.Exit<IdempotencyClaim, StorageError>>> =>
    Effect.forEach(claims, claimOne(store), { concurrency: "unbounded" })
}
