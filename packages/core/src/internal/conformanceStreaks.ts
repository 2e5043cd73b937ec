/**
 * Conformance of the per-action ports: transactions (commit, rollback, nesting), streak rows and
 * activity days (locking, first-insert-wins, due claims) and achievements.
 */
import { assert, describe } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { StreakRow } from "../Domain.js"
import { AchievementStore, StreakStore, Transactor } from "../Ports.js"
import { at, day, epoch, makeKey, makeRow, seedProgram, seedTenant, withoutDue } from "./conformanceFixtures.js"
import {
  ancient,
  Boom,
  concurrently,
  countTrue,
  drainStreaks,
  type It,
  MINUTE,
  plain,
  SECOND,
  sortBy
} from "./conformanceKit.js"

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
          const row = yield* streaks.lock(key, "UTC")
          yield* streaks.addDay(key, day("2024-03-01"))
          yield* streaks.save(new StreakRow({ ...row, lastActiveDay: day("2024-03-01"), run: 1, best: 1 }))
          yield* achievements.add(key, program.milestones[0]!.id, epoch)
          return "done"
        }))
        assert.strictEqual(value, "done")
        const row = yield* streaks.get(key)
        assert.isTrue(Option.isSome(row))
        assert.strictEqual(Option.getOrThrow(row).run, 1)
        assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01")])
        assert.strictEqual((yield* achievements.list(key)).length, 1)
      }))

    it.effect("calls issued side by side inside a unit of work join it: they commit, or roll back, with it", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [kept, undone] = [makeKey(program), makeKey(program)]
        // Ingest issues independent statements of a batch this way (forked fibers), in order.
        const sideBySide = (key: typeof kept) =>
          Effect.zipRight(
            streaks.lock(key, "UTC"),
            Effect.all([
              streaks.addDays([{ key, day: day("2024-03-01") }, { key, day: day("2024-03-02") }]),
              achievements.add(key, program.milestones[0]!.id, epoch),
              streaks.saveAll([makeRow(key, { run: 2, best: 2, lastActiveDay: day("2024-03-02") })])
            ], { concurrency: "unbounded" })
          )
        const [added] = yield* tx.withTransaction(sideBySide(kept))
        assert.deepStrictEqual(added, [true, true])
        assert.strictEqual(Option.getOrThrow(yield* streaks.get(kept)).run, 2)
        assert.deepStrictEqual(yield* streaks.days(kept), [day("2024-03-01"), day("2024-03-02")])
        assert.strictEqual((yield* achievements.list(kept)).length, 1)

        const exit = yield* Effect.exit(tx.withTransaction(Effect.zipRight(sideBySide(undone), new Boom())))
        assert.isTrue(exit._tag === "Failure")
        assert.isTrue(Option.isNone(yield* streaks.get(undone)))
        assert.deepStrictEqual(yield* streaks.days(undone), [])
        assert.deepStrictEqual(yield* achievements.list(undone), [])
      }))

    it.effect("a unit of work that dies changes nothing", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const exit = yield* Effect.exit(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock(key, "UTC")
          yield* streaks.addDay(key, day("2024-03-01"))
          return yield* Effect.dieMessage("defect inside the unit of work")
        })))
        assert.isTrue(exit._tag === "Failure")
        assert.isTrue(Option.isNone(yield* streaks.get(key)))
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
          yield* streaks.lock(key, "UTC")
          yield* streaks.addDay(key, day("2024-03-01"))
          yield* Deferred.succeed(written, undefined)
          return yield* Effect.never
        })))
        yield* Deferred.await(written)
        yield* Fiber.interrupt(fiber)
        assert.isTrue(Option.isNone(yield* streaks.get(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
      }))

    it.effect("a nested withTransaction joins the outer one: it sees the outer writes and an outer failure undoes it", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const error = yield* Effect.flip(tx.withTransaction(Effect.gen(function*() {
          yield* streaks.lock(key, "UTC")
          // Joining (not a second transaction) is what lets the inner unit see and re-lock the row.
          const seen = yield* tx.withTransaction(Effect.gen(function*() {
            yield* streaks.lock(key, "UTC")
            yield* streaks.addDay(key, day("2024-03-01"))
            return yield* streaks.get(key)
          }))
          assert.isTrue(Option.isSome(seen))
          yield* streaks.addDay(key, day("2024-03-02"))
          return yield* new Boom()
        })))
        assert.strictEqual(error._tag, "Boom")
        assert.isTrue(Option.isNone(yield* streaks.get(key)))
        assert.deepStrictEqual(yield* streaks.days(key), [])
      }))

    it.effect("a failed nested unit of work that the outer one recovers from undoes only its own writes", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* streaks.addDay(key, day("2024-03-01"))
          yield* tx.withTransaction(Effect.zipRight(streaks.addDay(key, day("2024-03-02")), new Boom())).pipe(
            Effect.catchTag("Boom", () => Effect.void)
          )
          yield* streaks.addDay(key, day("2024-03-03"))
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
        const created = yield* tx.withTransaction(streaks.lock(key, "Europe/Paris"))
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
        const stored = yield* streaks.get(key)
        assert.isTrue(Option.isSome(stored))
        assert.strictEqual(Option.getOrThrow(stored).timezone, "Europe/Paris")
        const saved = makeRow(key, { lastActiveDay: day("2024-03-01"), run: 4, best: 9, timezone: "Europe/Paris" })
        yield* streaks.save(saved)
        const again = yield* tx.withTransaction(streaks.lock(key, "Asia/Tokyo"))
        assert.deepStrictEqual(plain(again), plain(saved))
      }))

    it.effect("save inserts or replaces every field, and a row saved without dueAt has none", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        assert.isTrue(Option.isNone(yield* streaks.get(key)))
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
        yield* streaks.save(full)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* streaks.get(key))), plain(full))
        const bare = makeRow(key, {
          run: 1,
          best: 12,
          lastActiveDay: day("2024-03-12"),
          updatedAt: new Date("2024-03-12T00:00:00.000Z")
        })
        yield* streaks.save(bare)
        assert.deepStrictEqual(plain(Option.getOrThrow(yield* streaks.get(key))), plain(bare))
      }))

    it.effect("saveAll inserts new rows and replaces existing ones, every field, in one call", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const existing = makeKey(program)
        yield* streaks.save(makeRow(existing, { run: 1, best: 1, lastActiveDay: day("2024-03-01") }))
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
        yield* streaks.saveAll(rows)
        yield* streaks.saveAll([])
        for (const row of rows) {
          const key = makeKey(program, { userHash: row.userHash })
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* streaks.get(key))), plain(row))
        }
      }))

    it.effect("a row's policy fields (periodDays, freezes, grants, frozenNotifiedThrough) round-trip through every read and write; a row without them has none", () => {
      const base = policyClaims
      return Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
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
          yield* streaks.save(full)
          yield* streaks.save(bare)
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* streaks.get(withFields))), plain(full))
          assert.deepStrictEqual(comparable(Option.getOrThrow(yield* streaks.get(without))), comparable(bare))
          assert.deepStrictEqual(plain(yield* tx.withTransaction(streaks.lock(withFields, "UTC"))), plain(full))
          const locked = yield* tx.withTransaction(
            streaks.lockMany([{ key: without, timezone: "UTC" }, { key: withFields, timezone: "UTC" }])
          )
          assert.deepStrictEqual(locked.map(comparable), [comparable(bare), comparable(full)])
          assert.deepStrictEqual(own(yield* streaks.rowsOfProgram(program.id, "live")), expected)
          const standing = yield* streaks.standingMany([withFields, without], day("2024-03-01"), day("2024-03-07"))
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
          yield* streaks.saveAll(swapped)
          assert.deepStrictEqual(comparable(Option.getOrThrow(yield* streaks.get(withFields))), comparable(swapped[0]!))
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* streaks.get(without))), plain(swapped[1]!))
        }).pipe(Effect.ensuring(
          Effect.forEach(rows, (row) => streaks.save(withoutDue(row)), { discard: true }).pipe(Effect.ignore)
        ))
      })
    })

    it.effect("addDay is true only for the first insert of (key, day), and days are kept per key", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const live = makeKey(tenant.program)
        const test = makeKey(tenant.program, { userHash: live.userHash, ledger: "test" })
        const elsewhere = makeKey(other, { userHash: live.userHash })
        assert.isTrue(yield* streaks.addDay(live, day("2024-03-01")))
        assert.isFalse(yield* streaks.addDay(live, day("2024-03-01")))
        assert.isTrue(yield* streaks.addDay(live, day("2024-03-02")))
        assert.isTrue(yield* streaks.addDay(test, day("2024-03-01")))
        assert.isTrue(yield* streaks.addDay(elsewhere, day("2024-03-01")))
        assert.deepStrictEqual(yield* streaks.days(live), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(test), [day("2024-03-01")])
        assert.deepStrictEqual(yield* streaks.days(elsewhere), [day("2024-03-01")])
      }))

    it.effect("of 50 concurrent addDay calls for one day without lock exactly one is true", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const results = yield* concurrently(50, () => streaks.addDay(key, day("2024-03-01")))
        assert.strictEqual(countTrue(results), 1)
        assert.deepStrictEqual(yield* streaks.days(key), [day("2024-03-01")])
      }))

    it.effect("50 concurrent transactions of lock, addDay and save for one member and day count the day once", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const today = day("2024-03-01")
        const results = yield* concurrently(50, () =>
          tx.withTransaction(Effect.gen(function*() {
            const row = yield* streaks.lock(key, "UTC")
            // Let other fibers run between the read and the write, as a network round trip would.
            yield* Effect.yieldNow()
            const added = yield* streaks.addDay(key, today)
            if (added) {
              const run = row.run + 1
              yield* streaks.save(new StreakRow({ ...row, lastActiveDay: today, run, best: Math.max(run, row.best) }))
            }
            return added
          })))
        assert.strictEqual(countTrue(results), 1)
        const row = Option.getOrThrow(yield* streaks.get(key))
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
            const row = yield* streaks.lock(key, "UTC")
            yield* Effect.yieldNow()
            yield* streaks.save(new StreakRow({ ...row, run: row.run + 1 }))
          })))
        assert.strictEqual(Option.getOrThrow(yield* streaks.get(key)).run, 50)
      }))

    it.effect("days are ascending and daysBetween is inclusive at both ends", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        for (const d of ["2024-03-05", "2024-03-01", "2024-03-10", "2024-02-28", "2024-03-03", "2023-12-31"]) {
          yield* streaks.addDay(key, day(d))
        }
        assert.deepStrictEqual(
          yield* streaks.days(key),
          ["2023-12-31", "2024-02-28", "2024-03-01", "2024-03-03", "2024-03-05", "2024-03-10"].map(day)
        )
        assert.deepStrictEqual(
          yield* streaks.daysBetween(key, day("2024-03-01"), day("2024-03-05")),
          ["2024-03-01", "2024-03-03", "2024-03-05"].map(day)
        )
        assert.deepStrictEqual(
          yield* streaks.daysBetween(key, day("2023-12-01"), day("2024-02-29")),
          ["2023-12-31", "2024-02-28"].map(day)
        )
        assert.deepStrictEqual(yield* streaks.daysBetween(key, day("2024-03-02"), day("2024-03-02")), [])
        assert.deepStrictEqual(yield* streaks.days(makeKey(program)), [])
      }))

    it.effect("keysOfMember lists every program and ledger of the member in the project, and nothing else", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const elsewhere = yield* seedTenant()
        const mine = makeKey(tenant.program)
        const userHash = mine.userHash
        const expected = [
          mine,
          makeKey(tenant.program, { userHash, ledger: "test" }),
          makeKey(other, { userHash })
        ]
        for (const key of expected) yield* streaks.save(makeRow(key))
        yield* streaks.save(makeRow(makeKey(tenant.program)))
        yield* streaks.save(makeRow(makeKey(elsewhere.program, { userHash })))
        const id = (k: { programId: string; ledger: string }) => `${k.programId}/${k.ledger}`
        assert.deepStrictEqual(
          sortBy(yield* streaks.keysOfMember(tenant.project.id, userHash), id).map(plain),
          sortBy(expected, id).map(plain)
        )
        assert.deepStrictEqual(yield* streaks.keysOfMember(tenant.project.id, makeKey(tenant.program).userHash), [])
      }))

    it.effect("remove deletes the row and the days of that key only", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const live = makeKey(program)
        const test = makeKey(program, { userHash: live.userHash, ledger: "test" })
        for (const key of [live, test]) {
          yield* streaks.save(makeRow(key, { run: 1, best: 1, lastActiveDay: day("2024-03-01") }))
          yield* streaks.addDay(key, day("2024-03-01"))
        }
        yield* streaks.remove(live)
        assert.isTrue(Option.isNone(yield* streaks.get(live)))
        assert.deepStrictEqual(yield* streaks.days(live), [])
        assert.isTrue(Option.isSome(yield* streaks.get(test)))
        assert.deepStrictEqual(yield* streaks.days(test), [day("2024-03-01")])
        // Once removed, the day is new again.
        assert.isTrue(yield* streaks.addDay(live, day("2024-03-01")))
      }))

    it.effect("rowsOfProgram returns the rows of one program on one ledger", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const a = makeKey(tenant.program)
        const b = makeKey(tenant.program)
        for (
          const key of [
            a,
            b,
            makeKey(tenant.program, { userHash: a.userHash, ledger: "test" }),
            makeKey(other, { userHash: a.userHash })
          ]
        ) {
          yield* streaks.save(makeRow(key))
        }
        const rows = yield* streaks.rowsOfProgram(tenant.program.id, "live")
        assert.deepStrictEqual(rows.map((r) => r.userHash).sort(), [a.userHash, b.userHash].sort())
        assert.isTrue(rows.every((r) => r.programId === tenant.program.id && r.ledger === "live"))
        assert.strictEqual((yield* streaks.rowsOfProgram(tenant.program.id, "test")).length, 1)
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
        yield* Effect.forEach([due[3]!, later, due[0]!, never, due[4]!, due[1]!, due[2]!], streaks.save, {
          discard: true
        })
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
        }).pipe(Effect.ensuring(
          Effect.forEach(mine, (row) => streaks.save(withoutDue(row)), { discard: true }).pipe(Effect.ignore)
        ))
      })
    })

    it.effect("two concurrent claimers never get the same row and together get every due row", () => {
      const base = ancient.streakClaimers
      return Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const mine = Array.from({ length: 25 }, (_, i) => makeRow(makeKey(program), { dueAt: at(base, i * SECOND) }))
        yield* Effect.forEach(mine, streaks.save, { discard: true })
        yield* Effect.gen(function*() {
          const [first, second] = yield* Effect.all([drainStreaks(at(base, MINUTE)), drainStreaks(at(base, MINUTE))], {
            concurrency: "unbounded"
          })
          const claimed = [...first, ...second].map((r) => `${r.projectId}/${r.programId}/${r.userHash}/${r.ledger}`)
          assert.strictEqual(new Set(claimed).size, claimed.length, "a row was handed to both claimers")
          const users = new Set([...first, ...second].map((r) => r.userHash))
          assert.isTrue(mine.every((r) => users.has(r.userHash)), "every due row is claimed")
          for (const row of mine) assert.isUndefined(Option.getOrThrow(yield* streaks.get(row)).dueAt)
        }).pipe(Effect.ensuring(
          Effect.forEach(mine, (row) => streaks.save(withoutDue(row)), { discard: true }).pipe(Effect.ignore)
        ))
      })
    })
  })

