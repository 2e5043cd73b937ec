/**
 * Conformance of what reports read from rollups kept with the writes (active members over a
 * range, the streak rows' summary groups, counts per day and type, counted actions per source):
 * equal to a recompute over the same activity, whatever the order and path the rows, days and
 * actions came by — ingest's commit, saves and locks, `addDays` out of order and in batches with
 * several days of a member, a history import, and a member removed.
 */
import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import * as Calendar from "@streaks/core/Calendar"
import type { LocalDate } from "@streaks/core/Calendar"
import type { ActionRecord, StreakKey, StreakRow } from "@streaks/core/Domain"
import type { ProgramId } from "@streaks/core/Ids"
import { ImportStore } from "@streaks/core/ImportStore"
import { IngestStore, noChanges } from "@streaks/core/IngestStore"
import { ActionLog, StreakStore, Transactor } from "@streaks/core/Ports"
import { ReportStore } from "@streaks/core/ReportStore"
import { epoch, freshId, makeImportJob, makeAction, makeKey, makeRow, seedProgram, seedTenant } from "../Fixtures.js"
import type { It } from "./kit.js"

// A small deterministic generator, so that a failure reproduces.
const generator = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
  return seed / 2_147_483_648
}

const first = Calendar.unsafeLocalDate("2024-02-01")
const SPAN = 40
const DAY_MS = 86_400_000

