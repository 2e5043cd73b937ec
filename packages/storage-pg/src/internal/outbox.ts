/**
 * `Outbox` on Postgres: the transactional outbox (claimed with SKIP LOCKED under a lease) and its
 * delivery attempts.
 */
import { DeliveryAttempt, OutboxMessage } from "@streaks/core/Domain"
import type { MessageStatus, OutboundEventType } from "@streaks/core/Domain"
import type { MessageId, ProgramId, ProjectId, SubscriptionId } from "@streaks/core/Ids"
import type { Held, Outbox, Settlement } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { makeDistributed, makeRotation } from "./claimsByProject.js"
import { type Ctx, io, opt, toDate, toOptionalDate, trusted } from "./sql.js"

type Row = Record<string, unknown>

const decodeMessage = (r: Row): OutboxMessage =>
  new OutboxMessage({
    id: r.id as MessageId,
    subscriptionId: r.subscription_id as SubscriptionId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    type: r.type as OutboundEventType,
    payload: r.payload as string,
    status: r.status as MessageStatus,
    attempts: r.attempts as number,
    nextAttemptAt: toDate(r.next_attempt_at),
    createdAt: toDate(r.created_at),
    ...opt("deliveredAt", toOptionalDate(r.delivered_at))
  }, trusted)

// RETURNING has no order: the claim's, due instant first.
const inDueOrder = (rows: ReadonlyArray<Row>): ReadonlyArray<OutboxMessage> =>
  [...rows]
    .sort((a, b) =>
      toDate(a.due).getTime() - toDate(b.due).getTime() ||
      toDate(a.created_at).getTime() - toDate(b.created_at).getTime() ||
      (String(a.id) < String(b.id) ? -1 : 1)
    )
    .map(decodeMessage)

const decodeAttempt = (r: Row): DeliveryAttempt =>
  new DeliveryAttempt({
    messageId: r.message_id as MessageId,
    attempt: r.attempt as number,
    at: toDate(r.at),
    ...opt("status", r.status as number | null),
    latencyMs: Number(r.latency_ms),
    ...opt("error", r.error as string | null)
  }, trusted)

export const makeOutbox = (ctx: Ctx): Outbox["Type"] => {
  const { query, sql, t } = ctx
  const distributed = makeDistributed(ctx)
  const rotation = makeRotation(ctx)
  // The inner SELECT walks the partial index of pending messages in due order and skips rows
  // another claimer holds; the UPDATE moves the claimed ones to the lease, so a worker that dies
  // gives them back when the lease runs out. The next due instant is read in the same statement,
  // from its snapshot (before the UPDATE), leaving out the claimed messages: one row always comes
  // back, carrying it, with the claimed message's columns on each (NULL when none was claimed).
  const claimAll = (now: Date, limit: number, leaseUntil: Date) =>
    query(sql`WITH due AS (
          SELECT project_id, id, next_attempt_at AS due FROM ${t.outbox}
          WHERE status = 'pending' AND next_attempt_at <= ${now}
          ORDER BY next_attempt_at, created_at, id
          LIMIT ${Math.max(0, limit)}
          FOR UPDATE SKIP LOCKED
        ), claimed AS (
          UPDATE ${t.outbox} o SET next_attempt_at = ${leaseUntil}
          FROM due WHERE o.project_id = due.project_id AND o.id = due.id
          RETURNING o.*, due.due
        )
        SELECT c.*, next.at AS next_due
        FROM (SELECT (
          SELECT p.next_attempt_at FROM ${t.outbox} p
          WHERE p.status = 'pending'
            AND NOT EXISTS (SELECT 1 FROM due WHERE due.project_id = p.project_id AND due.id = p.id)
          ORDER BY p.next_attempt_at LIMIT 1
        ) AS at) next
        LEFT JOIN claimed c ON true`)
      .pipe(Effect.map((rows) => ({
        messages: inDueOrder(rows.filter((r) => r.id !== null)),
        nextDueAt: Option.fromNullable(toOptionalDate(rows[0]?.next_due))
      })))

  // On Citus (internal/claimsByProject.ts): the claim of each project is the statement above with
  // the project named (one shard), and the next due instant a read of its own over every shard,
  // which takes no lock, leaving out the messages just claimed.
  const claimByProject = (now: Date, limit: number, leaseUntil: Date) =>
    Effect.gen(function*() {
      const claimed = yield* rotation(Math.max(0, limit), (projectId, n) =>
        query(sql`WITH due AS (
            SELECT project_id, id, next_attempt_at AS due FROM ${t.outbox}
            WHERE project_id = ${projectId} AND status = 'pending' AND next_attempt_at <= ${now}
            ORDER BY next_attempt_at, created_at, id
            LIMIT ${n}
            FOR UPDATE SKIP LOCKED
          )
          UPDATE ${t.outbox} o SET next_attempt_at = ${leaseUntil}
          FROM due WHERE o.project_id = ${projectId} AND o.project_id = due.project_id AND o.id = due.id
          RETURNING o.*, due.due`))
      const ids = claimed.map((r) => String(r.id))
      const [next] = yield* query(sql`SELECT min(next_attempt_at) AS at FROM ${t.outbox}
        WHERE status = 'pending' AND NOT (id = ANY(${ids}::text[]))`)
      return { messages: inDueOrder(claimed), nextDueAt: Option.fromNullable(toOptionalDate(next?.at)) }
    })

  return {
    enqueue: (messages) =>
      messages.length === 0 ?
        Effect.void :
        query(sql`INSERT INTO ${t.outbox} (project_id, id, subscription_id, program_id, type, payload, status, attempts,
          next_attempt_at, created_at, delivered_at)
        SELECT * FROM unnest(${messages.map((m) => m.projectId)}::text[], ${messages.map((m) => m.id)}::text[],
          ${messages.map((m) => m.subscriptionId)}::text[], ${messages.map((m) => m.programId)}::text[],
          ${messages.map((m) => m.type)}::text[], ${messages.map((m) => m.payload)}::text[],
          ${messages.map((m) => m.status)}::text[], ${messages.map((m) => m.attempts)}::int[],
          ${messages.map((m) => m.nextAttemptAt)}::timestamptz[], ${messages.map((m) => m.createdAt)}::timestamptz[],
          ${messages.map((m) => m.deliveredAt ?? null)}::timestamptz[])`)
          .pipe(Effect.asVoid, io("Outbox.enqueue")),

    claimDue: (now, limit, leaseUntil) =>
      Effect.flatMap(
        distributed,
        (byProject) => byProject ? claimByProject(now, limit, leaseUntil) : claimAll(now, limit, leaseUntil)
      ).pipe(io("Outbox.claimDue")),

    // One statement: the attempt (a send happened, whatever the settle finds) and the status update,
    // which applies only for the holder of the current lease (Ports: Outbox.settle): a dispatcher
    // whose lease ran out finds the row moved on and changes nothing.
    settle: (held: Held, settlement: Settlement, attempt?: DeliveryAttempt) => {
      const recorded = attempt === undefined ? sql.literal("") : sql`recorded AS (
          INSERT INTO ${t.delivery_attempts} (message_id, attempt, at, status, latency_ms, error)
          VALUES (${attempt.messageId}, ${attempt.attempt}, ${attempt.at}, ${attempt.status ?? null},
            ${attempt.latencyMs}, ${attempt.error ?? null})
          ON CONFLICT (message_id, attempt) DO UPDATE SET at = excluded.at, status = excluded.status,
            latency_ms = excluded.latency_ms, error = excluded.error
        ),`
      const changes = settlement._tag === "Delivered"
        ? sql`status = 'delivered', attempts = ${settlement.attempts}, delivered_at = ${settlement.at}`
        : settlement._tag === "Pending"
        ? sql`attempts = ${settlement.attempts}, next_attempt_at = ${settlement.nextAttemptAt}`
        : sql`status = 'failed', attempts = ${settlement.attempts}`
      return query(sql`WITH ${recorded} settled AS (
          UPDATE ${t.outbox} SET ${changes}
          WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${held.leaseUntil} RETURNING 1
        )
        SELECT count(*)::int AS n FROM settled`)
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0) > 0), io("Outbox.settle"))
    },

    recentDelivered: (programId, type, limit) =>
      limit <= 0 ?
        Effect.succeed([]) :
        query(sql`SELECT * FROM ${t.outbox} WHERE program_id = ${programId} AND type = ${type} AND status = 'delivered'
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`)
          .pipe(Effect.map((rows) => rows.map(decodeMessage)), io("Outbox.recentDelivered")),

    purgeAttempts: (before) =>
      query(sql`WITH gone AS (DELETE FROM ${t.delivery_attempts} WHERE at < ${before} RETURNING 1)
        SELECT count(*)::int AS n FROM gone`)
        .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("Outbox.purgeAttempts")),

    // Two reads: the page of messages (by the subscription's index), then their attempts at once.
    ofSubscription: (subscriptionId, limit) =>
      Effect.gen(function*() {
        if (limit <= 0) return []
        const messages = (yield* query(sql`SELECT * FROM ${t.outbox} WHERE subscription_id = ${subscriptionId}
          ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${limit}`)).map(decodeMessage)
        if (messages.length === 0) return []
        const attempts = (yield* query(sql`SELECT * FROM ${t.delivery_attempts}
          WHERE message_id = ANY(${messages.map((m) => m.id)}::text[]) ORDER BY attempt`)).map(decodeAttempt)
        return messages.map((message) => ({ message, attempts: attempts.filter((a) => a.messageId === message.id) }))
      }).pipe(io("Outbox.ofSubscription")),

    redeliver: (subscriptionId, id, now) =>
      Effect.gen(function*() {
        const changed = yield* query(sql`UPDATE ${t.outbox}
          SET status = 'pending', next_attempt_at = ${now}, delivered_at = NULL
          WHERE subscription_id = ${subscriptionId} AND id = ${id} AND status <> 'pending' RETURNING 1 AS ok`)
        if (changed.length > 0) return true
        const pending = yield* query(sql`SELECT 1 AS ok FROM ${t.outbox}
          WHERE subscription_id = ${subscriptionId} AND id = ${id} LIMIT 1`)
        return pending.length > 0
      }).pipe(io("Outbox.redeliver"))
  }
}
