/**
 * Conformance of the multi-row methods that apply a batch of actions (`lookupMany`, `setTimezones`,
 * `lockMany`, `lockExisting`, `lockExistingWithAchieved`, `addDays`, `saveAllWithDays`,
 * `markActiveMany`, `appendAll`, `claimMany`, `completeMany`): the same answers as the single
 * calls, in input order.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type StreakKey, StreakRow } from "../Domain.js"
import type { UserHash } from "../Ids.js"
import { AchievementStore, ActionLog, IdempotencyStore, MemberStore, StreakStore, Transactor, UsageStore } from "../Ports.js"
import { at, day, epoch, makeAction, makeKey, makeUserHash, makeWorkspace, randomHex, seedTenant } from "./conformanceFixtures.js"
import { concurrently, DAY, HOUR, type It, plain, SECOND, sortBy } from "./conformanceKit.js"
import { claimedOnceEach, seedKeyCases } from "./conformanceKeyClaims.js"

/**
 * Days to add once `a`'s 2024-03-01 is stored: that one, a new one, another key's, and the new one
 * again within the call; `addDays` answers them `[false, true, true, false]`.
 */
const dayCases = (a: StreakKey, b: StreakKey) => [
  { key: a, day: day("2024-03-01") },
  { key: a, day: day("2024-03-02") },
  { key: b, day: day("2024-03-01") },
  { key: a, day: day("2024-03-02") }
]

