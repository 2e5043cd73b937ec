/**
 * The action log (append-only, plus the two aggregate reads of reports) and the idempotency keys
 * shared by every replica, on Postgres.
 */
import type { ActionRecord, EventType, StoredResponse } from "@streaks/core/Domain"
import type { StorageError } from "@streaks/core/Errors"
import type { ProjectId } from "@streaks/core/Ids"
import type { ActionLog, ActionQuery, IdempotencyClaim, IdempotencyStore } from "@streaks/core/Ports"
import { Effect } from "effect"
import { type Ctx, io, jsonParam, lastPerKey, toLocalDate, toOptionalString } from "./Sql.js"

/** A record lives 24 h from first receipt; an unfinished claim expires after 30 s (docs/api.md#idempotency). */
const recordLifetime = "24 hours"
const claimLifetime = "30 seconds"

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
        sql`SELECT to_char(local_date, 'YYYY-MM-DD') AS date, event_type, count(*)::int AS count,
            (count(*) FILTER (WHERE counted))::int AS counted
          FROM ${t.actions} WHERE ${where(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`
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
        sql`SELECT source, external_service, integration_id, count(*)::int AS count
          FROM ${t.actions} WHERE ${where(q)} AND counted
          GROUP BY source, external_service, integration_id
          ORDER BY count DESC, source NULLS FIRST, external_service NULLS FIRST, integration_id NULLS FIRST`
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

/** How often a claim is tried again when the record it lost to was not in its statement's view. */
const claimAttempts = 3

const inProgress: IdempotencyClaim = { _tag: "InProgress" }

/** What the Postgres ingest store uses beyond the port: claims inside its transaction, answers stored at once. */
export interface IdempotencyExtras {
  readonly claimWithin: (
    claims: ReadonlyArray<KeyClaim>
  ) => Effect.Effect<ReadonlyArray<IdempotencyClaim>, StorageError>
  readonly completeMany: (completions: ReadonlyArray<KeyCompletion>) => Effect.Effect<void, StorageError>
}

/** One key to claim. */
export interface KeyClaim {
  readonly projectId: ProjectId
  readonly key: string
  readonly now: Date
}

/** One key's answer to store. */
export interface KeyCompletion extends KeyClaim {
  readonly response: StoredResponse
}

export const makeIdempotencyStore = ({ query, prefix, sql, t }: Ctx): IdempotencyStore["Type"] & IdempotencyExtras => {
  // Every claim first takes the key's advisory lock, without waiting (`pg_try_advisory_xact_lock`,
  // in a lock space of this schema's own), and touches the key's row only if it got it. So a key
  // claimed inside a transaction that is still running (`claimWithin`: its row not yet committed)
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
  const claimStatement = (claims: ReadonlyArray<KeyClaim>) =>
    query(sql`WITH input AS (
          SELECT * FROM unnest(${claims.map((c) => c.projectId)}::text[], ${claims.map((c) => c.key)}::text[],
            ${claims.map((c) => c.now.toISOString())}::timestamptz[]) WITH ORDINALITY AS i (project_id, key, at, n)
        ), gate AS (
          SELECT i.*, pg_try_advisory_xact_lock(hashtext(${lockSpace}), hashtext(i.project_id || '/' || i.key)) AS locked
          FROM input i
        ), taken AS (
          INSERT INTO ${t.idempotency_keys} AS k (project_id, key, state, created_at, claimed_at)
          SELECT project_id, key, 'in_progress', at, at FROM gate WHERE locked ORDER BY n
          ON CONFLICT (project_id, key) DO UPDATE
            SET state = 'in_progress', created_at = excluded.created_at, claimed_at = excluded.claimed_at,
                completed_at = NULL, response_status = NULL, response_body = NULL
            WHERE k.created_at <= excluded.created_at - ${recordLifetime}::interval
               OR (k.state = 'in_progress' AND k.claimed_at <= excluded.claimed_at - ${claimLifetime}::interval)
          RETURNING k.project_id, k.key
        )
        SELECT g.n, g.locked, taken.key IS NOT NULL AS claimed, k.state, k.response_status,
          k.response_body::text AS response_body, k.expired
        FROM gate g
        LEFT JOIN taken ON taken.project_id = g.project_id AND taken.key = g.key
        LEFT JOIN LATERAL (SELECT state, response_status, response_body,
            created_at <= g.at - ${recordLifetime}::interval
              OR (state = 'in_progress' AND claimed_at <= g.at - ${claimLifetime}::interval) AS expired
          FROM ${t.idempotency_keys}
          WHERE g.locked AND taken.key IS NULL AND project_id = g.project_id AND key = g.key LIMIT 1) k ON true
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

  // `claim` and `claimWithin` alike: what the transaction they run in (their own, or
  // the caller's) decides is how long a claim's lock and uncommitted row last.
  const claimAll = (claims: ReadonlyArray<KeyClaim>) =>
    Effect.gen(function*() {
      const answers = new Array<IdempotencyClaim>(claims.length).fill(inProgress)
      let left = claims.map((_, i) => i)
      for (let attempt = 1; attempt <= claimAttempts && left.length > 0; attempt++) {
        const rows = yield* claimStatement(left.map((i) => claims[i]!))
        const unsure: Array<number> = []
        for (const row of rows) {
          const i = left[Number(row.n) - 1]!
          const answer = answerOf(row)
          if (answer === undefined) unsure.push(i)
          else answers[i] = answer
        }
        left = unsure
      }
      return answers
    })

  return {
    claim: (projectId, key, now) =>
      claimAll([{ projectId, key, now }]).pipe(Effect.map((answers) => answers[0]!), io("IdempotencyStore.claim")),

    claimWithin: (claims: ReadonlyArray<KeyClaim>) =>
      claims.length === 0 ? Effect.succeed([]) : claimAll(claims).pipe(io("IdempotencyStore.claimWithin")),

    complete: (projectId, key, response, now) =>
      query(sql`UPDATE ${t.idempotency_keys}
          SET state = 'completed', completed_at = ${now}, response_status = ${response.status},
              response_body = ${jsonParam(response.body)}::json
          WHERE project_id = ${projectId} AND key = ${key}`)
        .pipe(Effect.asVoid, io("IdempotencyStore.complete")),

    // A batch's keys in one statement: an upsert, whose conflicts are found through the primary
    // key whatever the table's statistics (an `UPDATE … FROM unnest` planned while the table was
    // small scanned all of it). A key's row is there, claimed; were it gone, the answer is stored
    // anyway, as the in-memory store does. Each key is claimed by one action at a time, so two
    // batches write the same row only when a claim expired (30 s) under a batch still running;
    // should they deadlock, ingest retries each action alone.
    completeMany: (completions: ReadonlyArray<KeyCompletion>) => {
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
        .pipe(Effect.asVoid, io("IdempotencyStore.completeMany"))
    },

    purgeExpired: (now) =>
      sql`WITH gone AS (
            DELETE FROM ${t.idempotency_keys} WHERE created_at <= ${now}::timestamptz - ${recordLifetime}::interval
            RETURNING 1
          )
          SELECT count(*)::int AS n FROM gone`
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("IdempotencyStore.purgeExpired"))
  }
}
