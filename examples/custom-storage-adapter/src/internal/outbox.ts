/**
 * `Outbox` on SQLite: the transactional outbox (claimed under a lease) and its delivery
 * attempts.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { DeliveryAttempt, OutboxMessage } from "@streaks/core/Domain"
import type { Outbox, Settlement } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { type Codec, decode, encode, instant, number, port, text } from "./sqlite.js"

const message: Codec<OutboxMessage> = {
  Class: OutboxMessage,
  columns: {
    id: text("id"),
    subscriptionId: text("subscription_id"),
    projectId: text("project_id"),
    programId: text("program_id"),
    type: text("type"),
    payload: text("payload"),
    status: text("status"),
    attempts: number("attempts"),
    nextAttemptAt: instant("next_attempt_at"),
    createdAt: instant("created_at"),
    deliveredAt: instant("delivered_at")
  }
}
const decodeMessage = decode(message)

const attempt: Codec<DeliveryAttempt> = {
  Class: DeliveryAttempt,
  columns: {
    messageId: text("message_id"),
    attempt: number("attempt"),
    at: instant("at"),
    status: number("status"),
    latencyMs: number("latency_ms"),
    error: text("error")
  }
}

/** The fields a settlement sets on the message. */
const settled = (settlement: Settlement): Partial<OutboxMessage> => {
  switch (settlement._tag) {
    case "Delivered":
      return { status: "delivered", attempts: settlement.attempts, deliveredAt: settlement.at }
    case "Pending":
      return { attempts: settlement.attempts, nextAttemptAt: settlement.nextAttemptAt }
    case "Failed":
      return { status: "failed", attempts: settlement.attempts }
  }
}

export const makeOutbox = (sql: SqlClient.SqlClient): Outbox["Type"] => ({
  // Several rows, one exclusive unit: they commit with the caller's state change or not at all.
  enqueue: (messages) =>
    Effect.forEach(messages, (m) => sql`INSERT INTO outbox ${sql.insert(encode(message, m))}`, { discard: true }).pipe(
      port(sql, "Outbox.enqueue")
    ),

  // Select the due messages, move them to the lease, and read when the next one falls due, in one
  // exclusive unit: no other claimer runs in between. A worker that dies gives them back when the
  // lease runs out.
  claimDue: (now, limit, leaseUntil) =>
    Effect.gen(function*() {
      const due = yield* sql`SELECT * FROM outbox WHERE status = 'pending' AND next_attempt_at <= ${now.getTime()}
        ORDER BY next_attempt_at, created_at, id LIMIT ${Math.max(0, limit)}`
      const ids = due.map((r) => r.id as string)
      if (ids.length > 0) {
        yield* sql`UPDATE outbox SET next_attempt_at = ${leaseUntil.getTime()} WHERE id IN ${sql.in(ids)}`
      }
      const [next] = yield* sql`SELECT min(next_attempt_at) AS at FROM outbox
        WHERE status = 'pending' AND NOT ${sql.in("id", ids)}`
      return {
        messages: due.map((r) => decodeMessage({ ...r, next_attempt_at: leaseUntil.getTime() })),
        nextDueAt: Option.map(Option.fromNullable(next?.at), (at) => new Date(Number(at)))
      }
    }).pipe(port(sql, "Outbox.claimDue")),

  // The attempt is kept whatever became of the lease (the send happened); the message changes
  // only for the holder of the current lease.
  settle: (held, settlement, sent) =>
    Effect.gen(function*() {
      if (sent !== undefined) {
        yield* sql`INSERT OR REPLACE INTO delivery_attempts ${sql.insert(encode(attempt, sent))}`
      }
      const changed = yield* sql`UPDATE outbox SET ${sql.update(encode(message, settled(settlement)))}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${held.leaseUntil.getTime()} RETURNING id`
      return changed.length > 0
    }).pipe(port(sql, "Outbox.settle")),

  recentDelivered: (programId, type, limit) =>
    sql`SELECT * FROM outbox WHERE program_id = ${programId} AND type = ${type} AND status = 'delivered'
        ORDER BY created_at DESC, id DESC LIMIT ${Math.max(0, limit)}`
      .pipe(Effect.map((rows) => rows.map(decodeMessage)), port(sql, "Outbox.recentDelivered")),

  purgeAttempts: (before) =>
    sql`DELETE FROM delivery_attempts WHERE at < ${before.getTime()} RETURNING 1 AS gone`
      .pipe(Effect.map((rows) => rows.length), port(sql, "Outbox.purgeAttempts")),

  ofSubscription: (subscriptionId, limit) =>
    Effect.gen(function*() {
      const rows = yield* sql`SELECT * FROM outbox WHERE subscription_id = ${subscriptionId}
        ORDER BY created_at DESC, id DESC LIMIT ${Math.max(0, limit)}`
      const messages = rows.map(decodeMessage)
      if (messages.length === 0) return []
      const attempts = (yield* sql`SELECT * FROM delivery_attempts WHERE ${
        sql.in(
          "message_id",
          messages.map((m) => m.id)
        )
      } ORDER BY attempt`).map(decode(attempt))
      return messages.map((message) => ({ message, attempts: attempts.filter((a) => a.messageId === message.id) }))
    }).pipe(port(sql, "Outbox.ofSubscription")),

  redeliver: (subscriptionId, id, now) =>
    Effect.gen(function*() {
      const changed = yield* sql`UPDATE outbox SET status = 'pending', next_attempt_at = ${now.getTime()},
          delivered_at = NULL
        WHERE subscription_id = ${subscriptionId} AND id = ${id} AND status <> 'pending' RETURNING 1 AS ok`
      if (changed.length > 0) return true
      const found = yield* sql`SELECT 1 AS ok FROM outbox WHERE subscription_id = ${subscriptionId} AND id = ${id}`
      return found.length > 0
    }).pipe(port(sql, "Outbox.redeliver"))
})