export const batchSuite = (it: It) =>
  describe("multi-row methods", () => {
    it.effect("lookupMany answers in input order: linked ids give their member and zone, unknown ids themselves", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const { project } = yield* seedTenant()
        const other = (yield* seedTenant()).project
        const member = makeUserHash()
        const anonymous = makeUserHash()
        const stranger = makeUserHash()
        yield* members.setTimezone(project.id, member, "Asia/Tokyo")
        yield* members.link(project.id, anonymous, member)
        const found = yield* members.lookupMany([
          { projectId: project.id, userHash: stranger },
          { projectId: project.id, userHash: anonymous },
          { projectId: other.id, userHash: anonymous },
          { projectId: project.id, userHash: member },
          { projectId: project.id, userHash: anonymous }
        ])
        assert.deepStrictEqual(found, [
          { userHash: stranger, timezone: Option.none() },
          { userHash: member, timezone: Option.some("Asia/Tokyo") },
          { userHash: anonymous, timezone: Option.none() },
          { userHash: member, timezone: Option.some("Asia/Tokyo") },
          { userHash: member, timezone: Option.some("Asia/Tokyo") }
        ])
        assert.deepStrictEqual(yield* members.lookupMany([]), [])
      }))

    // `setTimezones` is optional: a store without it is skipped here (ingest then calls `setTimezone` per member).
    it.effect("setTimezones stores each member's zone per project, a member given twice keeps the last, and replaces stored zones", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        if (members.setTimezones === undefined) return
        const { project } = yield* seedTenant()
        const other = (yield* seedTenant()).project
        const [a, b, c] = [makeUserHash(), makeUserHash(), makeUserHash()]
        yield* members.setTimezone(project.id, c, "Europe/Paris")
        yield* members.setTimezones([
          { projectId: project.id, userHash: a, timezone: "Asia/Tokyo" },
          { projectId: project.id, userHash: b, timezone: "America/New_York" },
          { projectId: project.id, userHash: a, timezone: "Asia/Kolkata" },
          { projectId: project.id, userHash: c, timezone: "Australia/Sydney" },
          { projectId: other.id, userHash: b, timezone: "Africa/Lagos" }
        ])
        yield* members.setTimezones([])
        const zones = yield* members.lookupMany([
          { projectId: project.id, userHash: a },
          { projectId: project.id, userHash: b },
          { projectId: project.id, userHash: c },
          { projectId: other.id, userHash: b },
          { projectId: other.id, userHash: a }
        ])
        assert.deepStrictEqual(zones.map((m) => Option.getOrNull(m.timezone)), [
          "Asia/Kolkata",
          "America/New_York",
          "Australia/Sydney",
          "Africa/Lagos",
          null
        ])
      }))

    it.effect("lockMany creates missing rows in their zones, returns stored ones, in input order, a repeated key twice", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b, c] = [makeKey(program), makeKey(program), makeKey(program, { ledger: "test" })]
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(b, "UTC")), run: 4, best: 9 }))
        const rows = yield* tx.withTransaction(streaks.lockMany([
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
        assert.deepStrictEqual(yield* streaks.lockMany([]), [])
      }))

    it.effect("lockMany serialises: 20 concurrent transactions locking the same keys in different orders each add 1 to every row", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const keys = [makeKey(program), makeKey(program), makeKey(program)]
        yield* concurrently(20, (i) =>
          tx.withTransaction(Effect.gen(function*() {
            // Each caller names the keys in its own order: the store must still not deadlock.
            const order = i % 2 === 0 ? keys : [...keys].reverse()
            const rows = yield* streaks.lockMany(order.map((key) => ({ key, timezone: "UTC" })))
            yield* Effect.yieldNow()
            yield* streaks.saveAll(rows.map((row) => new StreakRow({ ...row, run: row.run + 1 })))
          })))
        for (const key of keys) assert.strictEqual(Option.getOrThrow(yield* streaks.get(key)).run, 20)
      }))

    // `lockExisting` is optional: a store without it is skipped here (ingest then locks after the lookup).
    it.effect("lockExisting returns stored rows and None for missing keys, in input order, a repeated key twice, and creates nothing", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        if (streaks.lockExisting === undefined) return
        const { program } = yield* seedTenant()
        const [a, b, c] = [makeKey(program), makeKey(program), makeKey(program, { ledger: "test" })]
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(b, "Asia/Tokyo")), run: 4, best: 9 }))
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(c, "UTC")), run: 1, best: 2 }))
        const rows = yield* tx.withTransaction(streaks.lockExisting([c, a, b, c]))
        assert.deepStrictEqual(rows.map(Option.map((r) => [r.userHash, r.ledger, r.timezone, r.run, r.best])), [
          Option.some([c.userHash, "test", "UTC", 1, 2]),
          Option.none(),
          Option.some([b.userHash, "live", "Asia/Tokyo", 4, 9]),
          Option.some([c.userHash, "test", "UTC", 1, 2])
        ])
        assert.isTrue(Option.isNone(yield* streaks.get(a)))
        assert.deepStrictEqual(yield* streaks.lockExisting([]), [])
      }))

    // `lockExistingWithAchieved` is optional too: a store without it is skipped here (ingest then
    // asks `achievedMany` with the locks).
    it.effect("lockExistingWithAchieved locks as lockExisting does, each row asked with achievedMany's answer or undefined", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        if (streaks.lockExistingWithAchieved === undefined) return
        const { program } = yield* seedTenant()
        const [a, b, c] = [makeKey(program), makeKey(program), makeKey(program, { ledger: "test" })]
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(b, "Asia/Tokyo")), run: 4, best: 9 }))
        yield* streaks.lock(c, "UTC")
        for (const milestone of program.milestones) yield* achievements.add(b, milestone.id, epoch)
        const keys = [c, a, b, c, b]
        const asked = [true, true, true, true, false]
        const [locked, rows, achieved] = yield* tx.withTransaction(Effect.all([
          streaks.lockExistingWithAchieved(keys.map((key, i) => ({ key, withAchieved: asked[i]! }))),
          streaks.lockExisting!(keys),
          achievements.achievedMany(keys)
        ]))
        assert.deepStrictEqual(locked.map(Option.map((l) => plain(l.row))), rows.map(Option.map(plain)))
        assert.deepStrictEqual(locked.map(Option.isSome), [true, false, true, true, true])
        locked.forEach((l, i) => {
          if (Option.isNone(l)) return
          if (!asked[i]) return assert.isUndefined(l.value.achieved, `key ${i}`)
          if (l.value.achieved === undefined) return
          assert.deepStrictEqual([...l.value.achieved].sort(), [...achieved[i]!].sort(), `key ${i}`)
        })
        assert.isTrue(Option.isNone(yield* streaks.get(a)))
        assert.deepStrictEqual(yield* streaks.lockExistingWithAchieved([]), [])
      }))

    // Both ways of locking ahead, as `lockExisting`: each must serialise like `lockMany`.
    const lockers = [
      ["lockExisting", (s: StreakStore["Type"]) => s.lockExisting],
      ["lockExistingWithAchieved", (s: StreakStore["Type"]) => {
        const locked = s.lockExistingWithAchieved
        return locked === undefined ? undefined : (keys: ReadonlyArray<StreakKey>) =>
          Effect.map(locked(keys.map((key) => ({ key, withAchieved: true }))), (rows) => rows.map(Option.map((l) => l.row)))
      }]
    ] as const
    for (const [name, lockerOf] of lockers) {
      it.effect(`${name} serialises like lockMany: 20 concurrent transactions in different orders each add 1 to every row`, () =>
        Effect.gen(function*() {
          const tx = yield* Transactor
          const streaks = yield* StreakStore
          const lockExisting = lockerOf(streaks)
          if (lockExisting === undefined) return
          const { program } = yield* seedTenant()
          const keys = [makeKey(program), makeKey(program), makeKey(program)]
          for (const key of keys) yield* streaks.lock(key, "UTC")
          yield* concurrently(20, (i) =>
            tx.withTransaction(Effect.gen(function*() {
              const order = i % 2 === 0 ? keys : [...keys].reverse()
              const rows = (yield* lockExisting(order)).map(Option.getOrThrow)
              yield* Effect.yieldNow()
              yield* streaks.saveAll(rows.map((row) => new StreakRow({ ...row, run: row.run + 1 })))
            })))
          for (const key of keys) assert.strictEqual(Option.getOrThrow(yield* streaks.get(key)).run, 20)
        }))
    }

    it.effect("addDays is true only for first inserts: a stored day and a repeat within the call are false", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program } = yield* seedTenant()
        const [a, b] = [makeKey(program), makeKey(program)]
        yield* streaks.addDay(a, day("2024-03-01"))
        const added = yield* streaks.addDays(dayCases(a, b))
        assert.deepStrictEqual(added, [false, true, true, false])
        assert.deepStrictEqual(yield* streaks.days(a), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(b), [day("2024-03-01")])
        assert.deepStrictEqual(yield* streaks.addDays([]), [])
      }))

    // `saveAllWithDays` is optional: a store without it is skipped here (ingest then calls both).
    it.effect("saveAllWithDays saves as saveAll and answers as addDays", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const saveAllWithDays = streaks.saveAllWithDays
        if (saveAllWithDays === undefined) return
        const { program } = yield* seedTenant()
        const [a, b] = [makeKey(program), makeKey(program)]
        yield* streaks.addDay(a, day("2024-03-01"))
        const [rowA, rowB] = [yield* streaks.lock(a, "UTC"), yield* streaks.lock(b, "UTC")]
        const added = yield* saveAllWithDays(
          [new StreakRow({ ...rowA, run: 1 }), new StreakRow({ ...rowB, run: 2 }), new StreakRow({ ...rowA, run: 3 })],
          dayCases(a, b)
        )
        assert.deepStrictEqual(added, [false, true, true, false])
        assert.deepStrictEqual(yield* streaks.days(a), [day("2024-03-01"), day("2024-03-02")])
        assert.deepStrictEqual(yield* streaks.days(b), [day("2024-03-01")])
        // A key given twice keeps its last row, as `saveAll`.
        assert.strictEqual(Option.getOrThrow(yield* streaks.get(a)).run, 3)
        assert.strictEqual(Option.getOrThrow(yield* streaks.get(b)).run, 2)
        assert.deepStrictEqual(yield* saveAllWithDays([new StreakRow({ ...rowB, run: 5 })], []), [])
        assert.strictEqual(Option.getOrThrow(yield* streaks.get(b)).run, 5)
        assert.deepStrictEqual(yield* saveAllWithDays([], [{ key: b, day: day("2024-03-02") }]), [true])
        assert.deepStrictEqual(yield* saveAllWithDays([], []), [])
      }))

    it.effect("markActiveMany is true only for first marks, a repeat within the call false, and counts each member once", () =>
      Effect.gen(function*() {
        const usage = yield* UsageStore
        const { workspace } = yield* seedTenant()
        const ws = workspace.id
        yield* usage.markActive(ws, "2024-03", "p:m1")
        const marked = yield* usage.markActiveMany([
          { workspaceId: ws, month: "2024-03", member: "p:m1" },
          { workspaceId: ws, month: "2024-03", member: "p:m2" },
          { workspaceId: ws, month: "2024-04", member: "p:m1" },
          { workspaceId: ws, month: "2024-03", member: "p:m2" }
        ])
        assert.deepStrictEqual(marked, [false, true, true, false])
        assert.strictEqual(yield* usage.activeCount(ws, "2024-03"), 2)
        assert.strictEqual(yield* usage.activeCount(ws, "2024-04"), 1)
        assert.strictEqual(yield* usage.activeCount(makeWorkspace().id, "2024-03"), 0)
      }))

    it.effect("appendAll stores every record, with its fields, as append does", () =>
      Effect.gen(function*() {
        const log = yield* ActionLog
        const { program } = yield* seedTenant()
        const member: UserHash = makeUserHash()
        yield* log.appendAll([
          makeAction(program, { userHash: member, source: "api", extra: { plan: "gold" } }),
          makeAction(program, { userHash: member, counted: false, eventType: "widget_impression" }),
          makeAction(program, { counted: true })
        ])
        yield* log.appendAll([])
        const query = { programIds: [program.id], from: epoch, to: new Date(epoch.getTime() + 1), ledger: "live" as const }
        assert.deepStrictEqual(
          (yield* log.countsByDay(query)).map((c) => [c.eventType, c.count, c.counted]),
          [["streak_interaction", 2, 2], ["widget_impression", 1, 0]]
        )
        assert.deepStrictEqual(
          sortBy((yield* log.sources(query)).map((s) => [s.source ?? "none", s.count] as const), (s) => s[0]),
          [["api", 1], ["none", 1]]
        )
      }))

    // `claimMany` is optional: a store without it is skipped here (ingest then calls `claim` per key).
    it.effect("claimMany answers each key as claim would at its own time, in input order, and the claims hold", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.claimMany === undefined) return
        const { answers, claimed, claims } = yield* seedKeyCases
        assert.deepStrictEqual(yield* store.claimMany(claims), answers)
        // What was claimed is in progress from its claim's own time.
        for (const { key, now, projectId } of claimed) {
          assert.deepStrictEqual(yield* store.claim(projectId, key, at(now, SECOND)), { _tag: "InProgress" })
        }
        assert.deepStrictEqual(yield* store.claimMany([]), [])
      }))

    // `completeMany` is optional: a store without it is skipped here (ingest then calls `complete` per key).
    it.effect("completeMany stores each key's response, which a later claim replays as complete's would", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        if (store.completeMany === undefined) return
        const { project } = yield* seedTenant()
        const other = (yield* seedTenant()).project
        const [a, b] = [`a-${randomHex(6)}`, `b-${randomHex(6)}`]
        const completions = [
          { projectId: project.id, key: a, now: at(epoch, SECOND), response: { status: 202, body: { ok: true, counted: true } } },
          { projectId: project.id, key: b, now: at(epoch, SECOND), response: { status: 202, body: { ok: true, counted: false, reason: "PROGRAM_NOT_LIVE" } } },
          { projectId: other.id, key: a, now: at(epoch, 2 * SECOND), response: { status: 202, body: { counted: true, duplicate: true } } }
        ]
        for (const c of completions) yield* store.claim(c.projectId, c.key, epoch)
        yield* store.completeMany(completions)
        yield* store.completeMany([])
        for (const c of completions) {
          assert.deepStrictEqual(yield* store.claim(c.projectId, c.key, at(epoch, HOUR)), { _tag: "Completed", response: c.response })
        }
        // The record's lifetime still counts from its claim.
        assert.deepStrictEqual(yield* store.claim(project.id, a, at(epoch, DAY)), { _tag: "Claimed" })
      }))

    it.effect("of 10 concurrent claimMany calls of the same keys, each key is Claimed exactly once", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const claimMany = store.claimMany
        if (claimMany === undefined) return
        yield* claimedOnceEach(claimMany)
      }))
  })
