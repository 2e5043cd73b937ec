/**
 * `IdempotencyStore` on Postgres: the idempotency keys shared by every replica, a batch's claims
 * and answers in one statement each.
 */
import type { IdempotencyClaim, IdempotencyStore, KeyRequest } from "@streaks/core/Ports"
import { Effect } from "effect"
import { perProject } from "./perProject.js"
import { type Ctx, io, jsonParam, lastPerKey } from "./sql.js"

/** A record lives 24 h from first receipt; an unfinished claim expires after 30 s (docs/api.md#idempotency). */
const recordLifetime = "24 hours"
const claimLifetime = "30 seconds"

/** How often a claim is tried again when the record it lost to was not in its statement's view. */
const claimAttempts = 3

const inProgress: IdempotencyClaim = { _tag: "InProgress" }

export const makeIdempotencyStore = ({ query, prefix, sql, t }: Ctx): IdempotencyStore["Type"] => {
  // Every claim first takes the key's advisory lock, without waiting (`pg_try_advisory_xact_lock`,
  // in a lock space of this schema's own), and touches the key's row only if it got it. So a key
  // claimed inside a transaction that is still running (its row not yet committed)
  // answers InProgress at once to every other claim, which would otherwise wait on that row until
  // the transaction ends (docs/api.md#idempotency: the 409 comes at once). Outside a transaction
  // the lock lasts the statement. Two keys whose hashes collide while both are held give a spurious
  // InProgress, as rare as a 32-bit collision among the keys in flight.
  const lockSpace = `${prefix}idempotency_keys`

  // One statement for many keys (in the caller's order, which takes the row locks): a new key is
  // inserted; an existing one is taken over only when it has expired (older than 24 h) or is an
  // abandoned claim (in progress for 30 s or more). Callers that got the lock serialise on the
  // key's index entry / row lock, and each re-checks the WHERE on the committed row, so exactly
  // one gets a row back. What each key that was not taken holds is read as the statement began:
  // a key first claimed by another transaction since then has no row there (or its expired one),
  // and is tried again in a statement of its own. The read is a primary-key seek per key (LATERAL
  // with LIMIT, which the planner cannot turn into a join): a join let a plan made while the
  // table was small scan all of it for every claim, for the life of the connection (generic
  // plans, `PgConnection`).
  // One statement per project (`perProject`), which it names. The conflict's condition compares
  // ages (`timestamptz - timestamptz`, immutable) rather than shifted instants (`timestamptz -
  // interval` is only stable): Citus accepts only immutable functions there.
  const claimStatement = (projectId: string, claims: ReadonlyArray<KeyRequest>) =>
    query(sql`WITH input AS (
          SELECT * FROM unnest(${claims.map((c) => c.key)}::text[], ${
      claims.map((c) => c.now.toISOString())
    }::timestamptz[])
            WITH ORDINALITY AS i (key, at, n)
        ), gate AS (
          SELECT i.*, pg_try_advisory_xact_lock(hashtext(${lockSpace}), hashtext(${projectId} || '/' || i.key)) AS locked
          FROM input i
        ), taken AS (
          INSERT INTO ${t.idempotency_keys} AS k (project_id, key, state, created_at, claimed_at)
          SELECT ${projectId}, key, 'in_progress', at, at FROM gate WHERE locked ORDER BY n
          ON CONFLICT (project_id, key) DO UPDATE
            SET state = 'in_progress', created_at = excluded.created_at, claimed_at = excluded.claimed_at,
                completed_at = NULL, response_status = NULL, response_body = NULL
            WHERE excluded.created_at - k.created_at >= ${recordLifetime}::interval
               OR (k.state = 'in_progress' AND excluded.claimed_at - k.claimed_at >= ${claimLifetime}::interval)
          RETURNING k.key
        )
        SELECT g.n, g.locked, taken.key IS NOT NULL AS claimed, k.state, k.response_status,
          k.response_body::text AS response_body, k.expired
        FROM gate g
        LEFT JOIN taken ON taken.key = g.key
        LEFT JOIN LATERAL (SELECT state, response_status, response_body,
            created_at <= g.at - ${recordLifetime}::interval
              OR (state = 'in_progress' AND claimed_at <= g.at - ${claimLifetime}::interval) AS expired
          FROM ${t.idempotency_keys}
          WHERE g.locked AND taken.key IS NULL AND project_id = ${projectId} AND key = g.key LIMIT 1) k ON true
        ORDER BY g.n`)

  // A key's answer from its row of `claimStatement`; `undefined` when the statement's view could
  // not tell (no row, or one that had expired, though the key was not taken): try again.
  const answerOf = (row: Record<string, unknown>): IdempotencyClaim | undefined => {
    if (row.locked !== true) return inProgress
    if (row.claimed === true) return { _tag: "Claimed" }
    if (row.state === null || row.expired === true) return undefined
    if (row.state !== "completed") return inProgress
    return {
      _tag: "Completed",
      // Parsed here, not by the driver, so that SQL NULL (no body) and JSON null stay apart.
      response: {
        status: Number(row.response_status),
        body: row.response_body === null ? undefined : JSON.parse(String(row.response_body))
      }
    }
  }

  // The transaction a claim runs in (its own, or the caller's) decides how long its lock and
  // uncommitted row last.
  const claimAll = (claims: ReadonlyArray<KeyRequest>) =>
    Effect.gen(function*() {
      const answers = new Array<IdempotencyClaim>(claims.length).fill(inProgress)
      let left = claims.map((_, i) => i)
      for (let attempt = 1; attempt <= claimAttempts && left.length > 0; attempt++) {
        // One row per claim, in the claims' order.
        const rows = yield* perProject(left.map((i) => claims[i]!), (c) => c.projectId, claimStatement)
        const unsure: Array<number> = []
        for (const [n, row] of rows.entries()) {
          const i = left[n]!
          const answer = answerOf(row)
          if (answer === undefined) unsure.push(i)
          else answers[i] = answer
        }
        left = unsure
      }
      return answers
    })

  // A key given twice is claimed once: its later positions find it in progress (or replay it).
  const claim = (keys: ReadonlyArray<KeyRequest>) => {
    const nameOf = (k: KeyRequest) => `${k.projectId}\u0000${k.key}`
    const first = new Map<string, number>()
    const distinct = keys.filter((k, i) => !first.has(nameOf(k)) && first.set(nameOf(k), i) !== undefined)
    return Effect.map(claimAll(distinct), (answers) => {
      if (distinct.length === keys.length) return answers
      const byName = new Map(distinct.map((k, n) => [nameOf(k), answers[n]!]))
      return keys.map((k, i) => {
        const answer = byName.get(nameOf(k))!
        return first.get(nameOf(k)) === i || answer._tag !== "Claimed" ? answer : inProgress
      })
    })
  }

  return {
    claim: (keys) => keys.length === 0 ? Effect.succeed([]) : claim(keys).pipe(io("IdempotencyStore.claim")),

    // A batch's keys in one statement: an upsert, whose conflicts are found through the primary
    // key whatever the table's statistics (an `UPDATE … FROM unnest` planned while the table was
    // small scanned all of it). A key's row is there, claimed; were it gone, the answer is stored
    // anyway, as the in-memory store does. Each key is claimed by one action at a time, so two
    // batches write the same row only when a claim expired (30 s) under a batch still running;
    // should they deadlock, ingest retries each action alone.
    complete: (completions) => {
      if (completions.length === 0) return Effect.void
      const last = lastPerKey(completions, (c) => `${c.projectId}\u0000${c.key}`)
      return query(sql`INSERT INTO ${t.idempotency_keys} AS k
            (project_id, key, state, created_at, claimed_at, completed_at, response_status, response_body)
          SELECT project_id, key, 'completed', at, at, at, status, body::json
          FROM unnest(${last.map((c) => c.projectId)}::text[], ${last.map((c) => c.key)}::text[],
            ${last.map((c) => c.now.toISOString())}::timestamptz[], ${last.map((c) => c.response.status)}::int[],
            ${last.map((c) => jsonParam(c.response.body))}::text[]) AS c (project_id, key, at, status, body)
          ON CONFLICT (project_id, key) DO UPDATE
            SET state = 'completed', completed_at = excluded.completed_at, response_status = excluded.response_status,
                response_body = excluded.response_body`)
        .pipe(Effect.asVoid, io("IdempotencyStore.complete"))
    },

    purgeExpired: (now) =>
      query(sql`WITH gone AS (
            DELETE FROM ${t.idempotency_keys} WHERE created_at <= ${now}::timestamptz - ${recordLifetime}::interval
            RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`)
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("IdempotencyStore.purgeExpired"))
  }
}
