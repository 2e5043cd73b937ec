/**
 * The in-memory `ReportStore`: each aggregate walks the streak rows and day sets of the shared
 * state under the adapter's lock (the reference answers the SQL adapters are checked against).
 */
import type { Context } from "effect"
import type { StreakRow } from "../Domain.js"
import * as ProofReport from "../ProofReport.js"
import type { ReportStore, SummaryGroup } from "../ReportStore.js"
import { keyOf, type MemoryState, pair, type Runner } from "./memoryState.js"

// A row no action has counted on yet: in no group (ReportStore.streakSummaries).
const isBlank = (row: StreakRow): boolean =>
  row.lastActiveDay === undefined && row.run === 0 && row.periodDays === undefined && row.freezes === undefined &&
  row.grants === undefined && (row.repairs === undefined || row.repairs.length === 0) &&
  (row.pauses === undefined || row.pauses.length === 0)

export const makeReports = (s: MemoryState, { run }: Runner): Context.Tag.Service<ReportStore> => {
  const liveRows = (programIds: ReadonlyArray<string>): Array<StreakRow> => {
    const programs = new Set(programIds)
    return [...s.streaks.values()].filter((r) => r.ledger === "live" && programs.has(r.programId))
  }
  return {
    activeMembers: (q) =>
      run(() => {
        const members = new Set<string>()
        for (const row of liveRows(q.programIds)) {
          for (const day of s.days.get(keyOf(row)) ?? []) {
            if (day >= q.from && day <= q.to) {
              members.add(pair(row.projectId, row.userHash))
              break
            }
          }
        }
        return members.size
      }),

    streakSummaries: (programIds) =>
      run(() => {
        const groups = new Map<string, { group: SummaryGroup; members: number }>()
        for (const row of liveRows(programIds)) {
          if (isBlank(row)) continue
          const summary = {
            ...(row.lastActiveDay === undefined ? {} : { lastActiveDay: row.lastActiveDay }),
            run: row.run,
            best: 0,
            ...(row.periodDays === undefined ? {} : { periodDays: row.periodDays }),
            ...(row.freezes === undefined ? {} : { freezes: row.freezes }),
            ...(row.grants === undefined ? {} : { grants: row.grants }),
            ...(row.repairs === undefined ? {} : { repairs: row.repairs }),
            ...(row.pauses === undefined ? {} : { pauses: row.pauses })
          }
          const k = pair(row.programId, row.timezone, JSON.stringify(summary))
          const hit = groups.get(k)
          if (hit === undefined) {
            groups.set(k, {
              group: { programId: row.programId, timezone: row.timezone, summary, members: 1 },
              members: 1
            })
          } else hit.members += 1
        }
        return [...groups.values()].map(({ group, members }) => ({ ...group, members }))
      }),

    zones: (projectId, programId) =>
      run(() => [
        ...new Set(liveRows([programId]).filter((r) => r.projectId === projectId).map((r) => r.timezone))
      ]),

    cohorts: (q) =>
      run(() =>
        ProofReport.cohortsOf(
          q,
          liveRows([q.programId]).filter((r) => r.projectId === q.projectId).map((row) => ({
            userHash: row.userHash,
            timezone: row.timezone,
            days: s.days.get(keyOf(row)) ?? []
          }))
        )
      )
  }
}
