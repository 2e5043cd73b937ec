/**
 * Batches that mix projects (internal/perProject.ts): the adapter sends one statement per project
 * of a batch, each naming its project, and every input still gets its own answer in its place,
 * with the same ids in two projects kept apart.
 */
import { assert, layer } from "@effect/vitest"
import { Achievement, StreakKey } from "@streaks/core/Domain"
import type { LocalDate } from "@streaks/core/Calendar"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { AchievementStore, IdempotencyStore, MemberStore, StreakStore } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import { Effect, Layer, Option } from "effect"
import * as Migrations from "../src/Migrations.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

const storage = PgStorage.layer().pipe(Layer.provideMerge(Migrations.layer()), Layer.provideMerge(PgTest.layer))

const A = "prj_pa" as ProjectId
const B = "prj_pb" as ProjectId
const program = "prg_p" as ProgramId
const hash = (h: string) => h as UserHash
const key = (projectId: ProjectId, userHash: string) =>
  new StreakKey({ projectId, programId: program, userHash: hash(userHash), ledger: "live" })

layer(storage, { timeout: "120 seconds" })("batches across projects", (it) => {
  it.effect("lookups, locks, days, achievements, state and claims answer each input of a mixed batch in its place", () =>
    Effect.gen(function*() {
      const members = yield* MemberStore
      const streaks = yield* StreakStore
      const achievements = yield* AchievementStore
      const idempotency = yield* IdempotencyStore
      const state = yield* StateStore
      // The same member id in both projects, with a zone of its own in each; an alias in B only.
      yield* members.setTimezones([
        { projectId: A, userHash: hash("m"), timezone: "Europe/Paris" },
        { projectId: B, userHash: hash("m"), timezone: "Asia/Tokyo" }
      ])
      assert.strictEqual(yield* members.link(B, hash("anon"), hash("m")), "linked")
      const found = yield* members.lookup([
        { projectId: A, userHash: hash("anon") },
        { projectId: B, userHash: hash("m") },
        { projectId: A, userHash: hash("m") },
        { projectId: B, userHash: hash("anon") }
      ])
      assert.deepStrictEqual(found.map((m) => [m.userHash, Option.getOrNull(m.timezone)]), [
        ["anon", null],
        ["m", "Asia/Tokyo"],
        ["m", "Europe/Paris"],
        ["m", "Asia/Tokyo"]
      ])

      const locked = yield* streaks.lock([
        { key: key(B, "m"), timezone: "Asia/Tokyo" },
        { key: key(A, "m"), timezone: "Europe/Paris" },
        { key: key(B, "n"), timezone: "UTC" }
      ])
      assert.deepStrictEqual(locked.map((r) => [r.projectId, r.userHash, r.timezone]), [
        [B, "m", "Asia/Tokyo"],
        [A, "m", "Europe/Paris"],
        [B, "n", "UTC"]
      ])
      yield* streaks.addDays([
        { key: key(A, "m"), day: "2024-03-01" as LocalDate },
        { key: key(B, "m"), day: "2024-03-02" as LocalDate },
        { key: key(B, "m"), day: "2024-03-03" as LocalDate }
      ])
      yield* achievements.add([
        new Achievement({ ...key(B, "m"), milestoneId: "ms_b" as MilestoneId, achievedAt: new Date(0) })
      ])
      const rows = yield* streaks.rows({ keys: [key(A, "m"), key(B, "n"), key(B, "m")] })
      assert.deepStrictEqual(rows.map((r) => `${r.projectId}/${r.userHash}`).sort(), [
        "prj_pa/m",
        "prj_pb/m",
        "prj_pb/n"
      ])
      const got = yield* achievements.achieved([key(B, "m"), key(A, "m")])
      assert.deepStrictEqual(got.map((a) => a.map((x) => x.milestoneId)), [["ms_b"], []])

      const standing = yield* state.standing(
        [
          { projectId: B, programId: program, ledger: "live", userHash: hash("anon") },
          { projectId: A, programId: program, ledger: "live", userHash: hash("m") },
          { projectId: B, programId: program, ledger: "live", userHash: hash("nobody") }
        ],
        "2024-01-01" as LocalDate,
        "2024-12-31" as LocalDate
      )
      assert.deepStrictEqual(
        standing.map((s) => [
          s.member.userHash as string,
          Option.getOrNull(s.member.timezone),
          s.days as ReadonlyArray<string>,
          s.achieved as ReadonlyArray<string>,
          Option.isSome(s.row)
        ]),
        [
          ["m", "Asia/Tokyo", ["2024-03-02", "2024-03-03"], ["ms_b"], true],
          ["m", "Europe/Paris", ["2024-03-01"], [], true],
          ["nobody", null, [], [], false]
        ]
      )

      // One key text in both projects: two keys, each claimed once.
      const now = new Date()
      const claims = yield* idempotency.claim([
        { projectId: A, key: "k1", now },
        { projectId: B, key: "k1", now },
        { projectId: A, key: "k2", now }
      ])
      assert.deepStrictEqual(claims.map((c) => c._tag), ["Claimed", "Claimed", "Claimed"])
      yield* idempotency.complete([{ projectId: B, key: "k1", response: { status: 202, body: { b: 1 } }, now }])
      const again = yield* idempotency.claim([
        { projectId: B, key: "k1", now },
        { projectId: A, key: "k3", now }
      ])
      assert.deepStrictEqual(again, [{ _tag: "Completed", response: { status: 202, body: { b: 1 } } }, {
        _tag: "Claimed"
      }])
    }))
})
