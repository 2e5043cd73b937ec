import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref, TestClock } from "effect"
import { StreakKey } from "../src/Domain.js"
import type { UserHash } from "../src/Ids.js"
import { MemberStore, StreakStore } from "../src/Ports.js"
import type { Tenant } from "../src/testing.js"
import {
  at,
  daysOf,
  drainOutbox,
  layerLocks,
  layerLocksWith,
  layerPoisoned,
  liveTenant,
  type LockCall,
  Locks,
  logged,
  POISON,
  rowOf,
  server,
  tenant,
  Transactions
} from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")
const DAY = 86_400_000

const action = (t: Tenant, userHash: string, extra: Record<string, unknown> = {}) => ({
  siteKey: t.project.siteKey,
  userHash,
  event: t.program.eventKey,
  ...extra
})

describe("Ingest: concurrent actions share transactions", () => {
  it.effect("60 concurrent actions of 20 members, late days first, leave the rows of applying them one by one, in a few transactions", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const members = Array.from({ length: 20 }, (_, i) => `m${i}`)
      // Each member acts on three consecutive days, the oldest day last (a late action joins runs).
      const actions = [0, 1, 2].flatMap((back) =>
        members.map((m) => action(t, m, { ts: new Date(NOON - back * DAY).toISOString() }))
      ).reverse()
      const answers = yield* Effect.forEach(actions, (a) => server(a), { concurrency: "unbounded" })
      assert.isTrue(answers.every((a) => a.body.counted === true && a.body.duplicate === undefined))
      for (const m of members) {
        const row = yield* rowOf(t, m, "live")
        assert.deepStrictEqual([row?.run, row?.best, row?.lastActiveDay], [3, 3, "2026-05-10"], m)
        assert.deepStrictEqual(yield* daysOf(t, m, "live"), ["2026-05-08", "2026-05-09", "2026-05-10"])
      }
      assert.deepStrictEqual((yield* logged(t, "live")).map((c) => [c.date, c.count, c.counted]), [
        ["2026-05-08", 20, 20],
        ["2026-05-09", 20, 20],
        ["2026-05-10", 20, 20]
      ])
      assert.isBelow(yield* Ref.get(yield* Transactions), 30)
    }).pipe(Effect.provide(layerPoisoned)))

  it.effect("a member's actions in one batch apply in arrival order: the zone sent with the first decides the second's day", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      // 20:00 UTC on 10 May is already 11 May in Tokyo.
      yield* TestClock.setTime(at("2026-05-10T20:00:00Z"))
      const answers = yield* Effect.all([
        server(action(t, "u1", { tz: "Asia/Tokyo", ts: "2026-05-09T20:00:00Z" })),
        server(action(t, "u1"))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(answers.map((a) => a.body), [{ ok: true, counted: true }, { ok: true, counted: true }])
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10", "2026-05-11"])
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.timezone, "Asia/Tokyo")
    }).pipe(Effect.provide(layerPoisoned)))

  it.effect("an action whose write fails fails alone: the others of its batch are applied", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const results = yield* Effect.forEach(
        ["a", "b", POISON, "c", "d"],
        (m) => Effect.either(server(action(t, m))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map((r) => r._tag === "Left" ? r.left._tag : r.right.body.counted), [
        true,
        true,
        "StorageError",
        true,
        true
      ])
      assert.isUndefined(yield* rowOf(t, POISON, "live"))
      for (const m of ["a", "b", "c", "d"]) assert.strictEqual((yield* rowOf(t, m, "live"))?.run, 1)
      assert.deepStrictEqual((yield* logged(t, "live")).map((c) => c.count), [4])
    }).pipe(Effect.provide(layerPoisoned)))
})

