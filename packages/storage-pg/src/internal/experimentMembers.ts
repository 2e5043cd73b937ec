/**
 * The Proof rollup on Postgres (docs/decisions/0028-proof-members.md): per experiment and member
 * with an active day near or after its start, the member's group, enrolment day, covariate and
 * per-horizon counts, so that a report adds up one row per member instead of reading their days
 * and hashing them. Every statement that adds activity days recomputes the touched members' rows.
 */

/** The horizons, retention window, return delay and pre-period the stored columns are for. */
export const stored = { horizons: [1, 7, 14, 30], retentionDays: 7, returnAfter: 7, preDays: 28 } as const

// Days of slack around an instant's UTC date that cover its activity day in every zone and with
// every day start hour (offsets from -12 to +14 hours, day starts up to 23 o'clock).
const SLACK = 2

/** `ProofReport.isControl` in SQL: the first 4 bytes of SHA-256(`experiment:user`) mod 100. */
const controlOf = (experiment: string, user: string, holdout: string) =>
  `((('x' || substr(encode(sha256(convert_to(${experiment} || ':' || ${user}, 'UTF8')), 'hex'), 1, 8))::bit(32)::bigint
    % 100) < ${holdout})`

/**
 * A `SELECT` of the rows of `experiment_members` for `keys` (a relation with `project_id`,
 * `program_id`, `experiment_id`, `holdout_percent`, `user_hash`, `timezone` and `start_day`, one
 * row per experiment and member), computed from the member's live days: those of `days`, plus
 * those of the relation `extra` (days the same statement inserts, which it does not see in `days`).
 * A NULL `start_day` (a zone not resolved yet) stores the member with nothing counted; the report
 * resolves it.
 */
export const memberRowsText = (days: string, keys: string, extra: string | undefined, project: string): string => {
  const daysOf = (k: string, where: string) =>
    `(SELECT d.day FROM ${days} d WHERE d.project_id = ${project} AND d.program_id = ${k}.program_id
        AND d.user_hash = ${k}.user_hash AND d.ledger = 'live' AND ${where.replaceAll("@", "d.day")}${
      extra === undefined ? "" : `
      UNION ALL SELECT x.day FROM ${extra} x WHERE x.program_id = ${k}.program_id AND x.user_hash = ${k}.user_hash
        AND x.ledger = 'live' AND ${where.replaceAll("@", "x.day")}`
    })`
  const h = stored.horizons
  const rd = stored.retentionDays
  return `SELECT k.project_id, k.program_id, k.experiment_id, k.user_hash, k.timezone, k.start_day,
    ${controlOf("k.experiment_id", "k.user_hash", "k.holdout_percent")} AS control,
    e.enrolled, r.returned, coalesce(p.x, 0) AS x,
    ${h.map((n) => `coalesce(c.y${n}, 0) AS y${n}`).join(", ")},
    ${h.map((n) => `coalesce(c.r${n}, false) AS r${n}`).join(", ")}
  FROM ${keys} k
  CROSS JOIN LATERAL (SELECT min(day) AS enrolled FROM ${daysOf("k", "@ >= k.start_day")} AS a) e
  CROSS JOIN LATERAL (SELECT count(*)::int AS x
    FROM ${daysOf("k", `@ >= k.start_day - ${stored.preDays} AND @ < k.start_day`)} AS a) p
  CROSS JOIN LATERAL (SELECT min(day) AS returned
    FROM ${daysOf("k", `@ >= e.enrolled + ${stored.returnAfter}`)} AS a) r
  CROSS JOIN LATERAL (SELECT ${
    h.map((n) =>
      `count(*) FILTER (WHERE day < e.enrolled + ${n})::int AS y${n}, ` +
      `bool_or(day >= e.enrolled + ${n} AND day <= e.enrolled + ${n + rd - 1}) AS r${n}`
    ).join(", ")
  }
    FROM ${daysOf("k", `@ >= e.enrolled AND @ <= e.enrolled + ${Math.max(...h) + rd - 1}`)} AS a) c`
}

/** The upsert of `experiment_members` from a `SELECT` of `memberRowsText`'s columns. */
export const upsertMembersText = (members: string, rows: string, onlyWhere?: string): string => {
  const cols = [
    "timezone",
    "start_day",
    "control",
    "enrolled",
    "returned",
    "x",
    ...stored.horizons.flatMap((n) => [`y${n}`, `r${n}`])
  ]
  return `INSERT INTO ${members} AS m (project_id, program_id, experiment_id, user_hash, timezone, start_day, control,
    enrolled, returned, x, ${stored.horizons.map((n) => `y${n}`).join(", ")}, ${
    stored.horizons.map((n) => `r${n}`).join(", ")
  })
  ${rows}
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (project_id, program_id, experiment_id, user_hash) DO UPDATE SET ${
    cols.map((c) => `${c} = excluded.${c}`).join(", ")
  }${onlyWhere === undefined ? "" : ` WHERE ${onlyWhere}`}`
}

/**
 * CTEs `exp_keys` and `exp_members` (to follow the CTE `added`, the inserted days' rows) that
 * recompute the rows of the added days' live members in each experiment of their program whose
 * window the days can fall in: a running one from 28 days (and the slack) before its start, an
 * ended one up to its end. A program without such an experiment costs one probe of the
 * experiments per program of the statement and nothing per day: the experiments are the outer
 * side of the join (the `OFFSET 0` keeps the planner from flattening the lateral read of the days
 * and probing every day's streak row first). The member's zone is their streak row's as the
 * statement finds it; the zone's start day is the one `experiment_zones` holds (NULL when it holds
 * none yet). `inTable`: the added days are already in `days` (a later statement of the transaction
 * that inserted them), so they are not counted a second time from `added`.
 */
