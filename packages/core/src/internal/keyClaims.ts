/**
 * Idempotency keys claimed together (CONTRACT §4): a batch's keyed actions claim their keys in one
 * statement and commit (`IdempotencyStore.claimMany`) instead of one each.
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

/**
 * Claims `claims` (in arrival order) with one `claimMany` of their distinct keys, sorted. A key
 * sent twice is claimed by the first; the later one finds it in progress, as it would one
 * statement later.
 */
const claimTogether = (
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
    Effect.catchAll(() => Effect.forEach(claims, claimOne(store)))
  )
}

/**
 * Claims keys (in arrival order) in one `claimMany` where the store has it, else with one `claim`
 * per key, side by side; answers in input order.
 */
export const claimAll = (store: IdempotencyStore["Type"]) => {
  const claimMany = store.claimMany
  if (claimMany !== undefined) return (claims: ReadonlyArray<KeyClaim>) => claimTogether(store, claimMany, claims)
  return (claims: ReadonlyArray<KeyClaim>): Effect.Effect<ReadonlyArray<Exit.Exit<IdempotencyClaim, StorageError>>> =>
    Effect.forEach(claims, claimOne(store), { concurrency: "unbounded" })
}
