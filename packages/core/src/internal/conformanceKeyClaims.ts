/**
 * Conformance of `IdempotencyStore.claimWithin`, the claims a batch makes inside its transaction:
 * `claim`'s answers, held until the transaction ends, gone with a rollback, and never claimed twice.
 */
import { assert, describe } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { type IdempotencyClaim, IdempotencyStore, type KeyClaim, Transactor } from "../Ports.js"
import { at, epoch, randomHex, seedTenant } from "./conformanceFixtures.js"
import { Boom, concurrently, DAY, HOUR, type It, MINUTE, SECOND } from "./conformanceKit.js"

/** The answer the cases below complete their keys with. */
export const response = { status: 202, body: { ok: true, counted: true } }

/** A real pause, whatever clock the test runs on. */
const pause = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Claims `claims` inside a transaction, completes the claimed ones there, and commits. */
const claimAndComplete = (claims: ReadonlyArray<KeyClaim>) =>
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    return yield* Effect.flatMap(Transactor, (tx) =>
      tx.withTransaction(Effect.gen(function*() {
        const answers = yield* store.claimWithin!(claims)
        const claimed = claims.filter((_, i) => answers[i]!._tag === "Claimed")
        yield* Effect.forEach(claimed, (c) => store.complete(c.projectId, c.key, response, c.now), { discard: true })
        return answers
      })))
  })

/**
 * 10 concurrent calls of `claimAll` on the same five keys: each key is Claimed by exactly one of
 * them (the others are told it is in progress or done).
 */
export const claimedOnceEach = <E, R>(
  claimAll: (claims: ReadonlyArray<KeyClaim>) => Effect.Effect<ReadonlyArray<IdempotencyClaim>, E, R>
) =>
  Effect.gen(function*() {
    const { project } = yield* seedTenant()
    const keys = Array.from({ length: 5 }, (_, i) => `k${i}-${randomHex(6)}`).sort()
    const results = yield* concurrently(10, () => claimAll(keys.map((key) => ({ projectId: project.id, key, now: epoch }))))
    for (let k = 0; k < keys.length; k++) {
      assert.deepStrictEqual(results.map((r) => r[k]!._tag).filter((tag) => tag === "Claimed"), ["Claimed"])
    }
  })

/**
 * Keys in each state a claim can meet (new, in progress, abandoned, completed, expired, and one
 * key in two projects), set up with `claim` and `complete`: the claims `claimMany` and
 * `claimWithin` are asked, in an order of their own, what each answers, and those it claims.
 */
export const seedKeyCases = Effect.gen(function*() {
  const store = yield* IdempotencyStore
  const { project } = yield* seedTenant()
  const other = (yield* seedTenant()).project
  const t0 = epoch
  const [fresh, young, stale, done, old] = ["fresh", "young", "stale", "done", "old"].map((k) => `${k}-${randomHex(6)}`)
  for (const key of [young, stale, done, old]) yield* store.claim(project.id, key, t0)
  yield* store.complete(project.id, done, response, at(t0, SECOND))
  yield* store.complete(project.id, old, response, at(t0, SECOND))
  const claims: ReadonlyArray<KeyClaim> = [
    { projectId: project.id, key: done, now: at(t0, HOUR) },
    { projectId: project.id, key: fresh, now: t0 },
    { projectId: project.id, key: old, now: at(t0, DAY + MINUTE) },
    { projectId: project.id, key: stale, now: at(t0, 31 * SECOND) },
    { projectId: project.id, key: young, now: at(t0, 29 * SECOND) },
    { projectId: other.id, key: young, now: t0 }
  ]
  const answers: ReadonlyArray<IdempotencyClaim> = [
    { _tag: "Completed", response },
    { _tag: "Claimed" },
    { _tag: "Claimed" },
    { _tag: "Claimed" },
    { _tag: "InProgress" },
    { _tag: "Claimed" }
  ]
  return { claims, answers, claimed: claims.filter((_, i) => answers[i]!._tag === "Claimed") }
})

// `claimWithin` is optional: a store without it is skipped here (ingest then claims ahead of the
// transaction, with `claimMany` or `claim`).
export const keyClaimSuite = (it: It) =>
  describe("IdempotencyStore.claimWithin", () => {
    it.effect("answers each key as claim would at its own time, in input order; what it claimed and completed replays after the commit", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.claimWithin === undefined) return
        const { answers, claimed, claims } = yield* seedKeyCases
        assert.deepStrictEqual(yield* claimAndComplete(claims), answers)
        for (const { key, now, projectId } of claimed) {
          assert.deepStrictEqual(yield* store.claim(projectId, key, at(now, SECOND)), { _tag: "Completed", response })
          // The record's lifetime counts from this claim.
          assert.deepStrictEqual(yield* store.claim(projectId, key, at(now, DAY)), { _tag: "Claimed" })
        }
        assert.deepStrictEqual(yield* Effect.flatMap(Transactor, (tx) => tx.withTransaction(store.claimWithin!([]))), [])
      }))

    it.effect("a transaction that claimed keys and failed leaves them free", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.claimWithin === undefined) return
        const tx = yield* Transactor
        const { project } = yield* seedTenant()
        const keys = [`a-${randomHex(6)}`, `b-${randomHex(6)}`]
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          const answers = yield* store.claimWithin!(keys.map((key) => ({ projectId: project.id, key, now: epoch })))
          assert.deepStrictEqual(answers, [{ _tag: "Claimed" }, { _tag: "Claimed" }])
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        for (const key of keys) assert.deepStrictEqual(yield* store.claim(project.id, key, at(epoch, SECOND)), { _tag: "Claimed" })
      }))

    it.effect("a key held by a running transaction is not claimed by claim, claimMany or another transaction; after its commit they replay", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.claimWithin === undefined) return
        const tx = yield* Transactor
        const { project } = yield* seedTenant()
        const claim = { projectId: project.id, key: `held-${randomHex(6)}`, now: epoch }
        const later = { ...claim, now: at(epoch, SECOND) }
        const holding = yield* Deferred.make<void>()
        const answered = yield* Deferred.make<void>()
        // The holder stays open until the others have answered, or for 300 ms where they wait for
        // it to end (a store whose transactions run one at a time).
        const holder = yield* Effect.fork(tx.withTransaction(Effect.gen(function*() {
          const [answer] = yield* store.claimWithin!([claim])
          yield* Deferred.succeed(holding, undefined)
          yield* Effect.raceFirst(Deferred.await(answered), pause(300))
          yield* store.complete(claim.projectId, claim.key, response, claim.now)
          return answer
        })))
        yield* Deferred.await(holding)
        const others: ReadonlyArray<IdempotencyClaim> = yield* Effect.all([
          store.claim(later.projectId, later.key, later.now),
          store.claimMany === undefined ? store.claim(later.projectId, later.key, later.now) : Effect.map(store.claimMany([later]), (a) => a[0]!),
          Effect.map(claimAndComplete([later]), (a) => a[0]!)
        ], { concurrency: "unbounded" })
        yield* Deferred.succeed(answered, undefined)
        assert.deepStrictEqual(yield* Fiber.join(holder), { _tag: "Claimed" })
        for (const answer of others) assert.oneOf(answer._tag, ["InProgress", "Completed"])
        assert.deepStrictEqual(yield* store.claim(later.projectId, later.key, at(epoch, MINUTE)), { _tag: "Completed", response })
      }))

    it.effect("of 10 concurrent transactions claiming the same keys, each key is Claimed exactly once", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.claimWithin === undefined) return
        yield* claimedOnceEach(claimAndComplete)
      }))
  })
