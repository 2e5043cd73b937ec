/**
 * The ingest port: what one group of actions reads before it is planned (`load`), the history a
 * late action needs (`history`), and the planned changes written in the same transaction (`commit`).
 * A store that only has the record-level ports gets it from `fromPorts`.
 */
import { Context, Effect, Layer } from "effect"
import type { LocalDate } from "./Calendar.js"
import type { StreakKey } from "./Domain.js"
import { StorageError } from "./Errors.js"
import type { ProgramId } from "./Ids.js"
import {
  type Audience,
  type Changes,
  eventTypes,
  goesAhead,
  type KeyAnswer,
  type KeyRequest,
  keyOf,
  type LoadedMember,
  type LoadRequest,
  type LockedStreak,
  type MemberRequest,
  type NewDay,
  noChanges,
  type Snapshot,
  type ZoneChange
} from "./IngestRecords.js"
import {
  AchievementStore,
  ActionLog,
  Catalog,
  IdempotencyStore,
  MemberStore,
  Outbox,
  StreakStore,
  UsageStore
} from "./Ports.js"

type Io<A> = Effect.Effect<A, StorageError>

// The records of a group, defined apart (pure) so that the planners need not import this port.
export {
  type Audience,
  type Changes,
  eventTypes,
  goesAhead,
  type KeyAnswer,
  type KeyRequest,
  keyOf,
  type LoadedMember,
  type LoadRequest,
  type LockedStreak,
  type MemberRequest,
  type NewDay,
  noChanges,
  type Snapshot,
  type ZoneChange
}

export class IngestStore extends Context.Tag("@streaks/core/IngestStore")<IngestStore, {
  /**
   * Inside `Transactor.withTransaction`: resolves each member (as `MemberStore.lookup`), locks the
   * streak row of each asked key for the rest of the transaction (creating it empty when missing;
   * rows MUST be locked in one deterministic order so two groups cannot deadlock), reads its
   * achieved milestones where asked, claims each key (as `IdempotencyStore.claim`; a key held by
   * another running transaction MAY be answered `InProgress` at once, a store MAY also let the
   * claim wait for it). An action whose key is not claimed gets no row.
   */
  readonly load: (request: LoadRequest) => Io<Snapshot>
  /** The audience of programs whose members crossed a milestone (rare: read only then). */
  readonly audience: (programs: ReadonlyArray<ProgramId>) => Io<Audience>
  /** Every active day of each key, ascending (a late action recomputes from them). */
  readonly history: (keys: ReadonlyArray<StreakKey>) => Io<ReadonlyArray<ReadonlyArray<LocalDate>>>
  /**
   * Writes `changes` in the transaction of the `load` they were planned from. MUST fail (so the
   * transaction rolls back) if a day or achievement it is given already exists.
   */
  readonly commit: (changes: Changes) => Io<void>
}>() {}

const conflict = (what: string) =>
  new StorageError({
    message: `IngestStore.commit: ${what} was already recorded (the plan was made from a stale read)`
  })

/**
 * `IngestStore` over the record-level ports, for stores that do not implement it themselves
 * (memory, SQLite, yours): the same reads and writes, a port call each.
 */
export const fromPorts: Effect.Effect<
  IngestStore["Type"],
  never,
  MemberStore | StreakStore | AchievementStore | IdempotencyStore | Catalog | ActionLog | Outbox | UsageStore
> = Effect.gen(function*() {
  const members = yield* MemberStore
  const streaks = yield* StreakStore
  const achievements = yield* AchievementStore
  const idempotency = yield* IdempotencyStore
  const catalog = yield* Catalog
  const log = yield* ActionLog
  const outbox = yield* Outbox
  const usage = yield* UsageStore

  const load = (request: LoadRequest): Io<Snapshot> =>
    Effect.gen(function*() {
      const claims = request.keys.length === 0 ? [] : yield* idempotency.claim(request.keys)
      const found = yield* members.lookup(
        request.members.map((m) => ({ projectId: m.projectId, userHash: m.userHash }))
      )
      const asked = request.members.flatMap((m, i) =>
        m.streak === undefined || !goesAhead(m, claims) ? [] : [{
          i,
          key: {
            projectId: m.projectId,
            programId: m.streak.programId,
            userHash: found[i]!.userHash,
            ledger: m.streak.ledger
          } as StreakKey,
          timezone: m.streak.timezone,
          withAchieved: m.streak.withAchieved
        }]
      )
      const rows = yield* streaks.lock(asked.map((a) => ({ key: a.key, timezone: a.timezone })))
      const withAchieved = asked.filter((a) => a.withAchieved)
      const achieved = yield* achievements.achieved(withAchieved.map((a) => a.key))
      const achievedOf = new Map(withAchieved.map((a, n) => [a.i, achieved[n]!.map((x) => x.milestoneId)]))
      const streakOf = new Map(
        asked.map((a, n) => [a.i, { key: a.key, row: rows[n]!, achieved: achievedOf.get(a.i) ?? [] }])
      )
      return { members: request.members.map((_, i) => ({ member: found[i]!, streak: streakOf.get(i) })), claims }
    })

  const audience = (programs: ReadonlyArray<ProgramId>): Io<Audience> =>
    Effect.gen(function*() {
      if (programs.length === 0) return { experiments: new Map(), subscriptions: new Map() }
      const [running, listening] = yield* Effect.all([
        catalog.find("experiment", { programId: programs, endedAt: null }),
        catalog.find("subscription", { programId: programs })
      ])
      return {
        experiments: new Map(running.map((e) => [e.programId, e])),
        subscriptions: new Map(
          programs.map((id) => [
            id,
            listening.filter((s) => s.programId === id && s.eventTypes.some((t) => eventTypes.includes(t)))
          ])
        )
      }
    })

  const commit = (changes: Changes): Io<void> =>
    Effect.gen(function*() {
      if (changes.days.length > 0) {
        const added = yield* streaks.addDays(changes.days)
        if (!added.every(Boolean)) return yield* conflict("an active day")
      }
      if (changes.rows.length > 0) yield* streaks.save(changes.rows)
      if (changes.achievements.length > 0) {
        const added = yield* achievements.add(changes.achievements)
        if (!added.every(Boolean)) return yield* conflict("an achievement")
      }
      if (changes.usage.length > 0) yield* usage.markActive(changes.usage)
      if (changes.zones.length > 0) yield* members.setTimezones(changes.zones)
      if (changes.actions.length > 0) yield* log.append(changes.actions)
      if (changes.outbox.length > 0) yield* outbox.enqueue(changes.outbox)
      if (changes.answers.length > 0) yield* idempotency.complete(changes.answers)
    })

  return IngestStore.of({
    load,
    audience,
    history: (keys) => Effect.forEach(keys, (k) => streaks.days(k)),
    commit
  })
})

/** `IngestStore` from the record-level ports in context (see `fromPorts`). */
export const layerFromPorts = Layer.effect(IngestStore, fromPorts)