export const rollupsSuite = (it: It) =>
  describe("report rollups", () => {
    it.effect("activeMembers equals a recompute over the days, after ingest, addDays out of order, an import and removals", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const streaks = yield* StreakStore
        const ingest = yield* IngestStore
        const tx = yield* Transactor
        const imports = yield* ImportStore
        const random = generator(24)
        const tenant = yield* seedTenant()
        // A second program of the same project: a member of both counts once over the two.
        const sibling = yield* seedProgram(tenant)
        const programs = [tenant.program, sibling]
        // A program of another project, whose members share ingest's batches with the others.
        const stranger = yield* seedTenant()
        const model = new Map<string, { key: StreakKey; days: Set<LocalDate> }>()
        const shuffled = <A>(xs: ReadonlyArray<A>): Array<A> => {
          const out = [...xs]
          for (let i = out.length - 1; i > 0; i--) {
            const j = Math.floor(random() * (i + 1))
            ;[out[i], out[j]] = [out[j]!, out[i]!]
          }
          return out
        }
        const pick = (n: number) => {
          const days: Array<LocalDate> = []
          for (let d = 0; d < SPAN; d++) if (random() < n) days.push(Calendar.addDays(first, d))
          return days
        }
        const hashes = Array.from({ length: 32 }, (_, i) => `rollup_${freshId("EventId")}_${i}`)
        for (let i = 0; i < hashes.length; i++) {
          const program = i % 4 === 3 ? stranger.program : programs[i % 5 === 0 ? 1 : 0]!
          const key = makeKey(program, { userHash: hashes[i] as never })
          yield* streaks.save([makeRow(key)])
          model.set(`${program.id}:${hashes[i]}`, { key, days: new Set() })
        }
        // A member in both programs.
        const both = makeKey(sibling, { userHash: hashes[1] as never })
        yield* streaks.save([makeRow(both)])
        model.set(`${sibling.id}:${hashes[1]}`, { key: both, days: new Set() })
        const members = [...model.values()]

        // Ingest's commit: each member's days in ascending order, one day per member per batch.
        for (let round = 0; round < SPAN; round += 3) {
          const day = Calendar.addDays(first, round)
          const days = members.filter(() => random() < 0.5).map((m) => ({ key: m.key, day }))
          for (const d of days) members.find((m) => m.key === d.key)!.days.add(d.day)
          if (days.length > 0) yield* tx.withTransaction(ingest.commit({ ...noChanges, days }))
        }
        // addDays out of order, several days of a member in one call, some already there.
        for (const m of members) {
          const days = shuffled(pick(0.3))
          for (let i = 0; i < days.length; i += 4) {
            const chunk = days.slice(i, i + 4)
            yield* streaks.addDays(chunk.map((day) => ({ key: m.key, day })))
            for (const day of chunk) m.days.add(day)
          }
        }
        // A history import into the first program, lines in no order.
        const job = makeImportJob(tenant.project.id, tenant.program.id)
        yield* imports.create(job)
        const lines = shuffled(
          members.filter((m) => m.key.programId === tenant.program.id).flatMap((m) =>
            pick(0.2).map((day) => ({ userHash: m.key.userHash, identity: `${m.key.userHash}:${day}`, day, m }))
          )
        )
        yield* imports.load({
          importId: job.id,
          projectId: job.projectId,
          programId: job.programId,
          actions: lines.map(({ day, identity, userHash }) => ({ day, identity, userHash })),
          zones: [],
          received: lines.length,
          duplicates: 0,
          touched: [],
          rejected: [],
          committedLine: lines.length
        })
        for (const line of lines) line.m.days.add(line.day)
        // Members removed (their days go with them).
        for (const m of members.filter(() => random() < 0.15)) {
          yield* streaks.remove(m.key)
          m.days.clear()
        }

        const expected = (programIds: ReadonlyArray<ProgramId>, from: LocalDate, to: LocalDate) =>
          new Set(
            members.filter((m) => programIds.includes(m.key.programId) && [...m.days].some((d) => d >= from && d <= to))
              .map((m) => m.key.userHash)
          ).size
        for (let i = 0; i < 30; i++) {
          const a = Calendar.addDays(first, Math.floor(random() * (SPAN + 4)) - 2)
          const b = Calendar.addDays(first, Math.floor(random() * (SPAN + 4)) - 2)
          const [from, to] = a <= b ? [a, b] : [b, a]
          for (
            const programIds of [[tenant.program.id], [sibling.id], [tenant.program.id, sibling.id], [
              stranger.program.id
            ]]
          ) {
            assert.strictEqual(
              yield* reports.activeMembers({ programIds, from, to }),
              expected(programIds, from, to),
              `${programIds.length} programs, ${from}..${to}`
            )
          }
        }
        assert.isAbove(expected([tenant.program.id], first, Calendar.addDays(first, SPAN)), 10)
        assert.isAbove(expected([stranger.program.id], first, Calendar.addDays(first, SPAN)), 3)
      }))

    it.effect("streakSummaries equals a recompute over the rows, after locks that create them, saves over them, ingest's commit (with and without its load) and removals", () =>
      Effect.gen(function*() {
        const reports = yield* ReportStore
        const streaks = yield* StreakStore
        const ingest = yield* IngestStore
        const tx = yield* Transactor
        const random = generator(7)
        const tenant = yield* seedTenant()
        const zones = ["UTC", "Asia/Tokyo"]
        // Keys of another project too, in the same saves and commits.
        const stranger = yield* seedTenant()
        const keys = [
          ...Array.from({ length: 20 }, () => makeKey(tenant.program)),
          ...Array.from({ length: 10 }, () => makeKey(stranger.program))
        ]
        const current = new Map<string, StreakRow>()
        // Created by a lock: no action counted on them yet.
        yield* tx.withTransaction(
          streaks.lock(keys.map((key, i) => ({ key, timezone: zones[i % 2]! })))
        )
        const summary = (key: StreakKey) => {
          const run = Math.floor(random() * 3)
          // Grants and repairs (jsonb on Postgres) only with one freeze, so that the groups the
          // recompute below tells apart are the adapters' groups.
          const freezes = Math.floor(random() * 2)
          const fields = random() < 0.3 ?
            {
              periodDays: 1,
              freezes,
              ...(freezes === 1 ?
                {
                  grants: [{ day: first, count: 1 }],
                  repairs: [{ period: first, at: "2024-02-02T00:00:00.000Z", reason: "outage" }]
                } :
                {})
            } :
            {}
          return makeRow(key, {
            timezone: zones[Math.floor(random() * 2)]!,
            ...(run === 0 && random() < 0.5
              ? {}
              : { lastActiveDay: Calendar.addDays(first, Math.floor(random() * 3)) }),
            run,
            best: 5,
            ...fields
          })
        }
        // Ingest's commit as it runs: the rows locked by its load in the same transaction.
        const loadAndCommit = (rows: ReadonlyArray<StreakRow>) =>
          tx.withTransaction(Effect.flatMap(
            ingest.load({
              members: rows.map((r) => ({
                projectId: r.projectId,
                userHash: r.userHash,
                streak: { programId: r.programId, ledger: r.ledger, timezone: r.timezone, withAchieved: false }
              })),
              keys: []
            }),
            (snapshot) => ingest.commit({ ...noChanges, rows, forCommit: snapshot.forCommit })
          ))
        for (let round = 0; round < 9; round++) {
          const chosen = keys.filter(() => random() < 0.6)
          const rows = chosen.map(summary)
          if (round % 3 === 0) yield* streaks.save(rows)
          else if (round % 3 === 1) yield* tx.withTransaction(ingest.commit({ ...noChanges, rows }))
          else yield* loadAndCommit(rows)
          for (const r of rows) current.set(`${r.userHash}`, r)
        }
        for (const key of keys.filter(() => random() < 0.2)) {
          yield* streaks.remove(key)
          current.delete(key.userHash)
        }
        for (const program of [tenant.program, stranger.program]) {
          const expected = new Map<string, number>()
          for (const r of current.values()) {
            if (r.programId !== program.id) continue
            const k = [r.timezone, r.lastActiveDay ?? "-", r.run, r.periodDays ?? "-", r.freezes ?? "-"].join("|")
            if (r.lastActiveDay === undefined && r.run === 0 && r.periodDays === undefined) continue
            expected.set(k, (expected.get(k) ?? 0) + 1)
          }
          const got = (yield* reports.streakSummaries([program.id])).map((g) => [
            [
              g.timezone,
              g.summary.lastActiveDay ?? "-",
              g.summary.run,
              g.summary.periodDays ?? "-",
              g.summary.freezes ?? "-"
            ]
              .join("|"),
            g.members
          ])
          assert.sameDeepMembers(got, [...expected])
          assert.isAbove(expected.size, program === tenant.program ? 3 : 1)
        }
      }))

    it.effect("countsByDay and sources over whole UTC days equal a recompute over the actions appended", () =>
      Effect.gen(function*() {
        const log = yield* ActionLog
        const random = generator(58)
        const tenant = yield* seedTenant()
        const other = yield* seedProgram(tenant)
        const labels = [undefined, "api", "zapier"]
        const records: Array<ActionRecord> = []
        for (let batch = 0; batch < 12; batch++) {
          const made = Array.from({ length: 1 + Math.floor(random() * 8) }, () => {
            const ts = new Date(epoch.getTime() + Math.floor(random() * 5 * DAY_MS / 1000) * 1000)
            const timezone = random() < 0.5 ? "UTC" : "Asia/Tokyo"
            return makeAction(random() < 0.8 ? tenant.program : other, {
              ts,
              timezone,
              localDate: Calendar.localDate(ts, timezone),
              eventType: random() < 0.7 ? "streak_interaction" : "widget_impression",
              counted: random() < 0.6,
              ledger: random() < 0.9 ? "live" : "test",
              ...(labels[Math.floor(random() * 3)] === undefined
                ? {}
                : { source: labels[1 + Math.floor(random() * 2)]! }),
              ...(random() < 0.3 ? { externalService: "stripe" } : {})
            })
          })
          yield* log.append(made)
          records.push(...made)
        }
        for (let startDay = 0; startDay < 5; startDay++) {
          for (let days = 1; startDay + days <= 6; days += 2) {
            const from = new Date(epoch.getTime() + startDay * DAY_MS)
            const to = new Date(from.getTime() + days * DAY_MS)
            const query = { programIds: [tenant.program.id], from, to, ledger: "live" as const }
            const chosen = records.filter((r) =>
              r.programId === tenant.program.id && r.ledger === "live" && r.ts >= from && r.ts < to
            )
            const counts = new Map<string, { count: number; counted: number }>()
            const sources = new Map<string, number>()
            for (const r of chosen) {
              const k = `${r.localDate}|${r.eventType}`
              const c = counts.get(k) ?? { count: 0, counted: 0 }
              counts.set(k, { count: c.count + 1, counted: c.counted + (r.counted ? 1 : 0) })
              if (r.counted) {
                const s = `${r.source ?? "-"}|${r.externalService ?? "-"}|${r.integrationId ?? "-"}`
                sources.set(s, (sources.get(s) ?? 0) + 1)
              }
            }
            const gotCounts = (yield* log.countsByDay(query)).map((
              c
            ) => [`${c.date}|${c.eventType}`, c.count, c.counted])
            assert.sameDeepMembers(gotCounts, [...counts].map(([k, c]) => [k, c.count, c.counted]))
            const gotSources = (yield* log.sources(query)).map((
              s
            ) => [`${s.source ?? "-"}|${s.externalService ?? "-"}|${s.integrationId ?? "-"}`, s.count])
            assert.sameDeepMembers(gotSources, [...sources])
            // Most first.
            const ns = gotSources.map((s) => s[1] as number)
            assert.deepStrictEqual(ns, [...ns].sort((a, b) => b - a))
          }
        }
      }))
  })
