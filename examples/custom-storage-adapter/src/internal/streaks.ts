/**
 * The per-action ports on SQLite: streak rows and activity days (StreakStore), achievements, the
 * action log and idempotency keys.
 */
import type { LocalDate } from "@streaks/core/Calendar"
import type { ActionRecord, EventType, FreezeGrant, Ledger } from "@streaks/core/Domain"
import { Achievement, StreakKey, StreakRow } from "@streaks/core/Domain"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import type {
  AchievementStore,
  ActionLog,
  ActionQuery,
  IdempotencyClaim,
  IdempotencyStore,
  StreakStore
} from "@streaks/core/Ports"
import { Clock, Effect, Option } from "effect"
import {
  bool,
  type Ctx,
  ms,
  nullable,
  opt,
  optMs,
  port,
  type Row,
  toDate,
  toLocalDate,
  toOptDate,
  toOptLocalDate,
  toOptString,
  trusted
} from "./sqlite.js"
import { lookup } from "./tenancy.js"

const decodeRow = (r: Row): StreakRow =>
  new StreakRow({
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    userHash: r.user_hash as UserHash,
    ledger: r.ledger as Ledger,
    ...opt("lastActiveDay", toOptLocalDate(r.last_active_day)),
    run: r.run as number,
    best: r.best as number,
    timezone: r.timezone as string,
    ...opt("atRiskNotifiedFor", toOptLocalDate(r.at_risk_notified_for)),
    ...opt("brokenNotifiedAfter", toOptLocalDate(r.broken_notified_after)),
    ...opt("periodDays", r.period_days as number | null),
    ...opt("freezes", r.freezes as number | null),
    ...opt("grants", r.grants === null ? undefined : JSON.parse(r.grants as string) as ReadonlyArray<FreezeGrant>),
    ...opt("frozenNotifiedThrough", toOptLocalDate(r.frozen_notified_through)),
    ...opt("dueAt", toOptDate(r.due_at)),
    updatedAt: toDate(r.updated_at)
  }, trusted)

/** Granted freezes as JSON TEXT; NULL when the row records none. */
const grantsJson = (r: StreakRow): string | null =>
  r.grants === undefined ? null : JSON.stringify(r.grants.map((g) => ({ day: g.day, count: g.count })))

const decodeKey = (r: Row): StreakKey =>
  new StreakKey({
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    userHash: r.user_hash as UserHash,
    ledger: r.ledger as Ledger
  }, trusted)

