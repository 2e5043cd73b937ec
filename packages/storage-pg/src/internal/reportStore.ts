/**
 * `ReportStore` on Postgres: each aggregate is one statement over the streak rows, activity days
 * and rollups of the programs asked about, read through their primary keys (project, program, …),
 * so only those programs' rows are read and only counts and sums come back.
 */
import type { FreezeGrant } from "@streaks/core/Domain"
import { forgivenOf } from "./streakRows.js"
import type { ProgramId } from "@streaks/core/Ids"
import * as ProofReport from "@streaks/core/ProofReport"
import type { ReportStore } from "@streaks/core/ReportStore"
import { Effect } from "effect"
import type { Fragment } from "@effect/sql/Statement"
import type { StorageError } from "@streaks/core/Errors"
import type { CohortQuery, Cohorts } from "@streaks/core/ProofReport"
import { projectParameter } from "./activeSpans.js"
import { memberRowsText, stored, upsertMembersText } from "./experimentMembers.js"
import { type Ctx, io, opt, toOptionalLocalDate } from "./sql.js"

const num = (value: unknown): number => value === null || value === undefined ? 0 : Number(value)

// One row per group (`control`) with `n`, `k` and per horizon i `n{i}`, `k{i}`, `sy{i}`, `syy{i}`,
// `sx{i}`, `sxx{i}` and `sxy{i}`: the cohorts.
const cohortsOfRows = (q: CohortQuery) => (rows: ReadonlyArray<Record<string, unknown>>): Cohorts => {
  const group = (control: boolean) => {
    const r = rows.find((row) => row.control === control)
    if (r === undefined) return ProofReport.emptyGroup(q.horizons)
    return {
      enrolled: num(r.n),
      returned: num(r.k),
      horizons: q.horizons.map((horizon, i) => ({
        horizon,
        matured: num(r[`n${i}`]),
        retained: num(r[`k${i}`]),
        sumY: num(r[`sy${i}`]),
        sumY2: num(r[`syy${i}`]),
        sumX: num(r[`sx${i}`]),
        sumX2: num(r[`sxx${i}`]),
        sumXY: num(r[`sxy${i}`])
      }))
    }
  }
  return { control: group(true), treatment: group(false) }
}

// Whether the query asks what the Proof rollup's columns hold (the report's constants).
const isStored = (q: CohortQuery): boolean =>
  q.retentionDays === stored.retentionDays && q.returnAfter === stored.returnAfter &&
  q.preDays === stored.preDays && q.horizons.length === stored.horizons.length &&
  q.horizons.every((h, i) => h === stored.horizons[i])

