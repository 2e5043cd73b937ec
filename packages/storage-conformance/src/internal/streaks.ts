/**
 * Conformance of the per-action ports: transactions (commit, rollback, nesting), streak rows and
 * activity days (locking, first-insert-wins, the row queries, due claims) and achievements.
 */
import { assert, describe } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { type StreakKey, StreakRow } from "@streaks/core/Domain"
import type * as Ids from "@streaks/core/Ids"
import { AchievementStore, StreakStore, Transactor } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import {
  achievementsOf,
  at,
  day,
  epoch,
  makeAchievement,
  makeKey,
  makeRow,
  rowOf,
  seedProgram,
  seedTenant,
  withoutDue
} from "../Fixtures.js"
import { ancient, Boom, concurrently, countTrue, drainStreaks, type It, MINUTE, plain, SECOND, sortBy } from "./kit.js"

/**
 * Where the policy-field test claims its due rows: after every other claim test's instants
 * (`ancient`), so that none of them claims its rows, and long before anything real is due.
 */
const policyClaims = new Date("2000-06-01T00:00:00.000Z")

/**
 * A row as the policy-field test compares it (`plain`): an adapter may give a row saved without
 * `periodDays` or `grants` back with what core reads their absence as (`summaryOf`: `periodDays`
 * 1 after an active day, else 0; no grants), so those values count as absent. `freezes` and
 * `frozenNotifiedThrough` have no such value (the first defaults to the program's policy): they
 * must come back exactly as saved, absent included.
 */
const comparable = (row: StreakRow): Record<string, unknown> => {
  const { grants, periodDays, ...rest } = plain(row)
  return {
    ...rest,
    ...(periodDays === undefined || periodDays === (row.lastActiveDay === undefined ? 0 : 1) ? {} : { periodDays }),
    ...(grants === undefined || (grants as ReadonlyArray<unknown>).length === 0 ? {} : { grants })
  }
}

/** A key's name in comparisons of row sets (the row queries answer in no particular order). */
const keyName = (k: Pick<StreakKey, "programId" | "userHash" | "ledger">) => `${k.programId}/${k.userHash}/${k.ledger}`

/** Rows as a set: sorted by key, absent fields dropped. */
const rowSet = (rows: ReadonlyArray<StreakRow>) => sortBy(rows, keyName).map(plain)

/** Locks one key in a zone (`StreakStore.lock` of that key alone) and answers its row. */
const lockOne = (key: StreakKey, timezone: string) =>
  Effect.flatMap(StreakStore, (streaks) => Effect.map(streaks.lock([{ key, timezone }]), (rows) => rows[0]!))

/** Adds one active day (`StreakStore.addDays` of that day alone) and answers whether it was new. */
const addDay = (key: StreakKey, date: string) =>
  Effect.flatMap(StreakStore, (streaks) => Effect.map(streaks.addDays([{ key, day: day(date) }]), (added) => added[0]!))