export const makeStreakStore = ({ sql }: Ctx): StreakStore["Type"] => {
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

  const upsert = (r: StreakRow) =>
    sql`INSERT INTO streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
          at_risk_notified_for, broken_notified_after, period_days, freezes, grants, frozen_notified_through, due_at,
          updated_at)
        VALUES (${r.projectId}, ${r.programId}, ${r.userHash}, ${r.ledger}, ${nullable(r.lastActiveDay)}, ${r.run},
          ${r.best}, ${r.timezone}, ${nullable(r.atRiskNotifiedFor)}, ${nullable(r.brokenNotifiedAfter)},
          ${nullable(r.periodDays)}, ${nullable(r.freezes)}, ${grantsJson(r)}, ${nullable(r.frozenNotifiedThrough)},
          ${optMs(r.dueAt)}, ${ms(r.updatedAt)})
        ON CONFLICT (project_id, program_id, user_hash, ledger) DO UPDATE SET
          last_active_day = excluded.last_active_day, run = excluded.run, best = excluded.best,
          timezone = excluded.timezone, at_risk_notified_for = excluded.at_risk_notified_for,
          broken_notified_after = excluded.broken_notified_after, period_days = excluded.period_days,
          freezes = excluded.freezes, grants = excluded.grants,
          frozen_notified_through = excluded.frozen_notified_through, due_at = excluded.due_at,
          updated_at = excluded.updated_at`.pipe(Effect.asVoid)

  // "MUST lock the row for the rest of the transaction": transactions of this adapter run one
  // at a time (see `port`), so the row is the caller's until it commits. Insert-if-missing,
  // then read, in one exclusive unit.
  const lock = (key: StreakKey, timezone: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO streaks (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
        VALUES (${key.projectId}, ${key.programId}, ${key.userHash}, ${key.ledger}, 0, 0, ${timezone}, ${now})
        ON CONFLICT DO NOTHING`
      const rows = yield* sql`SELECT * FROM streaks WHERE ${whereKey(key)}`
      return decodeRow(rows[0]!)
    })

  // The primary key makes the first insert win; RETURNING tells whether this call inserted.
  const addDay = (key: StreakKey, day: LocalDate) =>
    sql`INSERT INTO activity_days (project_id, program_id, user_hash, ledger, day)
        VALUES (${key.projectId}, ${key.programId}, ${key.userHash}, ${key.ledger}, ${day})
        ON CONFLICT DO NOTHING RETURNING 1 AS ok`.pipe(Effect.map((rows) => rows.length > 0))

  return {
    lock: (key, timezone) => lock(key, timezone).pipe(port(sql, "StreakStore.lock")),

    // One exclusive unit, so the rows are the caller's together; the order does not matter here
    // because this adapter's transactions never run side by side.
    lockMany: (keys) => Effect.forEach(keys, (k) => lock(k.key, k.timezone)).pipe(port(sql, "StreakStore.lockMany")),

    get: (key) =>
      sql`SELECT * FROM streaks WHERE ${whereKey(key)}`.pipe(
        Effect.map((rows) => (rows.length === 0 ? Option.none() : Option.some(decodeRow(rows[0]!)))),
        port(sql, "StreakStore.get")
      ),

    save: (row) => upsert(row).pipe(port(sql, "StreakStore.save")),

    // One exclusive unit: the batch is saved whole or not at all.
    saveAll: (rows) =>
      rows.length === 0
        ? Effect.void
        : Effect.forEach(rows, upsert, { discard: true }).pipe(port(sql, "StreakStore.saveAll")),

    addDay: (key, day) => addDay(key, day).pipe(port(sql, "StreakStore.addDay")),

    addDays: (days) => Effect.forEach(days, (d) => addDay(d.key, d.day)).pipe(port(sql, "StreakStore.addDays")),

    days: (key) =>
      sql`SELECT day FROM activity_days WHERE ${whereKey(key)} ORDER BY day`
        .pipe(Effect.map((rows) => rows.map((r) => toLocalDate(r.day))), port(sql, "StreakStore.days")),

    daysBetween: (key, from, to) =>
      sql`SELECT day FROM activity_days WHERE ${whereKey(key)} AND day BETWEEN ${from} AND ${to} ORDER BY day`
        .pipe(Effect.map((rows) => rows.map((r) => toLocalDate(r.day))), port(sql, "StreakStore.daysBetween")),

    // Several statements in one exclusive unit: the same consistent read as a single query.
    standingMany: (refs, from, to) =>
      Effect.forEach(refs, (ref) =>
        Effect.gen(function*() {
          const member = yield* lookup(sql, ref.projectId, ref.userHash)
          const key = new StreakKey({ ...ref, userHash: member.userHash }, trusted)
          const rows = yield* sql`SELECT * FROM streaks WHERE ${whereKey(key)}`
          const days = yield* sql`SELECT day FROM activity_days WHERE ${
            whereKey(key)
          } AND day BETWEEN ${from} AND ${to} ORDER BY day`
          const achieved = yield* sql`SELECT milestone_id FROM achievements WHERE ${
            whereKey(key)
          } ORDER BY milestone_id`
          return {
            member,
            row: rows.length === 0 ? Option.none() : Option.some(decodeRow(rows[0]!)),
            days: days.map((r) => toLocalDate(r.day)),
            achieved: achieved.map((r) => r.milestone_id as MilestoneId)
          }
        })).pipe(port(sql, "StreakStore.standingMany")),

    // Keys come from rows and also from days without a row (addDay without lock), as in the
    // reference adapter.
    keysOfMember: (projectId, userHash) =>
      sql`SELECT project_id, program_id, user_hash, ledger FROM streaks WHERE project_id = ${projectId} AND user_hash = ${userHash}
          UNION
          SELECT project_id, program_id, user_hash, ledger FROM activity_days WHERE project_id = ${projectId} AND user_hash = ${userHash}
          ORDER BY program_id, ledger`
        .pipe(Effect.map((rows) => rows.map(decodeKey)), port(sql, "StreakStore.keysOfMember")),

    remove: (key) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM activity_days WHERE ${whereKey(key)}`
        yield* sql`DELETE FROM streaks WHERE ${whereKey(key)}`
      }).pipe(port(sql, "StreakStore.remove")),

    // The partial index on due_at serves this; no SKIP LOCKED is needed, because the claiming
    // transaction runs alone until it has saved each row with its next dueAt and committed.
    claimDue: (now, limit) =>
      limit <= 0 ?
        Effect.succeed([]) :
        sql`SELECT * FROM streaks WHERE due_at IS NOT NULL AND due_at <= ${ms(now)} ORDER BY due_at LIMIT ${limit}`
          .pipe(Effect.map((rows) => rows.map(decodeRow)), port(sql, "StreakStore.claimDue")),

    rowsOfProgram: (programId, ledger) =>
      sql`SELECT * FROM streaks WHERE program_id = ${programId} AND ledger = ${ledger} ORDER BY user_hash`
        .pipe(Effect.map((rows) => rows.map(decodeRow)), port(sql, "StreakStore.rowsOfProgram"))
  }
}