export const achievementSuite = (it: It) =>
  describe("AchievementStore", () => {
    it.effect("add is true only the first time per (key, milestone); list returns them; remove clears that key only", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [m1, m2] = program.milestones
        const live = makeKey(program)
        const test = makeKey(program, { userHash: live.userHash, ledger: "test" })
        for (const key of [live, test]) yield* streaks.save(makeRow(key))
        const first = new Date("2024-03-03T10:00:00.000Z")
        assert.isTrue(yield* achievements.add(live, m1!.id, first))
        assert.isFalse(yield* achievements.add(live, m1!.id, new Date("2024-03-04T10:00:00.000Z")))
        assert.isTrue(yield* achievements.add(live, m2!.id, new Date("2024-03-07T10:00:00.000Z")))
        assert.isTrue(yield* achievements.add(test, m1!.id, first))
        const listed = sortBy(yield* achievements.list(live), (a) => a.achievedAt.toISOString())
        assert.deepStrictEqual(listed.map(plain), [
          { ...plain(live), milestoneId: m1!.id, achievedAt: first },
          { ...plain(live), milestoneId: m2!.id, achievedAt: new Date("2024-03-07T10:00:00.000Z") }
        ])
        yield* achievements.remove(live)
        assert.deepStrictEqual(yield* achievements.list(live), [])
        assert.strictEqual((yield* achievements.list(test)).length, 1)
        assert.deepStrictEqual(yield* achievements.list(makeKey(program)), [])
      }))

    it.effect("achievedMany answers each key's milestone ids in input order (repeats, unknown keys, other ledgers)", () =>
      Effect.gen(function*() {
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const [m1, m2] = program.milestones
        const both = makeKey(program)
        const one = makeKey(program)
        const testLedger = makeKey(program, { userHash: both.userHash, ledger: "test" })
        const none = makeKey(program)
        yield* achievements.add(both, m2!.id, epoch)
        yield* achievements.add(both, m1!.id, epoch)
        yield* achievements.add(one, m1!.id, epoch)
        const answered = yield* achievements.achievedMany([none, both, testLedger, one, both])
        assert.deepStrictEqual(answered.map((ids) => [...ids].sort()), [
          [],
          [m1!.id, m2!.id].sort(),
          [],
          [m1!.id],
          [m1!.id, m2!.id].sort()
        ])
        assert.deepStrictEqual(yield* achievements.achievedMany([]), [])
      }))

    it.effect("of 50 concurrent adds of one milestone exactly one is true", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        yield* streaks.save(makeRow(key))
        const results = yield* concurrently(50, () => achievements.add(key, program.milestones[0]!.id, epoch))
        assert.strictEqual(countTrue(results), 1)
        assert.strictEqual((yield* achievements.list(key)).length, 1)
      }))
  })
