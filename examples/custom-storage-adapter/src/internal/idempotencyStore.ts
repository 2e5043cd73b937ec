/**
 * `IdempotencyStore` on SQLite: idempotency keys, claimed and answered in one exclusive unit per call.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { IdempotencyStore, KeyAnswer, KeyRequest } from "@streaks/core/Ports"
import { Effect } from "effect"
import { port } from "./sqlite.js"

/** A record lives 24 h from first receipt; an unfinished claim expires after 30 s (docs/api.md#idempotency). */
const recordLifetimeMs = 24 * 60 * 60 * 1000
const claimLifetimeMs = 30 * 1000

export const makeIdempotencyStore = (sql: SqlClient.SqlClient): IdempotencyStore["Type"] => {
  // A new key is inserted; an existing one is taken over only when expired or abandoned. The
  // upsert and the read that follows run in one exclusive unit, so exactly one caller gets Claimed;
  // a key given twice in one call finds its first claim in progress.
  const claimOne = ({ key, now, projectId }: KeyRequest) =>
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
    })

  const completeOne = ({ key, now, projectId, response }: KeyAnswer) => {
    const body = response.body === undefined ? null : JSON.stringify(response.body)
    return sql`UPDATE idempotency_keys
        SET state = 'completed', completed_at = ${now.getTime()}, response_status = ${response.status},
          response_body = ${body}
        WHERE project_id = ${projectId} AND key = ${key}`
  }

  return {
    claim: (keys) => Effect.forEach(keys, claimOne).pipe(port(sql, "IdempotencyStore.claim")),

    complete: (answers) =>
      Effect.forEach(answers, completeOne, { discard: true }).pipe(port(sql, "IdempotencyStore.complete")),

    purgeExpired: (now) =>
      sql`DELETE FROM idempotency_keys WHERE created_at <= ${now.getTime() - recordLifetimeMs} RETURNING 1 AS gone`
        .pipe(Effect.map((rows) => rows.length), port(sql, "IdempotencyStore.purgeExpired"))
  }
}