const decodeAchievement = (r: Row): Achievement =>
  new Achievement({
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    userHash: r.user_hash as UserHash,
    ledger: r.ledger as Ledger,
    milestoneId: r.milestone_id as MilestoneId,
    achievedAt: toDate(r.achieved_at)
  }, trusted)

export const makeAchievementStore = ({ sql }: Ctx): AchievementStore["Type"] => {
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`
  return {
    list: (key) =>
      sql`SELECT * FROM achievements WHERE ${whereKey(key)} ORDER BY achieved_at, milestone_id`
        .pipe(Effect.map((rows) => rows.map(decodeAchievement)), port(sql, "AchievementStore.list")),

    // SQLite answers in-process, so a query per key costs no round trip.
    achievedMany: (keys) =>
      Effect.forEach(
        keys,
        (key) =>
          sql`SELECT milestone_id FROM achievements WHERE ${whereKey(key)} ORDER BY milestone_id`.pipe(
            Effect.map((rows) => rows.map((r) => r.milestone_id as MilestoneId))
          )
      ).pipe(port(sql, "AchievementStore.achievedMany")),

    add: (key, milestoneId, at) =>
      sql`INSERT INTO achievements (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
          VALUES (${key.projectId}, ${key.programId}, ${key.userHash}, ${key.ledger}, ${milestoneId}, ${ms(at)})
          ON CONFLICT DO NOTHING RETURNING 1 AS ok`
        .pipe(Effect.map((rows) => rows.length > 0), port(sql, "AchievementStore.add")),

    remove: (key) =>
      sql`DELETE FROM achievements WHERE ${whereKey(key)}`.pipe(Effect.asVoid, port(sql, "AchievementStore.remove"))
  }
}

export const makeActionLog = ({ sql }: Ctx): ActionLog["Type"] => {
  const append = (a: ActionRecord) =>
    sql`INSERT INTO actions (id, project_id, program_id, user_hash, event, event_type, door, ledger, ts, received_at,
        local_date, timezone, counted, source, external_service, integration_id, session_id, idempotency_key, extra)
      VALUES (${a.id}, ${a.projectId}, ${nullable(a.programId)}, ${a.userHash}, ${a.event}, ${a.eventType}, ${a.door},
        ${a.ledger}, ${ms(a.ts)}, ${ms(a.receivedAt)}, ${a.localDate}, ${a.timezone}, ${bool(a.counted)},
        ${nullable(a.source)}, ${nullable(a.externalService)}, ${nullable(a.integrationId)}, ${nullable(a.sessionId)},
        ${nullable(a.idempotencyKey)}, ${a.extra === undefined ? null : JSON.stringify(a.extra)})`.pipe(Effect.asVoid)
  const where = (q: ActionQuery) =>
    sql`program_id IN ${sql.in(q.programIds)} AND ledger = ${q.ledger} AND ts >= ${ms(q.from)} AND ts < ${ms(q.to)}`
  return {
    append: (a) => append(a).pipe(port(sql, "ActionLog.append")),

    appendAll: (records) => Effect.forEach(records, append, { discard: true }).pipe(port(sql, "ActionLog.appendAll")),

    countsByDay: (q) =>
      q.programIds.length === 0 ?
        Effect.succeed([]) :
        sql`SELECT local_date, event_type, count(*) AS count, sum(counted) AS counted
          FROM actions WHERE ${where(q)}
          GROUP BY local_date, event_type ORDER BY local_date, event_type`.pipe(
          Effect.map((rows) =>
            rows.map((r) => ({
              date: toLocalDate(r.local_date),
              eventType: r.event_type as EventType,
              count: Number(r.count),
              counted: Number(r.counted)
            }))
          ),
          port(sql, "ActionLog.countsByDay")
        ),

    sources: (q) =>
      q.programIds.length === 0 ?
        Effect.succeed([]) :
        sql`SELECT source, external_service, integration_id, count(*) AS count
          FROM actions WHERE ${where(q)} AND counted = 1
          GROUP BY source, external_service, integration_id
          ORDER BY count DESC, source, external_service, integration_id`.pipe(
          Effect.map((rows) =>
            rows.map((r) => ({
              source: toOptString(r.source),
              externalService: toOptString(r.external_service),
              integrationId: toOptString(r.integration_id),
              count: Number(r.count)
            }))
          ),
          port(sql, "ActionLog.sources")
        )
  }
}

/** CONTRACT §4: a record lives 24 h from first receipt; an unfinished claim expires after 30 s. */
const recordLifetimeMs = 24 * 60 * 60 * 1000
const claimLifetimeMs = 30 * 1000

export const makeIdempotencyStore = ({ sql }: Ctx): IdempotencyStore["Type"] => ({
  // A new key is inserted; an existing one is taken over only when expired or abandoned. The
  // upsert and the read that follows run in one exclusive unit, so exactly one caller gets Claimed.
  claim: (projectId, key, now) =>
    Effect.gen(function*() {
      const t = ms(now)
      const claimed = yield* sql`INSERT INTO idempotency_keys (project_id, key, state, created_at, claimed_at)
        VALUES (${projectId}, ${key}, 'in_progress', ${t}, ${t})
        ON CONFLICT (project_id, key) DO UPDATE
          SET state = 'in_progress', created_at = excluded.created_at, claimed_at = excluded.claimed_at,
              completed_at = NULL, response_status = NULL, response_body = NULL
          WHERE idempotency_keys.created_at <= excluded.created_at - ${recordLifetimeMs}
             OR (idempotency_keys.state = 'in_progress' AND idempotency_keys.claimed_at <= excluded.claimed_at - ${claimLifetimeMs})
        RETURNING 1 AS ok`
      if (claimed.length > 0) return { _tag: "Claimed" } as IdempotencyClaim
      const rows = yield* sql`SELECT state, response_status, response_body FROM idempotency_keys
        WHERE project_id = ${projectId} AND key = ${key}`
      const row = rows[0]
      if (row?.state !== "completed") return { _tag: "InProgress" } as IdempotencyClaim
      return {
        _tag: "Completed",
        response: {
          status: Number(row.response_status),
          // Stored as the JSON text of the body, so a replay gives it back exactly.
          body: row.response_body === null ? undefined : JSON.parse(String(row.response_body))
        }
      } as IdempotencyClaim
    }).pipe(port(sql, "IdempotencyStore.claim")),

  complete: (projectId, key, response, now) =>
    sql`UPDATE idempotency_keys SET state = 'completed', completed_at = ${
      ms(now)
    }, response_status = ${response.status},
          response_body = ${response.body === undefined ? null : JSON.stringify(response.body)}
        WHERE project_id = ${projectId} AND key = ${key}`
      .pipe(Effect.asVoid, port(sql, "IdempotencyStore.complete")),

  release: (projectId, key) =>
    sql`DELETE FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key} AND state = 'in_progress'`
      .pipe(Effect.asVoid, port(sql, "IdempotencyStore.release")),

  purgeExpired: (now) =>
    sql`DELETE FROM idempotency_keys WHERE created_at <= ${ms(now) - recordLifetimeMs} RETURNING 1 AS gone`
      .pipe(Effect.map((rows) => rows.length), port(sql, "IdempotencyStore.purgeExpired"))
})