export const transactorSuite = (it: It) =>
  describe("Transactor", () => {
    it.effect("commits every write of a successful unit of work together", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const value = yield* tx.withTransaction(Effect.gen(function*() {
          const [row] = yield* streaks.lock([{ key, timezone: "UTC" }])
          yield* streaks.addDays([{ key, day: day("2024-03-01") }])
          yield* streaks.save([new StreakRow({ ...row!, lastActiveDay: day("2024-03-01"), run: 1, best: 1 })])
          yield* achievements.add([makeAchievement(key, program.milestones[0]!.id)])
          return "done"
        }))
        assert.strictEqual(value, "done")
        const row = yield* rowOf(key)
        assert.isTrue(Option.isSome(row))
        assert.strictEqual(Option.getOrThrow(row).run, 1)
        assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01")])
        assert.strictEqual((yield* achievementsOf(key)).length, 1)
      }))

    it.effect("calls issued side by side inside a unit of work join it: they commit, or roll back, with it", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [kept, undone] = [makeKey(program), makeKey(program)]
        // Ingest issues independent statements of a batch this way (forked fibers), in order.
        const sideBySide = (key: StreakKey) =>
          Effect.zipRight(
            streaks.lock([{ key, timezone: "UTC" }]),
            Effect.all([
              streaks.addDays([{ key, day: day("2024-03-01") }, { key, day: day("2024-03-02") }]),
              achievements.add([makeAchievement(key, program.milestones[0]!.id)]),
              streaks.save([makeRow(key, { run: 2, best: 2, lastActiveDay: day("2024-03-02") })])
            ], { concurrency: "unbounded" })
          )
        const [added, achieved] = yield* tx.withTransaction(sideBySide(kept))
        assert.deepStrictEqual(added, [true, true])
        assert.deepStrictEqual(achieved, [true])
        assert.strictEqual(Option.getOrThrow(yield* rowOf(kept)).run, 2)
        assert.deepStrictEqual(yield* streaks.days(kept), [day("2024-03-01"), day("2024-03-02")])
        assert.strictEqual((yield* achievementsOf(kept)).length, 1)

        const exit = yield* Effect.exit(tx.withTransaction(Effect.zipRight(sideBySide(undone), new Boom())))
        assert.isTrue(exit._tag === "Failure")
        assert.isTrue(Option.isNone(yield* rowOf(undone)))
        assert.deepStrictEqual(yield* streaks.days(undone), [])
        assert.deepStrictEqual(yield* achievementsOf(undone), [])
      }))

    it.effect("a unit of work that dies changes nothing", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const exit = yield* Effect.exit(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock([{ key, timezone: "UTC" }])
          yield* streaks.addDays([{ key, day: day("2024-03-01") }])
          return yield* Effect.dieMessage("defect inside the unit of work")
        })))
        assert.isTrue(exit._tag === "Failure")
        assert.isTrue(Option.isNone(yield* rowOf(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
      }))

    it.effect("an interrupted unit of work changes nothing", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const written = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock([{ key, timezone: "UTC" }])
          yield* streaks.addDays([{ key, day: day("2024-03-01") }])
          yield* Deferred.succeed(written, undefined)
          return yield* Effect.never
        })))
        yield* Deferred.await(written)
        yield* Fiber.interrupt(fiber)
        assert.isTrue(Option.isNone(yield* rowOf(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
      }))

    it.effect("a nested withTransaction joins the outer one: it sees the outer writes and an outer failure undoes it", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock([{ key, timezone: "UTC" }])
          // Joining (not a second transaction) is what lets the inner unit see and re-lock the row.
          const seen = yield* tx.withTransaction(Effect.gen(function*() {
            yield* streaks.lock([{ key, timezone: "UTC" }])
            yield* streaks.addDays([{ key, day: day("2024-03-01") }])
            return yield* rowOf(key)
          }))
          assert.isTrue(Option.isSome(seen))
          yield* streaks.addDays([{ key, day: day("2024-03-02") }])
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.isTrue(Option.isNone(yield* rowOf(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
      }))

    it.effect("a failed nested unit of work that the outer one recovers from undoes only its own writes", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* streaks.addDays([{ key, day: day("2024-03-01") }])
          yield* tx.withTransaction(Effect.zipRight(streaks.addDays([{ key, day: day("2024-03-02") }]), new Boom()))
            .pipe(Effect.catchTag("Boom", () => Effect.void))
          yield* streaks.addDays([{ key, day: day("2024-03-03") }])
        }))
        assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01"), day("2024-03-03")])
      }))
  })

