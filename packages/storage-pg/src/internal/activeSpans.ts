/**
 * The `active_spans` rollup on Postgres (docs/decisions/0024-report-rollups.md): per program,
 * ledger and activity day, the members active that day by their previous active day. Every
 * statement that adds or removes activity days carries the change of its links as CTEs.
 */

/**
 * CTEs `near` and `spans` (to follow the CTE `added`, the inserted days' rows with `project_id`,
 * `program_id`, `user_hash`, `ledger` and `day`) that add the new days' links to `spans`. They
 * read `days` as it was before the statement, which is what the links change from: a new day
 * links to the nearest earlier day, old or new, and the old day right after new ones now links
 * to the last of them instead of its old predecessor. Sorted, so batches lock rows in one order.
 */
export const addedSpansText = (spans: string, days: string, added: string): string => `
near AS (
  SELECT a.project_id, a.program_id, a.user_hash, a.ledger, a.day,
    (SELECT max(d.day) FROM ${days} d WHERE d.project_id = a.project_id AND d.program_id = a.program_id
      AND d.user_hash = a.user_hash AND d.ledger = a.ledger AND d.day < a.day) AS old_prev,
    (SELECT min(d.day) FROM ${days} d WHERE d.project_id = a.project_id AND d.program_id = a.program_id
      AND d.user_hash = a.user_hash AND d.ledger = a.ledger AND d.day > a.day) AS old_next,
    lag(a.day) OVER (PARTITION BY a.project_id, a.program_id, a.user_hash, a.ledger ORDER BY a.day) AS new_prev
  FROM ${added} a
), spans AS (
  INSERT INTO ${spans} AS s (project_id, program_id, ledger, day, prev, members)
  SELECT project_id, program_id, ledger, day, prev, sum(n) FROM (
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
  ON CONFLICT (project_id, program_id, ledger, day, prev) DO UPDATE SET members = s.members + excluded.members
)`

/**
 * A CTE `spans` (to follow the CTE `removed`, every day of some keys, deleted) that takes those
 * days' links out of `spans`.
 */
export const removedSpansText = (spans: string, removed: string): string => `
spans AS (
  INSERT INTO ${spans} AS s (project_id, program_id, ledger, day, prev, members)
  SELECT project_id, program_id, ledger, day, prev, -count(*) FROM (
    SELECT project_id, program_id, ledger, day,
      coalesce(lag(day) OVER (PARTITION BY project_id, program_id, user_hash, ledger ORDER BY day), '-infinity'::date)
        AS prev
    FROM ${removed}
  ) AS gone
  GROUP BY project_id, program_id, ledger, day, prev
  ORDER BY project_id, program_id, ledger, day, prev
  ON CONFLICT (project_id, program_id, ledger, day, prev) DO UPDATE SET members = s.members + excluded.members
)`
