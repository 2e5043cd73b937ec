/**
 * The fill and the readings of `BENCH_SCALE` (`run.ts`): a database grown in steps to 1M or 10M
 * members, and at each size its size on disk, a due sweep, and the time of a migration on it.
 */
import { SqlClient } from "@effect/sql"
import { Migrations, PgConnection } from "@streaks/storage-pg"
import { Effect } from "effect"
import type pg from "pg"
import type { Program } from "./fill.js"

/** Projects of the fill; the first is the one the ingest and state rounds act on. */
export const PROJECTS = 4
/** Programs per project; each member has a streak in every program of its project. */
export const PROGRAMS = 2
/** Active days per streak (a run of this many days ending yesterday): 10 days per member. */
export const DAYS = 5

/** `BENCH_SCALE=1m`, `10m`, `1m,10m`, `200k`: the sizes (members in all), ascending. */
export const sizesOf = (text: string): ReadonlyArray<number> =>
  [
    ...new Set(
      text.split(",").map((part) => {
        const match = /^\s*(\d+(?:\.\d+)?)\s*([km]?)\s*$/i.exec(part)
        if (match === null) throw new Error(`BENCH_SCALE: ${JSON.stringify(part)} is not a size such as 1m or 200k`)
        const unit = match[2]!.toLowerCase() === "m" ? 1_000_000 : match[2]!.toLowerCase() === "k" ? 1_000 : 1
        return Math.round(Number(match[1]) * unit / PROJECTS) * PROJECTS
      })
    )
  ].sort((a, b) => a - b)

/** A project of the fill as the admin API made it: its programs' ids and the milestone each member reached. */
export interface Project {
  readonly id: string
  readonly siteKey: string
  readonly programs: ReadonlyArray<{ readonly id: string; readonly reached: string }>
}

const today = "(now() at time zone 'UTC')::date"

/** What a kept database (`BENCH_DATABASE`) holds of an earlier run: its workspace, projects and fill. */
export interface Kept {
  readonly workspaceId: string
  readonly projects: ReadonlyArray<
    Project & { readonly serverToken: string; readonly programs: ReadonlyArray<Program> }
  >
  /** Members per project filled so far. */
  readonly filled: number
}

/** The earlier run's fill of this database, if any (one row of `bench_scale`). */
export const kept = async (client: pg.Client): Promise<Kept | undefined> => {
  await client.query("create table if not exists bench_scale (id int primary key, state jsonb not null)")
  const { rows } = await client.query<{ state: Kept }>("select state from bench_scale where id = 1")
  return rows[0]?.state
}

export const keep = async (client: pg.Client, state: Kept) => {
  await client.query(
    "insert into bench_scale (id, state) values (1, $1) on conflict (id) do update set state = excluded.state",
    [JSON.stringify(state)]
  )
}

/**
 * Adds members `from` … `to - 1` of every project, each as the usual fill's members are (active
 * yesterday, the 3-day milestone reached, metered this month, nothing due during the rounds), with
 * a run of `DAYS` days in each program: the streak rows, their active days, the achievement, the
 * member's zone, the usage mark, one action in the log per active day, and the baseline's own
 * rows for the same days. Each table takes one `INSERT … SELECT` from `generate_series` per chunk
 * of `CHUNK` members per project, so no row crosses the network (as fast as COPY) and progress
 * shows; `chunkDone` hears of each committed chunk. Then vacuum, analyse and a checkpoint. With `lean`, the action log and the baseline's
 * table get rows for the first project's members only (see `LEAN`).
 */
export const fill = async (
  client: pg.Client,
  workspaceId: string,
  projects: ReadonlyArray<Project>,
  from: number,
  to: number,
  lean = false,
  chunkDone: (filled: number) => Promise<void> = async () => undefined
): Promise<number> => {
  const started = Date.now()
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK)
    // One transaction per chunk, recorded once committed: a run stopped mid-fill resumes after it.
    await client.query("begin")
    await fillChunk(client, workspaceId, projects, start, end, lean)
    await client.query("commit")
    await chunkDone(end)
    console.log(
      `# fill: ${end * projects.length} members of ${to * projects.length} after ${
        ((Date.now() - started) / 1000).toFixed(0)
      } s`
    )
  }
  await client.query("vacuum analyze")
  await client.query("checkpoint").catch(() => undefined)
  return (Date.now() - started) / 1000
}

/** Members per project that one chunk of the fill inserts, each table in one statement. */
export const CHUNK = 250_000

/**
 * `BENCH_SCALE_LEAN=1`: the action log and the baseline's table hold rows for the first project's
 * members only, the one the rounds act on; the other projects' log records, which no round reads,
 * would take a fifth of the disk (about 2,200 bytes per member). The sizes then count those two
 * tables per member of the first project (`membersOf`), so bytes per member stay those of a full fill.
 */
