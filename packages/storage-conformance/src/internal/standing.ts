/**
 * Conformance of `StateStore.standing`, the one read behind `GET /v1/state`, whether the adapter
 * provides its own `StateStore` or gets it lifted from its ports: for each ref the same answer as
 * `MemberStore.lookup`, `StreakStore.rows`, `StreakStore.days` in the range and
 * `AchievementStore.achieved` together, in input order.
 */
import { assert } from "@effect/vitest"
import { Effect, Option } from "effect"
import { StreakKey, StreakRow } from "@streaks/core/Domain"
import type { UserHash } from "@streaks/core/Ids"
import { AchievementStore, MemberStore, StreakStore } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import { day, makeAchievement, makeUserHash, seedTenant } from "../Fixtures.js"
import { type It, perOrigin } from "./kit.js"

const dates = (...days: ReadonlyArray<string>) => days.map(day)

export const standingSuite = (it: It) =>
  perOrigin(it, "state", "StateStore.standing", (it) => {
    it.effect("resolves a linked id to its member and reads that member's row, days in range and achievements", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const state = yield* StateStore
        const { program, project } = yield* seedTenant()
        const member = makeUserHash()
        const anonymous = makeUserHash()
        yield* members.setTimezone(project.id, member, "Asia/Tokyo")
        yield* members.link(project.id, anonymous, member)
        const key = new StreakKey({ projectId: project.id, programId: program.id, userHash: member, ledger: "live" })
        const [locked] = yield* streaks.lock([{ key, timezone: "Asia/Tokyo" }])
        yield* streaks.save([new StreakRow({ ...locked!, run: 3, best: 5 })])
        yield* streaks.addDays(
          dates("2024-02-28", "2024-03-01", "2024-03-02", "2024-03-09").map((d) => ({ key, day: d }))
        )
        yield* achievements.add([
          makeAchievement(key, program.milestones[1]!.id),
          makeAchievement(key, program.milestones[0]!.id)
        ])
        // The same member's key on the other ledger must not leak into the live answer.
        yield* streaks.addDays([{ key: new StreakKey({ ...key, ledger: "test" }), day: day("2024-03-03") }])

        const ref = { projectId: project.id, programId: program.id, ledger: "live" as const, userHash: anonymous }
        const standing = (yield* state.standing([ref], day("2024-03-01"), day("2024-03-07")))[0]!
        assert.deepStrictEqual(standing.member, { userHash: member, timezone: Option.some("Asia/Tokyo") })
        assert.deepStrictEqual(
          Option.map(standing.row, (r) => [r.userHash, r.run, r.best, r.timezone]),
          Option.some([member, 3, 5, "Asia/Tokyo"])
        )
        assert.deepStrictEqual(standing.days, dates("2024-03-01", "2024-03-02"))
        assert.sameMembers([...standing.achieved], program.milestones.map((m) => m.id))

        // Read through the member's own id: the same answer.
        assert.deepStrictEqual(
          yield* state.standing([{ ...ref, userHash: member }], day("2024-03-01"), day("2024-03-07")),
          [standing]
        )
      }))

    it.effect("an unknown member has no zone, no row, no days and no achievements", () =>
      Effect.gen(function*() {
        const state = yield* StateStore
        const { program, project } = yield* seedTenant()
        const stranger = makeUserHash()
        const standing = yield* state.standing(
          [{ projectId: project.id, programId: program.id, ledger: "test", userHash: stranger }],
          day("2024-03-01"),
          day("2024-03-07")
        )
        assert.deepStrictEqual(standing, [{
          member: { userHash: stranger, timezone: Option.none() },
          row: Option.none(),
          days: [],
          achieved: []
        }])
      }))

    it.effect("answers many refs in input order, each as if read alone (repeats, other ledgers, strangers)", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const state = yield* StateStore
        const { program, project } = yield* seedTenant()
        const [a, b, stranger] = [makeUserHash(), makeUserHash(), makeUserHash()]
        const keyOf = (userHash: UserHash, ledger: "live" | "test") =>
          new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger })
        const [rowA, rowB] = yield* streaks.lock([
          { key: keyOf(a, "live"), timezone: "UTC" },
          { key: keyOf(b, "test"), timezone: "Europe/Paris" }
        ])
        yield* streaks.save([
          new StreakRow({ ...rowA!, run: 2, best: 2 }),
          new StreakRow({ ...rowB!, run: 7, best: 9 })
        ])
        yield* streaks.addDays([
          { key: keyOf(a, "live"), day: day("2024-03-02") },
          { key: keyOf(b, "test"), day: day("2024-03-04") },
          { key: keyOf(b, "test"), day: day("2024-03-05") }
        ])
        yield* achievements.add([makeAchievement(keyOf(b, "test"), program.milestones[0]!.id)])

        const ref = (userHash: UserHash, ledger: "live" | "test") => ({
          projectId: project.id,
          programId: program.id,
          ledger,
          userHash
        })
        const refs = [ref(b, "test"), ref(stranger, "live"), ref(a, "live"), ref(b, "live"), ref(b, "test")]
        const many = yield* state.standing(refs, day("2024-03-01"), day("2024-03-07"))
        const alone = yield* Effect.forEach(refs, (r) =>
          Effect.map(state.standing([r], day("2024-03-01"), day("2024-03-07")), (s) => s[0]!))
        assert.deepStrictEqual(many, alone)
        assert.deepStrictEqual(
          many.map((s) => [
            s.member.userHash,
            Option.map(s.row, (r) =>
              r.run),
            s.days,
            s.achieved
          ]),
          [
            [b, Option.some(7), dates("2024-03-04", "2024-03-05"), [program.milestones[0]!.id]],
            [stranger, Option.none(), [], []],
            [a, Option.some(2), dates("2024-03-02"), []],
            [b, Option.none(), [], []],
            [b, Option.some(7), dates("2024-03-04", "2024-03-05"), [program.milestones[0]!.id]]
          ]
        )
        assert.deepStrictEqual(yield* state.standing([], day("2024-03-01"), day("2024-03-07")), [])
      }))
  })
