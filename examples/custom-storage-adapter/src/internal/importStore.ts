/**
 * `ImportStore` on SQLite: a batch of imported actions in one transaction, a statement per line
 * (SQLite answers in-process, so a statement costs no round trip).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import type { ImportJob, ImportRejection, ImportStatus, ImportStore } from "@streaks/core/ImportStore"
import { Effect, Option } from "effect"
import { insertNew, port, type Row } from "./sqlite.js"
import { linkDay } from "./rollups.js"

const jobOf = (r: Row): ImportJob => ({
  id: String(r.id),
  projectId: String(r.project_id) as ProjectId,
  programId: String(r.program_id) as ProgramId,
  source: String(r.source),
  status: String(r.status) as ImportStatus,
  received: Number(r.received),
  imported: Number(r.imported),
  duplicates: Number(r.duplicates),
  rejected: JSON.parse(String(r.rejected)) as ReadonlyArray<ImportRejection>,
  committedLine: Number(r.committed_line),
  startedAt: new Date(Number(r.started_at)),
  finishedAt: r.finished_at === null || r.finished_at === undefined ? undefined : new Date(Number(r.finished_at)),
  heartbeatAt: new Date(Number(r.heartbeat_at)),
  loaded: Number(r.loaded) === 1
})

export const makeImportStore = (sql: SqlClient.SqlClient): ImportStore["Type"] => {
  const one = (rows: ReadonlyArray<Row>) => Option.map(Option.fromNullable(rows[0]), jobOf)
  return {
    create: (job) =>
      sql`INSERT INTO imports ${
        sql.insert({
          id: job.id,
          project_id: job.projectId,
          program_id: job.programId,
          source: job.source,
          status: job.status,
          received: job.received,
          imported: job.imported,
          duplicates: job.duplicates,
          rejected: JSON.stringify(job.rejected),
          committed_line: job.committedLine,
          started_at: job.startedAt.getTime(),
          finished_at: job.finishedAt?.getTime() ?? null,
          heartbeat_at: job.heartbeatAt.getTime(),
          loaded: job.loaded ? 1 : 0
        })
      }`.pipe(Effect.asVoid, port(sql, "ImportStore.create")),
    get: (id) => sql`SELECT * FROM imports WHERE id = ${id}`.pipe(Effect.map(one), port(sql, "ImportStore.get")),
    resumable: (programId, source) =>
      source === ""
        ? Effect.succeed(Option.none())
        : sql`SELECT * FROM imports WHERE program_id = ${programId} AND source = ${source} 
            AND status IN ('running', 'interrupted')
            ORDER BY started_at DESC LIMIT 1`.pipe(Effect.map(one), port(sql, "ImportStore.resumable")),
    resume: (id, at) =>
      sql`UPDATE imports SET status = 'running', finished_at = NULL, heartbeat_at = ${at.getTime()}
        WHERE id = ${id} AND status IN ('running', 'interrupted') RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        port(sql, "ImportStore.resume")
      ),
    heartbeat: (id, at) =>
      sql`UPDATE imports SET heartbeat_at = ${at.getTime()} WHERE id = ${id} AND status = 'running' RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        port(sql, "ImportStore.heartbeat")
      ),
    loaded: (id) =>
      sql`UPDATE imports SET loaded = 1 WHERE id = ${id}`.pipe(Effect.asVoid, port(sql, "ImportStore.loaded")),
    // One statement: SQLite writes one at a time, so two claimers never take the same job.
    claimStale: (staleBefore, at) =>
      sql`UPDATE imports SET heartbeat_at = ${at.getTime()},
          status = CASE WHEN loaded = 1 THEN 'running' ELSE 'interrupted' END,
          finished_at = CASE WHEN loaded = 1 THEN NULL ELSE ${at.getTime()} END
        WHERE status = 'running' AND heartbeat_at < ${staleBefore.getTime()} RETURNING *`.pipe(
        Effect.map((rows) => rows.map(jobOf)),
        port(sql, "ImportStore.claimStale")
      ),
    load: (batch) =>
      Effect.gen(function*() {
        const [job] = yield* sql`SELECT status FROM imports WHERE id = ${batch.importId}`
        if (job?.status !== "running") {
          return yield* new SqlError({ message: `no running import ${batch.importId}` })
        }
        let imported = 0
        for (const a of batch.actions) {
          const fresh = yield* insertNew(sql, "import_identities", {
            project_id: batch.projectId,
            program_id: batch.programId,
            identity: a.identity
          })
          if (!fresh) continue
          imported++
          const key = { projectId: batch.projectId, programId: batch.programId, userHash: a.userHash, ledger: "live" }
          const day = yield* sql`INSERT INTO activity_days (project_id, program_id, user_hash, ledger, day)
            VALUES (${batch.projectId}, ${batch.programId}, ${a.userHash}, 'live', ${a.day}) ON CONFLICT DO NOTHING
            RETURNING 1 AS ok`
          if (day.length > 0) yield* linkDay(sql, key, a.day)
          yield* sql`INSERT INTO import_members (import_id, user_hash) VALUES (${batch.importId}, ${a.userHash})
            ON CONFLICT DO NOTHING`
        }
        for (const u of batch.touched) {
          yield* sql`INSERT INTO import_members (import_id, user_hash) VALUES (${batch.importId}, ${u})
            ON CONFLICT DO NOTHING`
        }
        for (const z of batch.zones) {
          yield* sql`INSERT INTO members (project_id, user_hash, timezone) VALUES (${z.projectId}, ${z.userHash},
            ${z.timezone}) ON CONFLICT (project_id, user_hash) DO UPDATE SET timezone = excluded.timezone`
        }
        const [before] = yield* sql`SELECT rejected FROM imports WHERE id = ${batch.importId}`
        const rejected = [...JSON.parse(String(before?.rejected ?? "[]")), ...batch.rejected]
        const rows = yield* sql`UPDATE imports SET received = received + ${batch.received},
            imported = imported + ${imported}, duplicates = duplicates + ${
          batch.duplicates + batch.actions.length - imported
        },
            rejected = ${JSON.stringify(rejected)}, committed_line = ${batch.committedLine}
          WHERE id = ${batch.importId} RETURNING *`
        return jobOf(rows[0]!)
      }).pipe(port(sql, "ImportStore.load")),
    known: (projectId, programId, identities) =>
      Effect.forEach(
        identities,
        (identity) =>
          sql`SELECT 1 AS ok FROM import_identities WHERE project_id = ${projectId} AND program_id = ${programId}
          AND identity = ${identity}`.pipe(Effect.map((rows) => rows.length > 0))
      ).pipe(port(sql, "ImportStore.known")),
    members: (importId, after, limit) =>
      sql`SELECT user_hash FROM import_members WHERE import_id = ${importId} AND user_hash > ${after ?? ""}
        ORDER BY user_hash LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map((r) => String(r.user_hash) as UserHash)),
        port(sql, "ImportStore.members")
      ),
    achieve: (achievements) =>
      Effect.forEach(achievements, (a) =>
        insertNew(sql, "achievements", {
          project_id: a.projectId,
          program_id: a.programId,
          user_hash: a.userHash,
          ledger: a.ledger,
          milestone_id: a.milestoneId,
          achieved_at: a.achievedAt.getTime()
        }), { discard: true }).pipe(port(sql, "ImportStore.achieve")),
    finish: (id, status, at) =>
      sql`UPDATE imports SET status = ${status}, finished_at = ${at.getTime()} WHERE id = ${id} AND status = 'running'`
        .pipe(
          Effect.asVoid,
          port(sql, "ImportStore.finish")
        )
  }
}
