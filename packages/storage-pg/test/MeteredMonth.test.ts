/**
 * The usage month on streak rows (migration 0005): the adapter keeps what ingest saves, and gives
 * it back from every read an action or the sweep takes the row from, or ingest would mark every
 * member again.
 */
import { assert, layer } from "@effect/vitest"
import { unsafeLocalDate } from "@streaks/core/Calendar"
import { StreakKey, StreakRow } from "@streaks/core/Domain"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { StreakStore, Transactor } from "@streaks/core/Ports"
import { Effect, Layer, Option } from "effect"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

const key = (userHash: string) =>
  new StreakKey({
    projectId: "prj_metered" as ProjectId,
    programId: "prg_metered" as ProgramId,
    userHash: userHash as UserHash,
    ledger: "live"
  })

const rowOf = (k: StreakKey, meteredMonth?: string) =>
  new StreakRow({
    ...k,
    lastActiveDay: unsafeLocalDate("2026-11-25"),
    run: 3,
    best: 5,
    timezone: "UTC",
    dueAt: new Date("2026-11-27T00:00:00.000Z"),
    updatedAt: new Date("2026-11-25T10:00:00.000Z"),
    ...(meteredMonth === undefined ? {} : { meteredMonth })
  })

layer(PgStorage.layer().pipe(Layer.provideMerge(PgTest.layer)), { timeout: "120 seconds" })("the usage month on streak rows", (it) => {
  it.effect("saved with the row, it comes back from get, the locks and the sweep's claim; a row without one has none", () =>
    Effect.gen(function*() {
      const streaks = yield* StreakStore
      const tx = yield* Transactor
      const [kept, unknown] = [key("kept"), key("unknown")]
      yield* streaks.saveAll([rowOf(kept, "2026-11"), rowOf(unknown)])
      assert.strictEqual(Option.getOrThrow(yield* streaks.get(kept)).meteredMonth, "2026-11")
      assert.isUndefined(Option.getOrThrow(yield* streaks.get(unknown)).meteredMonth)
      const [existing, locked] = yield* tx.withTransaction(Effect.all([
        streaks.lockExisting!([kept, unknown]),
        streaks.lockMany([{ key: kept, timezone: "UTC" }])
      ]))
      assert.deepStrictEqual(existing.map((r) => Option.getOrThrow(r).meteredMonth), ["2026-11", undefined])
      assert.strictEqual(locked[0]!.meteredMonth, "2026-11")
      const claimed = yield* streaks.claimDue(new Date("2026-11-28T00:00:00.000Z"), 10)
      assert.deepStrictEqual(claimed.map((r) => [r.userHash, r.meteredMonth]).sort(), [["kept", "2026-11"], ["unknown", undefined]])
      // A later save replaces it, as every other column.
      yield* streaks.saveAll([rowOf(kept, "2026-12")])
      assert.strictEqual(Option.getOrThrow(yield* streaks.get(kept)).meteredMonth, "2026-12")
    }))
})
