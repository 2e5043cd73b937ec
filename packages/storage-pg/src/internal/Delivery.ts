/**
 * Outbound side on Postgres: webhook subscriptions, the transactional outbox (claimed with
 * SKIP LOCKED under a lease), delivery attempts, and Proof experiments.
 */
import { DeliveryAttempt, Experiment, OutboxMessage, Subscription } from "@streaks/core/Domain"
import type { CredentialRef, MessageStatus, OutboundEventType } from "@streaks/core/Domain"
import type { ExperimentId, MessageId, ProgramId, ProjectId, SubscriptionId, WorkspaceId } from "@streaks/core/Ids"
import type { ExperimentStore, Outbox, SubscriptionStore } from "@streaks/core/Ports"
import { Effect, Option } from "effect"
import { type Ctx, io, opt, toDate, toOptionalDate, trusted } from "./Sql.js"

type Row = Record<string, unknown>

const firstOf = <A>(decode: (row: Row) => A) => (rows: ReadonlyArray<Row>): Option.Option<A> =>
  rows.length > 0 ? Option.some(decode(rows[0]!)) : Option.none()

const decodeSubscription = (r: Row): Subscription =>
  new Subscription({
    id: r.id as SubscriptionId,
    workspaceId: r.workspace_id as WorkspaceId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    url: r.url as string,
    eventTypes: r.event_types as ReadonlyArray<OutboundEventType>,
    secretSealed: r.secret_sealed as string,
    createdBy: { type: r.created_by_type as CredentialRef["type"], id: r.created_by_id as string },
    createdAt: toDate(r.created_at)
  }, trusted)

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

const decodeAttempt = (r: Row): DeliveryAttempt =>
  new DeliveryAttempt({
    messageId: r.message_id as MessageId,
    attempt: r.attempt as number,
    at: toDate(r.at),
    ...opt("status", r.status as number | null),
    latencyMs: Number(r.latency_ms),
    ...opt("error", r.error as string | null)
  }, trusted)

const decodeExperiment = (r: Row): Experiment =>
  new Experiment({
    id: r.id as ExperimentId,
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    holdoutPercent: r.holdout_percent as number,
    startedAt: toDate(r.started_at),
    ...opt("endedAt", toOptionalDate(r.ended_at))
  }, trusted)

export const makeSubscriptionStore = ({ hot, sql, t }: Ctx): SubscriptionStore["Type"] => ({
  create: (s) =>
    sql`INSERT INTO ${t.subscriptions} (project_id, id, workspace_id, program_id, url, event_types, secret_sealed,
          created_by_type, created_by_id, created_at)
        VALUES (${s.projectId}, ${s.id}, ${s.workspaceId}, ${s.programId}, ${s.url}, ${[...s.eventTypes]}::text[],
          ${s.secretSealed}, ${s.createdBy.type}, ${s.createdBy.id}, ${s.createdAt})`
      .pipe(Effect.asVoid, io("SubscriptionStore.create")),

  get: (id) =>
    sql`SELECT * FROM ${t.subscriptions} WHERE id = ${id}`
      .pipe(Effect.map(firstOf(decodeSubscription)), io("SubscriptionStore.get")),

  remove: (id) =>
    sql`DELETE FROM ${t.subscriptions} WHERE id = ${id} RETURNING *`
      .pipe(Effect.map(firstOf(decodeSubscription)), io("SubscriptionStore.remove")),

  // On ingest's path (a milestone crossed), as are `running`, `enqueue` and the achievement's add.
  forEvent: (programId, type) =>
    hot(sql`SELECT * FROM ${t.subscriptions} WHERE program_id = ${programId} AND ${type} = ANY(event_types)
        ORDER BY created_at, id`)
      .pipe(Effect.map((rows) => rows.map(decodeSubscription)), io("SubscriptionStore.forEvent")),

  removeCreatedBy: (credential) =>
    sql`DELETE FROM ${t.subscriptions} WHERE created_by_type = ${credential.type} AND created_by_id = ${credential.id}
        RETURNING *`
      .pipe(
        Effect.map((rows) =>
          rows.map(decodeSubscription).sort((a, b) =>
            a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
          )
        ),
        io("SubscriptionStore.removeCreatedBy")
      )
})

