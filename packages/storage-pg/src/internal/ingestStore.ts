/**
 * `IngestStore` on Postgres: a group's reads in one round trip where the members acted before, its
 * writes in another, each statement pipelined on the transaction's connection (`pipelined`).
 */
import type { LocalDate } from "@streaks/core/Calendar"
import { StreakKey as StreakKeyClass, type StreakKey, unsafeMake } from "@streaks/core/Domain"
import { StorageError } from "@streaks/core/Errors"
import {
  type Audience,
  eventTypes,
  goesAhead,
  type IngestStore,
  type LoadRequest,
  type LockedStreak,
  type Snapshot
} from "@streaks/core/IngestStore"
import type {
  AchievementStore,
  ActionLog,
  Catalog,
  IdempotencyStore,
  MemberStore,
  Outbox,
  StreakStore,
  UsageStore
} from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import type { AchievementExtras } from "./achievementStore.js"
import type { SummaryGroup } from "./activeSpans.js"
import { keyOf } from "./batch.js"
import { pipelined } from "./pipeline.js"
import type { StreakExtras } from "./streakStore.js"

export interface Stores {
  readonly catalog: Catalog["Type"]
  readonly members: MemberStore["Type"]
  readonly streaks: StreakStore["Type"] & StreakExtras
  readonly achievements: AchievementStore["Type"] & AchievementExtras
  readonly idempotency: IdempotencyStore["Type"]
  readonly log: ActionLog["Type"]
  readonly outbox: Outbox["Type"]
  readonly usage: UsageStore["Type"]
}

const none = Effect.succeed([] as ReadonlyArray<never>)

/** Most keys whose history is read one statement per key. */
const HISTORY_PIPELINED = 16

/**
 * What `load` learns for `commit` (`Snapshot.forCommit`), by key: the usage month each locked row
 * was last metered in (`metered_month`; a member whose row says it was marked in a month needs no
 * mark in that month again), and the `streak_summaries` group each locked row is in, which the
 * transaction's lock keeps until the commit moves the row.
 */
class Loaded {
  constructor(
    readonly meteredMonths: ReadonlyMap<string, string>,
    readonly groups: ReadonlyMap<string, SummaryGroup>
  ) {}
}

const nothingLoaded = new Loaded(new Map(), new Map())

/** `Changes.forCommit` as `load` left it; nothing known for changes not planned from a `load` of ours. */
const loadedOf = (forCommit: unknown): Loaded => forCommit instanceof Loaded ? forCommit : nothingLoaded

const conflict = (what: string) =>
  new StorageError({
    message: `IngestStore.commit: ${what} was already recorded (the plan was made from a stale read)`
  })