export const makeReportStore = ({ prefix, query, sql, t }: Ctx): ReportStore["Type"] => {
  // The programs' (project, program) pairs: the leading columns of both tables' primary keys.
  const programsOf = (ids: ReadonlyArray<string>) =>
    sql`(project_id, program_id) IN (SELECT project_id, id FROM ${t.programs} WHERE id = ANY(${[...ids]}::text[]))`

  // The rows of `keys` computed again, where they are still as the statement found them stale.
  const resolveText = upsertMembersText(
    `"${prefix}experiment_members"`,
    memberRowsText(`"${prefix}activity_days"`, "keys", undefined, projectParameter)
  ).split(projectParameter).map((part) => sql.literal(part))
  const resolveRows = (projectId: string): Fragment =>
    resolveText.slice(1).reduce<Fragment>((text, part) => sql`${text}${projectId}${part}`, resolveText[0]!)

  // The cohorts from the activity days of the window (any horizons and windows): one row of counts
  // per enrolled member, grouped by hash; the control group is ProofReport.isControl in SQL.
  const fromDays = (q: CohortQuery): Effect.Effect<Cohorts, StorageError> => {
    const w = q.windows
    // Integers only reach the statement's text (the horizons' columns are built from them).
    const int = (n: number) => {
      if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`)
      return String(n)
    }
    const rd = int(q.retentionDays)
    const perHorizon = sql.literal(
      q.horizons.map((h, i) =>
        `, bool_or(a.day >= e.e + ${int(h)} AND a.day <= e.e + ${int(h)} + ${rd} - 1) AS r${i}` +
        `, count(*) FILTER (WHERE a.day >= e.e AND a.day < e.e + ${int(h)}) AS y${i}`
      ).join("")
    )
    const sums = sql.literal(
      q.horizons.map((h, i) => {
        const matured = `e + ${int(h)} + ${rd} - 1 <= last_day`
        return `, count(*) FILTER (WHERE ${matured}) AS n${i}, count(*) FILTER (WHERE ${matured} AND r${i}) AS k${i}` +
          `, sum(y${i}) FILTER (WHERE ${matured}) AS sy${i}, sum(y${i} * y${i}) FILTER (WHERE ${matured}) AS syy${i}` +
          `, sum(x) FILTER (WHERE ${matured}) AS sx${i}, sum(x * x) FILTER (WHERE ${matured}) AS sxx${i}` +
          `, sum(x * y${i}) FILTER (WHERE ${matured}) AS sxy${i}`
      }).join("")
    )
    // m: the program's members with their zone's window; e: each one's enrolment day (both
    // inlined where they are used, so that the planner sees their sizes and hash-joins); per: one
    // row of counts per enrolled member (the days from the pre-period to the last enrolment
    // day, read once, grouped by hash); then one row per group. The control group is
    // ProofReport.isControl in SQL.
    return sql`
      WITH w AS (
        SELECT * FROM unnest(${w.map((x) => x.timezone)}::text[], ${w.map((x) => x.start)}::date[],
          ${w.map((x) => x.until)}::date[], ${w.map((x) => x.lastComplete)}::date[])
          AS w (timezone, start_day, until_day, last_day)
      ),
      m AS NOT MATERIALIZED (
        SELECT s.user_hash, w.start_day, w.until_day, w.last_day
        FROM ${t.streaks} s JOIN w ON w.timezone = s.timezone
        WHERE s.project_id = ${q.projectId} AND s.program_id = ${q.programId} AND s.ledger = 'live'
      ),
      e AS NOT MATERIALIZED (
        SELECT m.user_hash, min(a.day) AS e
        FROM m JOIN ${t.activity_days} a
          ON a.project_id = ${q.projectId} AND a.program_id = ${q.programId} AND a.ledger = 'live'
            AND a.user_hash = m.user_hash
        WHERE a.day >= m.start_day AND a.day <= m.until_day
        GROUP BY m.user_hash
      ),
      per AS (
        SELECT m.user_hash, e.e, m.last_day,
          count(*) FILTER (WHERE a.day < m.start_day) AS x,
          bool_or(a.day >= e.e + ${q.returnAfter}::int) AS returned
          ${perHorizon}
        FROM m JOIN e ON e.user_hash = m.user_hash JOIN ${t.activity_days} a
          ON a.project_id = ${q.projectId} AND a.program_id = ${q.programId} AND a.ledger = 'live'
            AND a.user_hash = m.user_hash
        WHERE a.day >= m.start_day - ${q.preDays}::int AND a.day <= m.until_day
        GROUP BY m.user_hash, e.e, m.last_day
      ),
      g AS (
        SELECT per.*,
          (('x' || substr(encode(sha256(convert_to(${q.experimentId}::text || ':' || user_hash, 'UTF8')), 'hex'), 1, 8))
            ::bit(32)::bigint % 100) < ${q.holdoutPercent}::int AS control
        FROM per
      )
      SELECT control, count(*) AS n, count(*) FILTER (WHERE returned) AS k ${sums}
      FROM g GROUP BY control`.pipe(
      Effect.map(cohortsOfRows(q)),
      io("ReportStore.cohorts")
    )
  }

  // The cohorts from the Proof rollup (internal/experimentMembers.ts). First the zones' start days
  // of the windows are stored (for the writes that follow). Then one read-only statement adds the
  // rows up: by group, zone, start, enrolment and return day (sums of stored columns), then by
  // group over the windows, where enrolment and maturity are decided; it also counts the rows
  // computed with another start day (a zone unknown when the row was written, a changed day start
  // hour) or with a zone that has no window. Only when there are such rows are they computed again
  // from the days, with the window of their member's zone, and, when that changed any, added up
  // again: the common case reads the rows once, in a statement the planner may run in parallel.
  const fromRollup = (q: CohortQuery): Effect.Effect<Cohorts, StorageError> => {
    const w = q.windows
    const windows = sql`SELECT * FROM unnest(${w.map((x) => x.timezone)}::text[], ${w.map((x) => x.start)}::date[],
        ${w.map((x) => x.until)}::date[], ${w.map((x) => x.lastComplete)}::date[])
        AS w (timezone, start_day, until_day, last_day)`
    const ofExperiment = sql`m.project_id = ${q.projectId} AND m.program_id = ${q.programId}
      AND m.experiment_id = ${q.experimentId}`
    const zones =
      sql`INSERT INTO ${t.experiment_zones} AS z (project_id, program_id, experiment_id, timezone, start_day)
      SELECT ${q.projectId}, ${q.programId}, ${q.experimentId}, timezone, start_day FROM (${windows}) w
      ON CONFLICT (project_id, program_id, experiment_id, timezone)
      DO UPDATE SET start_day = excluded.start_day WHERE z.start_day <> excluded.start_day`
    const resolve = sql`WITH w AS (${windows}), stale AS (
        SELECT m.user_hash FROM ${t.experiment_members} m LEFT JOIN w ON w.timezone = m.timezone
        WHERE ${ofExperiment} AND (w.timezone IS NULL OR m.start_day IS DISTINCT FROM w.start_day)
      ), keys AS (
        SELECT s.project_id, s.program_id, ${q.experimentId}::text AS experiment_id,
          ${q.holdoutPercent}::int AS holdout_percent, s.user_hash, s.timezone, w.start_day
        FROM stale JOIN ${t.streaks} s ON s.project_id = ${q.projectId} AND s.program_id = ${q.programId}
          AND s.user_hash = stale.user_hash AND s.ledger = 'live'
        JOIN w ON w.timezone = s.timezone
      ), computed AS (
        ${resolveRows(q.projectId)}
        RETURNING 1
      )
      SELECT count(*) AS n FROM computed`
    const h = stored.horizons
    const rd = stored.retentionDays
    const inner = sql.literal(
      h.map((n) =>
        `, count(*) FILTER (WHERE r${n}) AS k${n}, sum(y${n}) AS sy${n}, sum(y${n} * y${n}) AS syy${n}` +
        `, sum(x * y${n}) AS sxy${n}`
      ).join("")
    )
    // A group counts where its start day is its zone's window's and its members enrolled by the
    // window's last enrolment day; it is stale where its zone has no window or another start day.
    const counted = "w.start_day = g.start_day AND g.enrolled <= w.until_day"
    const outer = sql.literal(
      h.map((n, i) => {
        const matured = `${counted} AND g.enrolled + ${n + rd - 1} <= w.last_day`
        return `, sum(g.n) FILTER (WHERE ${matured}) AS n${i}, sum(g.k${n}) FILTER (WHERE ${matured}) AS k${i}` +
          `, sum(g.sy${n}) FILTER (WHERE ${matured}) AS sy${i}, sum(g.syy${n}) FILTER (WHERE ${matured}) AS syy${i}` +
          `, sum(g.sx) FILTER (WHERE ${matured}) AS sx${i}, sum(g.sxx) FILTER (WHERE ${matured}) AS sxx${i}` +
          `, sum(g.sxy${n}) FILTER (WHERE ${matured}) AS sxy${i}`
      }).join("")
    )
    const sums = sql`WITH w AS (${windows}), g AS (
        SELECT m.control, m.timezone, m.start_day, m.enrolled, m.returned, count(*) AS n, sum(m.x) AS sx,
          sum(m.x * m.x) AS sxx ${inner}
        FROM ${t.experiment_members} m
        WHERE ${ofExperiment}
        GROUP BY m.control, m.timezone, m.start_day, m.enrolled, m.returned
      )
      SELECT g.control, sum(g.n) FILTER (WHERE ${sql.literal(counted)}) AS n,
        sum(g.n) FILTER (WHERE ${sql.literal(counted)} AND g.returned <= w.until_day) AS k ${outer},
        sum(g.n) FILTER (WHERE w.start_day IS NULL OR g.start_day IS DISTINCT FROM w.start_day) AS stale
      FROM g LEFT JOIN w ON w.timezone = g.timezone
      GROUP BY g.control`
    const staleOf = (rows: ReadonlyArray<Record<string, unknown>>) => rows.reduce((n, r) => n + num(r.stale), 0)
    return Effect.gen(function*() {
      yield* query(zones)
      const first = yield* query(sums)
      if (staleOf(first) === 0) return first
      const computed = yield* query(resolve)
      return num(computed[0]?.n) === 0 ? first : yield* query(sums)
    }).pipe(
      Effect.map(cohortsOfRows(q)),
      io("ReportStore.cohorts")
    )
  }

  return {
    // A project with one program asked about is read from `active_spans`: its members active in
    // [from, to] are the days in it linked to a day before `from`, a count over days, not members.
    // A project with several needs each member once across them: distinct over their days. The
    // programs' projects are read first, so that the distinct count runs only when it is needed
    // (in one statement, the planner would scan the days even for an empty set of programs).
    activeMembers: (q) =>
      q.programIds.length === 0 ? Effect.succeed(0) : Effect.gen(function*() {
        const programs = yield* sql`SELECT project_id, id FROM ${t.programs} WHERE id = ANY(${[
          ...q.programIds
        ]}::text[])`
        const byProject = new Map<string, Array<string>>()
        for (const r of programs) {
          const ids = byProject.get(r.project_id as string) ?? []
          ids.push(r.id as string)
          byProject.set(r.project_id as string, ids)
        }
        const lone = [...byProject.values()].filter((ids) => ids.length === 1).map((ids) => ids[0]!)
        const shared = [...byProject.values()].filter((ids) => ids.length > 1).flat()
        const spans = lone.length === 0 ? [] : yield* sql`SELECT coalesce(sum(members), 0)::bigint AS n
            FROM ${t.active_spans} WHERE ${programsOf(lone)} AND ledger = 'live'
              AND day >= ${q.from}::date AND day <= ${q.to}::date AND prev < ${q.from}::date`
        const distinct = shared.length === 0 ? [] : yield* sql`SELECT count(*)::bigint AS n FROM (
            SELECT DISTINCT project_id, user_hash FROM ${t.activity_days}
            WHERE ${programsOf(shared)} AND ledger = 'live' AND day >= ${q.from}::date AND day <= ${q.to}::date
          ) AS members`
        return num(spans[0]?.n) + num(distinct[0]?.n)
      }).pipe(io("ReportStore.activeMembers")),

    // From the `streak_summaries` rollup, which the statements that save and remove rows keep.
    streakSummaries: (programIds) =>
      programIds.length === 0
        ? Effect.succeed([])
        : sql`SELECT program_id, timezone, to_char(last_active_day, 'YYYY-MM-DD') AS last_active_day, run,
              period_days, freezes, grants, forgiveness, sum(members)::bigint AS members
            FROM ${t.streak_summaries} WHERE ${programsOf(programIds)} AND ledger = 'live'
            GROUP BY program_id, timezone, last_active_day, run, period_days, freezes, grants, forgiveness
            HAVING sum(members) <> 0`.pipe(
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
                ...opt("grants", r.grants as ReadonlyArray<FreezeGrant> | null),
                ...forgivenOf(r.forgiveness as Parameters<typeof forgivenOf>[0])
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
      if (!isStored(q)) return fromDays(q)
      // The rollup holds the experiments stored, with their split: any other asks the days.
      return Effect.flatMap(
        query(sql`SELECT 1 FROM ${t.experiments} WHERE project_id = ${q.projectId} AND id = ${q.experimentId}
          AND program_id = ${q.programId} AND holdout_percent = ${q.holdoutPercent}`).pipe(io("ReportStore.cohorts")),
        (found) => found.length === 0 ? fromDays(q) : fromRollup(q)
      )
    }
  }
}
