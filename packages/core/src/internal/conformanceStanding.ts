/**
 * Conformance of `StreakStore.standing`, the one read behind `GET /v1/state`: the same answers as
 * `MemberStore.lookup`, `StreakStore.get`, `daysBetween` and `AchievementStore.list` together.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { StreakKey, StreakRow } from "../Domain.js"
import { AchievementStore, MemberStore, StreakStore } from "../Ports.js"
import { day, epoch, makeUserHash, seedTenant } from "./conformanceFixtures.js"
import type { It } from "./conformanceKit.js"

export const standingSuite = (it: It) =>
  describe("StreakStore.standing", () => {
    it.effect("resolves a linked id to its member and reads that member's row, days in range and achievements", () =>
      Effect.gen(function*() {
        const members = yield* MemberStore
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const { program, project } = yield* seedTenant()
        const member = makeUserHash()
        const anonymous = makeUserHash()
        yield* members.setTimezone(project.id, member, "Asia/Tokyo")
        yield* members.link(project.id, anonymous, member)
        const key = new StreakKey({ projectId: project.id, programId: program.id, userHash: member, ledger: "live" })
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(key, "Asia/Tokyo")), run: 3, best: 5 }))
        for (const d of ["2024-02-28", "2024-03-01", "2024-03-02", "2024-03-09"]) yield* streaks.addDay(key, day(d))
        yield* achievements.add(key, program.milestones[1]!.id, epoch)
        yield* achievements.add(key, program.milestones[0]!.id, epoch)
        // The same member's key on the other ledger must not leak into the live answer.
        yield* streaks.addDay(new StreakKey({ ...key, ledger: "test" }), day("2024-03-03"))

        const ref = { projectId: project.id, programId: program.id, ledger: "live" as const, userHash: anonymous }
        const standing = yield* streaks.standing(ref, day("2024-03-01"), day("2024-03-07"))
        assert.deepStrictEqual(standing.member, { userHash: member, timezone: Option.some("Asia/Tokyo") })
        assert.deepStrictEqual(Option.map(standing.row, (r) => [r.userHash, r.run, r.best, r.timezone]), Option.some([member, 3, 5, "Asia/Tokyo"]))
        assert.deepStrictEqual(standing.days, [day("2024-03-01"), day("2024-03-02")])
        assert.sameMembers([...standing.achieved], program.milestones.map((m) => m.id))

        // Read through the member's own id: the same answer.
        assert.deepStrictEqual(yield* streaks.standing({ ...ref, userHash: member }, day("2024-03-01"), day("2024-03-07")), standing)
      }))

    it.effect("an unknown member has no zone, no row, no days and no achievements", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program, project } = yield* seedTenant()
        const stranger = makeUserHash()
        const standing = yield* streaks.standing(
          { projectId: project.id, programId: program.id, ledger: "test", userHash: stranger },
          day("2024-03-01"),
          day("2024-03-07")
        )
        assert.deepStrictEqual(standing, { member: { userHash: stranger, timezone: Option.none() }, row: Option.none(), days: [], achieved: [] })
      }))
  })