describe("Ingest: a batch locks its known rows with the members' lookup", () => {
  const iso = (ms: number) => new Date(ms).toISOString()
  const lockedBy = (...methods: ReadonlyArray<LockCall["method"]>) =>
    Effect.map(Effect.flatMap(Locks, Ref.get), (calls) => calls.filter((c) => methods.includes(c.method)).flatMap((c) => c.userHashes))
  // Rows are locked ahead with their achievements where the store can, else with `lockExisting`.
  const lockedAhead = lockedBy("lockExisting", "lockExistingWithAchieved")

  // On the memory store, and on it without the optional methods that merge a batch's statements.
  for (const full of [true, false]) {
    const store = full
      ? layerLocks
      : layerLocksWith(({ lockExistingWithAchieved: _, saveAllWithDays: __, ...store }) => store)
    it.effect(`rows locked ahead serve members who acted before; an alias and a newcomer are locked after the lookup; answers as one by one${full ? "" : " (a store without lockExistingWithAchieved or saveAllWithDays)"}`, () =>
      Effect.gen(function*() {
        const t = yield* liveTenant()
        const members = yield* MemberStore
        yield* TestClock.setTime(NOON - 2 * DAY)
        yield* server(action(t, "daily"))
        yield* TestClock.setTime(NOON - DAY)
        for (const m of ["daily", "repeat", "late", "anon", "member"]) yield* server(action(t, m))
        yield* TestClock.setTime(NOON)
        for (const m of ["repeat", "late"]) yield* server(action(t, m))
        // Linked through the port, so "anon" keeps its own row: the key locked ahead for it is the wrong one.
        yield* members.link(t.project.id, "anon" as UserHash, "member" as UserHash)
        yield* drainOutbox
        yield* Ref.set(yield* Locks, [])

        const answers = yield* Effect.forEach([
          action(t, "first"), // runs alone (a lone action waits for nothing); the rest form the next batch
          action(t, "daily"), // yesterday's run of 2 goes on: the day is after the row's last, so new
          action(t, "repeat"), // today again: the row's own day, a duplicate
          action(t, "late", { ts: iso(NOON - 2 * DAY) }), // older than the row's last day: asked, and it joins the run
          action(t, "late", { ts: iso(NOON - DAY) }), // the same member again (the next round): a duplicate
          action(t, "anon"), // counts for "member"
          action(t, "newcomer")
        ], (a) => Effect.map(server(a), (r) => r.body), { concurrency: "unbounded" })

        assert.deepStrictEqual(answers, [
          { ok: true, counted: true },
          { ok: true, counted: true },
          { ok: true, counted: true, duplicate: true },
          { ok: true, counted: true },
          { ok: true, counted: true, duplicate: true },
          { ok: true, counted: true },
          { ok: true, counted: true }
        ])
        const runs = (m: string) =>
          Effect.map(rowOf(t, m, "live"), (r): ReadonlyArray<unknown> => [r?.run, r?.best, r?.lastActiveDay])
        assert.deepStrictEqual(yield* runs("daily"), [3, 3, "2026-05-10"])
        assert.deepStrictEqual(yield* runs("repeat"), [2, 2, "2026-05-10"])
        assert.deepStrictEqual(yield* runs("late"), [3, 3, "2026-05-10"])
        assert.deepStrictEqual(yield* daysOf(t, "late", "live"), ["2026-05-08", "2026-05-09", "2026-05-10"])
        assert.deepStrictEqual(yield* runs("member"), [2, 2, "2026-05-10"])
        assert.deepStrictEqual(yield* runs("anon"), [1, 1, "2026-05-09"])
        assert.deepStrictEqual(yield* runs("newcomer"), [1, 1, "2026-05-10"])
        // "daily" reached the 3-day milestone with its row and achievements read ahead, "late" with
        // its late day: one message each.
        const reached = (yield* drainOutbox).map(({ body }) => {
          const { data } = body as { readonly data: { readonly userHash: string; readonly milestone: { readonly target: number } } }
          return [body.type, data.userHash, data.milestone.target]
        })
        assert.sameDeepMembers(reached, [["milestone.achieved", "daily", 3], ["milestone.achieved", "late", 3]])

        // The batch locked the ids as sent with the lookup, then only what that could not serve.
        const ahead = yield* lockedBy(full ? "lockExistingWithAchieved" : "lockExisting")
        for (const m of ["daily", "repeat", "late", "anon", "newcomer"]) assert.include(ahead, m)
        const after = yield* lockedBy("lockMany")
        for (const m of ["member", "newcomer"]) assert.include(after, m)
        for (const m of ["daily", "repeat", "anon"]) assert.notInclude(after, m)
      }).pipe(Effect.provide(store)))
  }

  // Where a round's rows and new days go in one statement (`saveAllWithDays`) and where in two.
  for (const [named, store] of [["", layerLocks], [" (a store without saveAllWithDays)", layerLocksWith(({ saveAllWithDays: _, ...store }) => store)]] as const) {
    it.effect(`a stored day after the row's last active day fails the batch: its actions are retried one by one, asking the store${named}`, () =>
      Effect.gen(function*() {
        const t = yield* tenant({ program: { status: "live" } })
        const streaks = yield* StreakStore
        yield* TestClock.setTime(NOON - DAY)
        for (const m of ["odd", "plain"]) yield* server(action(t, m))
        // Not something the service writes: today's day, recorded without the row knowing it.
        const key = StreakKey.make({ projectId: t.project.id, programId: t.program.id, userHash: "odd" as UserHash, ledger: "live" })
        yield* streaks.addDay(key, "2026-05-10" as never)
        yield* TestClock.setTime(NOON)
        yield* Ref.set(yield* Locks, [])

        const answers = yield* Effect.forEach(
          [action(t, "first"), action(t, "odd"), action(t, "plain")],
          (a) => Effect.map(server(a), (r) => r.body),
          { concurrency: "unbounded" }
        )

        assert.deepStrictEqual(answers, [
          { ok: true, counted: true },
          { ok: true, counted: true, duplicate: true },
          { ok: true, counted: true }
        ])
        assert.include(yield* lockedAhead, "odd")
        assert.include(yield* lockedBy("lockMany"), "odd")
        assert.strictEqual((yield* rowOf(t, "plain", "live"))?.run, 2)
        assert.deepStrictEqual((yield* logged(t, "live")).map((c) => [c.date, c.count]), [["2026-05-09", 2], ["2026-05-10", 3]])
      }).pipe(Effect.provide(store)))
  }
})
