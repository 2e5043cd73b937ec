/**
 * The copy of a key's achieved milestones on its streak row (migration 0003): what an action asks
 * for is answered from the row it has just locked, and the copy never says less or more than the
 * achievements table, whatever order the writes came in.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { unsafeLocalDate } from "@streaks/core/Calendar"
import { Achievement, StreakKey } from "@streaks/core/Domain"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { AchievementStore, StreakStore, Transactor } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import { Effect, Layer, Option } from "effect"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"
import type { AchievementExtras } from "../src/internal/achievementStore.js"
import type { StreakExtras } from "../src/internal/streakStore.js"

const key = (userHash: string) =>
  new StreakKey({
    projectId: "prj_copy" as ProjectId,
    programId: "prg_copy" as ProgramId,
    userHash: userHash as UserHash,
    ledger: "live"
  })

const m = (id: string) => id as MilestoneId
const at = new Date("2026-11-25T10:00:00.000Z")

/** The row's copy as stored: null when not known. */
const copyOf = (k: StreakKey) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly achieved: ReadonlyArray<string> | null }>`
        SELECT achieved FROM streaks_streaks WHERE project_id = ${k.projectId} AND program_id = ${k.programId}
          AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`,
      (rows) => (rows[0]?.achieved === null || rows[0] === undefined ? null : [...rows[0].achieved].sort())
    ))

