/**
 * The outbound side on SQLite: webhook subscriptions, the transactional outbox (claimed under a
 * lease) and delivery attempts.
 */
import type { CredentialRef, MessageStatus, OutboundEventType } from "@streaks/core/Domain"
import { DeliveryAttempt, OutboxMessage, Subscription } from "@streaks/core/Domain"
import type { MessageId, ProgramId, ProjectId, SubscriptionId, WorkspaceId } from "@streaks/core/Ids"
import type { Outbox, SubscriptionStore } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { type Ctx, ms, nullable, opt, optMs, port, type Row, toDate, toOptDate, trusted } from "./sqlite.js"

const first = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>): Option.Option<A> =>
  rows.length === 0 ? Option.none() : Option.some(decode(rows[0]!))

const decodeSubscription = (r: Row): Subscription =>
  new Subscription({
    id: r.id as SubscriptionId,
    workspaceId: r.workspace_id as WorkspaceId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    url: r.url as string,
    eventTypes: JSON.parse(r.event_types as string) as Array<OutboundEventType>,
    secretSealed: r.secret_sealed as string,
    createdBy: { type: r.created_by_type as CredentialRef["type"], id: r.created_by_id as string },
    createdAt: toDate(r.created_at)
  }, trusted)

const byCreation = (a: Subscription, b: Subscription) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const makeSubscriptionStore = ({ sql }: Ctx): SubscriptionStore["Type"] => ({
  create: (s) =>
    sql`INSERT INTO subscriptions (id, workspace_id, project_id, program_id, url, event_types, secret_sealed,
          created_by_type, created_by_id, created_at)
        VALUES (${s.id}, ${s.workspaceId}, ${s.projectId}, ${s.programId}, ${s.url}, ${JSON.stringify(s.eventTypes)},
          ${s.secretSealed}, ${s.createdBy.type}, ${s.createdBy.id}, ${ms(s.createdAt)})`
      .pipe(Effect.asVoid, port(sql, "SubscriptionStore.create")),

  get: (id) =>
    sql`SELECT * FROM subscriptions WHERE id = ${id}`.pipe(
      Effect.map(first(decodeSubscription)),
      port(sql, "SubscriptionStore.get")
    ),

  remove: (id) =>
    sql`DELETE FROM subscriptions WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(first(decodeSubscription)), port(sql, "SubscriptionStore.remove")),

  // event_types is a JSON array: json_each turns it into rows to match against.
  forEvent: (programId, type) =>
    sql`SELECT * FROM subscriptions s WHERE s.program_id = ${programId}
          AND EXISTS (SELECT 1 FROM json_each(s.event_types) WHERE json_each.value = ${type})
        ORDER BY s.created_at, s.id`
      .pipe(Effect.map((rows) => rows.map(decodeSubscription)), port(sql, "SubscriptionStore.forEvent")),

  removeCreatedBy: (credential) =>
    sql`DELETE FROM subscriptions WHERE created_by_type = ${credential.type} AND created_by_id = ${credential.id} RETURNING *`
      .pipe(
        Effect.map((rows) => rows.map(decodeSubscription).sort(byCreation)),
        port(sql, "SubscriptionStore.removeCreatedBy")
      )
})

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
    ...opt("deliveredAt", toOptDate(r.delivered_at))
  }, trusted)

const decodeAttempt = (r: Row): DeliveryAttempt =>
  new DeliveryAttempt({
    messageId: r.message_id as MessageId,
    attempt: r.attempt as number,
    at: toDate(r.at),
    ...opt("status", r.status as number | null),
    latencyMs: Number(r.latency_ms),
    ...opt("error", r.error as string | null)
  }, trusted)

export const makeOutbox = ({ sql }: Ctx): Outbox["Type"] => ({
  // Several rows, one exclusive unit: they commit with the caller's state change or not at all.
  enqueue: (messages) =>
    messages.length === 0 ?
      Effect.void :
      Effect.forEach(messages, (m) =>
        sql`INSERT INTO outbox (id, subscription_id, project_id, program_id, type, payload, status, attempts,
            next_attempt_at, created_at, delivered_at)
          VALUES (${m.id}, ${m.subscriptionId}, ${m.projectId}, ${m.programId}, ${m.type}, ${m.payload}, ${m.status},
            ${m.attempts}, ${ms(m.nextAttemptAt)}, ${ms(m.createdAt)}, ${optMs(m.deliveredAt)})`, { discard: true })
        .pipe(port(sql, "Outbox.enqueue")),

  // Select the due messages, then move them to the lease, in one exclusive unit: no other
  // claimer can run in between, in a transaction or not. A worker that dies gives them back
  // when the lease runs out.
  claimDue: (now, limit, leaseUntil) =>
    limit <= 0 ?
      Effect.succeed([]) :
      Effect.gen(function*() {
        const due = yield* sql`SELECT * FROM outbox WHERE status = 'pending' AND next_attempt_at <= ${ms(now)}
        ORDER BY next_attempt_at, created_at, id LIMIT ${limit}`
        if (due.length === 0) return []
        yield* sql`UPDATE outbox SET next_attempt_at = ${ms(leaseUntil)} WHERE id IN ${
          sql.in(due.map((r) => r.id as string))
        }`
        return due.map((r) => decodeMessage({ ...r, next_attempt_at: ms(leaseUntil) }))
      }).pipe(port(sql, "Outbox.claimDue")),

  recordAttempt: (a) =>
    sql`INSERT INTO delivery_attempts (message_id, attempt, at, status, latency_ms, error)
        VALUES (${a.messageId}, ${a.attempt}, ${ms(a.at)}, ${nullable(a.status)}, ${a.latencyMs}, ${nullable(a.error)})
        ON CONFLICT (message_id, attempt) DO UPDATE SET at = excluded.at, status = excluded.status,
          latency_ms = excluded.latency_ms, error = excluded.error`
      .pipe(Effect.asVoid, port(sql, "Outbox.recordAttempt")),

  attempts: (messageId) =>
    sql`SELECT * FROM delivery_attempts WHERE message_id = ${messageId} ORDER BY attempt`
      .pipe(Effect.map((rows) => rows.map(decodeAttempt)), port(sql, "Outbox.attempts")),

  // Status updates apply only for the holder of the current lease (Ports: Outbox.markDelivered).
  markDelivered: (held, attempts, at) =>
    sql`UPDATE outbox SET status = 'delivered', attempts = ${attempts}, delivered_at = ${ms(at)}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${ms(held.leaseUntil)} RETURNING id`
      .pipe(Effect.map((rows) => rows.length > 0), port(sql, "Outbox.markDelivered")),

  reschedule: (held, attempts, nextAttemptAt) =>
    sql`UPDATE outbox SET attempts = ${attempts}, next_attempt_at = ${ms(nextAttemptAt)}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${ms(held.leaseUntil)} RETURNING id`
      .pipe(Effect.map((rows) => rows.length > 0), port(sql, "Outbox.reschedule")),

  markFailed: (held, attempts) =>
    sql`UPDATE outbox SET status = 'failed', attempts = ${attempts}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${ms(held.leaseUntil)} RETURNING id`
      .pipe(Effect.map((rows) => rows.length > 0), port(sql, "Outbox.markFailed")),

  get: (id) =>
    sql`SELECT * FROM outbox WHERE id = ${id}`.pipe(Effect.map(first(decodeMessage)), port(sql, "Outbox.get")),

  recentDelivered: (programId, type, limit) =>
    limit <= 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM outbox WHERE program_id = ${programId} AND type = ${type} AND status = 'delivered'
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`
        .pipe(Effect.map((rows) => rows.map(decodeMessage)), port(sql, "Outbox.recentDelivered")),

  nextDueAt: sql`SELECT min(next_attempt_at) AS at FROM outbox WHERE status = 'pending'`
    .pipe(Effect.map((rows) => Option.fromNullable(toOptDate(rows[0]?.at))), port(sql, "Outbox.nextDueAt")),

  purgeAttempts: (before) =>
    sql`DELETE FROM delivery_attempts WHERE at < ${ms(before)} RETURNING 1 AS gone`
      .pipe(Effect.map((rows) => rows.length), port(sql, "Outbox.purgeAttempts"))
})
