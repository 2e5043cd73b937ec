/**
 * Helpers shared by the storage conformance suites: the `it` they register tests on, concurrency,
 * comparisons that ignore how an adapter represents absent fields, and draining due work.
 */
import type { Vitest } from "@effect/vitest"
import { Data, Effect } from "effect"
import type { OutboxMessage, StreakRow } from "../Domain.js"
import type { StorageError } from "../Errors.js"
import type { IngestStore } from "../IngestStore.js"
import { Outbox, type Storage, StreakStore, Transactor } from "../Ports.js"
import { withoutDue } from "./conformanceFixtures.js"

/** The `it` of a conformance suite: tests run against the adapter's layer on the live clock. */
export type It = Vitest.MethodsNonLive<Storage | IngestStore, true>

/** The error a test's unit of work fails with on purpose. */
export class Boom extends Data.TaggedError("Boom")<{}> {}

/** Runs `n` copies of `f` at once, each on its own fiber. */
export const concurrently = <A, E, R>(n: number, f: (i: number) => Effect.Effect<A, E, R>) =>
  Effect.all(Array.from({ length: n }, (_, i) => f(i)), { concurrency: "unbounded" })

/** Own fields of an entity with absent values dropped, so `undefined` and a missing key compare equal. */
export const plain = (value: object): Record<string, unknown> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null))

/** Sorted copy, by a string key. */
export const sortBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Array<A> =>
  [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))

export const countTrue = (values: ReadonlyArray<boolean>): number => values.filter((v) => v).length

// Guards the drain loops: a broken adapter that keeps handing out the same work must fail the
// test rather than hang it.
const MAX_BATCHES = 1_000

const loop = <A>(batch: Effect.Effect<ReadonlyArray<A>, StorageError, Storage>) =>
  Effect.gen(function*() {
    const claimed: Array<A> = []
    for (let i = 0; i < MAX_BATCHES; i++) {
      const items = yield* batch
      if (items.length === 0) return claimed
      claimed.push(...items)
    }
    return yield* Effect.dieMessage("claimDue kept returning work: claimed items are handed out again")
  })

/**
 * A scheduler-like claimer: in one transaction per batch, claims up to `limit` due streak rows and
 * saves each with nothing due; stops when a claim comes back empty. Returns every row it claimed.
 */
export const drainStreaks = (now: Date, limit = 10) =>
  Effect.gen(function*() {
    const tx = yield* Transactor
    const streaks = yield* StreakStore
    return yield* loop<StreakRow>(tx.withTransaction(
      Effect.tap(
        streaks.claimDue(now, limit),
        (rows) =>
          Effect.zipRight(
            Effect.yieldNow(),
            Effect.forEach(rows, (row) => streaks.save(withoutDue(row)), { discard: true })
          )
      )
    ))
  })

/**
 * A dispatcher-like claimer: claims due outbox messages with a lease until `leaseUntil` (which
 * must be after `now`) until a claim comes back empty; optionally one transaction per batch.
 */
export const drainOutbox = (
  now: Date,
  leaseUntil: Date,
  options: { readonly transaction?: boolean; readonly limit?: number } = {}
) =>
  Effect.gen(function*() {
    const tx = yield* Transactor
    const outbox = yield* Outbox
    const claim = outbox.claimDue(now, options.limit ?? 10, leaseUntil)
    return yield* loop<OutboxMessage>(options.transaction === true ? tx.withTransaction(claim) : claim)
  })

/**
 * Instants of the tests that claim due work. Claims see every adapter's due rows, not only the
 * test's own, so these tests work far in the past where nothing else is due, drain what they find,
 * assert only about their own rows, and clean up after themselves.
 */
export const ancient = {
  streakLimit: new Date("2000-01-01T00:00:00.000Z"),
  streakClaimers: new Date("2000-02-01T00:00:00.000Z"),
  outboxLimit: new Date("2000-03-01T00:00:00.000Z"),
  outboxLease: new Date("2000-04-01T00:00:00.000Z"),
  outboxStale: new Date("2000-04-15T00:00:00.000Z"),
  outboxClaimers: new Date("2000-05-01T00:00:00.000Z"),
  purge: new Date("2001-01-01T00:00:00.000Z"),
  /** `nextDueAt` is global: this test's messages must be the earliest pending ones anywhere. */
  nextDue: new Date("1970-01-01T00:00:01.000Z")
} as const

export const SECOND = 1_000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR
