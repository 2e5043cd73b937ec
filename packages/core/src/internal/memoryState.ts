/**
 * State and transactions of the in-memory adapter: plain maps of immutable entities, one lock,
 * and an undo journal so that a failed unit of work is rolled back write by write.
 */
import { Effect, Exit, FiberRef } from "effect"
import type { LocalDate } from "../Calendar.js"
import type {
  Achievement,
  ActionRecord,
  AuditEntry,
  DeliveryAttempt,
  OutboxMessage,
  StoredResponse,
  StreakRow
} from "../Domain.js"
import type { MessageId, MilestoneId, UserHash } from "../Ids.js"
import type { ImportJob } from "../ImportStore.js"
import type { CatalogKind, CatalogRecords } from "../Ports.js"

/**
 * Records the inverse of every write made while a transaction is open. Entities are never
 * mutated in place (they are replaced), so undoing map/set operations restores the exact state,
 * and the cost of a rollback follows the number of writes, not the size of the store.
 */
export class Journal {
  private entries: Array<() => void> | undefined = undefined

  get active(): boolean {
    return this.entries !== undefined
  }
  /** Starts recording; returns the mark to roll back to. */
  open(): void {
    this.entries = []
  }
  close(): void {
    this.entries = undefined
  }
  mark(): number {
    return this.entries?.length ?? 0
  }
  /** Undoes every write made after `mark`, newest first. */
  rollbackTo(mark: number): void {
    const entries = this.entries
    if (entries === undefined) return
    while (entries.length > mark) entries.pop()!()
  }

  set<K, V>(map: Map<K, V>, key: K, value: V): void {
    if (this.entries !== undefined) {
      if (map.has(key)) {
        const old = map.get(key) as V
        this.entries.push(() => map.set(key, old))
      } else {
        this.entries.push(() => map.delete(key))
      }
    }
    map.set(key, value)
  }
  delete<K, V>(map: Map<K, V>, key: K): boolean {
    if (!map.has(key)) return false
    if (this.entries !== undefined) {
      const old = map.get(key) as V
      this.entries.push(() => map.set(key, old))
    }
    return map.delete(key)
  }
  add<V>(set: Set<V>, value: V): boolean {
    if (set.has(value)) return false
    if (this.entries !== undefined) this.entries.push(() => set.delete(value))
    set.add(value)
    return true
  }
  push<V>(array: Array<V>, value: V): void {
    if (this.entries !== undefined) this.entries.push(() => array.pop())
    array.push(value)
  }
}

export interface IdempotencyRecord {
  /** Millis of first receipt: both the 30 s claim expiry and the 24 h lifetime count from it. */
  readonly claimedAt: number
  readonly response: StoredResponse | undefined
}

/** The records of the catalog: one map per kind, by id. */
export type CatalogMaps = { readonly [K in CatalogKind]: Map<string, CatalogRecords[K]> }

/** Everything the adapter stores; composite keys are JSON arrays (see `keyOf`, `pair`). */
export interface MemoryState {
  readonly journal: Journal
  readonly catalog: CatalogMaps
  /** (projectId, anonymousId) → member. */
  readonly aliases: Map<string, UserHash>
  /** (projectId, userHash) → IANA zone. */
  readonly timezones: Map<string, string>
  readonly streaks: Map<string, StreakRow>
  readonly days: Map<string, Set<LocalDate>>
  readonly achievements: Map<string, Map<MilestoneId, Achievement>>
  readonly actions: Array<ActionRecord>
  /** (projectId, idempotencyKey) → record. */
  readonly idempotency: Map<string, IdempotencyRecord>
  readonly messages: Map<MessageId, OutboxMessage>
  readonly attempts: Map<MessageId, ReadonlyArray<DeliveryAttempt>>
  /** (workspaceId, month) → members. */
  readonly usage: Map<string, Set<string>>
  /** The audit log, in the order appended. */
  readonly audit: Array<AuditEntry>
  /** Import jobs by id. */
  readonly imports: Map<string, ImportJob>
  /** (programId, identity) of every imported line. */
  readonly importIdentities: Set<string>
  /** Import id → members it touched. */
  readonly importMembers: Map<string, Set<UserHash>>
}

export const makeState = (): MemoryState => ({
  journal: new Journal(),
  catalog: {
    workspace: new Map(),
    project: new Map(),
    program: new Map(),
    subscription: new Map(),
    apiKey: new Map(),
    grant: new Map(),
    experiment: new Map(),
    oauthClient: new Map(),
    authorizationCode: new Map(),
    oauthToken: new Map(),
    user: new Map(),
    session: new Map(),
    invite: new Map()
  },
  audit: [],
  aliases: new Map(),
  timezones: new Map(),
  streaks: new Map(),
  days: new Map(),
  achievements: new Map(),
  actions: [],
  idempotency: new Map(),
  messages: new Map(),
  attempts: new Map(),
  usage: new Map(),
  imports: new Map(),
  importIdentities: new Set(),
  importMembers: new Map()
})

/** A composite map key; JSON keeps parts apart whatever characters they contain. */
export const pair = (...parts: ReadonlyArray<string>): string => JSON.stringify(parts)

/** The map key of a streak (a `StreakKey` or a `StreakRow`). */
export const keyOf = (key: {
  readonly projectId: string
  readonly programId: string
  readonly userHash: string
  readonly ledger: string
}): string => pair(key.projectId, key.programId, key.userHash, key.ledger)

/** Runs synchronous reads and writes of the state atomically, and units of work as transactions. */
export interface Runner {
  /** Runs `f` inside the caller's open transaction, or alone under the lock (undone if it throws). */
  readonly run: <A>(f: () => A) => Effect.Effect<A>
  readonly withTransaction: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const makeRunner = (journal: Journal): Runner => {
  // One permit: transactions and single calls are serialised, which gives the isolation the
  // ports ask for (row locks, skip-locked claims) without any finer-grained locking.
  const lock = Effect.unsafeMakeSemaphore(1)
  // The transaction the current fiber belongs to. A token (not a boolean) so that a fiber forked
  // inside a transaction that outlives it does not mistake a later transaction for its own.
  const current = FiberRef.unsafeMake<object | undefined>(undefined)
  let open: object | undefined = undefined

  const inTransaction = Effect.map(FiberRef.get(current), (token) => token !== undefined && token === open)

  const alone = <A>(f: () => A): Effect.Effect<A> =>
    lock.withPermits(1)(Effect.sync(() => {
      journal.open()
      try {
        return f()
      } catch (error) {
        journal.rollbackTo(0)
        throw error
      } finally {
        journal.close()
      }
    }))

  const run = <A>(f: () => A): Effect.Effect<A> =>
    Effect.flatMap(inTransaction, (joined) => joined ? Effect.sync(f) : alone(f))

  // A nested unit of work joins the outer transaction; if it fails, only its own writes are
  // undone (like a SQL savepoint) and the outer one decides what happens next.
  const savepoint = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const mark = journal.mark()
      return Effect.onExit(self, (exit) =>
        Exit.isFailure(exit) ? Effect.sync(() => journal.rollbackTo(mark)) : Effect.void)
    })

  const transaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    lock.withPermits(1)(Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const token = {}
        open = token
        journal.open()
        return restore(Effect.locally(self, current, token)).pipe(
          // Any failure, defect or interruption restores the state as it was at the start.
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isFailure(exit)) journal.rollbackTo(0)
              journal.close()
              open = undefined
            })
          )
        )
      })
    ))

  const withTransaction = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(inTransaction, (joined) => joined ? savepoint(self) : transaction(self))

  return { run, withTransaction }
}