export const make = (stores: Stores): IngestStore["Type"] => {
  const { achievements, catalog, idempotency, members, streaks } = stores

  // The programs' running experiments and their subscriptions, two statements in one round trip.
  const audience: IngestStore["Type"]["audience"] = (programs) =>
    programs.length === 0 ?
      Effect.succeed<Audience>({ experiments: new Map(), subscriptions: new Map() }) :
      Effect.map(
        pipelined([
          catalog.find("experiment", { programId: programs, endedAt: null }),
          catalog.find("subscription", { programId: programs })
        ]),
        ([running, listening]): Audience => ({
          experiments: new Map(running.map((e) => [e.programId, e])),
          subscriptions: new Map(programs.map((id) => [
            id,
            listening.filter((s) => s.programId === id && s.eventTypes.some((type) => eventTypes.includes(type)))
          ]))
        })
      )

  const load = (request: LoadRequest): Effect.Effect<Snapshot, StorageError> =>
    Effect.gen(function*() {
      const asked = request.members.flatMap((m, i) => (m.streak === undefined ? [] : [i]))
      // The rows of the ids as sent are locked with the members' lookup, before it is known which
      // ids are aliases: it creates nothing, so an alias's key gets no row.
      const sentKey = (i: number): StreakKey => {
        const m = request.members[i]!
        return unsafeMake(StreakKeyClass, {
          projectId: m.projectId,
          programId: m.streak!.programId,
          userHash: m.userHash,
          ledger: m.streak!.ledger
        })
      }
      const [found, ahead, claims] = yield* pipelined([
        members.lookup(request.members.map((m) => ({ projectId: m.projectId, userHash: m.userHash }))),
        asked.length === 0
          ? none
          : streaks.lockExistingWithAchieved(
            asked.map((i) => ({ key: sentKey(i), withAchieved: request.members[i]!.streak!.withAchieved }))
          ),
        request.keys.length === 0 ? none : idempotency.claim(request.keys)
      ])
      const locked = new Map<number, LockedStreak>()
      const months = new Map<string, string>()
      const groups = new Map<string, SummaryGroup>()
      const toLock: Array<{ readonly i: number; readonly key: StreakKey }> = []
      const held = new Set(asked.filter((i) => !goesAhead(request.members[i]!, claims)))
      const toAsk: Array<{ readonly i: number; readonly key: StreakKey }> = []
      asked.forEach((i, n) => {
        const m = request.members[i]!
        const streak = m.streak!
        const canonical = found[i]!.userHash
        const key = canonical === m.userHash
          ? sentKey(i)
          : unsafeMake(StreakKeyClass, {
            projectId: m.projectId,
            programId: streak.programId,
            userHash: canonical,
            ledger: streak.ledger
          })
        const row = canonical === m.userHash ? ahead[n]! : Option.none()
        // A replay, or a key in progress, changes nothing: no row is created for it.
        if (Option.isNone(row)) return held.has(i) ? undefined : toLock.push({ i, key })
        if (held.has(i)) return
        locked.set(i, { key, row: row.value.row, achieved: row.value.achieved ?? [] })
        groups.set(keyOf(key), row.value.group)
        if (row.value.meteredMonth !== undefined) months.set(keyOf(key), row.value.meteredMonth)
        if (streak.withAchieved && row.value.achieved === undefined) toAsk.push({ i, key })
      })
      // First actions of a key, and aliases: locked (created where missing) in a second round trip.
      const askAfter = [...toAsk, ...toLock.filter(({ i }) => request.members[i]!.streak!.withAchieved)]
      if (toLock.length + askAfter.length > 0) {
        const [rows, achieved] = yield* pipelined([
          toLock.length === 0
            ? none
            : streaks.lockWithGroups(
              toLock.map(({ i, key }) => ({ key, timezone: request.members[i]!.streak!.timezone }))
            ),
          askAfter.length === 0 ? none : achievements.achievedIds(askAfter.map((a) => a.key))
        ])
        toLock.forEach(({ i, key }, n) => {
          locked.set(i, { key, row: rows[n]!.row, achieved: [] })
          groups.set(keyOf(key), rows[n]!.group)
        })
        askAfter.forEach(({ i }, n) => {
          const l = locked.get(i)!
          locked.set(i, { ...l, achieved: achieved[n]! })
        })
      }
      return {
        members: request.members.map((_, i) => ({ member: found[i]!, streak: locked.get(i) })),
        claims,
        forCommit: new Loaded(months, groups)
      }
    })

  const commit: IngestStore["Type"]["commit"] = (changes) =>
    Effect.suspend(() => {
      const loaded = loadedOf(changes.forCommit)
      const before = loaded.meteredMonths
      const allNew = (what: string) => (added: ReadonlyArray<boolean>) =>
        added.every(Boolean) ? Effect.void : Effect.fail(conflict(what))
      // Live rows keep the month their member is marked in; a mark their row already records is spared.
      const monthOfMember = new Map(changes.usage.map((u) => [u.member, u.month]))
      const months = new Map<string, string>()
      const spared = new Set<string>()
      for (const row of changes.rows) {
        if (row.ledger !== "live") continue
        const member = `${row.projectId}:${row.userHash}`
        const month = monthOfMember.get(member)
        if (month !== undefined) months.set(keyOf(row), month)
        const known = before.get(keyOf(row))
        if (known !== undefined) spared.add(`${member} ${known}`)
      }
      const usage = changes.usage.filter((u) => !spared.has(`${u.member} ${u.month}`))
      return Effect.asVoid(pipelined([
        changes.rows.length + changes.days.length === 0
          ? Effect.void
          : Effect.flatMap(
            streaks.saveAllWithDays(changes.rows, changes.days, months, loaded.groups),
            allNew("an active day")
          ),
        changes.achievements.length === 0
          ? Effect.void
          : Effect.flatMap(achievements.add(changes.achievements), allNew("an achievement")),
        usage.length === 0 ? Effect.void : stores.usage.markActive(usage),
        changes.zones.length === 0 ? Effect.void : members.setTimezones(changes.zones),
        changes.actions.length === 0 ? Effect.void : stores.log.append(changes.actions),
        changes.outbox.length === 0 ? Effect.void : stores.outbox.enqueue(changes.outbox),
        changes.answers.length === 0 ? Effect.void : idempotency.complete(changes.answers)
      ]))
    })

  return {
    load,
    audience,
    // A few keys (a late action's) one statement each, in one round trip; many (a recomputation of
    // a program's streaks) in one statement.
    history: (keys: ReadonlyArray<StreakKey>) =>
      keys.length > HISTORY_PIPELINED
        ? streaks.daysOfMany(keys)
        : pipelined(keys.map((k) => streaks.days(k))) as Effect.Effect<
          ReadonlyArray<ReadonlyArray<LocalDate>>,
          StorageError
        >,
    commit
  }
}
