/**
 * Conformance of `StreakStore.standingMany`, the one read behind `GET /v1/state`: for each ref the
 * same answer as `MemberStore.lookup`, `StreakStore.get`, `daysBetween` and `AchievementStore.list`
 * together, in input order.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { StreakKey, StreakRow } from "../Domain.js"
import { AchievementStore, MemberStore, StreakStore } from "../Ports.js"
import { day, epoch, makeUserHash, seedTenant } from "./conformanceFixtures.js"
import type { It } from "./conformanceKit.js"

export const standingSuite = (it: It) =>
  describe("StreakStore.standingMany", () => {
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
        const standing = (yield* streaks.standingMany([ref], day("2024-03-01"), day("2024-03-07")))[0]!
        assert.deepStrictEqual(standing.member, { userHash: member, timezone: Option.some("Asia/Tokyo") })
        assert.deepStrictEqual(
          Option.map(standing.row, (r) => [r.userHash, r.run, r.best, r.timezone]),
          Option.some([member, 3, 5, "Asia/Tokyo"])
        )
        assert.deepStrictEqual(standing.days, [day("2024-03-01"), day("2024-03-02")])
        assert.sameMembers([...standing.achieved], program.milestones.map((m) => m.id))

        // Read through the member's own id: the same answer.
        assert.deepStrictEqual(
          yield* streaks.standingMany([{ ...ref, userHash: member }], day("2024-03-01"), day("2024-03-07")),
          [standing]
        )
      }))

    it.effect("an unknown member has no zone, no row, no days and no achievements", () =>
      Effect.gen(function*() {
        const streaks = yield* StreakStore
        const { program, project } = yield* seedTenant()
        const stranger = makeUserHash()
        const standing = yield* streaks.standingMany(
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
        const { program, project } = yield* seedTenant()
        const [a, b, stranger] = [makeUserHash(), makeUserHash(), makeUserHash()]
        const keyOf = (userHash: typeof a, ledger: "live" | "test") =>
          new StreakKey({ projectId: project.id, programId: program.id, userHash, ledger })
        yield* streaks.save(new StreakRow({ ...(yield* streaks.lock(keyOf(a, "live"), "UTC")), run: 2, best: 2 }))
        yield* streaks.save(
          new StreakRow({ ...(yield* streaks.lock(keyOf(b, "test"), "Europe/Paris")), run: 7, best: 9 })
        )
        yield* streaks.addDay(keyOf(a, "live"), day("2024-03-02"))
        yield* streaks.addDay(keyOf(b, "test"), day("2024-03-04"))
        yield* streaks.addDay(keyOf(b, "test"), day("2024-03-05"))
        yield* achievements.add(keyOf(b, "test"), program.milestones[0]!.id, epoch)

        const ref = (userHash: typeof a, ledger: "live" | "test") => ({
          projectId: project.id,
          programId: program.id,
          ledger,
          userHash
        })
        const refs = [ref(b, "test"), ref(stranger, "live"), ref(a, "live"), ref(b, "live"), ref(b, "test")]
        const many = yield* streaks.standingMany(refs, day("2024-03-01"), day("2024-03-07"))
        const alone = yield* Effect.forEach(refs, (r) =>
          Effect.map(streaks.standingMany([r], day("2024-03-01"), day("2024-03-07")), (s) => s[0]!))
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
            [b, Option.some(7), [day("2024-03-04"), day("2024-03-05")], [program.milestones[0]!.id]],
            [stranger, Option.none(), [], []],
            [a, Option.some(2), [day("2024-03-02")], []],
            [b, Option.none(), [], []],
            [b, Option.some(7), [day("2024-03-04"), day("2024-03-05")], [program.milestones[0]!.id]]
          ]
        )
        assert.deepStrictEqual(yield* streaks.standingMany([], day("2024-03-01"), day("2024-03-07")), [])
      }))
  })