export const addedMembersText = (
  tables: { readonly experiments: string; readonly zones: string; readonly members: string; readonly streaks: string },
  days: string,
  added: string,
  project: string,
  inTable = false
): string => `
exp_keys AS (
  SELECT DISTINCT ON (x.id, a.user_hash) ${project}::text AS project_id, a.program_id, x.id AS experiment_id,
    x.holdout_percent, a.user_hash, s.timezone, z.start_day
  FROM (SELECT DISTINCT program_id FROM ${added} WHERE ledger = 'live') p
  JOIN ${tables.experiments} x ON x.project_id = ${project} AND x.program_id = p.program_id
  CROSS JOIN LATERAL (
    SELECT * FROM ${added} a WHERE a.program_id = x.program_id AND a.ledger = 'live'
      AND a.day >= (x.started_at AT TIME ZONE 'UTC')::date - ${stored.preDays + SLACK}
      AND (x.ended_at IS NULL OR a.day <= (x.ended_at AT TIME ZONE 'UTC')::date + ${SLACK})
    OFFSET 0
  ) a
  JOIN ${tables.streaks} s ON s.project_id = ${project} AND s.program_id = a.program_id AND s.user_hash = a.user_hash
    AND s.ledger = 'live'
  LEFT JOIN ${tables.zones} z ON z.project_id = ${project} AND z.program_id = a.program_id AND z.experiment_id = x.id
    AND z.timezone = s.timezone
), exp_members AS (
  ${upsertMembersText(tables.members, memberRowsText(days, "exp_keys", inTable ? undefined : added, project))}
)`

/**
 * Multi-statement text without parameters that fills `experiment_zones` and `experiment_members`
 * from what is stored, for every experiment (`experimentWhere`: a condition on `e`, the
 * experiment, to fill fewer): each zone of its program's live streak rows that Postgres knows
 * gets the start's activity day, and each member with a live day from (the slack) before the
 * start their row (a zone Postgres does not know with no start day, which the report resolves).
 * `project` (an SQL literal), when the experiments are all of one project: every tenant table is
 * then read with the project named, as Citus needs to send each read to that project's shard
 * (docs/scaling.md#statements-citus-can-plan); without it, the experiment's own project.
 */
export const fillText = (p: string, experimentWhere = "true", project?: string): string => {
  const of = project ?? "e.project_id"
  const members = upsertMembersText(
    `${p}experiment_members`,
    memberRowsText(`${p}activity_days`, "keys", undefined, project ?? "k.project_id")
  )
  return `
INSERT INTO ${p}experiment_zones (project_id, program_id, experiment_id, timezone, start_day)
SELECT e.project_id, e.program_id, e.id, z.timezone,
  ((e.started_at AT TIME ZONE z.timezone) - make_interval(hours => coalesce((g.policy->>'dayStartHour')::int, 0)))::date
FROM ${p}experiments e
JOIN ${p}programs g ON g.project_id = e.project_id AND g.id = e.program_id
CROSS JOIN LATERAL (
  SELECT DISTINCT s.timezone FROM ${p}streaks s
  WHERE s.project_id = ${of} AND s.program_id = e.program_id AND s.ledger = 'live'
) z
WHERE ${experimentWhere} AND z.timezone IN (SELECT name FROM pg_timezone_names)
ON CONFLICT DO NOTHING;
WITH keys AS (
  SELECT s.project_id, s.program_id, e.id AS experiment_id, e.holdout_percent, s.user_hash, s.timezone, z.start_day
  FROM ${p}experiments e
  JOIN ${p}streaks s ON s.project_id = ${of} AND s.program_id = e.program_id AND s.ledger = 'live'
  LEFT JOIN ${p}experiment_zones z ON z.project_id = ${of} AND z.program_id = e.program_id
    AND z.experiment_id = e.id AND z.timezone = s.timezone
  WHERE ${experimentWhere} AND EXISTS (
    SELECT 1 FROM ${p}activity_days d WHERE d.project_id = ${project ?? "s.project_id"} AND d.program_id = s.program_id
      AND d.user_hash = s.user_hash AND d.ledger = 'live'
      AND d.day >= (e.started_at AT TIME ZONE 'UTC')::date - ${SLACK})
)
${members};
`
}

/**
 * A statement (`$1` the project, `$2` the import, `$3` its program) that recomputes the rows of
 * an import's members in each experiment of the program, once the import has recomputed their
 * streak rows (their zones are then the rows'): an import writes days for members who may have
 * no streak row yet, so its batches leave the rollup to this.
 */
export const importedMembersText = (
  tables: {
    readonly experiments: string
    readonly zones: string
    readonly members: string
    readonly streaks: string
    readonly importMembers: string
  },
  days: string
): string => `
WITH keys AS (
  SELECT $1::text AS project_id, x.program_id, x.id AS experiment_id, x.holdout_percent, s.user_hash, s.timezone,
    z.start_day
  FROM ${tables.importMembers} im
  JOIN ${tables.experiments} x ON x.project_id = $1 AND x.program_id = $3
  JOIN ${tables.streaks} s ON s.project_id = $1 AND s.program_id = $3 AND s.user_hash = im.user_hash
    AND s.ledger = 'live'
  LEFT JOIN ${tables.zones} z ON z.project_id = $1 AND z.program_id = $3 AND z.experiment_id = x.id
    AND z.timezone = s.timezone
  WHERE im.project_id = $1 AND im.import_id = $2
)
${upsertMembersText(tables.members, memberRowsText(days, "keys", undefined, "$1"))}`
