/**
 * The `active_spans` rollup on Postgres (docs/decisions/0024-report-rollups.md): per program,
 * ledger and activity day, the members active that day by their previous active day. Every
 * statement that adds or removes activity days carries the change of its links as CTEs.
 *
 * Every rollup row also has a `slot`, one of 16, the writing connection's: the rows every batch
 * of a day changes (today's counts, the groups members move to) would otherwise be locked by one
 * transaction until it commits while the next waits; readers add the slots up.
 */

/**
 * The slot a statement writes rollup rows in (see above): the one `PgConnection` gave the
 * connection (`streaks.rollup_slot`, distinct among a pool's connections), else its backend pid
 * mod 16 (a connection made elsewhere, or a Citus worker's).
 */
export const slot =
  "coalesce(nullif(current_setting('streaks.rollup_slot', true), '')::smallint, (pg_backend_pid() % 16)::smallint)"

/**
 * Where a statement text built here takes its project as a parameter: the caller puts the
 * parameter in its place (`split` on it).
 */
export const projectParameter = "/* project */"

/**
 * CTEs `near` and `spans` (to follow the CTE `added`, the inserted days' rows with `project_id`,
 * `program_id`, `user_hash`, `ledger` and `day`) that add the new days' links to `spans`. They
 * read `days` as it was before the statement, which is what the links change from: a new day
 * links to the nearest earlier day, old or new, and the old day right after new ones now links
 * to the last of them instead of its old predecessor. Sorted, so batches lock rows in one order.
 * `project`: the statement's one project as a value (a parameter, `projectParameter`), which
 * the reads of `days` compare `project_id` with, so that Citus routes the statement to that
 * project's shard (docs/scaling.md#statements-citus-can-plan).
 */
export const addedSpansText = (
  spans: string,
  days: string,
  added: string,
  project: string
): string => `
near AS (
  ${nearText(days, added, project)}
), spans AS (
  INSERT INTO ${spans} AS s (project_id, program_id, ledger, day, prev, slot, members)
  SELECT project_id, program_id, ledger, day, prev, ${slot}, sum(n) FROM (
    SELECT project_id, program_id, ledger, day, coalesce(greatest(old_prev, new_prev), '-infinity'::date) AS prev,
      1 AS n
    FROM near
    UNION ALL
    SELECT project_id, program_id, ledger, old_next, coalesce(old_prev, '-infinity'::date), -1 FROM near
    WHERE old_next IS NOT NULL GROUP BY project_id, program_id, user_hash, ledger, old_next, old_prev
    UNION ALL
    SELECT project_id, program_id, ledger, old_next, max(day), 1 FROM near
    WHERE old_next IS NOT NULL GROUP BY project_id, program_id, user_hash, ledger, old_next, old_prev
  ) AS change
  GROUP BY project_id, program_id, ledger, day, prev HAVING sum(n) <> 0
  ORDER BY project_id, program_id, ledger, day, prev
  ON CONFLICT (project_id, program_id, ledger, day, prev, slot) DO UPDATE SET members = s.members + excluded.members
)`

const sameKey = (project: string) =>
  `d.project_id = ${project} AND d.program_id = a.program_id AND d.user_hash = a.user_hash AND d.ledger = a.ledger`

/**
 * Each added day with the member's nearest earlier and later stored days, and the previous added
 * day. Days mostly come after every stored day of their member (an action of today, a history
 * imported oldest first): one seek for the member's last stored day, and the two seeks around the
 * added day only where that last day is not before it.
 */
const nearText = (days: string, added: string, project: string) => `
  SELECT project_id, program_id, user_hash, ledger, day,
    CASE WHEN last_day IS NULL OR last_day < day THEN last_day
      ELSE (SELECT max(d.day) FROM ${days} d WHERE ${sameKey(project)} AND d.day < a.day) END AS old_prev,
    CASE WHEN last_day IS NULL OR last_day < day THEN NULL
      ELSE (SELECT min(d.day) FROM ${days} d WHERE ${sameKey(project)} AND d.day > a.day) END AS old_next,
    new_prev
  FROM (
    SELECT a.project_id, a.program_id, a.user_hash, a.ledger, a.day,
      (SELECT max(d.day) FROM ${days} d WHERE ${sameKey(project)}) AS last_day,
      lag(a.day) OVER (PARTITION BY a.project_id, a.program_id, a.user_hash, a.ledger ORDER BY a.day) AS new_prev
    FROM ${added} a
  ) AS a`

/**
 * A CTE `spans` (to follow the CTE `removed`, every day of some keys, deleted) that takes those
 * days' links out of `spans`.
 */
export const removedSpansText = (spans: string, removed: string): string => `
spans AS (
  INSERT INTO ${spans} AS s (project_id, program_id, ledger, day, prev, slot, members)
  SELECT project_id, program_id, ledger, day, prev, ${slot}, -count(*) FROM (
    SELECT project_id, program_id, ledger, day,
      coalesce(lag(day) OVER (PARTITION BY project_id, program_id, user_hash, ledger ORDER BY day), '-infinity'::date)
        AS prev
    FROM ${removed}
  ) AS gone
  GROUP BY project_id, program_id, ledger, day, prev
  ORDER BY project_id, program_id, ledger, day, prev
  ON CONFLICT (project_id, program_id, ledger, day, prev, slot) DO UPDATE SET members = s.members + excluded.members
)`

