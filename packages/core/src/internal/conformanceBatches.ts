/**
 * Conformance of the multi-row methods that `IngestStore.fromPorts` builds on (`lookupMany`,
 * `lockMany`, `addDays`, `markActiveMany`, `appendAll`): the same answers as the single calls, in
 * input order.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type StreakKey, StreakRow } from "../Domain.js"
import type { UserHash } from "../Ids.js"
import { ActionLog, MemberStore, StreakStore, Transactor, UsageStore } from "../Ports.js"
import { day, epoch, makeAction, makeKey, makeUserHash, makeWorkspace, seedTenant } from "./conformanceFixtures.js"
import { concurrently, type It, sortBy } from "./conformanceKit.js"

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
        const query = {
          programIds: [program.id],
          from: epoch,
          to: new Date(epoch.getTime() + 1),
          ledger: "live" as const
        }
        assert.deepStrictEqual(
          (yield* log.countsByDay(query)).map((c) => [c.eventType, c.count, c.counted]),
          [["streak_interaction", 2, 2], ["widget_impression", 1, 0]]
        )
        assert.deepStrictEqual(
          sortBy((yield* log.sources(query)).map((s) => [s.source ?? "none", s.count] as const), (s) => s[0]),
          [["api", 1], ["none", 1]]
        )
      }))
  })
