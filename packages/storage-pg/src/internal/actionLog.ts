/**
 * `ActionLog` on Postgres: the append-only log of received actions (a batch in one insert) and
 * the two aggregate reads of reports.
 */
import type { ActionRecord, EventType } from "@streaks/core/Domain"
import type { ActionLog, ActionQuery } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Ctx, io, jsonParam, toLocalDate, toOptionalString } from "./sql.js"

export const makeActionLog = ({ query, sql, t }: Ctx): ActionLog["Type"] => {
  const where = (q: ActionQuery) =>
    sql`program_id = ANY(${[...q.programIds]}::text[]) AND ledger = ${q.ledger} AND ts >= ${q.from} AND ts < ${q.to}`

  // A batch of actions is one insert: each column travels as an array.
  const append = (records: ReadonlyArray<ActionRecord>) => {
    const col = <A>(f: (a: ActionRecord) => A) => records.map(f)
    return Effect.as(
      query(sql`INSERT INTO ${t.actions} (project_id, id, program_id, user_hash, event, event_type, door, ledger, ts,
            received_at, local_date, timezone, counted, source, external_service, integration_id, session_id,
            idempotency_key, extra)
          SELECT project_id, id, program_id, user_hash, event, event_type, door, ledger, ts, received_at, local_date,
            timezone, counted, source, external_service, integration_id, session_id, idempotency_key, extra::jsonb
          FROM unnest(${col((a) => a.projectId)}::text[], ${col((a) => a.id)}::text[], ${
        col((a) => a.programId ?? null)
      }::text[],
            ${col((a) => a.userHash)}::text[], ${col((a) => a.event)}::text[], ${col((a) => a.eventType)}::text[],
            ${col((a) => a.door)}::text[], ${col((a) => a.ledger)}::text[], ${
        col((a) => a.ts.toISOString())
      }::timestamptz[],
            ${col((a) => a.receivedAt.toISOString())}::timestamptz[], ${col((a) => a.localDate)}::date[],
            ${col((a) => a.timezone)}::text[], ${col((a) => a.counted)}::boolean[], ${
        col((a) => a.source ?? null)
      }::text[],
            ${col((a) => a.externalService ?? null)}::text[], ${col((a) => a.integrationId ?? null)}::text[],
            ${col((a) => a.sessionId ?? null)}::text[], ${col((a) => a.idempotencyKey ?? null)}::text[],
            ${col((a) => a.extra === undefined ? null : jsonParam(a.extra))}::text[])
            AS a (project_id, id, program_id, user_hash, event, event_type, door, ledger, ts, received_at, local_date,
              timezone, counted, source, external_service, integration_id, session_id, idempotency_key, extra)`),
      undefined
    )
  }

  return {
    append: (records) => records.length === 0 ? Effect.void : append(records).pipe(io("ActionLog.append")),

    countsByDay: (q) =>
      q.programIds.length === 0 ?
        Effect.succeed([]) :
        query(sql`SELECT to_char(local_date, 'YYYY-MM-DD') AS date, event_type, count(*)::int AS count,
            (count(*) FILTER (WHERE counted))::int AS counted
          FROM ${t.actions} WHERE ${where(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`)
          .pipe(
            Effect.map((rows) =>
              rows.map((r) => ({
                date: toLocalDate(r.date),
                eventType: r.event_type as EventType,
                count: Number(r.count),
                counted: Number(r.counted)
              }))
            ),
            io("ActionLog.countsByDay")
          ),

    sources: (q) =>
      q.programIds.length === 0 ?
        Effect.succeed([]) :
        query(sql`SELECT source, external_service, integration_id, count(*)::int AS count
          FROM ${t.actions} WHERE ${where(q)} AND counted
          GROUP BY source, external_service, integration_id
          ORDER BY count DESC, source NULLS FIRST, external_service NULLS FIRST, integration_id NULLS FIRST`)
          .pipe(
            Effect.map((rows) =>
              rows.map((r) => ({
                source: toOptionalString(r.source),
                externalService: toOptionalString(r.external_service),
                integrationId: toOptionalString(r.integration_id),
                count: Number(r.count)
              }))
            ),
            io("ActionLog.sources")
          )
  }
}
