/**
 * Conformance of `ReportStore`, the aggregates behind reports and Proof: active members counted
 * once, streak rows grouped by summary and zone, the zones of a program, and experiment cohorts
 * equal to `ProofReport.cohortsOf` (the definition as code) over the same activity.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import type { LocalDate } from "@streaks/core/Calendar"
import * as Calendar from "@streaks/core/Calendar"
import type { StreakKey } from "@streaks/core/Domain"
import { ExperimentStore, StreakStore } from "@streaks/core/Ports"
import * as ProofReport from "@streaks/core/ProofReport"
import { ReportStore } from "@streaks/core/ReportStore"
import { day, freshId, makeExperiment, makeKey, makeRow, makeUserHash, seedProgram, seedTenant } from "../Fixtures.js"
import type { It } from "./kit.js"

/** Stores a streak row for `key` in `zone` with these days (and optional summary fields). */
const seedMember = (
  key: StreakKey,
  zone: string,
  days: ReadonlyArray<string>,
  fields: Parameters<typeof makeRow>[1] = {}
) =>
  Effect.gen(function*() {
    const streaks = yield* StreakStore
    yield* streaks.save([makeRow(key, { timezone: zone, ...fields })])
    if (days.length > 0) yield* streaks.addDays(days.map((d) => ({ key, day: day(d) })))
  })

// A small deterministic generator, so that a failure reproduces.
const generator = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