export const LEAN = process.env.BENCH_SCALE_LEAN !== undefined && process.env.BENCH_SCALE_LEAN !== "" &&
  process.env.BENCH_SCALE_LEAN !== "0"

/** The tables a lean fill gives the first project's members only. */
export const leanTables: ReadonlySet<string> = new Set(["streaks_actions", "bench_daily_activity"])

/** The members a table's rows stand for at `size` members in all. */
export const membersOf = (table: string, size: number, lean: boolean) =>
  lean && leanTables.has(table) ? size / PROJECTS : size

const fillChunk = async (
  client: pg.Client,
  workspaceId: string,
  projects: ReadonlyArray<Project>,
  from: number,
  to: number,
  lean: boolean
) => {
  const pairs = projects.flatMap((project) =>
    project.programs.map((program, i) => ({ project: project.id, site: project.siteKey, program, event: `e${i}` }))
  )
  const params = [
    pairs.map((p) => p.project),
    pairs.map((p) => p.program.id),
    pairs.map((p) => p.program.reached),
    pairs.map((p) => p.site),
    pairs.map((p) => p.event),
    from,
    to
  ]
  const source =
    `unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) p (project, program, reached, site, event),
    generate_series($6::int, $7::int - 1) g, (select ${today} as today) t`
  const leanFilter = lean ? "where p.project = ($1::text[])[1]" : ""
  const steps: ReadonlyArray<readonly [string, string]> = [
    [
      "streaks",
      `insert into streaks_streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
         at_risk_notified_for, due_at, updated_at, achieved, metered_month)
       select p.project, p.program, 'm' || g, 'live', today - 1, ${DAYS}, ${DAYS}, 'UTC', today,
         (today + 1)::timestamp at time zone 'UTC', now(), array[p.reached], to_char(today, 'YYYY-MM')
       from ${source}`
    ],
    [
      "activity days",
      `insert into streaks_activity_days (project_id, program_id, user_hash, ledger, day)
       select p.project, p.program, 'm' || g, 'live', today - d from ${source}, generate_series(1, ${DAYS}) d`
    ],
    [
      "achievements",
      `insert into streaks_achievements (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
       select p.project, p.program, 'm' || g, 'live', p.reached, now() - interval '3 days' from ${source}`
    ],
    [
      "action log",
      `insert into streaks_actions (project_id, id, program_id, user_hash, event, event_type, door, ledger, ts,
         received_at, local_date, timezone, counted)
       select p.project, 'act_' || md5(p.program || g || d), p.program, 'm' || g, p.event, 'streak_interaction',
         'server', 'live', (today - d)::timestamp at time zone 'UTC' + interval '12 hours',
         (today - d)::timestamp at time zone 'UTC' + interval '12 hours', today - d, 'UTC', true
       from ${source}, generate_series(1, ${DAYS}) d ${leanFilter}`
    ],
    [
      "baseline",
      `insert into bench_daily_activity (site_key, user_hash, event, day, count)
       select p.site, 'm' || g, p.event, today - d, 1 from ${source}, generate_series(1, ${DAYS}) d ${leanFilter}`
    ]
  ]
  for (const [what, statement] of steps) {
    const t0 = Date.now()
    const { rowCount } = await client.query(statement, params)
    console.log(`# fill ${what}: ${rowCount} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  }
  // One row per member, whatever its programs: the member's zone and the month's usage mark.
  const members = [projects.map((p) => p.id), from, to]
  const memberSource = `unnest($1::text[]) p (project), generate_series($2::int, $3::int - 1) g`
  await client.query(
    `insert into streaks_members (project_id, user_hash, timezone) select p.project, 'm' || g, 'UTC' from ${memberSource}`,
    members
  )
  await client.query(
    `insert into streaks_usage (workspace_id, month, member)
     select $4, to_char(${today}, 'YYYY-MM'), p.project || ':m' || g from ${memberSource}`,
    [...members, workspaceId]
  )
}

/**
 * Puts back what a round changed, by the streak rows it moved (those active today), through their
 * keys: their days of today, and back to yesterday's run. The action log and the baseline's table
 * lose what was received after `since`.
 */
export const rewind = async (client: pg.Client, projects: ReadonlyArray<Project>, since: Date) => {
  const started = Date.now()
  const reached = projects.flatMap((p) => p.programs)
  await client.query(
    `delete from streaks_activity_days a using streaks_streaks s
     where s.last_active_day = ${today} and a.day = ${today} and a.project_id = s.project_id
       and a.program_id = s.program_id and a.user_hash = s.user_hash and a.ledger = s.ledger`
  )
  const { rowCount } = await client.query(
    `update streaks_streaks s set last_active_day = ${today} - 1, run = ${DAYS}, best = ${DAYS}, achieved = array[p.reached]
     from unnest($1::text[], $2::text[]) p (id, reached)
     where s.program_id = p.id and s.last_active_day = ${today}`,
    [reached.map((p) => p.id), reached.map((p) => p.reached)]
  )
  await client.query("delete from streaks_actions where received_at >= $1", [since])
  await client.query(`delete from bench_daily_activity where day = ${today}`)
  await client.query("vacuum streaks_streaks, streaks_activity_days")
  console.log(`# rewind: ${rowCount} streaks put back to yesterday in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

/** A tenant table's size on disk: its heap (with TOAST) and its indexes, bytes. */
export interface TableSize {
  readonly table: string
  readonly rows: number
  readonly heap: number
  readonly indexes: number
}

export const sizes = async (client: pg.Client): Promise<ReadonlyArray<TableSize>> => {
  const { rows } = await client.query<{ table: string; rows: string; heap: string; indexes: string }>(
    `select c.relname as table, c.reltuples::bigint as rows, pg_table_size(c.oid) as heap, pg_indexes_size(c.oid) as indexes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()
     where c.relkind = 'r' and c.relname like 'streaks\\_%' order by pg_total_relation_size(c.oid) desc`
  )
  return rows.map((r) => ({ table: r.table, rows: Number(r.rows), heap: Number(r.heap), indexes: Number(r.indexes) }))
}

/**
 * Marks a tenth of the streak rows due, with today's at-risk not yet sent (as after a member's
 * zone passes the at-risk hour), and returns how many.
 */
export const makeDue = async (client: pg.Client): Promise<number> => {
  const { rowCount } = await client.query(
    `update streaks_streaks set due_at = now() - interval '1 minute', at_risk_notified_for = null
     where substr(user_hash, 2)::int % 10 = 0`
  )
  await client.query("analyze streaks_streaks")
  return rowCount ?? 0
}

/** The migration the growth table times: the latest, which rebuilds the streaks' due index. */
export const timedMigration = { id: 17, name: "due_claims_in_key_order" } as const

/** `0017_due_claims_in_key_order`, as the migrations record keys it and the table heading names it. */
export const timedMigrationKey = `${String(timedMigration.id).padStart(4, "0")}_${timedMigration.name}`

/** Throws unless the timed migration is the latest of the schema's, the only one `timeMigrations` can apply again. */
export const checkTimedMigration = () => {
  const latest = Object.keys(Migrations.migrations(Migrations.defaultPrefix)).at(-1)
  if (latest !== timedMigrationKey) {
    throw new Error(
      `BENCH_SCALE times migration ${timedMigrationKey}, but the latest is ${latest}: time the latest instead (bench/src/scale.ts)`
    )
  }
}

/**
 * The time of migration 0017 on the filled database: its change is put back (the due index by
 * instant alone, its row in the migrations table deleted), then `Migrations.run()` applies it
 * again, as a deployment that upgrades does, building the due index by instant and key over every
 * streak row. Then a run with nothing pending, as every replica's start pays. The migrator applies
 * only migrations after the latest one recorded, so the migration put back must be the latest:
 * with a later one recorded, deleting its row would make the run apply nothing.
 */
export const timeMigrations = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [latest] = yield* sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM streaks_migrations`
    if (latest?.id !== timedMigration.id) {
      return yield* Effect.dieMessage(
        `the growth table times migration ${timedMigrationKey}, but the latest applied is ${latest?.id}: time the latest instead (bench/src/scale.ts)`
      )
    }
    yield* sql.unsafe(`DROP INDEX streaks_streaks_due;
      CREATE INDEX streaks_streaks_due ON streaks_streaks (due_at) WHERE due_at IS NOT NULL;
      DELETE FROM streaks_migrations WHERE migration_id = ${timedMigration.id};`)
    const t0 = performance.now()
    const applied = yield* Migrations.run()
    const upgradeSeconds = (performance.now() - t0) / 1000
    const names = applied.map(([id, name]) => `${String(id).padStart(4, "0")}_${name}`)
    if (names.length !== 1 || names[0] !== timedMigrationKey) {
      return yield* Effect.dieMessage(`applying ${timedMigrationKey} again applied ${names.join(", ") || "nothing"}`)
    }
    const t1 = performance.now()
    yield* Migrations.run()
    const nothingPendingMillis = performance.now() - t1
    return { applied: names, upgradeSeconds, nothingPendingMillis }
  }).pipe(
    Effect.provide(PgConnection.layerUrl(url, { maxConnections: 1, statementTimeout: 0 })),
    Effect.runPromise
  )

export const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)
