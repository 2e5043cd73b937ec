/**
 * Conformance of the batched calls of the member, usage and action-log ports (`MemberStore.lookup`,
 * `UsageStore.markActive`, `ActionLog.append`): one answer per entry, in input order, as if each
 * entry were given alone. (The streak and achievement batches are checked in their own suites.)
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { UserHash } from "@streaks/core/Ids"
import { ActionLog, MemberStore, Transactor, UsageStore } from "@streaks/core/Ports"
import { epoch, makeAction, makeUserHash, makeWorkspace, seedTenant } from "../Fixtures.js"
import { concurrently, countTrue, type It, sortBy } from "./kit.js"

export const batchSuite = (it: It) =>
  describe("batched calls", () => {
    it.effect("MemberStore.lookup answers in input order: linked ids give their member and zone, unknown ids themselves", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const { project } = yield* seedTenant()
        const other = (yield* seedTenant()).project
        const member = makeUserHash()
        const anonymous = makeUserHash()
        const stranger = makeUserHash()
        yield* members.setTimezone(project.id, member, "Asia/Tokyo")
        yield* members.link(project.id, anonymous, member)
        const found = yield* members.lookup([
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
        assert.deepStrictEqual(yield* members.lookup([]), [])
      }))

    it.effect("UsageStore.markActive is true only for first marks, a repeat within the call false, and activeCount counts each member once", () =>
      Effect.gen(function*() {
        const usage = yield* UsageStore
        const { workspace } = yield* seedTenant()
        const ws = workspace.id
        assert.deepStrictEqual(yield* usage.markActive([{ workspaceId: ws, month: "2024-03", member: "p:m1" }]), [true])
        const marked = yield* usage.markActive([
          { workspaceId: ws, month: "2024-03", member: "p:m1" },
          { workspaceId: ws, month: "2024-03", member: "p:m2" },
          { workspaceId: ws, month: "2024-04", member: "p:m1" },
          { workspaceId: ws, month: "2024-03", member: "p:m2" }
        ])
        assert.deepStrictEqual(marked, [false, true, true, false])
        assert.deepStrictEqual(yield* usage.markActive([]), [])
        assert.strictEqual(yield* usage.activeCount(ws, "2024-03"), 2)
        assert.strictEqual(yield* usage.activeCount(ws, "2024-04"), 1)
        assert.strictEqual(yield* usage.activeCount(makeWorkspace().id, "2024-03"), 0)
      }))

    it.effect("UsageStore.markActive inserts in one order: 20 concurrent transactions marking the same members in different orders mark each once", () =>
      Effect.gen(function*() {
        const tx = yield* Transactor
        const usage = yield* UsageStore
        const { workspace } = yield* seedTenant()
        const entries = [makeUserHash(), makeUserHash(), makeUserHash()].map((member) => ({
          workspaceId: workspace.id,
          month: "2024-03",
          member
        }))
        const results = yield* concurrently(20, (i) =>
          tx.withTransaction(Effect.gen(function*() {
            // Each caller names the members in its own order: the store must still not deadlock.
            const marked = yield* usage.markActive(i % 2 === 0 ? entries : [...entries].reverse())
            // Hold the marks a moment, as a transaction doing more work would.
            yield* Effect.yieldNow()
            return i % 2 === 0 ? marked : [...marked].reverse()
          })))
        for (let n = 0; n < entries.length; n++) assert.strictEqual(countTrue(results.map((r) => r[n]!)), 1)
        assert.strictEqual(yield* usage.activeCount(workspace.id, "2024-03"), entries.length)
      }))

    it.effect("ActionLog.append stores every record of a call, with its fields", () =>
      Effect.gen(function*() {
        const log = yield* ActionLog
        const { program } = yield* seedTenant()
        const member: UserHash = makeUserHash()
        yield* log.append([
          makeAction(program, { userHash: member, source: "api", extra: { plan: "gold" } }),
          makeAction(program, { userHash: member, counted: false, eventType: "widget_impression" }),
          makeAction(program, { counted: true })
        ])
        yield* log.append([])
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