/** The columns of a streak row that its current length depends on: one group of `streak_summaries`. */
const summaryColumns = "timezone, last_active_day, run, period_days, freezes, grants, forgiveness"

// A row no action has counted on yet (as `lock` creates it) is in no group: its length is 0, and
// leaving it out spares a member's first action a write to the one group all new members share.
const counted = (r: string) =>
  `NOT (${r}.last_active_day IS NULL AND ${r}.run = 0 AND ${r}.period_days IS NULL AND ${r}.freezes IS NULL
    AND ${r}.grants IS NULL AND ${r}.forgiveness IS NULL)`

/** The conflict target of `streak_summaries` (jsonb groups by their text's hash: an index key has a size bound). */
export const summaryKey =
  "project_id, program_id, ledger, timezone, last_active_day, run, period_days, freezes, md5(grants::text), md5(forgiveness::text), slot"

/**
 * A streak row's `streak_summaries` group, as statement values: the columns of `summaryColumns`,
 * dates as text, jsonb as JSON text.
 */
export interface SummaryGroup {
  readonly timezone: string
  readonly lastActiveDay: string | null
  readonly run: number
  readonly periodDays: number | null
  readonly freezes: number | null
  readonly grants: string | null
  readonly forgiveness: string | null
}

/** Whether a row of this group is in `streak_summaries` (see `counted`). */
export const isCounted = (g: SummaryGroup): boolean =>
  !(g.lastActiveDay === null && g.run === 0 && g.periodDays === null && g.freezes === null && g.grants === null &&
    g.forgiveness === null)

const jsonText = (value: unknown): string | null => value === null || value === undefined ? null : JSON.stringify(value)

/**
 * The group of a streak row as a statement selected it with `streakColumns` (the last active day
 * as text, jsonb parsed): what the row's stored values put it in.
 */
export const groupOfSelected = (r: Record<string, unknown>): SummaryGroup => ({
  timezone: r.timezone as string,
  lastActiveDay: (r.last_active_day as string | null) ?? null,
  run: r.run as number,
  periodDays: (r.period_days as number | null) ?? null,
  freezes: (r.freezes as number | null) ?? null,
  grants: jsonText(r.grants),
  forgiveness: jsonText(r.forgiveness)
})

/** The order in which statements take `streak_summaries` rows, so that concurrent ones lock them in one order. */
const summariesOrder =
  "project_id, program_id, ledger, timezone, last_active_day, run, period_days, freezes, md5(grants::text), md5(forgiveness::text)"

/**
 * A statement `INSERT INTO streak_summaries` adding the rows of `changes` (the key columns, the
 * summary columns and `n`, members joining a group when positive, leaving it when negative) to
 * their groups. Groups equal as jsonb are added up first, so that one group is written once;
 * `distinct`: the caller has already added them up (one row per group, none with `n` 0).
 */
export const summariesAddText = (summaries: string, changes: string, distinct = false) =>
  `INSERT INTO ${summaries} AS g (project_id, program_id, ledger, ${summaryColumns}, slot, members)
  SELECT project_id, program_id, ledger, ${summaryColumns}, ${slot}, ${distinct ? "n" : "sum(n)"} FROM ${changes}${
    distinct ? "" : `
  GROUP BY project_id, program_id, ledger, ${summaryColumns} HAVING sum(n) <> 0`
  }
  ORDER BY ${summariesOrder}
  ON CONFLICT (${summaryKey}) DO UPDATE SET members = g.members + excluded.members`

/**
 * A statement `INSERT INTO streak_summaries` moving rows between groups: the rows of `before` (the
 * streak rows as they were, with the key and summary columns) leave theirs, those of `after` join
 * theirs. Sorted, so concurrent statements lock the groups in one order.
 */
export const summariesChangeText = (
  summaries: string,
  before: string | undefined,
  after: string | undefined,
  slotOf: string = slot
) => {
  const parts = [
    ...(after === undefined ? [] : [`SELECT project_id, program_id, ledger, ${summaryColumns}, 1 AS n FROM ${after} a
      WHERE ${counted("a")}`]),
    ...(before === undefined ? [] : [`SELECT project_id, program_id, ledger, ${summaryColumns}, -1 AS n FROM ${before} b
      WHERE ${counted("b")}`])
  ]
  return `INSERT INTO ${summaries} AS g (project_id, program_id, ledger, ${summaryColumns}, slot, members)
  SELECT project_id, program_id, ledger, ${summaryColumns}, ${slotOf}, sum(n) FROM (${
    parts.join(" UNION ALL ")
  }) AS change
  GROUP BY project_id, program_id, ledger, ${summaryColumns} HAVING sum(n) <> 0
  ORDER BY ${summariesOrder}
  ON CONFLICT (${summaryKey}) DO UPDATE SET members = g.members + excluded.members`
}
