/**
 * Helpers shared by the storage conformance suites: the `it` they register tests on, which
 * `IngestStore` and `StateStore` a suite runs, concurrency, comparisons that ignore how an adapter
 * represents absent fields, and draining due work.
 */
import { describe, type Vitest } from "@effect/vitest"
import { Context, Data, Effect } from "effect"
import type { TestContext } from "vitest"
import type { OutboxMessage, StreakRow } from "@streaks/core/Domain"
import type { StorageError } from "@streaks/core/Errors"
import { Outbox, type Storage, StreakStore, Transactor } from "@streaks/core/Ports"
import type { Complete } from "@streaks/core/Storage"
import { withoutDue } from "../Fixtures.js"

/** Where an `IngestStore` or `StateStore` comes from: the adapter's own, or lifted from its ports by `Storage.layer`. */
export type Origin = "own" | "lifted"

/** Which `IngestStore` and `StateStore` the suite runs against. */
export class Origins extends Context.Tag("@streaks/storage-conformance/Origins")<Origins, {
  readonly ingest: Origin
  readonly state: Origin
}>() {}

/**
 * The `it` of a conformance suite: tests run on the live clock against the adapter's layer,
 * completed by `Storage.layer`.
 */
export type It = Vitest.MethodsNonLive<Complete | Origins, true>

/** The `it` of a suite that runs on one origin of a store: only `effect`. */
export interface OriginIt {
  readonly effect: <A, E>(
    name: string,
    self: (ctx: TestContext) => Effect.Effect<A, E, Complete | Origins>
  ) => void
}

const originNames: Record<Origin, string> = { own: "the adapter's own", lifted: "lifted from its ports" }
const storeNames: Record<keyof Origins["Type"], string> = { ingest: "IngestStore", state: "StateStore" }

/**
 * Registers `suite` twice, as "<title>, the adapter's own" and "<title>, lifted from its ports":
 * the block that does not match the store the adapter has reports its tests skipped, so a run
 * says which implementation passed and never counts one the adapter lacks as passed.
 */
export const perOrigin = (
  it: It,
  store: keyof Origins["Type"],
  title: string,
  suite: (it: OriginIt) => void
): void => {
  for (const origin of ["own", "lifted"] as const) {
    describe(`${title}, ${originNames[origin]}`, () =>
      suite({
        effect: (name, self) =>
          it.effect(name, (ctx) =>
            Effect.flatMap(Origins, (origins) =>
              origins[store] === origin
                ? Effect.asVoid(self(ctx))
                : Effect.sync(() => ctx.skip(`the adapter's ${storeNames[store]} is ${originNames[origins[store]]}`))))
      }))
  }
}

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
        (rows) => Effect.zipRight(Effect.yieldNow(), streaks.save(rows.map(withoutDue)))
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
    const claim = Effect.map(outbox.claimDue(now, options.limit ?? 10, leaseUntil), (claimed) => claimed.messages)
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
  /** A claim's `nextDueAt` is global: this test's messages must be the earliest pending ones anywhere. */
  nextDue: new Date("1970-01-01T00:00:01.000Z")
} as const

export const SECOND = 1_000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR
