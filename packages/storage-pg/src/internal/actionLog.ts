/**
 * `ActionLog` on Postgres: the append-only log of received actions (a batch in one insert, which
 * also adds it to the `action_counts` rollup) and the two aggregate reads of reports.
 */
import type { ActionRecord, EventType } from "@streaks/core/Domain"
import type { ActionLog, ActionQuery } from "@streaks/core/Ports"
import { Effect } from "effect"
import { slot } from "./activeSpans.js"
import { type Ctx, io, jsonParam, toLocalDate, toOptionalString } from "./sql.js"

const DAY_MS = 86_400_000
const isMidnight = (d: Date) => d.getTime() % DAY_MS === 0
const utcDate = (d: Date) => d.toISOString().slice(0, 10)

/**
 * Adds actions to `action_counts`: the actions are the rows of `from` (a table or CTE with the
 * columns of the actions table). An INSERT, to follow a `WITH` or stand alone.
 */
export const addActionCounts = ({ sql, t }: Pick<Ctx, "sql" | "t">) => (from: ReturnType<Ctx["sql"]["literal"]>) =>
  sql`INSERT INTO ${t.action_counts} AS c (project_id, program_id, ledger, day, local_date, event_type, source,
      external_service, integration_id, slot, count, counted)
    SELECT project_id, program_id, ledger, (ts AT TIME ZONE 'UTC')::date, local_date, event_type, source,
      external_service, integration_id, ${sql.literal(slot)}, count(*), count(*) FILTER (WHERE counted)
    FROM ${from} WHERE program_id IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    ON CONFLICT (project_id, program_id, ledger, day, local_date, event_type, source, external_service, integration_id,
      slot)
    DO UPDATE SET count = c.count + excluded.count, counted = c.counted + excluded.counted`

export const makeActionLog = ({ query, sql, t }: Ctx): ActionLog["Type"] => {
  const where = (q: ActionQuery) =>
    sql`program_id = ANY(${[...q.programIds]}::text[]) AND ledger = ${q.ledger} AND ts >= ${q.from} AND ts < ${q.to}`
  const addCounts = addActionCounts({ sql, t })
  // A range of whole UTC days (what reports ask) is read from the rollup: its rows are per UTC day
  // of \`ts\`, so they answer exactly that, whatever the number of actions.
  const wholeDays = (q: ActionQuery) => isMidnight(q.from) && isMidnight(q.to)
  const whereCounts = (q: ActionQuery) =>
    sql`(project_id, program_id) IN (SELECT project_id, id FROM ${t.programs} WHERE id = ANY(${[
      ...q.programIds
    ]}::text[]))
      AND ledger = ${q.ledger} AND day >= ${utcDate(q.from)}::date AND day < ${utcDate(q.to)}::date`

  // A batch of actions is one insert: each column travels as an array.
  const append = (records: ReadonlyArray<ActionRecord>) => {
    const col = <A>(f: (a: ActionRecord) => A) => records.map(f)
    return Effect.as(
      // The same statement adds the batch to `action_counts`, sorted so that concurrent batches
      // lock its rows in one order.
      query(sql`WITH a AS (
          SELECT * FROM unnest(${col((a) => a.projectId)}::text[], ${col((a) => a.id)}::text[], ${
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
              timezone, counted, source, external_service, integration_id, session_id, idempotency_key, extra)
        ), logged AS (
          INSERT INTO ${t.actions} (project_id, id, program_id, user_hash, event, event_type, door, ledger, ts,
            received_at, local_date, timezone, counted, source, external_service, integration_id, session_id,
            idempotency_key, extra)
          SELECT project_id, id, program_id, user_hash, event, event_type, door, ledger, ts, received_at, local_date,
            timezone, counted, source, external_service, integration_id, session_id, idempotency_key, extra::jsonb
          FROM a
        )
        ${addCounts(sql`a`)}`),
      undefined
    )
  }

  return {
    append: (records) => records.length === 0 ? Effect.void : append(records).pipe(io("ActionLog.append")),

    countsByDay: (q) =>
      q.programIds.length === 0 ?
        Effect.succeed([]) :
        query(
          wholeDays(q)
            ? sql`SELECT to_char(local_date, 'YYYY-MM-DD') AS date, event_type, sum(count)::bigint AS count,
                sum(counted)::bigint AS counted
              FROM ${t.action_counts} WHERE ${whereCounts(q)}
              GROUP BY local_date, event_type ORDER BY local_date, event_type`
            : sql`SELECT to_char(local_date, 'YYYY-MM-DD') AS date, event_type, count(*)::int AS count,
                (count(*) FILTER (WHERE counted))::int AS counted
              FROM ${t.actions} WHERE ${where(q)}
              GROUP BY local_date, event_type ORDER BY local_date, event_type`
        )
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
        query(
          wholeDays(q)
            ? sql`SELECT source, external_service, integration_id, sum(counted)::bigint AS count
              FROM ${t.action_counts} WHERE ${whereCounts(q)} AND counted > 0
              GROUP BY source, external_service, integration_id
              ORDER BY count DESC, source NULLS FIRST, external_service NULLS FIRST, integration_id NULLS FIRST`
            : sql`SELECT source, external_service, integration_id, count(*)::int AS count
              FROM ${t.actions} WHERE ${where(q)} AND counted
              GROUP BY source, external_service, integration_id
              ORDER BY count DESC, source NULLS FIRST, external_service NULLS FIRST, integration_id NULLS FIRST`
        )
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