export const streakSuite = (it: It) =>
  describe("StreakStore", () => {
    it.effect("lock creates an empty row in the given zone when missing and returns the stored row after that", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program, { ledger: "test" })
        const created = yield* tx.withTransaction(lockOne(key, "Europe/Paris"))
        const { updatedAt: _created, ...createdFields } = plain(created)
        assert.deepStrictEqual(createdFields, {
          projectId: key.projectId,
          programId: key.programId,
          userHash: key.userHash,
          ledger: "test",
          run: 0,
          best: 0,
          timezone: "Europe/Paris"
        })
        const stored = yield* rowOf(key)
        assert.isTrue(Option.isSome(stored))
        assert.strictEqual(Option.getOrThrow(stored).timezone, "Europe/Paris")
        const saved = makeRow(key, { lastActiveDay: day("2024-03-01"), run: 4, best: 9, timezone: "Europe/Paris" })
        yield* streaks.save([saved])
        const again = yield* tx.withTransaction(lockOne(key, "Asia/Tokyo"))
        assert.deepStrictEqual(plain(again), plain(saved))
      }))

    it.effect("lock creates missing rows in their zones, returns stored ones, in input order, a repeated key twice", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b, c] = [makeKey(program), makeKey(program), makeKey(program, { ledger: "test" })]
        yield* streaks.save([new StreakRow({ ...(yield* lockOne(b, "UTC")), run: 4, best: 9 })])
        const rows = yield* tx.withTransaction(streaks.lock([
          { key: c, timezone: "Europe/Paris" },
          { key: b, timezone: "Asia/Tokyo" },
          { key: a, timezone: "America/New_York" },
          { key: c, timezone: "Europe/Paris" }
        ]))
        assert.deepStrictEqual(rows.map((r) => [r.userHash, r.ledger, r.timezone, r.run, r.best]), [
          [c.userHash, "test", "Europe/Paris", 0, 0],
          [b.userHash, "live", "UTC", 4, 9],
          [a.userHash, "live", "America/New_York", 0, 0],
          [c.userHash, "test", "Europe/Paris", 0, 0]
        ])
        // The created rows are stored, once each.
        assert.deepStrictEqual(
          (yield* streaks.rows({ keys: [a, c] })).map((r) => [r.userHash, r.timezone]).sort(),
          [[a.userHash, "America/New_York"], [c.userHash, "Europe/Paris"]].sort()
        )
        assert.deepStrictEqual(yield* streaks.lock([]), [])
      }))

    it.effect("save inserts or replaces every field, and a row saved without dueAt has none", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        assert.isTrue(Option.isNone(yield* rowOf(key)))
        const full = makeRow(key, {
          lastActiveDay: day("2024-03-10"),
          run: 5,
          best: 12,
          timezone: "America/New_York",
          atRiskNotifiedFor: day("2024-03-09"),
          brokenNotifiedAfter: day("2024-02-01"),
          // Far in the future: no claim of another test may pick this row up.
          dueAt: new Date("2100-01-01T05:00:00.000Z"),
          updatedAt: new Date("2024-03-10T12:34:56.789Z")
        })
        yield* streaks.save([full])
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(key))), plain(full))
        const bare = makeRow(key, {
          run: 1,
          best: 12,
          lastActiveDay: day("2024-03-12"),
          updatedAt: new Date("2024-03-12T00:00:00.000Z")
        })
        yield* streaks.save([bare])
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(key))), plain(bare))
      }))

    it.effect("save inserts new rows and replaces existing ones, every field, in one call", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const existing = makeKey(program)
        yield* streaks.save([makeRow(existing, { run: 1, best: 1, lastActiveDay: day("2024-03-01") })])
        const rows = [
          makeRow(existing, {
            lastActiveDay: day("2024-03-10"),
            run: 5,
            best: 12,
            timezone: "Asia/Kathmandu",
            atRiskNotifiedFor: day("2024-03-11"),
            brokenNotifiedAfter: day("2024-02-01"),
            dueAt: new Date("2100-01-02T05:00:00.000Z"),
            updatedAt: new Date("2024-03-10T12:34:56.789Z")
          }),
          makeRow(makeKey(program), { run: 2, best: 3, lastActiveDay: day("2024-03-09") }),
          makeRow(makeKey(program), { run: 0, best: 0 })
        ]
        yield* streaks.save(rows)
        yield* streaks.save([])
        for (const row of rows) {
          const key = makeKey(program, { userHash: row.userHash })
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(key))), plain(row))
        }
      }))

    it.effect("a row's policy fields (periodDays, freezes, grants, frozenNotifiedThrough) round-trip through every read and write; a row without them has none", () => {
      const base = policyClaims
      return Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const state = yield* StateStore
        const { program } = yield* seedTenant()
        const [withFields, without] = [makeKey(program), makeKey(program)]
        const full = makeRow(withFields, {
          lastActiveDay: day("2024-03-06"),
          run: 4,
          best: 6,
          timezone: "Europe/Paris",
          periodDays: 2,
          freezes: 1,
          grants: [{ day: day("2024-03-02"), count: 1 }, { day: day("2024-03-05"), count: 2 }],
          frozenNotifiedThrough: day("2024-02-25"),
          dueAt: at(base, MINUTE),
          updatedAt: new Date("2024-03-06T08:00:00.000Z")
        })
        const bare = makeRow(without, {
          lastActiveDay: day("2024-03-06"),
          run: 1,
          best: 1,
          dueAt: at(base, 2 * MINUTE)
        })
        const rows = [full, bare]
        const own = (found: ReadonlyArray<StreakRow>) =>
          sortBy(found.filter((r) => rows.some((m) => m.userHash === r.userHash)), (r) => r.userHash).map(comparable)
        const expected = sortBy(rows, (r) => r.userHash).map(comparable)
        yield* Effect.gen(function*() {
          yield* streaks.save([full])
          yield* streaks.save([bare])
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(withFields))), plain(full))
          assert.deepStrictEqual(comparable(Option.getOrThrow(yield* rowOf(without))), comparable(bare))
          assert.deepStrictEqual(plain(yield* tx.withTransaction(lockOne(withFields, "UTC"))), plain(full))
          const locked = yield* tx.withTransaction(
            streaks.lock([{ key: without, timezone: "UTC" }, { key: withFields, timezone: "UTC" }])
          )
          assert.deepStrictEqual(locked.map(comparable), [comparable(bare), comparable(full)])
          assert.deepStrictEqual(own(yield* streaks.rows({ keys: [without, withFields] })), expected)
          assert.deepStrictEqual(own(yield* streaks.rows({ programId: program.id, ledger: "live" })), expected)
          assert.deepStrictEqual(
            own(yield* streaks.rows({ projectId: program.projectId, userHash: withFields.userHash })),
            [comparable(full)]
          )
          const standing = yield* state.standing(
            [withFields, without].map((k) => ({
              projectId: k.projectId,
              programId: k.programId,
              ledger: k.ledger,
              userHash: k.userHash
            })),
            day("2024-03-01"),
            day("2024-03-07")
          )
          assert.deepStrictEqual(standing.map((s) => comparable(Option.getOrThrow(s.row))), [
            comparable(full),
            comparable(bare)
          ])
          assert.deepStrictEqual(
            own(yield* tx.withTransaction(streaks.claimDue(at(base, 10 * MINUTE), 1_000))),
            expected
          )

          // Saved over each other, every field is replaced: the fields go, and come.
          const swapped = [
            makeRow(withFields, { run: 1, best: 6, lastActiveDay: day("2024-03-07") }),
            makeRow(without, {
              lastActiveDay: day("2024-03-07"),
              run: 2,
              best: 2,
              periodDays: 2,
              freezes: 0,
              grants: [{ day: day("2024-03-06"), count: 1 }, { day: day("2024-03-07"), count: 3 }],
              frozenNotifiedThrough: day("2024-03-03")
            })
          ]
          yield* streaks.save(swapped)
          assert.deepStrictEqual(comparable(Option.getOrThrow(yield* rowOf(withFields))), comparable(swapped[0]!))
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* rowOf(without))), plain(swapped[1]!))
        }).pipe(Effect.ensuring(streaks.save(rows.map(withoutDue)).pipe(Effect.ignore)))
      })
    })

    it.effect("a row's repairs and pauses round-trip through save, rows and lock; saved over, they go and come", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const repairs = [
          { period: day("2024-03-04"), at: "2024-03-05T12:00:00.000Z", reason: "support ticket #12 — «ünïcode»" },
          { period: day("2024-02-26"), at: "2024-03-06T09:30:00.000Z", reason: "bought" }
        ]
        const pauses = [
          { id: "pau_1", start: day("2024-03-10"), end: day("2024-03-20") },
          { id: "pau_2", start: day("2024-04-01"), end: day("2024-04-01") }
        ]
        const row = makeRow(key, { lastActiveDay: day("2024-03-06"), run: 3, best: 3, repairs, pauses })
        yield* streaks.save([row])
        const read = Option.getOrThrow(yield* rowOf(key))
        assert.deepStrictEqual([read.repairs, read.pauses], [repairs, pauses])
        const [locked] = yield* tx.withTransaction(streaks.lock([{ key, timezone: "UTC" }]))
        assert.deepStrictEqual([locked!.repairs, locked!.pauses], [repairs, pauses])
        const [listed] = (yield* streaks.rows({ programId: program.id, ledger: "live" })).filter((r) =>
          r.userHash === key.userHash
        )
        assert.deepStrictEqual([listed!.repairs, listed!.pauses], [repairs, pauses])
        yield* streaks.save([makeRow(key, { lastActiveDay: day("2024-03-06"), run: 3, best: 3, pauses: [pauses[0]!] })])
        const after = Option.getOrThrow(yield* rowOf(key))
        assert.deepStrictEqual([after.repairs ?? [], after.pauses], [[], [pauses[0]!]])
        yield* streaks.save([makeRow(key, { lastActiveDay: day("2024-03-06"), run: 3, best: 3 })])
        const bare = Option.getOrThrow(yield* rowOf(key))
        assert.deepStrictEqual([bare.repairs ?? [], bare.pauses ?? []], [[], []])
      }))

    it.effect("addDays is true only for the first insert of (key, day), and days are kept per key", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const live = makeKey(tenant.program)
        const test = makeKey(tenant.program, { userHash: live.userHash, ledger: "test" })
        const elsewhere = makeKey(other, { userHash: live.userHash })
        assert.isTrue(yield* addDay(live, "2024-03-01"))
        assert.isFalse(yield* addDay(live, "2024-03-01"))
        assert.isTrue(yield* addDay(live, "2024-03-02"))
        assert.isTrue(yield* addDay(test, "2024-03-01"))
        assert.isTrue(yield* addDay(elsewhere, "2024-03-01"))
        assert.deepStrictEqual(yield* streaks.days(live), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(test), [day("2024-03-01")])
        assert.deepStrictEqual(yield* streaks.days(elsewhere), [day("2024-03-01")])
      }))

    it.effect("addDays answers in input order: a stored day and a repeat within the call are false", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b] = [makeKey(program), makeKey(program)]
        yield* addDay(a, "2024-03-01")
        const added = yield* streaks.addDays([
          { key: a, day: day("2024-03-01") },
          { key: a, day: day("2024-03-02") },
          { key: b, day: day("2024-03-01") },
          { key: a, day: day("2024-03-02") }
        ])
        assert.deepStrictEqual(added, [false, true, true, false])
        assert.deepStrictEqual(yield* streaks.days(a), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(b), [day("2024-03-01")])
        assert.deepStrictEqual(yield* streaks.addDays([]), [])
      }))

    it.effect("of 50 concurrent addDays calls for one day without lock exactly one is true", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const results = yield* concurrently(50, () => addDay(key, "2024-03-01"))
        assert.strictEqual(countTrue(results), 1)
        assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01")])
      }))

    it.effect("of 20 concurrent addDays batches of the same days each day is true exactly once", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b] = [makeKey(program), makeKey(program)]
        const days = [
          { key: a, day: day("2024-03-01") },
          { key: b, day: day("2024-03-01") },
          { key: a, day: day("2024-03-02") }
        ]
        const results = yield* concurrently(20, () => streaks.addDays(days))
        for (let d = 0; d < days.length; d++) assert.strictEqual(countTrue(results.map((r) => r[d]!)), 1)
        assert.deepStrictEqual(yield* streaks.days(a), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(b), [day("2024-03-01")])
      }))

    it.effect("50 concurrent transactions of lock, addDays and save for one member and day count the day once", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const today = day("2024-03-01")
        const results = yield* concurrently(50, () =>
          tx.withTransaction(Effect.gen(function*() {
            const row = yield* lockOne(key, "UTC")
            // Let other fibers run between the read and the write, as a network round trip would.
            yield* Effect.yieldNow()
            const [added] = yield* streaks.addDays([{ key, day: today }])
            if (added) {
              const run = row.run + 1
              yield* streaks.save([new StreakRow({ ...row, lastActiveDay: today, run, best: Math.max(run, row.best) })])
            }
            return added!
          })))
        assert.strictEqual(countTrue(results), 1)
        const row = Option.getOrThrow(yield* rowOf(key))
        assert.strictEqual(row.run, 1)
        assert.strictEqual(row.best, 1)
        assert.deepStrictEqual(yield* streaks.days(key), [today])
      }))

    it.effect("lock serialises read-modify-write: 50 concurrent transactions that each add 1 to run leave 50", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* concurrently(50, () =>
          tx.withTransaction(Effect.gen(function*() {
            const row = yield* lockOne(key, "UTC")
            yield* Effect.yieldNow()
            yield* streaks.save([new StreakRow({ ...row, run: row.run + 1 })])
          })))
        assert.strictEqual(Option.getOrThrow(yield* rowOf(key)).run, 50)
      }))

    it.effect("lock locks in one order: 20 concurrent transactions locking the same keys in different orders each add 1 to every row", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const keys = [makeKey(program), makeKey(program), makeKey(program)]
        yield* concurrently(20, (i) =>
          tx.withTransaction(Effect.gen(function*() {
            // Each caller names the keys in its own order: the store must still not deadlock.
            const order = i % 2 === 0 ? keys : [...keys].reverse()
            const rows = yield* streaks.lock(order.map((key) => ({ key, timezone: "UTC" })))
            yield* Effect.yieldNow()
            yield* streaks.save(rows.map((row) => new StreakRow({ ...row, run: row.run + 1 })))
          })))
        for (const key of keys) assert.strictEqual(Option.getOrThrow(yield* rowOf(key)).run, 20)
      }))

    it.effect("days are ascending, all of them or those in a range inclusive at both ends", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* streaks.addDays(
          ["2024-03-05", "2024-03-01", "2024-03-10", "2024-02-28", "2024-03-03", "2023-12-31"].map((d) => ({
            key,
            day: day(d)
          }))
        )
        assert.deepStrictEqual(
          yield* streaks.days(key),
          ["2023-12-31", "2024-02-28", "2024-03-01", "2024-03-03", "2024-03-05", "2024-03-10"].map(day)
        )
        assert.deepStrictEqual(
          yield* streaks.days(key, { from: day("2024-03-01"), to: day("2024-03-05") }),
          ["2024-03-01", "2024-03-03", "2024-03-05"].map(day)
        )
        assert.deepStrictEqual(
          yield* streaks.days(key, { from: day("2023-12-01"), to: day("2024-02-29") }),
          ["2023-12-31", "2024-02-28"].map(day)
        )
        assert.deepStrictEqual(yield* streaks.days(key, { from: day("2024-03-02"), to: day("2024-03-02") }), [])
        assert.deepStrictEqual(yield* streaks.days(makeKey(program)), [])
        assert.deepStrictEqual(
          yield* streaks.days(makeKey(program), { from: day("2024-01-01"), to: day("2024-12-31") }),
          []
        )
      }))

    it.effect("rows of keys answers the stored rows of those keys, every field, and nothing for keys without one", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b, missing] = [makeKey(program), makeKey(program), makeKey(program)]
        const otherLedger = makeKey(program, { userHash: a.userHash, ledger: "test" })
        const stored = [
          makeRow(a, { run: 2, best: 3, lastActiveDay: day("2024-03-02"), timezone: "Asia/Tokyo" }),
          makeRow(b, { run: 1, best: 1, lastActiveDay: day("2024-03-01"), atRiskNotifiedFor: day("2024-03-02") }),
          makeRow(otherLedger, { run: 7, best: 7 })
        ]
        yield* streaks.save(stored)
        assert.deepStrictEqual(rowSet(yield* streaks.rows({ keys: [missing, b, a] })), rowSet(stored.slice(0, 2)))
        assert.deepStrictEqual(rowSet(yield* streaks.rows({ keys: [otherLedger] })), rowSet([stored[2]!]))
        assert.deepStrictEqual(yield* streaks.rows({ keys: [missing] }), [])
        assert.deepStrictEqual(yield* streaks.rows({ keys: [] }), [])
        // A repeated key names the same row.
        const repeated = yield* streaks.rows({ keys: [a, a] })
        assert.isAtLeast(repeated.length, 1)
        assert.isTrue(repeated.every((r) => keyName(r) === keyName(a)))
      }))

    it.effect("rows of a member lists every program and ledger of the member in the project, and nothing else", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const elsewhere = yield* seedTenant()
        const mine = makeKey(tenant.program)
        const userHash = mine.userHash
        const expected = [
          makeRow(mine, { run: 3, best: 4 }),
          makeRow(makeKey(tenant.program, { userHash, ledger: "test" })),
          makeRow(makeKey(other, { userHash }), { timezone: "Europe/Paris" })
        ]
        yield* streaks.save(expected)
        yield* streaks.save([makeRow(makeKey(tenant.program)), makeRow(makeKey(elsewhere.program, { userHash }))])
        assert.deepStrictEqual(
          rowSet(yield* streaks.rows({ projectId: tenant.project.id, userHash })),
          rowSet(expected)
        )
        assert.deepStrictEqual(
          yield* streaks.rows({ projectId: tenant.project.id, userHash: makeKey(tenant.program).userHash }),
          []
        )
      }))

    it.effect("rows of a program answers the rows of that program on one ledger", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const a = makeKey(tenant.program)
        const b = makeKey(tenant.program)
        const [live, test] = [[makeRow(a), makeRow(b, { run: 2, best: 2 })], [
          makeRow(makeKey(tenant.program, { userHash: a.userHash, ledger: "test" }))
        ]]
        yield* streaks.save([...live, ...test, makeRow(makeKey(other, { userHash: a.userHash }))])
        assert.deepStrictEqual(
          rowSet(yield* streaks.rows({ programId: tenant.program.id, ledger: "live" })),
          rowSet(live)
        )
        assert.deepStrictEqual(
          rowSet(yield* streaks.rows({ programId: tenant.program.id, ledger: "test" })),
          rowSet(test)
        )
        assert.deepStrictEqual(yield* streaks.rows({ programId: (yield* seedProgram(tenant)).id, ledger: "live" }), [])
      }))

    it.effect("histories pages a program's rows on one ledger by user hash in byte order, each with its days ascending, grants, repairs and pauses", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        // Hashes whose byte order differs from a locale's (upper case before lower case, "_" after both).
        const hashes = ["user_B", "user_a", "user__", "user_A1", "user_b"].map((h) => h as Ids.UserHash)
        const keys = hashes.map((userHash) => makeKey(tenant.program, { userHash }))
        const grants = [{ day: day("2024-03-02"), count: 2 }]
        const repairs = [{ period: day("2024-03-04"), at: "2024-03-05T10:00:00.000Z", reason: "support" }]
        const pauses = [{ id: "pau_1", start: day("2024-03-10"), end: day("2024-03-12") }]
        yield* streaks.save(keys.map((key, i) =>
          makeRow(key, {
            timezone: i === 0 ? "Europe/Paris" : "UTC",
            lastActiveDay: day("2024-03-05"),
            run: 1,
            best: 1,
            ...(i === 1 ? { grants, repairs, pauses } : {})
          })
        ))
        // Days given out of order, in two calls; another ledger's and another program's rows and days.
        yield* streaks.addDays(keys.map((key) => ({ key, day: day("2024-03-05") })))
        yield* streaks.addDays(keys.map((key) => ({ key, day: day("2024-03-01") })))
        // Days far apart too (a year's end between them).
        yield* streaks.addDays([{ key: keys[1]!, day: day("2024-03-03") }, { key: keys[1]!, day: day("2023-12-31") }])
        const test = makeKey(tenant.program, { userHash: hashes[0]!, ledger: "test" })
        const elsewhere = makeKey(other, { userHash: hashes[0]! })
        yield* streaks.save([makeRow(test), makeRow(elsewhere)])
        yield* streaks.addDays([{ key: test, day: day("2024-03-04") }, { key: elsewhere, day: day("2024-03-04") }])
        // A row without days is in its page with none.
        const empty = makeKey(tenant.program, { userHash: "user_C" as Ids.UserHash })
        yield* streaks.save([makeRow(empty)])

        const page = { projectId: tenant.project.id, programId: tenant.program.id, ledger: "live" as const }
        const byteOrder = [...hashes, empty.userHash].sort()
        assert.deepStrictEqual(byteOrder, ["user_A1", "user_B", "user_C", "user__", "user_a", "user_b"])
        const first = yield* streaks.histories({ ...page, limit: 4 })
        const second = yield* streaks.histories({ ...page, limit: 4, after: first[first.length - 1]!.userHash })
        assert.deepStrictEqual([...first, ...second].map((h) => h.userHash), byteOrder)
        assert.strictEqual(second.length, 2)
        assert.deepStrictEqual(yield* streaks.histories({ ...page, limit: 4, after: "user_b" as Ids.UserHash }), [])
        const all = new Map([...first, ...second].map((h) => [h.userHash, h]))
        assert.deepStrictEqual(all.get(hashes[0]!), {
          userHash: hashes[0]!,
          timezone: "Europe/Paris",
          grants: [],
          days: [day("2024-03-01"), day("2024-03-05")]
        })
        assert.deepStrictEqual(all.get(hashes[1]!), {
          userHash: hashes[1]!,
          timezone: "UTC",
          grants,
          days: [day("2023-12-31"), day("2024-03-01"), day("2024-03-03"), day("2024-03-05")],
          repairs,
          pauses
        })
        assert.deepStrictEqual(all.get(empty.userHash)!.days, [])
        // A range keeps the days inside it, both ends inclusive, either end alone.
        const ranged = yield* streaks.histories({ ...page, limit: 10, from: day("2024-03-03"), to: day("2024-03-05") })
        assert.deepStrictEqual(ranged.find((h) => h.userHash === hashes[1])!.days, [
          day("2024-03-03"),
          day("2024-03-05")
        ])
        assert.deepStrictEqual(ranged.find((h) => h.userHash === hashes[0])!.days, [day("2024-03-05")])
        const upTo = yield* streaks.histories({ ...page, limit: 10, to: day("2024-03-03") })
        assert.deepStrictEqual(upTo.find((h) => h.userHash === hashes[1])!.days, [
          day("2023-12-31"),
          day("2024-03-01"),
          day("2024-03-03")
        ])
        const since = yield* streaks.histories({ ...page, limit: 10, from: day("2024-03-02") })
        assert.deepStrictEqual(since.find((h) => h.userHash === hashes[0])!.days, [day("2024-03-05")])
        // The other ledger has its own rows.
        assert.deepStrictEqual(yield* streaks.histories({ ...page, ledger: "test", limit: 10 }), [{
          userHash: hashes[0]!,
          timezone: "UTC",
          grants: [],
          days: [day("2024-03-04")]
        }])
      }))

    it.effect("remove deletes the row, the days and the achievements of that key only", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const milestone = tenant.program.milestones[0]!.id
        const live = makeKey(tenant.program)
        const test = makeKey(tenant.program, { userHash: live.userHash, ledger: "test" })
        const elsewhere = makeKey(other, { userHash: live.userHash })
        const keys = [live, test, elsewhere]
        yield* streaks.save(keys.map((key) => makeRow(key, { run: 1, best: 1, lastActiveDay: day("2024-03-01") })))
        yield* streaks.addDays(keys.map((key) => ({ key, day: day("2024-03-01") })))
        yield* achievements.add([
          makeAchievement(live, milestone),
          makeAchievement(test, milestone),
          makeAchievement(elsewhere, other.milestones[0]!.id)
        ])
        yield* streaks.remove(live)
        assert.isTrue(Option.isNone(yield* rowOf(live)))
        assert.deepStrictEqual(yield* streaks.days(live), [])
        assert.deepStrictEqual(yield* achievementsOf(live), [])
        for (const key of [test, elsewhere]) {
          assert.isTrue(Option.isSome(yield* rowOf(key)))
          assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01")])
          assert.strictEqual((yield* achievementsOf(key)).length, 1)
        }
        // Once removed, the day and the milestone are new again.
        assert.isTrue(yield* addDay(live, "2024-03-01"))
        assert.deepStrictEqual(yield* achievements.add([makeAchievement(live, milestone)]), [true])
        // Removing a key that has nothing is no error.
        yield* streaks.remove(makeKey(tenant.program))
      }))

    it.effect("claimDue returns only rows due at now, oldest first, at most limit", () => {
      const base = ancient.streakLimit
      return Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const due = [1, 2, 3, 4, 5].map((i) => makeRow(makeKey(program), { dueAt: at(base, i * MINUTE) }))
        const later = makeRow(makeKey(program), { dueAt: at(base, 20 * MINUTE) })
        const never = makeRow(makeKey(program))
        const mine = [...due, later, never]
        yield* streaks.save([due[3]!, later, due[0]!, never, due[4]!, due[1]!, due[2]!])
        const now = at(base, 10 * MINUTE)
        yield* Effect.gen(function*() {
          const claimed = yield* tx.withTransaction(streaks.claimDue(now, 3))
          assert.strictEqual(claimed.length, 3)
          const times = claimed.map((r) => r.dueAt!.getTime())
          assert.deepStrictEqual(times, [...times].sort((x, y) => x - y), "oldest due first")
          assert.isTrue(times.every((t) => t <= now.getTime()))
          // Other rows may be due as well; of this test's rows, the oldest ones come first.
          const ownClaimed = claimed.filter((r) => mine.some((m) => m.userHash === r.userHash)).map((r) => r.userHash)
          assert.deepStrictEqual(ownClaimed, due.slice(0, ownClaimed.length).map((r) => r.userHash))
          const all = yield* tx.withTransaction(streaks.claimDue(now, 1_000))
          const allOwn = all.map((r) => r.userHash).filter((u) => mine.some((m) => m.userHash === u))
          assert.deepStrictEqual(allOwn, due.map((r) => r.userHash))
          assert.deepStrictEqual(yield* tx.withTransaction(streaks.claimDue(now, 0)), [])
        }).pipe(Effect.ensuring(streaks.save(mine.map(withoutDue)).pipe(Effect.ignore)))
      })
    })

    it.effect("two concurrent claimers never get the same row and together get every due row", () => {
      const base = ancient.streakClaimers
      return Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const mine = Array.from({ length: 25 }, (_, i) => makeRow(makeKey(program), { dueAt: at(base, i * SECOND) }))
        yield* streaks.save(mine)
        yield* Effect.gen(function*() {
          const [first, second] = yield* Effect.all([drainStreaks(at(base, MINUTE)), drainStreaks(at(base, MINUTE))], {
            concurrency: "unbounded"
          })
          const claimed = [...first, ...second].map((r) => `${r.projectId}/${r.programId}/${r.userHash}/${r.ledger}`)
          assert.strictEqual(new Set(claimed).size, claimed.length, "a row was handed to both claimers")
          const users = new Set([...first, ...second].map((r) => r.userHash))
          assert.isTrue(mine.every((r) => users.has(r.userHash)), "every due row is claimed")
          for (const row of mine) assert.isUndefined(Option.getOrThrow(yield* rowOf(row)).dueAt)
        }).pipe(Effect.ensuring(streaks.save(mine.map(withoutDue)).pipe(Effect.ignore)))
      })
    })
  })