export const aggregatesSuite = (it: It) =>
  describe("ReportStore", () => {
    it.effect("activeMembers counts a member once across programs and days, live days in the range only", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const elsewhere = yield* seedProgram(tenant)
        const both = makeUserHash()
        yield* seedMember(makeKey(tenant.program, { userHash: both }), "UTC", ["2024-03-01", "2024-03-02"])
        yield* seedMember(makeKey(other, { userHash: both }), "UTC", ["2024-03-03"])
        yield* seedMember(makeKey(tenant.program), "Asia/Tokyo", ["2024-03-05"])
        // Outside the range, on the test ledger, or in a program not asked about: not counted.
        yield* seedMember(makeKey(tenant.program), "UTC", ["2024-02-29", "2024-03-08"])
        yield* seedMember(makeKey(tenant.program, { ledger: "test" }), "UTC", ["2024-03-04"])
        yield* seedMember(makeKey(elsewhere), "UTC", ["2024-03-04"])
        const query = { programIds: [tenant.program.id, other.id], from: day("2024-03-01"), to: day("2024-03-07") }
        assert.strictEqual(yield* reports.activeMembers(query), 2)
        assert.strictEqual(yield* reports.activeMembers({ ...query, programIds: [other.id] }), 1)
        assert.strictEqual(yield* reports.activeMembers({ ...query, from: day("2024-03-06") }), 0)
        assert.strictEqual(yield* reports.activeMembers({ ...query, programIds: [] }), 0)
      }))

    it.effect("streakSummaries groups live rows by program, zone and summary, with their count; rows no action counted on are in none", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const summary = { lastActiveDay: day("2024-03-05"), run: 3, best: 9 }
        yield* seedMember(makeKey(tenant.program), "UTC", [], summary)
        yield* seedMember(makeKey(tenant.program), "UTC", [], { ...summary, best: 4 })
        yield* seedMember(makeKey(tenant.program), "Europe/Paris", [], summary)
        yield* seedMember(makeKey(tenant.program), "UTC", [], {
          ...summary,
          periodDays: 2,
          freezes: 1,
          grants: [{ day: day("2024-03-04"), count: 1 }]
        })
        // A row no action counted on is in no group; a broken one is.
        yield* seedMember(makeKey(tenant.program), "UTC", [], { run: 0, best: 0 })
        yield* seedMember(makeKey(tenant.program), "UTC", [], { lastActiveDay: day("2024-02-01"), run: 0, best: 2 })
        yield* seedMember(makeKey(other), "UTC", [], summary)
        yield* seedMember(makeKey(tenant.program, { ledger: "test" }), "UTC", [], summary)

        const groups = yield* reports.streakSummaries([tenant.program.id, other.id])
        const norm = groups.map((g) => ({
          programId: g.programId,
          timezone: g.timezone,
          members: g.members,
          lastActiveDay: g.summary.lastActiveDay,
          run: g.summary.run,
          periodDays: g.summary.periodDays,
          freezes: g.summary.freezes,
          grants: g.summary.grants === undefined ? undefined : [...g.summary.grants].map((x) => ({ ...x }))
        }))
        const expected = [
          { programId: tenant.program.id, timezone: "UTC", members: 2, lastActiveDay: summary.lastActiveDay, run: 3 },
          {
            programId: tenant.program.id,
            timezone: "Europe/Paris",
            members: 1,
            lastActiveDay: summary.lastActiveDay,
            run: 3
          },
          {
            programId: tenant.program.id,
            timezone: "UTC",
            members: 1,
            lastActiveDay: summary.lastActiveDay,
            run: 3,
            periodDays: 2,
            freezes: 1,
            grants: [{ day: day("2024-03-04"), count: 1 }]
          },
          { programId: tenant.program.id, timezone: "UTC", members: 1, lastActiveDay: day("2024-02-01"), run: 0 },
          { programId: other.id, timezone: "UTC", members: 1, lastActiveDay: summary.lastActiveDay, run: 3 }
        ].map((e) => ({ periodDays: undefined, freezes: undefined, grants: undefined, ...e }))
        assert.sameDeepMembers(norm, expected)
        assert.deepStrictEqual(yield* reports.streakSummaries([]), [])
      }))

    it.effect("streakSummaries keeps a row's repairs and pauses in its group: the same summary with them is a group of its own", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const tenant = yield* seedTenant()
        const summary = { lastActiveDay: day("2024-03-05"), run: 3, best: 3 }
        const repairs = [{ period: day("2024-03-02"), at: "2024-03-03T10:00:00.000Z", reason: "ticket" }]
        const pauses = [{ id: "pau_1", start: day("2024-03-10"), end: day("2024-03-12") }]
        yield* seedMember(makeKey(tenant.program), "UTC", [], summary)
        yield* seedMember(makeKey(tenant.program), "UTC", [], { ...summary, repairs, pauses })
        yield* seedMember(makeKey(tenant.program), "UTC", [], { ...summary, repairs, pauses })
        const groups = yield* reports.streakSummaries([tenant.program.id])
        const norm = groups.map((g) => ({
          members: g.members,
          repairs: (g.summary.repairs ?? []).map((r) => r.period),
          pauses: (g.summary.pauses ?? []).map((p) => [p.start, p.end])
        }))
        assert.sameDeepMembers(norm, [
          { members: 1, repairs: [], pauses: [] },
          { members: 2, repairs: ["2024-03-02"], pauses: [["2024-03-10", "2024-03-12"]] }
        ])
      }))

    it.effect("zones lists the distinct zones of the program's live rows", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const tenant = yield* seedTenant()
        yield* seedMember(makeKey(tenant.program), "UTC", [])
        yield* seedMember(makeKey(tenant.program), "UTC", [])
        yield* seedMember(makeKey(tenant.program), "Asia/Kolkata", [])
        yield* seedMember(makeKey(tenant.program, { ledger: "test" }), "America/Denver", [])
        assert.sameMembers([...(yield* reports.zones(tenant.project.id, tenant.program.id))], ["UTC", "Asia/Kolkata"])
      }))

    it.effect("cohorts equal the definition over the same activity (two zones, every horizon, pre-period)", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const tenant = yield* seedTenant()
        const random = generator(58)
        const zones = ["UTC", "Asia/Tokyo", "America/Denver"]
        const first = Calendar.unsafeLocalDate("2024-01-20")
        const members: Array<ProofReport.MemberDays> = []
        for (let i = 0; i < 60; i++) {
          const key = makeKey(tenant.program)
          const zone = zones[i % zones.length]!
          const rate = random()
          const days: Array<LocalDate> = []
          for (let d = 0; d < 90; d++) if (random() < rate * 0.6) days.push(Calendar.addDays(first, d))
          yield* seedMember(key, zone, days)
          members.push({ userHash: key.userHash, timezone: zone, days })
        }
        // Another program's and the test ledger's activity must not count.
        yield* seedMember(makeKey(yield* seedProgram(tenant)), "UTC", ["2024-03-01"])
        yield* seedMember(makeKey(tenant.program, { ledger: "test" }), "UTC", ["2024-03-01", "2024-03-02"])

        const experiment = makeExperiment(tenant.program, { id: freshId("ExperimentId"), holdoutPercent: 30 })
        const windows: Array<ProofReport.ZoneWindow> = [
          { timezone: "UTC", start: day("2024-03-01"), until: day("2024-04-10"), lastComplete: day("2024-04-09") },
          {
            timezone: "Asia/Tokyo",
            start: day("2024-03-02"),
            until: day("2024-04-11"),
            lastComplete: day("2024-04-10")
          }
          // America/Denver has no window: its members are in no cohort.
        ]
        const query = ProofReport.cohortQuery(experiment, windows)
        const got = yield* reports.cohorts(query)
        const expected = ProofReport.cohortsOf(query, members)
        assert.deepStrictEqual(got, expected)
        assert.isAbove(expected.control.enrolled + expected.treatment.enrolled, 20)
        assert.isAbove(expected.treatment.horizons[1]!.matured, 0)
        assert.isAbove(expected.treatment.horizons[1]!.sumXY, 0)

        // With no window at all, or for another experiment's split, the same rules hold.
        assert.deepStrictEqual(
          yield* reports.cohorts({ ...query, windows: [] }),
          { control: ProofReport.emptyGroup(query.horizons), treatment: ProofReport.emptyGroup(query.horizons) }
        )
        const other = { ...query, experimentId: freshId("ExperimentId"), holdoutPercent: 50 }
        assert.deepStrictEqual(yield* reports.cohorts(other), ProofReport.cohortsOf(other, members))
      }))

    it.effect("ExperimentStore.history lists a program's experiments, newest start first", () =>
      Effect.gen(function*() {
        const experiments = yield* ExperimentStore
        const { program } = yield* seedTenant()
        const older = makeExperiment(program, { startedAt: new Date("2024-01-01T00:00:00Z") })
        const newer = makeExperiment(program, { startedAt: new Date("2024-02-01T00:00:00Z") })
        assert.isTrue(yield* experiments.start(older))
        yield* experiments.end(program.id, new Date("2024-01-15T00:00:00Z"))
        assert.isTrue(yield* experiments.start(newer))
        const history = yield* experiments.history(program.id)
        assert.deepStrictEqual(history.map((e) => e.id), [newer.id, older.id])
        assert.isDefined(history[1]!.endedAt)
        assert.deepStrictEqual(yield* experiments.history(freshId("ProgramId")), [])
      }))
  })
