/**
 * Conformance of `ImportStore`: a batch stores each new identity once (across batches and within
 * one), adds its day unless active, counts the rest as duplicates, keeps progress and rejections,
 * pages the touched members, and finds the running job of a source to resume.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { UserHash } from "@streaks/core/Ids"
import { type ImportBatch, type ImportJob, ImportStore, maxRejections } from "@streaks/core/ImportStore"
import { AchievementStore, StreakStore } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import {
  day,
  epoch,
  freshId,
  makeAchievement,
  makeImportJob,
  makeKey,
  makeRow,
  makeUserHash,
  memberOf,
  seedTenant
} from "../Fixtures.js"
import type { It } from "./kit.js"

const batchOf = (job: ImportJob, fields: Partial<ImportBatch>): ImportBatch => ({
  importId: job.id,
  projectId: job.projectId,
  programId: job.programId,
  actions: [],
  zones: [],
  received: 0,
  duplicates: 0,
  touched: [],
  rejected: [],
  committedLine: 0,
  ...fields
})

export const importSuite = (it: It) =>
  describe("ImportStore", () => {
    it.effect("a batch stores each identity once, adds its day once, counts the rest as duplicates, and keeps the progress", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const streaks = yield* StreakStore
        const { program, project } = yield* seedTenant()
        const job = makeImportJob(project.id, program.id)
        yield* imports.create(job)
        const a = makeUserHash()
        const b = makeUserHash()
        const first = yield* imports.load(batchOf(job, {
          actions: [
            { userHash: a, identity: "k:one", day: day("2024-03-01") },
            // Same identity again in the batch: a duplicate, its day not added.
            { userHash: a, identity: "k:one", day: day("2024-03-05") },
            // Another identity on an active day: imported, no second day.
            { userHash: a, identity: "k:two", day: day("2024-03-01") },
            { userHash: b, identity: "t:x\t\\y\n", day: day("2024-03-02") }
          ],
          zones: [{ projectId: project.id, userHash: b, timezone: "Asia/Tokyo" }],
          received: 6,
          rejected: [{ line: 2, error: "INVALID_BODY" }, { line: 5, error: "PAYLOAD_TOO_LARGE" }],
          committedLine: 6
        }))
        assert.deepStrictEqual(
          [first.received, first.imported, first.duplicates, first.committedLine, first.status],
          [6, 3, 1, 6, "running"]
        )
        assert.deepStrictEqual(first.rejected, [{ line: 2, error: "INVALID_BODY" }, {
          line: 5,
          error: "PAYLOAD_TOO_LARGE"
        }])
        const second = yield* imports.load(batchOf(job, {
          actions: [
            { userHash: a, identity: "k:one", day: day("2024-03-01") },
            { userHash: b, identity: "t:x\t\\y\n", day: day("2024-03-02") },
            { userHash: b, identity: "k:three", day: day("2024-03-03") }
          ],
          received: 3,
          duplicates: 2,
          rejected: [{ line: 8, error: "INVALID_BODY" }],
          committedLine: 9
        }))
        assert.deepStrictEqual(
          [second.received, second.imported, second.duplicates, second.committedLine],
          [9, 4, 5, 9]
        )
        assert.deepStrictEqual(
          yield* imports.known(project.id, program.id, ["k:two", "k:nope", "t:x\t\\y\n", "k:three"]),
          [true, false, true, true]
        )
        const elsewhere = yield* seedTenant()
        assert.deepStrictEqual(yield* imports.known(elsewhere.project.id, elsewhere.program.id, ["k:two"]), [false])
        assert.deepStrictEqual(second.rejected.map((r) => r.line), [2, 5, 8])
        assert.deepStrictEqual(yield* streaks.days(makeKey(program, { userHash: a, ledger: "live" })), [
          day("2024-03-01")
        ])
        assert.deepStrictEqual(
          yield* streaks.days(makeKey(program, { userHash: b, ledger: "live" })),
          [day("2024-03-02"), day("2024-03-03")]
        )
        assert.deepStrictEqual(yield* streaks.days(makeKey(program, { userHash: a, ledger: "test" })), [])
        assert.deepStrictEqual(Option.getOrUndefined((yield* memberOf(project.id, b)).timezone), "Asia/Tokyo")
        const stored = Option.getOrThrow(yield* imports.get(job.id))
        assert.deepStrictEqual([stored.imported, stored.duplicates, stored.committedLine], [4, 5, 9])
      }))

    it.effect("identities are per program: another program's import of the same line is not a duplicate", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const tenant = yield* seedTenant()
        const other = yield* seedTenant()
        const line = { userHash: makeUserHash(), identity: "k:shared", day: day("2024-03-01") }
        for (const t of [tenant, other]) {
          const job = makeImportJob(t.project.id, t.program.id)
          yield* imports.create(job)
          const after = yield* imports.load(batchOf(job, { actions: [line], received: 1, committedLine: 1 }))
          assert.strictEqual(after.imported, 1)
        }
      }))

    it.effect("members pages the touched members in ascending order after a cursor", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const { program, project } = yield* seedTenant()
        const job = makeImportJob(project.id, program.id)
        yield* imports.create(job)
        const hashes = ["m_c", "m_a", "m_e", "m_b", "m_d"].map((h) => `${h}_${freshId("EventId")}` as UserHash)
        yield* imports.load(batchOf(job, {
          actions: hashes.map((userHash, i) => ({ userHash, identity: `k:${i}`, day: day("2024-03-01") })),
          received: hashes.length,
          committedLine: hashes.length
        }))
        const sorted = [...hashes].sort()
        const page = yield* imports.members(job.id, undefined, 2)
        assert.deepStrictEqual(page, sorted.slice(0, 2))
        assert.deepStrictEqual(yield* imports.members(job.id, page[1], 10), sorted.slice(2))
        assert.deepStrictEqual(yield* imports.members(job.id, sorted[4], 10), [])
        // Members of lines found duplicates before the batch are touched too.
        const again = makeImportJob(project.id, program.id)
        yield* imports.create(again)
        yield* imports.load(
          batchOf(again, { received: 2, duplicates: 2, touched: [hashes[0]!, hashes[1]!], committedLine: 2 })
        )
        assert.deepStrictEqual(yield* imports.members(again.id, undefined, 10), [hashes[0]!, hashes[1]!].sort())
      }))

    it.effect("achieve records milestones once, keeps one recorded before, and every read sees them", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const streaks = yield* StreakStore
        const achievements = yield* AchievementStore
        const state = yield* StateStore
        const { program } = yield* seedTenant()
        const key = makeKey(program)
        const [first, second] = program.milestones
        yield* streaks.save([makeRow(key, { run: 3, best: 3, lastActiveDay: day("2024-03-03") })])
        const earlier = makeAchievement(key, first!.id)
        yield* achievements.add([earlier])
        const later = new Date(epoch.getTime() + 86_400_000)
        yield* imports.achieve([makeAchievement(key, first!.id, later), makeAchievement(key, second!.id, later)])
        const [stored] = yield* achievements.achieved([key])
        assert.deepStrictEqual(stored!.map((a) => a.milestoneId).sort(), [first!.id, second!.id].sort())
        assert.strictEqual(
          stored!.find((a) => a.milestoneId === first!.id)!.achievedAt.getTime(),
          earlier.achievedAt.getTime()
        )
        const [standing] = yield* state.standing([{ ...key }], day("2024-03-01"), day("2024-03-03"))
        assert.deepStrictEqual([...standing!.achieved].sort(), [first!.id, second!.id].sort())
      }))

    it.effect("rejections are kept up to the cap", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const { program, project } = yield* seedTenant()
        const job = makeImportJob(project.id, program.id)
        yield* imports.create(job)
        const rejected = Array.from({ length: maxRejections }, (_, i) => ({ line: i + 1, error: "INVALID_BODY" }))
        const after = yield* imports.load(
          batchOf(job, { received: maxRejections, rejected, committedLine: maxRejections })
        )
        assert.strictEqual(after.rejected.length, maxRejections)
        assert.deepStrictEqual(after.rejected[maxRejections - 1], { line: maxRejections, error: "INVALID_BODY" })
      }))

    it.effect("resumable finds the latest running job of a source; a finished one, another source or none is not resumed", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const { program, project } = yield* seedTenant()
        const older = makeImportJob(project.id, program.id, "sha256:file")
        const newer = {
          ...makeImportJob(project.id, program.id, "sha256:file"),
          startedAt: new Date(epoch.getTime() + 1000)
        }
        const plain = makeImportJob(project.id, program.id)
        yield* imports.create(older)
        yield* imports.create(newer)
        yield* imports.create(plain)
        assert.strictEqual(Option.getOrThrow(yield* imports.resumable(program.id, "sha256:file")).id, newer.id)
        assert.isTrue(Option.isNone(yield* imports.resumable(program.id, "sha256:other")))
        assert.isTrue(Option.isNone(yield* imports.resumable(program.id, "")))
        const at = new Date(epoch.getTime() + 5000)
        yield* imports.finish(newer.id, "finished", at)
        yield* imports.finish(older.id, "failed", at)
        assert.isTrue(Option.isNone(yield* imports.resumable(program.id, "sha256:file")))
        const done = Option.getOrThrow(yield* imports.get(newer.id))
        assert.strictEqual(done.status, "finished")
        assert.strictEqual(done.finishedAt?.getTime(), at.getTime())
        assert.isTrue(Option.isNone(yield* imports.get(freshId("ImportId"))))
      }))

    it.effect("claimStale takes over abandoned running jobs once: a loaded one stays running, any other is interrupted", () =>
      Effect.gen(function*() {
        const imports = yield* ImportStore
        const { program, project } = yield* seedTenant()
        const ms = (n: number) => new Date(epoch.getTime() + n)
        const reading = { ...makeImportJob(project.id, program.id, "sha256:reading"), heartbeatAt: ms(1000) }
        const recomputing = { ...makeImportJob(project.id, program.id), heartbeatAt: ms(1000) }
        const alive = { ...makeImportJob(project.id, program.id), heartbeatAt: ms(1000) }
        const done = { ...makeImportJob(project.id, program.id), heartbeatAt: ms(1000) }
        for (const job of [reading, recomputing, alive, done]) yield* imports.create(job)
        yield* imports.loaded(recomputing.id)
        yield* imports.finish(done.id, "finished", ms(1500))
        // The live owner's heartbeat keeps its job out of the claim.
        assert.isTrue(yield* imports.heartbeat(alive.id, ms(5000)))
        const mine = (jobs: ReadonlyArray<ImportJob>) =>
          jobs.filter((j) => [reading.id, recomputing.id, alive.id, done.id].includes(j.id))
        const claimed = mine(yield* imports.claimStale(ms(3000), ms(6000)))
        assert.deepStrictEqual(
          claimed.map((j) => [j.id, j.status, j.loaded, j.heartbeatAt.getTime(), j.finishedAt?.getTime()]).sort(),
          [
            [reading.id, "interrupted", false, 6000 + epoch.getTime(), 6000 + epoch.getTime()],
            [recomputing.id, "running", true, 6000 + epoch.getTime(), undefined]
          ].sort()
        )
        // Claimed once: the new owner's heartbeat is fresh.
        assert.deepStrictEqual(mine(yield* imports.claimStale(ms(3000), ms(7000))), [])
        // The old owner can neither renew, write a batch nor end an interrupted job.
        assert.isFalse(yield* imports.heartbeat(reading.id, ms(7000)))
        const refused = yield* Effect.either(imports.load(batchOf(reading, { received: 1, committedLine: 1 })))
        assert.isTrue(refused._tag === "Left")
        yield* imports.finish(reading.id, "failed", ms(7000))
        const interrupted = Option.getOrThrow(yield* imports.get(reading.id))
        assert.deepStrictEqual([interrupted.status, interrupted.received], ["interrupted", 0])
        // An interrupted job of a source is resumable, and resuming makes it running again.
        assert.strictEqual(Option.getOrThrow(yield* imports.resumable(program.id, "sha256:reading")).id, reading.id)
        assert.isTrue(yield* imports.resume(reading.id, ms(8000)))
        const resumed = Option.getOrThrow(yield* imports.get(reading.id))
        assert.deepStrictEqual([resumed.status, resumed.finishedAt, resumed.heartbeatAt.getTime()], [
          "running",
          undefined,
          ms(8000).getTime()
        ])
        assert.isFalse(yield* imports.resume(done.id, ms(8000)))
        assert.strictEqual(Option.getOrThrow(yield* imports.get(done.id)).status, "finished")
      }))
  })
