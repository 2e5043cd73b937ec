/**
 * `ReportStore` on SQLite: counts and groups in SQL over the streak rows and activity days.
 *
 * One difference from Postgres: SQLite has no SHA-256 and the client registers no SQL functions,
 * so the control group (`ProofReport.isControl`) cannot be decided in SQL. `cohorts` lets SQLite
 * compute each enrolled member's counts (one short row per member: enrolment day, pre-period
 * days, per horizon the retained flag and active days) and adds them up by group here.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { FreezeGrant, Pause, Repair } from "@streaks/core/Domain"
import type { ProgramId } from "@streaks/core/Ids"
import * as ProofReport from "@streaks/core/ProofReport"
import type { ReportStore } from "@streaks/core/ReportStore"
import { Effect } from "effect"
import { port, type Row } from "./sqlite.js"

const DAY_MS = 86_400_000
const epochDay = (date: string): number => Math.round(Date.parse(`${date}T00:00:00Z`) / DAY_MS)
// The epoch day of a TEXT date column, in SQL.
const dayNumber = (column: string) => `CAST(julianday(${column}) - 2440587.5 AS INTEGER)`
const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ")

export const makeReportStore = (sql: SqlClient.SqlClient): ReportStore["Type"] => ({
  // One program of a project is read from `active_spans` (its days in the range linked to a day
  // before it); several of one project need each member once across them: distinct over days.
  activeMembers: (q) =>
    q.programIds.length === 0 ? Effect.succeed(0) : sql.unsafe<Row>(
      `WITH p AS (SELECT project_id, id FROM programs WHERE id IN (${placeholders(q.programIds.length)})),
        one AS (SELECT project_id FROM p GROUP BY project_id HAVING count(*) = 1)
      SELECT
        (SELECT coalesce(sum(members), 0) FROM active_spans
          WHERE program_id IN (SELECT id FROM p WHERE project_id IN (SELECT project_id FROM one))
            AND ledger = 'live' AND day >= ? AND day <= ? AND prev < ?)
        + (SELECT count(*) FROM (
            SELECT DISTINCT project_id, user_hash FROM activity_days
            WHERE program_id IN (SELECT id FROM p WHERE project_id NOT IN (SELECT project_id FROM one))
              AND ledger = 'live' AND day >= ? AND day <= ?
          )) AS n`,
      [...q.programIds, q.from, q.to, q.from, q.from, q.to]
    ).pipe(Effect.map(([r]) => Number(r?.n ?? 0)), port(sql, "ReportStore.activeMembers")),

  streakSummaries: (programIds) =>
    programIds.length === 0 ? Effect.succeed([]) : sql.unsafe<Row>(
      `SELECT program_id, timezone, last_active_day, run, period_days, freezes, grants, repairs, pauses,
          count(*) AS members
        FROM streaks WHERE program_id IN (${placeholders(programIds.length)}) AND ledger = 'live'
          AND NOT (last_active_day IS NULL AND run = 0 AND period_days IS NULL AND freezes IS NULL
            AND grants IS NULL AND coalesce(repairs, '[]') = '[]' AND coalesce(pauses, '[]') = '[]')
        GROUP BY program_id, timezone, last_active_day, run, period_days, freezes, grants, repairs, pauses`,
      [...programIds]
    ).pipe(
      Effect.map((rows) =>
        rows.map((r) => ({
          programId: r.program_id as ProgramId,
          timezone: r.timezone as string,
          summary: {
            ...(r.last_active_day === null ? {} : { lastActiveDay: r.last_active_day as never }),
            run: Number(r.run),
            best: 0,
            ...(r.period_days === null ? {} : { periodDays: Number(r.period_days) }),
            ...(r.freezes === null ? {} : { freezes: Number(r.freezes) }),
            ...(r.grants === null
              ? {}
              : { grants: JSON.parse(String(r.grants)) as ReadonlyArray<FreezeGrant> }),
            ...(r.repairs === null ? {} : { repairs: JSON.parse(String(r.repairs)) as ReadonlyArray<Repair> }),
            ...(r.pauses === null ? {} : { pauses: JSON.parse(String(r.pauses)) as ReadonlyArray<Pause> })
          },
          members: Number(r.members)
        }))
      ),
      port(sql, "ReportStore.streakSummaries")
    ),

  zones: (projectId, programId) =>
    sql`SELECT DISTINCT timezone FROM streaks
        WHERE project_id = ${projectId} AND program_id = ${programId} AND ledger = 'live'`.pipe(
      Effect.map((rows) => rows.map((r) => r.timezone as string)),
      port(sql, "ReportStore.zones")
    ),

  cohorts: (q) => {
    const empty = () => ({
      enrolled: 0,
      returned: 0,
      horizons: [...ProofReport.emptyGroup(q.horizons).horizons]
    })
    if (q.windows.length === 0) return Effect.succeed({ control: empty(), treatment: empty() })
    const windows = JSON.stringify(
      q.windows.map((w) => [w.timezone, epochDay(w.start), epochDay(w.until), epochDay(w.lastComplete)])
    )
    const perHorizon = q.horizons.map((h, i) =>
      `max(d.dn >= e.e + ${h} AND d.dn <= e.e + ${h + q.retentionDays - 1}) AS r${i},
        sum(d.dn >= e.e AND d.dn < e.e + ${h}) AS y${i}`
    ).join(",\n")
    const statement = `
      WITH w AS (
        SELECT json_extract(value, '$[0]') AS timezone, json_extract(value, '$[1]') AS start_dn,
          json_extract(value, '$[2]') AS until_dn, json_extract(value, '$[3]') AS last_dn
        FROM json_each(?)
      ),
      m AS (
        SELECT s.user_hash, w.start_dn, w.until_dn, w.last_dn FROM streaks s JOIN w ON w.timezone = s.timezone
        WHERE s.project_id = ? AND s.program_id = ? AND s.ledger = 'live'
      ),
      d AS (
        SELECT m.user_hash, m.start_dn, m.until_dn, m.last_dn, ${dayNumber("a.day")} AS dn
        FROM m JOIN activity_days a
          ON a.project_id = ? AND a.program_id = ? AND a.ledger = 'live' AND a.user_hash = m.user_hash
        WHERE ${dayNumber("a.day")} >= m.start_dn - ? AND ${dayNumber("a.day")} <= m.until_dn
      ),
      e AS (SELECT user_hash, min(dn) AS e FROM d WHERE dn >= start_dn GROUP BY user_hash)
      SELECT d.user_hash, e.e, min(d.last_dn) AS last_dn, sum(d.dn < d.start_dn) AS x,
        max(d.dn >= e.e + ?) AS returned,
        ${perHorizon}
      FROM d JOIN e ON e.user_hash = d.user_hash GROUP BY d.user_hash, e.e`
    return sql.unsafe<Row>(statement, [
      windows,
      q.projectId,
      q.programId,
      q.projectId,
      q.programId,
      q.preDays,
      q.returnAfter
    ]).pipe(
      Effect.map((rows) => {
        const out = { control: empty(), treatment: empty() }
        for (const r of rows) {
          const side = ProofReport.isControl(q.experimentId, String(r.user_hash), q.holdoutPercent)
            ? out.control
            : out.treatment
          const e = Number(r.e)
          const x = Number(r.x)
          side.enrolled += 1
          if (Number(r.returned) === 1) side.returned += 1
          q.horizons.forEach((h, i) => {
            if (e + h + q.retentionDays - 1 > Number(r.last_dn)) return
            const s = side.horizons[i]!
            const y = Number(r[`y${i}`])
            side.horizons[i] = {
              horizon: h,
              matured: s.matured + 1,
              retained: s.retained + (Number(r[`r${i}`]) === 1 ? 1 : 0),
              sumY: s.sumY + y,
              sumY2: s.sumY2 + y * y,
              sumX: s.sumX + x,
              sumX2: s.sumX2 + x * x,
              sumXY: s.sumXY + x * y
            }
          })
        }
        return out
      }),
      port(sql, "ReportStore.cohorts")
    )
  }
})