export const makeOutbox = ({ hot, sql, t }: Ctx): Outbox["Type"] => ({
  enqueue: (messages) =>
    messages.length === 0 ?
      Effect.void :
      hot(sql`INSERT INTO ${t.outbox} (project_id, id, subscription_id, program_id, type, payload, status, attempts,
          next_attempt_at, created_at, delivered_at)
        SELECT * FROM unnest(${messages.map((m) => m.projectId)}::text[], ${messages.map((m) => m.id)}::text[],
          ${messages.map((m) => m.subscriptionId)}::text[], ${messages.map((m) => m.programId)}::text[],
          ${messages.map((m) => m.type)}::text[], ${messages.map((m) => m.payload)}::text[],
          ${messages.map((m) => m.status)}::text[], ${messages.map((m) => m.attempts)}::int[],
          ${messages.map((m) => m.nextAttemptAt)}::timestamptz[], ${messages.map((m) => m.createdAt)}::timestamptz[],
          ${messages.map((m) => m.deliveredAt ?? null)}::timestamptz[])`)
        .pipe(Effect.asVoid, io("Outbox.enqueue")),

  // The inner SELECT walks the partial index of pending messages in due order and skips rows
  // another claimer holds; the UPDATE moves the claimed ones to the lease, so a worker that dies
  // gives them back when the lease runs out. RETURNING has no order, hence the sort on `due`.
  claimDue: (now, limit, leaseUntil) =>
    limit <= 0 ?
      Effect.succeed([]) :
      sql`WITH due AS (
          SELECT project_id, id, next_attempt_at AS due FROM ${t.outbox}
          WHERE status = 'pending' AND next_attempt_at <= ${now}
          ORDER BY next_attempt_at, created_at, id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE ${t.outbox} o SET next_attempt_at = ${leaseUntil}
        FROM due WHERE o.project_id = due.project_id AND o.id = due.id
        RETURNING o.*, due.due`
        .pipe(
          Effect.map((rows) =>
            [...rows]
              .sort((a, b) =>
                toDate(a.due).getTime() - toDate(b.due).getTime() ||
                toDate(a.created_at).getTime() - toDate(b.created_at).getTime() ||
                (String(a.id) < String(b.id) ? -1 : 1)
              )
              .map(decodeMessage)
          ),
          io("Outbox.claimDue")
        ),

  recordAttempt: (a) =>
    sql`INSERT INTO ${t.delivery_attempts} (message_id, attempt, at, status, latency_ms, error)
        VALUES (${a.messageId}, ${a.attempt}, ${a.at}, ${a.status ?? null}, ${a.latencyMs}, ${a.error ?? null})
        ON CONFLICT (message_id, attempt) DO UPDATE SET at = excluded.at, status = excluded.status,
          latency_ms = excluded.latency_ms, error = excluded.error`
      .pipe(Effect.asVoid, io("Outbox.recordAttempt")),

  attempts: (messageId) =>
    sql`SELECT * FROM ${t.delivery_attempts} WHERE message_id = ${messageId} ORDER BY attempt`
      .pipe(Effect.map((rows) => rows.map(decodeAttempt)), io("Outbox.attempts")),

  // Status updates apply only for the holder of the current lease (Ports: Outbox.markDelivered):
  // a dispatcher whose lease ran out finds the row moved on and changes nothing.
  markDelivered: (held, attempts, at) =>
    sql`UPDATE ${t.outbox} SET status = 'delivered', attempts = ${attempts}, delivered_at = ${at}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${held.leaseUntil} RETURNING 1 AS ok`
      .pipe(Effect.map((rows) => rows.length > 0), io("Outbox.markDelivered")),

  reschedule: (held, attempts, nextAttemptAt) =>
    sql`UPDATE ${t.outbox} SET attempts = ${attempts}, next_attempt_at = ${nextAttemptAt}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${held.leaseUntil} RETURNING 1 AS ok`
      .pipe(Effect.map((rows) => rows.length > 0), io("Outbox.reschedule")),

  markFailed: (held, attempts) =>
    sql`UPDATE ${t.outbox} SET status = 'failed', attempts = ${attempts}
        WHERE id = ${held.id} AND status = 'pending' AND next_attempt_at = ${held.leaseUntil} RETURNING 1 AS ok`
      .pipe(Effect.map((rows) => rows.length > 0), io("Outbox.markFailed")),

  get: (id) =>
    sql`SELECT * FROM ${t.outbox} WHERE id = ${id}`.pipe(Effect.map(firstOf(decodeMessage)), io("Outbox.get")),

  recentDelivered: (programId, type, limit) =>
    limit <= 0 ?
      Effect.succeed([]) :
      sql`SELECT * FROM ${t.outbox} WHERE program_id = ${programId} AND type = ${type} AND status = 'delivered'
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`
        .pipe(Effect.map((rows) => rows.map(decodeMessage)), io("Outbox.recentDelivered")),

  nextDueAt: sql`SELECT min(next_attempt_at) AS at FROM ${t.outbox} WHERE status = 'pending'`
    .pipe(Effect.map((rows) => Option.fromNullable(toOptionalDate(rows[0]?.at))), io("Outbox.nextDueAt")),

  purgeAttempts: (before) =>
    sql`WITH gone AS (DELETE FROM ${t.delivery_attempts} WHERE at < ${before} RETURNING 1)
        SELECT count(*)::int AS n FROM gone`
      .pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), io("Outbox.purgeAttempts"))
})

export const makeExperimentStore = ({ hot, sql, t }: Ctx): ExperimentStore["Type"] => ({
  // The partial unique index (program_id) WHERE ended_at IS NULL refuses a second running one,
  // atomically: a concurrent starter waits for the first and then conflicts.
  start: (e) =>
    sql`INSERT INTO ${t.experiments} (project_id, id, program_id, holdout_percent, started_at, ended_at)
        VALUES (${e.projectId}, ${e.id}, ${e.programId}, ${e.holdoutPercent}, ${e.startedAt}, ${e.endedAt ?? null})
        ON CONFLICT DO NOTHING RETURNING 1 AS ok`
      .pipe(Effect.map((rows) => rows.length > 0), io("ExperimentStore.start")),

  running: (programId) =>
    hot(sql`SELECT * FROM ${t.experiments} WHERE program_id = ${programId} AND ended_at IS NULL`)
      .pipe(Effect.map(firstOf(decodeExperiment)), io("ExperimentStore.running")),

  end: (programId, at) =>
    sql`UPDATE ${t.experiments} SET ended_at = ${at} WHERE program_id = ${programId} AND ended_at IS NULL RETURNING *`
      .pipe(Effect.map(firstOf(decodeExperiment)), io("ExperimentStore.end"))
})
