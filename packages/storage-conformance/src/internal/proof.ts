/**
 * Conformance of the Proof cohorts as a store keeps them with its writes: equal to
 * `ProofReport.cohortsOf` (the definition as code) over the same activity, whatever the path and
 * order the days came by — days before the experiment started, ingest's commit, `addDays` out of
 * order, a late day before a member's enrolment, a history import, removals — after the
 * experiment ended, with a late day inside its window, and with another day start hour.
 */
import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Calendar from "@streaks/core/Calendar"
import type { LocalDate } from "@streaks/core/Calendar"
import type { Experiment, StreakKey } from "@streaks/core/Domain"
import { ImportStore } from "@streaks/core/ImportStore"
import { IngestStore, noChanges } from "@streaks/core/IngestStore"
import { ExperimentStore, StreakStore, Transactor } from "@streaks/core/Ports"
import * as ProofReport from "@streaks/core/ProofReport"
import { ReportStore } from "@streaks/core/ReportStore"
import { epoch, freshId, makeImportJob, makeExperiment, makeKey, makeRow, seedTenant } from "../Fixtures.js"
import type { It } from "./kit.js"

// A small deterministic generator, so that a failure reproduces.
const generator = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

const first = Calendar.unsafeLocalDate("2024-01-20")
// 18:00 UTC: already the next day in Tokyo, so the two zones start on different dates.
const startedAt = new Date("2024-02-20T18:00:00Z")
const zones = ["UTC", "Asia/Tokyo"]

interface Member {
  readonly key: StreakKey
  readonly zone: string
  readonly days: Set<LocalDate>
  removed: boolean
}

