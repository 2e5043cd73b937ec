/**
 * The report rollups on SQLite (the same two as on Postgres, docs/decisions/0024-report-rollups.md):
 * `action_counts`, actions per program, ledger, UTC day, local date, event type and source labels;
 * `active_spans`, per program, ledger and activity day, the members active that day by their
 * previous active day. Kept by the port methods that write actions and days, in their statements'
 * transaction (SQLite runs one writer at a time, so a day's neighbours cannot change meanwhile).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { ActionRecord } from "@streaks/core/Domain"
import { Effect } from "effect"

// A member's first day links to '' (before every date: TEXT dates compare as text).
const NONE = ""

interface DayKey {
  readonly projectId: string
  readonly programId: string
  readonly userHash: string
  readonly ledger: string
}

const bump = (sql: SqlClient.SqlClient, k: DayKey, day: string, prev: string, n: number) =>
  sql`INSERT INTO active_spans (project_id, program_id, ledger, day, prev, members)
    VALUES (${k.projectId}, ${k.programId}, ${k.ledger}, ${day}, ${prev}, ${n})
    ON CONFLICT (project_id, program_id, ledger, day, prev) DO UPDATE SET members = members + excluded.members`

/**
 * Links a day just inserted for `k` (call it only when the insert was new): it follows the
 * member's nearest earlier day, and the next later day now follows it instead.
 */
export const linkDay = (sql: SqlClient.SqlClient, k: DayKey, day: string): Effect.Effect<void, SqlError> =>
  Effect.gen(function*() {
    const [near] = yield* sql`SELECT
        (SELECT max(day) FROM activity_days WHERE project_id = ${k.projectId} AND program_id = ${k.programId}
          AND user_hash = ${k.userHash} AND ledger = ${k.ledger} AND day < ${day}) AS prev,
        (SELECT min(day) FROM activity_days WHERE project_id = ${k.projectId} AND program_id = ${k.programId}
          AND user_hash = ${k.userHash} AND ledger = ${k.ledger} AND day > ${day}) AS next`
    const prev = near?.prev === null || near?.prev === undefined ? NONE : String(near.prev)
    yield* bump(sql, k, day, prev, 1)
    if (near?.next !== null && near?.next !== undefined) {
      yield* bump(sql, k, String(near.next), prev, -1)
      yield* bump(sql, k, String(near.next), day, 1)
    }
  })

/** Takes every day of `k` out of the links, before they are deleted. */
export const unlinkAll = (sql: SqlClient.SqlClient, k: DayKey): Effect.Effect<void, SqlError> =>
  Effect.gen(function*() {
    const rows = yield* sql`SELECT day FROM activity_days WHERE project_id = ${k.projectId}
      AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger} ORDER BY day`
    let prev = NONE
    for (const r of rows) {
      yield* bump(sql, k, String(r.day), prev, -1)
      prev = String(r.day)
    }
  })

/** The source labels as one key: NULLs are distinct in a SQLite key, JSON keeps them exact. */
export const labelsOf = (a: Pick<ActionRecord, "source" | "externalService" | "integrationId">): string =>
  JSON.stringify([a.source ?? null, a.externalService ?? null, a.integrationId ?? null])

/** Adds one action to `action_counts`. */
export const countAction = (sql: SqlClient.SqlClient, a: ActionRecord): Effect.Effect<void, SqlError> =>
  a.programId === undefined ? Effect.void : sql`INSERT INTO action_counts
      (project_id, program_id, ledger, day, local_date, event_type, labels, count, counted)
    VALUES (${a.projectId}, ${a.programId}, ${a.ledger}, ${a.ts.toISOString().slice(0, 10)}, ${a.localDate},
      ${a.eventType}, ${labelsOf(a)}, 1, ${a.counted ? 1 : 0})
    ON CONFLICT (project_id, program_id, ledger, day, local_date, event_type, labels)
    DO UPDATE SET count = count + 1, counted = counted + excluded.counted`.pipe(Effect.asVoid)
