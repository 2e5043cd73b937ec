/**
 * What a received action writes besides its streak, on SQLite: the action log, idempotency keys
 * and the monthly usage marks.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { LocalDate } from "@streaks/core/Calendar"
import { ActionRecord, type EventType } from "@streaks/core/Domain"
import type { ActionLog, ActionQuery, IdempotencyStore, UsageStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Codec, encode, flag, insertNew, instant, json, port, text } from "./sqlite.js"

const optional = (v: unknown): string | undefined => (v === null ? undefined : String(v))

const actionRecord: Codec<ActionRecord> = {
  Class: ActionRecord,
  columns: {
    id: text("id"),
    projectId: text("project_id"),
    programId: text("program_id"),
    userHash: text("user_hash"),
    event: text("event"),
    eventType: text("event_type"),
    door: text("door"),
    ledger: text("ledger"),
    ts: instant("ts"),
    receivedAt: instant("received_at"),
    localDate: text("local_date"),
    timezone: text("timezone"),
    counted: flag("counted"),
    source: text("source"),
    externalService: text("external_service"),
    integrationId: text("integration_id"),
    sessionId: text("session_id"),
    idempotencyKey: text("idempotency_key"),
    extra: json("extra")
  }
}

export const makeActionLog = (sql: SqlClient.SqlClient): ActionLog["Type"] => {
  const matching = (q: ActionQuery) =>
    sql`${sql.in("program_id", q.programIds)} AND ledger = ${q.ledger}
        AND ts >= ${q.from.getTime()} AND ts < ${q.to.getTime()}`
  return {
    append: (records) =>
      Effect.forEach(records, (a) => sql`INSERT INTO actions ${sql.insert(encode(actionRecord, a))}`, { discard: true })
        .pipe(port(sql, "ActionLog.append")),

    countsByDay: (q) =>
      sql`SELECT local_date, event_type, count(*) AS count, sum(counted) AS counted
          FROM actions WHERE ${matching(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({
            date: r.local_date as LocalDate,
            eventType: r.event_type as EventType,
            count: Number(r.count),
            counted: Number(r.counted)
          }))
        ),
        port(sql, "ActionLog.countsByDay")
      ),

    sources: (q) =>
      sql`SELECT source, external_service, integration_id, count(*) AS count
          FROM actions WHERE ${matching(q)} AND counted = 1
          GROUP BY source, external_service, integration_id
          ORDER BY count DESC, source, external_service, integration_id`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({
            source: optional(r.source),
            externalService: optional(r.external_service),
            integrationId: optional(r.integration_id),
            count: Number(r.count)
          }))
        ),
        port(sql, "ActionLog.sources")
      )
  }
}

/** A record lives 24 h from first receipt; an unfinished claim expires after 30 s (docs/api.md#idempotency). */
const recordLifetimeMs = 24 * 60 * 60 * 1000
const claimLifetimeMs = 30 * 1000

export const makeIdempotencyStore = (sql: SqlClient.SqlClient): IdempotencyStore["Type"] => ({
  // A new key is inserted; an existing one is taken over only when expired or abandoned. The
  // upsert and the read that follows run in one exclusive unit, so exactly one caller gets Claimed.
  claim: (projectId, key, now) =>
    Effect.gen(function*() {
      const claimed = yield* sql`INSERT INTO idempotency_keys (project_id, key, state, created_at, claimed_at)
        VALUES (${projectId}, ${key}, 'in_progress', ${now.getTime()}, ${now.getTime()})
        ON CONFLICT (project_id, key) DO UPDATE
          SET state = 'in_progress', created_at = excluded.created_at, claimed_at = excluded.claimed_at,
              completed_at = NULL, response_status = NULL, response_body = NULL
          WHERE idempotency_keys.created_at <= excluded.created_at - ${recordLifetimeMs}
             OR (idempotency_keys.state = 'in_progress'
                 AND idempotency_keys.claimed_at <= excluded.claimed_at - ${claimLifetimeMs})
        RETURNING 1 AS ok`
      if (claimed.length > 0) return { _tag: "Claimed" } as const
      const [row] = yield* sql`SELECT state, response_status, response_body FROM idempotency_keys
        WHERE project_id = ${projectId} AND key = ${key}`
      if (row?.state !== "completed") return { _tag: "InProgress" } as const
      // Stored as the JSON text of the body, so a replay gives it back exactly.
      const body = row.response_body === null ? undefined : JSON.parse(String(row.response_body))
      return { _tag: "Completed", response: { status: Number(row.response_status), body } } as const
    }).pipe(port(sql, "IdempotencyStore.claim")),

  complete: (projectId, key, response, now) => {
    const body = response.body === undefined ? null : JSON.stringify(response.body)
    return sql`UPDATE idempotency_keys
        SET state = 'completed', completed_at = ${now.getTime()}, response_status = ${response.status},
          response_body = ${body}
        WHERE project_id = ${projectId} AND key = ${key}`.pipe(Effect.asVoid, port(sql, "IdempotencyStore.complete"))
  },

  purgeExpired: (now) =>
    sql`DELETE FROM idempotency_keys WHERE created_at <= ${now.getTime() - recordLifetimeMs} RETURNING 1 AS gone`
      .pipe(Effect.map((rows) => rows.length), port(sql, "IdempotencyStore.purgeExpired"))
})

export const makeUsageStore = (sql: SqlClient.SqlClient): UsageStore["Type"] => ({
  // Transactions run one at a time here: no insert order can deadlock.
  markActive: (entries) =>
    Effect.forEach(
      entries,
      ({ member, month, workspaceId }) => insertNew(sql, "usage", { workspace_id: workspaceId, month, member })
    ).pipe(port(sql, "UsageStore.markActive")),

  activeCount: (workspaceId, month) =>
    sql`SELECT count(*) AS n FROM usage WHERE workspace_id = ${workspaceId} AND month = ${month}`
      .pipe(Effect.map(([r]) => Number(r?.n ?? 0)), port(sql, "UsageStore.activeCount"))
})