export const proofSuite = (it: It) =>
  describe("Proof cohorts kept with the writes", () => {
    it.effect("cohorts equal the definition after days before the start, ingest, addDays out of order, a late day before enrolment, an import and removals", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const streaks = yield* StreakStore
        const ingest = yield* IngestStore
        const tx = yield* Transactor
        const imports = yield* ImportStore
        const experiments = yield* ExperimentStore
        const random = generator(28)
        const tenant = yield* seedTenant()
        const members: Array<Member> = Array.from({ length: 48 }, (_, i) => ({
          key: makeKey(tenant.program),
          zone: zones[i % 2]!,
          days: new Set<LocalDate>(),
          removed: false
        }))
        yield* streaks.save(members.map((m) => makeRow(m.key, { timezone: m.zone })))
        const at = (offset: number) => Calendar.addDays(first, offset)
        const add = (m: Member, days: ReadonlyArray<LocalDate>) =>
          Effect.gen(function*() {
            yield* streaks.addDays(days.map((day) => ({ key: m.key, day })))
            for (const d of days) m.days.add(d)
          })
        // Before the start: the pre-period, and the start's own day for some (written before it).
        for (const m of members) {
          const days = Array.from({ length: 31 }, (_, d) => at(d)).filter(() => random() < 0.3)
          if (days.length > 0) yield* add(m, days)
        }
        const experiment = makeExperiment(tenant.program, {
          id: freshId("ExperimentId"),
          holdoutPercent: 30,
          startedAt
        })
        assert.isTrue(yield* experiments.start(experiment))

        // Ingest's commit: days in ascending order, several members per batch.
        for (let d = 31; d < 75; d += 2) {
          const days = members.filter(() => random() < 0.4).map((m) => ({ key: m.key, day: at(d) }))
          for (const x of days) members.find((m) => m.key === x.key)!.days.add(x.day)
          if (days.length > 0) yield* tx.withTransaction(ingest.commit({ ...noChanges, days }))
        }
        // addDays out of order, a member's days in one call; late days before the start and, for
        // members already enrolled, before their enrolment day (which moves it earlier).
        for (const m of members.filter(() => random() < 0.5)) {
          const days = Array.from({ length: 75 }, (_, d) => at(d)).filter((d) => !m.days.has(d) && random() < 0.15)
          days.sort(() => random() - 0.5)
          for (let i = 0; i < days.length; i += 3) yield* add(m, days.slice(i, i + 3))
        }
        // A history import, then its end, which recomputes its members.
        const job = makeImportJob(tenant.project.id, tenant.program.id)
        yield* imports.create(job)
        const lines = members.filter(() => random() < 0.4).flatMap((m) =>
          Array.from({ length: 75 }, (_, d) => at(d)).filter(() => random() < 0.1).map((day) => ({
            userHash: m.key.userHash,
            identity: `${m.key.userHash}:${day}`,
            day,
            m
          }))
        )
        yield* imports.load({
          importId: job.id,
          projectId: job.projectId,
          programId: job.programId,
          actions: lines.map(({ day, identity, userHash }) => ({ day, identity, userHash })),
          zones: [],
          received: lines.length,
          duplicates: 0,
          touched: [...new Set(lines.map((l) => l.userHash))],
          rejected: [],
          committedLine: lines.length
        })
        for (const line of lines) line.m.days.add(line.day)
        yield* imports.finish(job.id, "finished", epoch)
        // Members removed.
        for (const m of members.filter(() => random() < 0.1)) {
          yield* streaks.remove(m.key)
          m.removed = true
        }

        const check = (e: Experiment, now: Date, dayStartHour = 0) =>
          Effect.gen(function*() {
            const windows = zones.map((zone) => ProofReport.windowOf(e, zone, dayStartHour, now))
            const query = ProofReport.cohortQuery(e, windows)
            const expected = ProofReport.cohortsOf(
              query,
              members.filter((m) => !m.removed).map((m) => ({
                userHash: m.key.userHash,
                timezone: m.zone,
                days: m.days
              }))
            )
            assert.deepStrictEqual(yield* reports.cohorts(query), expected)
            return expected
          })
        // While it runs, read at two moments (fewer members matured at the first).
        yield* check(experiment, new Date("2024-03-10T12:00:00Z"))
        const running = yield* check(experiment, new Date("2024-04-05T12:00:00Z"))
        assert.isAbove(running.control.enrolled, 3)
        assert.isAbove(running.treatment.horizons[2]!.matured, 5)
        assert.isAbove(running.treatment.horizons[2]!.sumXY, 0)

        // Ended: a late day inside its window still counts, one after it does not.
        const ended = yield* experiments.end(tenant.program.id, new Date("2024-03-25T12:00:00Z"))
        assert.isTrue(Option.isSome(ended))
        const stopped = makeExperiment(tenant.program, { ...experiment, endedAt: new Date("2024-03-25T12:00:00Z") })
        const late = members.find((m) => !m.removed && !m.days.has(at(60)))!
        yield* add(late, [at(60), at(80)])
        yield* check(stopped, new Date("2024-04-20T12:00:00Z"))
        // Days that start at 05:00 move Tokyo's start a day earlier (03:00 there): the same rules,
        // then back.
        yield* check(stopped, new Date("2024-04-20T12:00:00Z"), 5)
        yield* check(stopped, new Date("2024-04-20T12:00:00Z"))
      }))

    it.effect("a program's first ingest commit after its experiment started counts, its days written before the start too", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const streaks = yield* StreakStore
        const ingest = yield* IngestStore
        const tx = yield* Transactor
        const experiments = yield* ExperimentStore
        const tenant = yield* seedTenant()
        const members = Array.from({ length: 8 }, (_, i) => ({ key: makeKey(tenant.program), zone: zones[i % 2]! }))
        yield* streaks.save(members.map((m) => makeRow(m.key, { timezone: m.zone })))
        const at = (offset: number) => Calendar.addDays(first, offset)
        // Days of the program in what becomes its pre-period, written while it had no experiment.
        yield* tx.withTransaction(
          ingest.commit({ ...noChanges, days: members.map((m) => ({ key: m.key, day: at(25) })) })
        )
        const experiment = makeExperiment(tenant.program, {
          id: freshId("ExperimentId"),
          holdoutPercent: 50,
          startedAt
        })
        assert.isTrue(yield* experiments.start(experiment))
        // One commit after the start, for half the members: their enrolment.
        const enrolled = members.filter((_, i) => i % 2 === 0)
        yield* tx.withTransaction(
          ingest.commit({ ...noChanges, days: enrolled.map((m) => ({ key: m.key, day: at(33) })) })
        )
        const now = new Date("2024-03-10T12:00:00Z")
        const query = ProofReport.cohortQuery(experiment, zones.map((z) => ProofReport.windowOf(experiment, z, 0, now)))
        const expected = ProofReport.cohortsOf(
          query,
          members.map((m) => ({
            userHash: m.key.userHash,
            timezone: m.zone,
            days: new Set(enrolled.includes(m) ? [at(25), at(33)] : [at(25)])
          }))
        )
        assert.strictEqual(expected.control.enrolled + expected.treatment.enrolled, enrolled.length)
        assert.deepStrictEqual(yield* reports.cohorts(query), expected)
      }))
  })
