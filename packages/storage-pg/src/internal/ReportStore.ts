/**
 * `ReportStore` on Postgres: each aggregate is one statement over the streak rows and activity
 * days of the programs asked about, read through their primary keys (project, program, …), so
 * only those programs' rows are read and only counts and sums come back.
 */
import type { FreezeGrant } from "@streaks/core/Domain"
import type { ProgramId } from "@streaks/core/Ids"
import * as ProofReport from "@streaks/core/ProofReport"
import type { ReportStore } from "@streaks/core/ReportStore"
import { Effect } from "effect"
import { type Ctx, io, opt, toOptionalLocalDate } from "./Sql.js"

const num = (value: unknown): number => value === null || value === undefined ? 0 : Number(value)

export const makeReportStore = ({ sql, t }: Ctx): ReportStore["Type"] => {
  // The programs' (project, program) pairs: the leading columns of both tables' primary keys.
  const programsOf = (ids: ReadonlyArray<string>) =>
    sql`(project_id, program_id) IN (SELECT project_id, id FROM ${t.programs} WHERE id = ANY(${[...ids]}::text[]))`

  return {
    activeMembers: (q) =>
      q.programIds.length === 0
        ? Effect.succeed(0)
        : sql`SELECT count(*)::bigint AS n FROM (
              SELECT DISTINCT project_id, user_hash FROM ${t.activity_days}
              WHERE ${programsOf(q.programIds)} AND ledger = 'live' AND day >= ${q.from}::date AND day <= ${q.to}::date
            ) AS members`.pipe(
          Effect.map((rows) => num(rows[0]?.n)),
          io("ReportStore.activeMembers")
        ),

    streakSummaries: (programIds) =>
      programIds.length === 0
        ? Effect.succeed([])
        : sql`SELECT program_id, timezone, to_char(last_active_day, 'YYYY-MM-DD') AS last_active_day, run,
              period_days, freezes, grants, count(*)::bigint AS members
            FROM ${t.streaks} WHERE ${programsOf(programIds)} AND ledger = 'live'
            GROUP BY program_id, timezone, last_active_day, run, period_days, freezes, grants`.pipe(
          Effect.map((rows) =>
            rows.map((r) => ({
              programId: r.program_id as ProgramId,
              timezone: r.timezone as string,
              summary: {
                ...opt("lastActiveDay", toOptionalLocalDate(r.last_active_day)),
                run: r.run as number,
                best: 0,
                ...opt("periodDays", r.period_days as number | null),
                ...opt("freezes", r.freezes as number | null),
                ...opt("grants", r.grants as ReadonlyArray<FreezeGrant> | null)
              },
              members: num(r.members)
            }))
          ),
          io("ReportStore.streakSummaries")
        ),

    zones: (projectId, programId) =>
      sql`SELECT DISTINCT timezone FROM ${t.streaks}
          WHERE project_id = ${projectId} AND program_id = ${programId} AND ledger = 'live'`.pipe(
        Effect.map((rows) => rows.map((r) => r.timezone as string)),
        io("ReportStore.zones")
      ),

    cohorts: (q) => {
      if (q.windows.length === 0) {
        return Effect.succeed({
          control: ProofReport.emptyGroup(q.horizons),
          treatment: ProofReport.emptyGroup(q.horizons)
        })
      }
      const w = q.windows
      // d: each member's days from the pre-period to their last enrolment day, with e, their
      // first day in [start, until]; per: one row per enrolled member; ph: one per member and
      // horizon at which they matured. The control group is ProofReport.isControl in SQL.
      return sql`
        WITH w AS (
          SELECT * FROM unnest(${w.map((x) => x.timezone)}::text[], ${w.map((x) => x.start)}::date[],
            ${w.map((x) => x.until)}::date[], ${w.map((x) => x.lastComplete)}::date[])
            AS w (timezone, start_day, until_day, last_day)
        ),
        m AS (
          SELECT s.user_hash, w.start_day, w.until_day, w.last_day
          FROM ${t.streaks} s JOIN w ON w.timezone = s.timezone
          WHERE s.project_id = ${q.projectId} AND s.program_id = ${q.programId} AND s.ledger = 'live'
        ),
        d AS (
          SELECT m.user_hash, m.start_day, m.until_day, m.last_day, a.day,
            min(a.day) FILTER (WHERE a.day >= m.start_day AND a.day <= m.until_day)
              OVER (PARTITION BY m.user_hash) AS e
          FROM m JOIN ${t.activity_days} a
            ON a.project_id = ${q.projectId} AND a.program_id = ${q.programId} AND a.ledger = 'live'
              AND a.user_hash = m.user_hash
          WHERE a.day >= m.start_day - ${q.preDays}::int AND a.day <= m.until_day
        ),
        per AS (
          SELECT user_hash,
            (('x' || substr(encode(sha256(convert_to(${q.experimentId}::text || ':' || user_hash, 'UTF8')), 'hex'), 1, 8))
              ::bit(32)::bigint % 100) < ${q.holdoutPercent}::int AS control,
            bool_or(day >= e + ${q.returnAfter}::int AND day <= until_day) AS returned,
            count(*) FILTER (WHERE day < start_day) AS x
          FROM d WHERE e IS NOT NULL GROUP BY user_hash
        ),
        ph AS (
          SELECT d.user_hash, h.h,
            bool_or(d.day >= d.e + h.h AND d.day <= d.e + h.h + ${q.retentionDays}::int - 1) AS retained,
            count(*) FILTER (WHERE d.day >= d.e AND d.day < d.e + h.h) AS y
          FROM d CROSS JOIN unnest(${[...q.horizons]}::int[]) AS h (h)
          WHERE d.e IS NOT NULL AND d.e + h.h + ${q.retentionDays}::int - 1 <= d.last_day
          GROUP BY d.user_hash, h.h
        )
        SELECT control, NULL::int AS horizon, count(*)::bigint AS n, (count(*) FILTER (WHERE returned))::bigint AS k,
          0::bigint AS sy, 0::bigint AS syy, 0::bigint AS sx, 0::bigint AS sxx, 0::bigint AS sxy
        FROM per GROUP BY control
        UNION ALL
        SELECT per.control, ph.h, count(*)::bigint, (count(*) FILTER (WHERE ph.retained))::bigint,
          sum(ph.y)::bigint, sum(ph.y * ph.y)::bigint, sum(per.x)::bigint, sum(per.x * per.x)::bigint,
          sum(per.x * ph.y)::bigint
        FROM ph JOIN per ON per.user_hash = ph.user_hash GROUP BY per.control, ph.h`.pipe(
        Effect.map((rows) => {
          const blank = (): { enrolled: number; returned: number; horizons: Array<ProofReport.HorizonSums> } => ({
            enrolled: 0,
            returned: 0,
            horizons: [...ProofReport.emptyGroup(q.horizons).horizons]
          })
          const out = { control: blank(), treatment: blank() }
          for (const r of rows) {
            const side = r.control === true ? out.control : out.treatment
            if (r.horizon === null) {
              side.enrolled = num(r.n)
              side.returned = num(r.k)
              continue
            }
            const i = q.horizons.indexOf(Number(r.horizon))
            if (i < 0) continue
            side.horizons[i] = {
              horizon: Number(r.horizon),
              matured: num(r.n),
              retained: num(r.k),
              sumY: num(r.sy),
              sumY2: num(r.syy),
              sumX: num(r.sx),
              sumX2: num(r.sxx),
              sumXY: num(r.sxy)
            }
          }
          return out
        }),
        io("ReportStore.cohorts")
      )
    }
  }
}
