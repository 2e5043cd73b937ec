/**
 * `ActionLog` on SQLite: the append-only log of received actions (each also added to the
 * `action_counts` rollup), and the counts reports read.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { LocalDate } from "@streaks/core/Calendar"
import { ActionRecord, type EventType } from "@streaks/core/Domain"
import type { ActionLog, ActionQuery } from "@streaks/core/Ports"
import { Effect } from "effect"
import { countAction } from "./rollups.js"
import { type Codec, encode, flag, instant, json, port, text } from "./sqlite.js"

const DAY_MS = 86_400_000
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
  // Whole UTC days (what reports ask) are read from the rollup, which counts per UTC day of `ts`.
  const wholeDays = (q: ActionQuery) => q.from.getTime() % DAY_MS === 0 && q.to.getTime() % DAY_MS === 0
  const countsMatching = (q: ActionQuery) =>
    sql`${sql.in("program_id", q.programIds)} AND ledger = ${q.ledger}
        AND day >= ${q.from.toISOString().slice(0, 10)} AND day < ${q.to.toISOString().slice(0, 10)}`
  return {
    append: (records) =>
      Effect.forEach(
        records,
        (a) => Effect.zipRight(sql`INSERT INTO actions ${sql.insert(encode(actionRecord, a))}`, countAction(sql, a)),
        { discard: true }
      ).pipe(port(sql, "ActionLog.append")),

    countsByDay: (q) =>
      (wholeDays(q)
        ? sql`SELECT local_date, event_type, sum(count) AS count, sum(counted) AS counted
          FROM action_counts WHERE ${countsMatching(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`
        : sql`SELECT local_date, event_type, count(*) AS count, sum(counted) AS counted
          FROM actions WHERE ${matching(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`).pipe(
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
      (wholeDays(q)
        ? sql`SELECT json_extract(labels, '$[0]') AS source, json_extract(labels, '$[1]') AS external_service,
            json_extract(labels, '$[2]') AS integration_id, sum(counted) AS count
          FROM action_counts WHERE ${countsMatching(q)} AND counted > 0
          GROUP BY labels
          ORDER BY count DESC, source, external_service, integration_id`
        : sql`SELECT source, external_service, integration_id, count(*) AS count
          FROM actions WHERE ${matching(q)} AND counted = 1
          GROUP BY source, external_service, integration_id
          ORDER BY count DESC, source, external_service, integration_id`).pipe(
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