export const achievementSuite = (it: It) =>
  describe("AchievementStore", () => {
    it.effect("add is true only the first time per (key, milestone), in input order; achieved keeps the first instant", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [m1, m2] = program.milestones
        const live = makeKey(program)
        const test = makeKey(program, { userHash: live.userHash, ledger: "test" })
        yield* streaks.save([makeRow(live), makeRow(test)])
        const first = new Date("2024-03-03T10:00:00.000Z")
        const later = new Date("2024-03-04T10:00:00.000Z")
        const week = new Date("2024-03-07T10:00:00.000Z")
        assert.deepStrictEqual(yield* achievements.add([makeAchievement(live, m1!.id, first)]), [true])
        assert.deepStrictEqual(
          yield* achievements.add([
            makeAchievement(live, m1!.id, later),
            makeAchievement(live, m2!.id, week),
            makeAchievement(test, m1!.id, first),
            makeAchievement(live, m2!.id, later)
          ]),
          [false, true, true, false]
        )
        assert.deepStrictEqual(yield* achievements.add([]), [])
        const listed = sortBy(yield* achievementsOf(live), (a) => a.achievedAt.toISOString())
        assert.deepStrictEqual(listed.map(plain), [
          plain(makeAchievement(live, m1!.id, first)),
          plain(makeAchievement(live, m2!.id, week))
        ])
        assert.deepStrictEqual((yield* achievementsOf(test)).map(plain), [plain(makeAchievement(test, m1!.id, first))])
      }))

    it.effect("achieved answers each key's achievements in input order (repeats, unknown keys, other ledgers)", () =>
      Effect.gen(function*() {
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [m1, m2] = program.milestones
        const both = makeKey(program)
        const one = makeKey(program)
        const testLedger = makeKey(program, { userHash: both.userHash, ledger: "test" })
        const none = makeKey(program)
        const reached = {
          bothFirst: makeAchievement(both, m2!.id, new Date("2024-03-07T08:00:00.000Z")),
          bothSecond: makeAchievement(both, m1!.id, new Date("2024-03-03T08:00:00.000Z")),
          one: makeAchievement(one, m1!.id, new Date("2024-03-05T23:59:59.999Z"))
        }
        yield* achievements.add([reached.bothFirst, reached.bothSecond, reached.one])
        const answered = yield* achievements.achieved([none, both, testLedger, one, both])
        const bothSet = sortBy([reached.bothFirst, reached.bothSecond], (a) => a.milestoneId).map(plain)
        assert.deepStrictEqual(answered.map((found) => sortBy(found, (a) => a.milestoneId).map(plain)), [
          [],
          bothSet,
          [],
          [plain(reached.one)],
          bothSet
        ])
        assert.deepStrictEqual(yield* achievements.achieved([]), [])
      }))

    it.effect("of 50 concurrent adds of one milestone exactly one is true", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* streaks.save([makeRow(key)])
        const results = yield* concurrently(
          50,
          () => Effect.map(achievements.add([makeAchievement(key, program.milestones[0]!.id, epoch)]), (r) => r[0]!)
        )
        assert.strictEqual(countTrue(results), 1)
        assert.strictEqual((yield* achievementsOf(key)).length, 1)
      }))

    it.effect("of 20 concurrent add batches of the same achievements each is true exactly once", () =>
      Effect.gen(function*() {
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [a, b] = [makeKey(program), makeKey(program)]
        const batch = [
          makeAchievement(a, program.milestones[0]!.id),
          makeAchievement(b, program.milestones[0]!.id),
          makeAchievement(a, program.milestones[1]!.id)
        ]
        const results = yield* concurrently(20, () => achievements.add(batch))
        for (let n = 0; n < batch.length; n++) assert.strictEqual(countTrue(results.map((r) => r[n]!)), 1)
        assert.strictEqual((yield* achievementsOf(a)).length, 2)
        assert.strictEqual((yield* achievementsOf(b)).length, 1)
      }))
  })