/** An achievement written straight into the table, as one recorded before migration 0003 was. */
const recordedBeforeTheCopy = (k: StreakKey, milestone: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO streaks_achievements (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
        VALUES (${k.projectId}, ${k.programId}, ${k.userHash}, ${k.ledger}, ${milestone}, ${at})`
  )

/** A streak row as the first action leaves it (its copy not known yet). */
const rowFor = (k: StreakKey) =>
  Effect.flatMap(
    Transactor,
    (tx) => tx.withTransaction(Effect.flatMap(StreakStore, (s) => s.lock([{ key: k, timezone: "UTC" }])))
  )

/** The achievement store with what ingest reads through it: the ids alone, the copy first. */
const achievementStore = Effect.map(AchievementStore, (a) => a as AchievementStore["Type"] & AchievementExtras)

/** Records `milestone` on `k` at `at`; whether it was new. */
const add = (k: StreakKey, milestone: string) =>
  Effect.flatMap(AchievementStore, (a) =>
    Effect.map(
      a.add([new Achievement({ ...k, milestoneId: m(milestone), achievedAt: at })]),
      (added) => added[0]!
    ))

layer(PgStorage.layer().pipe(Layer.provideMerge(PgTest.layer)), { timeout: "120 seconds" })(
  "the achieved copy on streak rows",
  (it) => {
    it.effect("a new row's copy is not known, and its first achievement builds it from the table plus the new id", () =>
      Effect.gen(function*() {
        const achievements = yield* achievementStore
        const k = key("first")
        yield* rowFor(k)
        assert.strictEqual(yield* copyOf(k), null)
        yield* recordedBeforeTheCopy(k, "ms_old")
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_old")]])
        assert.isTrue(yield* add(k, "ms_new"))
        assert.deepStrictEqual(yield* copyOf(k), ["ms_new", "ms_old"])
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_new"), m("ms_old")]])
        // Adding it again changes nothing, on the table or on the copy.
        assert.isFalse(yield* add(k, "ms_new"))
        assert.deepStrictEqual(yield* copyOf(k), ["ms_new", "ms_old"])
      }))

    it.effect("a known copy is what answers: the achievements table is not read for that key", () =>
      Effect.gen(function*() {
        const achievements = yield* achievementStore
        const sql = yield* SqlClient.SqlClient
        const k = key("known")
        yield* rowFor(k)
        yield* add(k, "ms_a")
        // Tell the two sources apart: a row in the table behind the copy's back is not seen...
        yield* recordedBeforeTheCopy(k, "ms_behind")
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_a")]])
        // ...until the copy is not known again.
        yield* sql`UPDATE streaks_streaks SET achieved = NULL WHERE user_hash = ${k.userHash}`
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_a"), m("ms_behind")]])
      }))

    it.effect("a row locked ahead with its achievements gets them as achievedIds does: the copy where known, else the table", () =>
      Effect.gen(function*() {
        const streaks = (yield* StreakStore) as StreakStore["Type"] & StreakExtras
        const sql = yield* SqlClient.SqlClient
        const [k, none] = [key("ahead"), key("ahead-nobody")]
        yield* rowFor(k)
        yield* add(k, "ms_a")
        yield* recordedBeforeTheCopy(k, "ms_behind")
        const ahead = Effect.flatMap(Transactor, (tx) =>
          tx.withTransaction(Effect.map(
            streaks.lockExistingWithAchieved([{ key: k, withAchieved: true }, { key: none, withAchieved: true }, {
              key: k,
              withAchieved: false
            }]),
            (rows): Array<unknown> =>
              rows.map((r) =>
                Option.match(r, {
                  onNone: () => "no row",
                  onSome: (
                    { achieved, row }
                  ) => [row.userHash, achieved === undefined ? "not asked" : [...achieved].sort()]
                })
              )
          )))
        assert.deepStrictEqual(yield* ahead, [[k.userHash, ["ms_a"]], "no row", [k.userHash, "not asked"]])
        yield* sql`UPDATE streaks_streaks SET achieved = NULL WHERE user_hash = ${k.userHash}`
        assert.deepStrictEqual(yield* ahead, [[k.userHash, ["ms_a", "ms_behind"]], "no row", [
          k.userHash,
          "not asked"
        ]])
      }))

    it.effect("a removed key takes its achievements with its row: a new row starts not known, and the next add starts it again", () =>
      Effect.gen(function*() {
        const achievements = yield* achievementStore
        const k = key("removed")
        yield* rowFor(k)
        yield* add(k, "ms_a")
        yield* Effect.flatMap(StreakStore, (s) => s.remove(k))
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[]])
        assert.deepStrictEqual(yield* achievements.achieved([k]), [[]])
        yield* rowFor(k)
        assert.strictEqual(yield* copyOf(k), null)
        assert.isTrue(yield* add(k, "ms_a"))
        assert.deepStrictEqual(yield* copyOf(k), ["ms_a"])
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_a")]])
      }))

    it.effect("an achievement of a key without a row is answered from the table, and a later row starts not known", () =>
      Effect.gen(function*() {
        const achievements = yield* achievementStore
        const k = key("rowless")
        assert.isTrue(yield* add(k, "ms_a"))
        assert.deepStrictEqual(yield* achievements.achievedIds([k]), [[m("ms_a")]])
        yield* rowFor(k)
        assert.strictEqual(yield* copyOf(k), null)
        assert.deepStrictEqual(yield* achievements.achievedIds([k, key("nobody")]), [[m("ms_a")], []])
      }))

    it.effect("a batch of achievements sets the copy of each key it adds to; a pair given twice is new once", () =>
      Effect.gen(function*() {
        const achievements = yield* achievementStore
        const [a, b] = [key("batch-a"), key("batch-b")]
        yield* rowFor(a)
        yield* rowFor(b)
        yield* recordedBeforeTheCopy(b, "ms_old")
        const of = (k: StreakKey, milestone: string) =>
          new Achievement({ ...k, milestoneId: m(milestone), achievedAt: at })
        const added = yield* achievements.add([
          of(a, "ms_1"),
          of(b, "ms_1"),
          of(a, "ms_2"),
          of(a, "ms_1"),
          of(b, "ms_old")
        ])
        assert.deepStrictEqual(added, [true, true, true, false, false])
        assert.deepStrictEqual(yield* copyOf(a), ["ms_1", "ms_2"])
        assert.deepStrictEqual(yield* copyOf(b), ["ms_1", "ms_old"])
        // The port's read is the table's, each achievement with its instant, whatever the copy says.
        const [ofA, ofB] = yield* achievements.achieved([a, b])
        assert.deepStrictEqual(ofA!.map((x) => [x.milestoneId, x.achievedAt.toISOString()]), [
          ["ms_1", at.toISOString()],
          ["ms_2", at.toISOString()]
        ])
        assert.deepStrictEqual(ofB!.map((x) => x.milestoneId), [m("ms_1"), m("ms_old")])
      }))

    it.effect("the widget's read gives the copy's ids in the same order as the table's", () =>
      Effect.gen(function*() {
        const state = yield* StateStore
        const k = key("standing")
        yield* rowFor(k)
        yield* add(k, "ms_z")
        yield* add(k, "ms_a")
        const day = unsafeLocalDate("2026-11-25")
        const [standing] = yield* state.standing([k], day, day)
        assert.deepStrictEqual(standing?.achieved, [m("ms_a"), m("ms_z")])
      }))
  }
)
