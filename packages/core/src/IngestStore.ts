/**
 * The ingest port: what one group of actions reads before it is planned (`load`), the history a
 * late action needs (`history`), and the planned changes written in the same transaction (`commit`).
 * A store that only has the record-level ports gets it from `fromPorts`.
 */
import { Context, Effect, Layer } from "effect"
import type { LocalDate } from "./Calendar.js"
import type {
  Achievement,
  ActionRecord,
  Ledger,
  OutboundEventType,
  OutboxMessage,
  StreakKey,
  StreakRow
} from "./Domain.js"
import { StorageError } from "./Errors.js"
import type * as OutboundEvents from "./OutboundEvents.js"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "./Ids.js"
import {
  AchievementStore,
  ActionLog,
  Catalog,
  type IdempotencyClaim,
  IdempotencyStore,
  type KeyAnswer,
  type KeyRequest,
  type Member,
  MemberStore,
  Outbox,
  StreakStore,
  UsageStore,
  type UsageEntry
} from "./Ports.js"

type Io<A> = Effect.Effect<A, StorageError>

/** One action's member as sent, and the streak it counts toward, if it counts. */
export interface MemberRequest {
  readonly projectId: ProjectId
  /** The id as the action names it: the store resolves aliases. */
  readonly userHash: UserHash
  /**
   * The position in `LoadRequest.keys` of the action's idempotency key: its streak is locked only
   * if the key is `Claimed` (a replay or a key in progress changes nothing).
   */
  readonly key?: number
  /** The program and ledger of the streak to lock, for an action that counts. */
  readonly streak?: {
    readonly programId: ProgramId
    readonly ledger: Ledger
    /** The zone of a row created empty because the key has none yet. */
    readonly timezone: string
    /** Whether to read the key's achieved milestones (its program has milestones). */
    readonly withAchieved: boolean
  }
}

/** An idempotency key to claim inside the transaction; the answer stored with it. */
export type { KeyAnswer, KeyRequest } from "./Ports.js"

/** What a group of actions needs read before it can be planned. */
export interface LoadRequest {
  /** One per action, in the group's order. */
  readonly members: ReadonlyArray<MemberRequest>
  /** Distinct keys, sorted by project then key (one lock order for every caller). */
  readonly keys: ReadonlyArray<KeyRequest>
}

/** A locked streak row (created empty when missing) with its achieved milestones. */
export interface LockedStreak {
  readonly key: StreakKey
  readonly row: StreakRow
  /** Empty unless asked for (`withAchieved`). */
  readonly achieved: ReadonlyArray<MilestoneId>
}

/** One action's member after alias resolution, and its locked streak where asked. */
export interface LoadedMember {
  readonly member: Member
  readonly streak: LockedStreak | undefined
}

/** What `load` read, in the request's order. */
export interface Snapshot {
  readonly members: ReadonlyArray<LoadedMember>
  readonly claims: ReadonlyArray<IdempotencyClaim>
  /**
   * What the store itself learnt in `load` and needs again in `commit`, opaque to everyone else:
   * the planner hands it on untouched as `Changes.forCommit`. Stores over the ports have none.
   */
  readonly forCommit?: unknown
}

/** The events ingest emits: a milestone reached, its reward, a freeze earned. */
export const eventTypes: ReadonlyArray<OutboundEventType> = [
  "milestone.achieved",
  "reward.unlocked",
  "streak.freeze_earned"
]

/**
 * Who hears a program's events (`OutboundEvents.Audience`): its running experiment (control
 * groups hear nothing) and its subscriptions that listen to an event ingest emits (`eventTypes`).
 */
export type Audience = OutboundEvents.Audience

/** An active day to record; it MUST be new (the row's lock guarantees it). */
export interface NewDay {
  readonly key: StreakKey
  readonly day: LocalDate
}

/** A member's zone, stored once per group. */
export interface ZoneChange {
  readonly projectId: ProjectId
  readonly userHash: UserHash
  readonly timezone: string
}

/** Everything a planned group changes, written by `commit` in the transaction of its `load`. */
export interface Changes {
  readonly days: ReadonlyArray<NewDay>
  /** Whole rows, one per key. */
  readonly rows: ReadonlyArray<StreakRow>
  /** New achievements (never recorded before: the row's lock guarantees it). */
  readonly achievements: ReadonlyArray<Achievement>
  readonly usage: ReadonlyArray<UsageEntry>
  readonly zones: ReadonlyArray<ZoneChange>
  readonly actions: ReadonlyArray<ActionRecord>
  readonly outbox: ReadonlyArray<OutboxMessage>
  readonly answers: ReadonlyArray<KeyAnswer>
  /** `Snapshot.forCommit` of the `load` the changes were planned from, as it was. */
  readonly forCommit?: unknown
}

export const noChanges: Changes = {
  days: [],
  rows: [],
  achievements: [],
  usage: [],
  zones: [],
  actions: [],
  outbox: [],
  answers: []
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

/** Whether an action's streak is locked: it has no key, or `load` claimed its key. */
export const goesAhead = (member: MemberRequest, claims: ReadonlyArray<IdempotencyClaim>): boolean =>
  member.key === undefined || claims[member.key]?._tag === "Claimed"

/** The name of a key, for maps keyed by streak (the planner's history, adapters). */
export const keyOf = (k: Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">): string =>
  `${k.projectId}\u0000${k.programId}\u0000${k.userHash}\u0000${k.ledger}`

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
