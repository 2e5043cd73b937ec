/**
 * `ImportStore` on Postgres. A batch is copied (`COPY … FROM STDIN`, pg-copy-streams) into a
 * temporary staging table on a plain connection of its own, then written with set-based
 * statements: new identities, their days (with their links in the `active_spans` rollup), the
 * touched members and the job's progress, in one transaction. A client not made by `PgConnection` sends the batch as arrays (`unnest`) instead.
 */
import type { Statement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import type { ImportBatch, ImportJob, ImportRejection, ImportStatus, ImportStore } from "@streaks/core/ImportStore"
import { Effect, Option } from "effect"
import type pg from "pg"
import { from as copyFrom } from "pg-copy-streams"
import { pipeline } from "node:stream/promises"
import { Readable } from "node:stream"
import type * as Pools from "./pools.js"
import { type Ctx, io, lastPerKey, storageError, toDate, toOptionalDate } from "./sql.js"
import { addedSpansText } from "./activeSpans.js"
import { importedMembersText } from "./experimentMembers.js"
import { keyArraysOf } from "./streakRows.js"

type Row = Record<string, unknown>

const jobOf = (r: Row): ImportJob => ({
  id: String(r.id),
  projectId: String(r.project_id) as ProjectId,
  programId: String(r.program_id) as ProgramId,
  source: String(r.source),
  status: String(r.status) as ImportStatus,
  received: Number(r.received),
  imported: Number(r.imported),
  duplicates: Number(r.duplicates),
  rejected: (typeof r.rejected === "string" ? JSON.parse(r.rejected) : r.rejected) as ReadonlyArray<ImportRejection>,
  committedLine: Number(r.committed_line),
  startedAt: toDate(r.started_at),
  finishedAt: toOptionalDate(r.finished_at),
  heartbeatAt: toDate(r.heartbeat_at),
  loaded: r.loaded === true
})

/** A value in COPY's text format: backslash, tab, newline and carriage return escaped. */
const copyText = (s: string): string =>
  /[\\\t\n\r]/.test(s)
    ? s.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"))
    : s

const copyRows = (actions: ImportBatch["actions"]): string => {
  let out = ""
  for (let i = 0; i < actions.length; i++) {
    const a = actions[i]!
    out += `${i}\t${copyText(a.userHash)}\t${copyText(a.identity)}\t${a.day}\n`
  }
  return out
}

export const makeImportStore = (ctx: Ctx, registered: Pools.Registered | undefined): ImportStore["Type"] => {
  const { query, sql, t, prefix } = ctx
  const staging = `"${prefix}import_staging"`
  const name = (table: string) => `"${prefix}${table}"`

  /** The statements after the batch is staged, as text with `$n` parameters (run on a pg client). */
  const writeText = (source: string) => `
WITH fresh AS (
  INSERT INTO ${name("import_identities")} (project_id, program_id, identity)
  SELECT DISTINCT ON (identity) $1::text, $2::text, identity FROM ${source} s ORDER BY identity, ord
  ON CONFLICT DO NOTHING RETURNING identity
), firsts AS (
  SELECT DISTINCT ON (s.identity) s.user_hash, s.day FROM ${source} s JOIN fresh f USING (identity)
  ORDER BY s.identity, s.ord
), added AS (
  INSERT INTO ${name("activity_days")} (project_id, program_id, user_hash, ledger, day)
  SELECT DISTINCT $1::text, $2::text, user_hash, 'live', day FROM firsts ORDER BY user_hash, day
  ON CONFLICT DO NOTHING
  RETURNING project_id, program_id, user_hash, ledger, day
), ${addedSpansText(name("active_spans"), name("activity_days"), "added", "$1::text")}, touched AS (
  INSERT INTO ${name("import_members")} (project_id, import_id, user_hash)
  SELECT DISTINCT $1::text, $3::text, user_hash FROM firsts ORDER BY user_hash
  ON CONFLICT DO NOTHING
)
SELECT count(*)::int AS imported FROM fresh`

  // The members' streak rows locked first, in key order as ingest locks them: the days' links
  // (active_spans) are computed from the member's days as the statement finds them, so no action
  // of the same member may add a day meanwhile.
  const lockText = (source: string) => `
SELECT 1 FROM ${name("streaks")} WHERE project_id = $1 AND program_id = $2 AND ledger = 'live'
  AND user_hash IN (SELECT user_hash FROM ${source} s)
ORDER BY user_hash FOR UPDATE`

  const importedText = importedMembersText({
    experiments: name("experiments"),
    zones: name("experiment_zones"),
    members: name("experiment_members"),
    streaks: name("streaks"),
    importMembers: name("import_members")
  }, name("activity_days"))

  const progressText = `
UPDATE ${name("imports")} SET received = received + $3, imported = imported + $4, duplicates = duplicates + $5,
  rejected = rejected || $6::jsonb, committed_line = $7
WHERE project_id = $1 AND id = $2 AND status = 'running' RETURNING *`

  const touchedText = `
INSERT INTO ${name("import_members")} (project_id, import_id, user_hash)
SELECT $1::text, $2::text, u FROM unnest($3::text[]) AS u
ON CONFLICT DO NOTHING`

  const zonesText = `
INSERT INTO ${name("members")} (project_id, user_hash, timezone)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`

  const progressValues = (batch: ImportBatch, imported: number) => [
    batch.projectId,
    batch.importId,
    batch.received,
    imported,
    batch.duplicates + batch.actions.length - imported,
    JSON.stringify(batch.rejected),
    batch.committedLine
  ]

  const zoneValues = (batch: ImportBatch) => {
    const last = lastPerKey(batch.zones, (z) => `${z.projectId}\u0000${z.userHash}`)
    return [last.map((z) => z.projectId), last.map((z) => z.userHash), last.map((z) => z.timezone)]
  }

  /** The batch on a plain connection: COPY into staging, then the set-based writes, one transaction. */
  const loadByCopy = (copying: pg.Pool, batch: ImportBatch): Effect.Effect<ImportJob, SqlError> =>
    Effect.tryPromise({
      try: async () => {
        const client = await copying.connect()
        let failure: unknown
        try {
          await client.query("BEGIN")
          // The batch's commit does not wait for its WAL flush: a server crash can lose only the
          // last commits, whole and in order, and the job's committed line goes with them, so the
          // import resumes from what the database holds. The import's end (`finish`) commits as usual.
          await client.query("SET LOCAL synchronous_commit = off")
          await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${staging} (
            ord int NOT NULL, user_hash text COLLATE "C" NOT NULL, identity text COLLATE "C" NOT NULL, day date NOT NULL
          ) ON COMMIT DELETE ROWS`)
          let imported = 0
          if (batch.actions.length > 0) {
            await pipeline(
              Readable.from([copyRows(batch.actions)]),
              client.query(copyFrom(`COPY ${staging} (ord, user_hash, identity, day) FROM STDIN`))
            )
            await client.query(lockText(staging), [batch.projectId, batch.programId])
            const written = await client.query(writeText(staging), [batch.projectId, batch.programId, batch.importId])
            imported = Number(written.rows[0]?.imported ?? 0)
          }
          if (batch.touched.length > 0) {
            await client.query(touchedText, [batch.projectId, batch.importId, batch.touched])
          }
          if (batch.zones.length > 0) await client.query(zonesText, zoneValues(batch))
          const job = await client.query(progressText, progressValues(batch, imported))
          await client.query("COMMIT")
          const row = job.rows[0]
          if (row === undefined) throw new Error(`no running import ${batch.importId}`)
          return jobOf(row)
        } catch (cause) {
          failure = cause
          await client.query("ROLLBACK").catch(() => {})
          throw cause
        } finally {
          // A connection that failed mid-COPY is not given back to the pool.
          client.release(failure instanceof Error && failure.message.includes("Connection") ? failure : undefined)
        }
      },
      catch: (cause) => new SqlError({ cause, message: "ImportStore.load: failed" })
    })

  /** The same writes with the batch sent as arrays, through the `SqlClient`. */
  const loadByArrays = (batch: ImportBatch): Effect.Effect<ImportJob, SqlError> =>
    sql.withTransaction(Effect.gen(function*() {
      let imported = 0
      if (batch.actions.length > 0) {
        const source =
          `(SELECT * FROM unnest($4::int[], $5::text[], $6::text[], $7::date[]) AS u (ord, user_hash, identity, day))`
        yield* sql.unsafe(lockText(`(SELECT unnest($3::text[]) AS user_hash)`), [
          batch.projectId,
          batch.programId,
          batch.actions.map((a) => a.userHash)
        ])
        const written = yield* sql.unsafe<Row>(writeText(source), [
          batch.projectId,
          batch.programId,
          batch.importId,
          batch.actions.map((_, i) => i),
          batch.actions.map((a) => a.userHash),
          batch.actions.map((a) => a.identity),
          batch.actions.map((a) => a.day)
        ])
        imported = Number(written[0]?.imported ?? 0)
      }
      if (batch.touched.length > 0) yield* sql.unsafe(touchedText, [batch.projectId, batch.importId, batch.touched])
      if (batch.zones.length > 0) yield* sql.unsafe(zonesText, zoneValues(batch))
      const job = yield* sql.unsafe<Row>(progressText, progressValues(batch, imported))
      if (job[0] === undefined) return yield* new SqlError({ message: `no running import ${batch.importId}` })
      return jobOf(job[0])
    }))

  const one = (statement: Statement.Statement<Row>) =>
    Effect.map(query(statement), (rows) => Option.map(Option.fromNullable(rows[0]), jobOf))

  return {
    create: (job) =>
      query(sql`INSERT INTO ${t.imports} (project_id, id, program_id, source, status, received, imported, duplicates,
          rejected, committed_line, started_at, finished_at, heartbeat_at, loaded)
        VALUES (${job.projectId}, ${job.id}, ${job.programId}, ${job.source}, ${job.status}, ${job.received},
          ${job.imported}, ${job.duplicates}, ${JSON.stringify(job.rejected)}::jsonb, ${job.committedLine},
          ${job.startedAt}, ${job.finishedAt ?? null}, ${job.heartbeatAt}, ${job.loaded})`).pipe(
        Effect.asVoid,
        io("ImportStore.create")
      ),
    get: (id) => one(sql`SELECT * FROM ${t.imports} WHERE id = ${id}`).pipe(io("ImportStore.get")),
    resumable: (programId, source) =>
      source === ""
        ? Effect.succeed(Option.none())
        : one(sql`SELECT * FROM ${t.imports} WHERE program_id = ${programId} AND source = ${source}
            AND status IN ('running', 'interrupted') ORDER BY started_at DESC LIMIT 1`).pipe(
          io("ImportStore.resumable")
        ),
    resume: (id, at) =>
      Effect.map(
        query(sql`UPDATE ${t.imports} SET status = 'running', finished_at = NULL, heartbeat_at = ${at}
          WHERE id = ${id} AND status IN ('running', 'interrupted') RETURNING 1 AS ok`),
        (rows) => rows.length > 0
      ).pipe(io("ImportStore.resume")),
    heartbeat: (id, at) =>
      Effect.map(
        query(sql`UPDATE ${t.imports} SET heartbeat_at = ${at} WHERE id = ${id} AND status = 'running'
          RETURNING 1 AS ok`),
        (rows) => rows.length > 0
      ).pipe(io("ImportStore.heartbeat")),
    loaded: (id) =>
      query(sql`UPDATE ${t.imports} SET loaded = true WHERE id = ${id}`).pipe(Effect.asVoid, io("ImportStore.loaded")),
    // One statement: a second claimer waits on the rows the first updates, then re-checks the
    // heartbeat it renewed and leaves them.
    claimStale: (staleBefore, at) =>
      Effect.map(
        query(sql`UPDATE ${t.imports} SET heartbeat_at = ${at},
            status = CASE WHEN loaded THEN 'running' ELSE 'interrupted' END,
            finished_at = CASE WHEN loaded THEN NULL ELSE ${at}::timestamptz END
          WHERE status = 'running' AND heartbeat_at < ${staleBefore} RETURNING *`),
        (rows) => rows.map(jobOf)
      ).pipe(io("ImportStore.claimStale")),
    load: (batch) =>
      (registered?.copying === undefined ? loadByArrays(batch) : loadByCopy(registered.copying, batch)).pipe(
        Effect.mapError((e) => storageError("ImportStore.load", e))
      ),
    known: (projectId, programId, identities) =>
      identities.length === 0 ? Effect.succeed([]) : Effect.map(
        // One primary-key probe per identity: a semi-join lets the planner read every identity of
        // the program while its statistics still say the table is small.
        query(sql`SELECT i.n FROM unnest(${identities}::text[]) WITH ORDINALITY AS i (identity, n)
          CROSS JOIN LATERAL (SELECT 1 FROM ${t.import_identities} x WHERE x.project_id = ${projectId}
            AND x.program_id = ${programId} AND x.identity = i.identity LIMIT 1) x`),
        (rows) => {
          const out = identities.map(() => false)
          for (const r of rows) out[Number(r.n) - 1] = true
          return out
        }
      ).pipe(io("ImportStore.known")),
    members: (importId, after, limit) =>
      Effect.map(
        // The job's project first, so that the page is a range of the primary key (not a scan of
        // every import's members, sorted, per page).
        query(sql`SELECT user_hash FROM ${t.import_members}
          WHERE project_id = (SELECT project_id FROM ${t.imports} WHERE id = ${importId} LIMIT 1)
            AND import_id = ${importId} AND user_hash > ${after ?? ""} ORDER BY user_hash LIMIT ${limit}`),
        (rows) => rows.map((r) => String(r.user_hash) as UserHash)
      ).pipe(io("ImportStore.members")),
    // Two statements for a whole page of members: the inserts, then each touched row's copy of its
    // achieved ids (migration 0003) rebuilt from the table, which now holds them.
    achieve: (achievements) =>
      achievements.length === 0 ? Effect.void : Effect.gen(function*() {
        yield* query(
          sql`INSERT INTO ${t.achievements} (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
          SELECT * FROM unnest(${achievements.map((a) => a.projectId)}::text[], ${
            achievements.map((a) => a.programId)
          }::text[],
            ${achievements.map((a) => a.userHash)}::text[], ${achievements.map((a) => a.ledger)}::text[],
            ${achievements.map((a) => a.milestoneId)}::text[], ${achievements.map((a) => a.achievedAt)}::timestamptz[])
          ON CONFLICT DO NOTHING`
        )
        const keys = lastPerKey(achievements, (a) =>
          `${a.projectId}\u0000${a.programId}\u0000${a.userHash}\u0000${a.ledger}`)
        yield* query(sql`UPDATE ${t.streaks} s SET achieved = ARRAY(SELECT a.milestone_id FROM ${t.achievements} a
            WHERE a.project_id = s.project_id AND a.program_id = s.program_id AND a.user_hash = s.user_hash
              AND a.ledger = s.ledger)
          FROM unnest(${keyArraysOf(sql, keys)}) AS k (project_id, program_id, user_hash, ledger)
          WHERE s.project_id = k.project_id AND s.program_id = k.program_id AND s.user_hash = k.user_hash
            AND s.ledger = k.ledger`)
      }).pipe(io("ImportStore.achieve")),
    // A finished import's members get their rows in the Proof rollup of the program's experiments.
    finish: (id, status, at) =>
      Effect.gen(function*() {
        const done = yield* query(
          sql`UPDATE ${t.imports} SET status = ${status}, finished_at = ${at} WHERE id = ${id} AND status = 'running'
            RETURNING project_id, program_id`
        )
        const job = done[0]
        if (status !== "finished" || job === undefined) return
        yield* query(sql.unsafe(importedText, [job.project_id, id, job.program_id]))
      }).pipe(io("ImportStore.finish"))
  }
}
