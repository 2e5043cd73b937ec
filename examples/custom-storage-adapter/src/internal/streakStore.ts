/**
 * `StreakStore` on SQLite: streak rows and their active days.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { LocalDate } from "@streaks/core/Calendar"
import type { StreakKey } from "@streaks/core/Domain"
import { StreakRow } from "@streaks/core/Domain"
import { keyOf } from "@streaks/core/IngestStore"
import type { StreakStore } from "@streaks/core/Ports"
import { Clock, Effect } from "effect"
import { linkDay, unlinkAll } from "./rollups.js"
import { type Codec, decode, encode, insertNew, instant, json, number, port, type Row, text } from "./sqlite.js"

export const isKey = (sql: SqlClient.SqlClient, k: StreakKey) =>
  sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

const streakRow: Codec<StreakRow> = {
  Class: StreakRow,
  columns: {
    projectId: text("project_id"),
    programId: text("program_id"),
    userHash: text("user_hash"),
    ledger: text("ledger"),
    lastActiveDay: text("last_active_day"),
    run: number("run"),
    best: number("best"),
    timezone: text("timezone"),
    atRiskNotifiedFor: text("at_risk_notified_for"),
    brokenNotifiedAfter: text("broken_notified_after"),
    periodDays: number("period_days"),
    freezes: number("freezes"),
    grants: json("grants"),
    frozenNotifiedThrough: text("frozen_notified_through"),
    repairs: json("repairs"),
    pauses: json("pauses"),
    dueAt: instant("due_at"),
    updatedAt: instant("updated_at")
  }
}
const decodeRow = decode(streakRow)

const days = (rows: ReadonlyArray<Row>) => rows.map((r) => r.day as LocalDate)

export const makeStreakStore = (sql: SqlClient.SqlClient): StreakStore["Type"] => ({
  // "Locked until the transaction ends": transactions of this adapter run one at a time (see
  // `port`), so the rows are the caller's until it commits, and no order can deadlock.
  lock: (keys) =>
    Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.forEach(keys, ({ key, timezone }) =>
          Effect.gen(function*() {
            yield* sql`INSERT INTO streaks (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
            VALUES (${key.projectId}, ${key.programId}, ${key.userHash}, ${key.ledger}, 0, 0, ${timezone}, ${now})
            ON CONFLICT DO NOTHING`
            const [row] = yield* sql`SELECT * FROM streaks WHERE ${isKey(sql, key)}`
            return decodeRow(row!)
          }))
    ).pipe(port(sql, "StreakStore.lock")),

  // REPLACE deletes the old row and inserts the new one: every column, absent fields as NULL.
  save: (rows) =>
    Effect.forEach(rows, (row) => sql`INSERT OR REPLACE INTO streaks ${sql.insert(encode(streakRow, row))}`, {
      discard: true
    }).pipe(port(sql, "StreakStore.save")),

  // A new day is linked into the `active_spans` rollup right after its insert.
  addDays: (entries) =>
    Effect.forEach(entries, ({ day, key }) =>
      insertNew(sql, "activity_days", {
        project_id: key.projectId,
        program_id: key.programId,
        user_hash: key.userHash,
        ledger: key.ledger,
        day
      }).pipe(Effect.tap((fresh) => fresh ? linkDay(sql, key, day) : Effect.void))).pipe(
        port(sql, "StreakStore.addDays")
      ),

  // LocalDate is TEXT YYYY-MM-DD: it sorts and compares as text.
  days: (key, range) =>
    (range === undefined
      ? sql`SELECT day FROM activity_days WHERE ${isKey(sql, key)} ORDER BY day`
      : sql`SELECT day FROM activity_days WHERE ${isKey(sql, key)} AND day BETWEEN ${range.from} AND ${range.to}
          ORDER BY day`).pipe(Effect.map(days), port(sql, "StreakStore.days")),

  rows: (query) => {
    const found: Effect.Effect<ReadonlyArray<Row>, SqlError> = "keys" in query
      // A key asked twice is read once.
      ? Effect.map(
        Effect.forEach(
          new Map(query.keys.map((key) => [keyOf(key), key])).values(),
          (key) => sql`SELECT * FROM streaks WHERE ${isKey(sql, key)}`
        ),
        (rows) => rows.flat()
      )
      : "programId" in query
      ? sql`SELECT * FROM streaks WHERE program_id = ${query.programId} AND ledger = ${query.ledger}`
      : sql`SELECT * FROM streaks WHERE project_id = ${query.projectId} AND user_hash = ${query.userHash}`
    return found.pipe(Effect.map((rows) => rows.map(decodeRow)), port(sql, "StreakStore.rows"))
  },

  // The rows by primary key order of user hash (SQLite compares TEXT bytewise), then each row's days.
  histories: (page) =>
    Effect.gen(function*() {
      const after = page.after === undefined ? sql`` : sql` AND user_hash > ${page.after}`
      const found = yield* sql`SELECT * FROM streaks
        WHERE project_id = ${page.projectId} AND program_id = ${page.programId} AND ledger = ${page.ledger}${after}
        ORDER BY user_hash LIMIT ${Math.max(1, page.limit)}`
      return yield* Effect.forEach(found, (r) => {
        const row = decodeRow(r)
        const from = page.from === undefined ? sql`` : sql` AND day >= ${page.from}`
        const to = page.to === undefined ? sql`` : sql` AND day <= ${page.to}`
        return Effect.map(
          sql`SELECT day FROM activity_days WHERE ${isKey(sql, row)}${from}${to} ORDER BY day`,
          (rows) => ({
            userHash: row.userHash,
            timezone: row.timezone,
            grants: row.grants ?? [],
            days: days(rows),
            ...(row.repairs === undefined || row.repairs.length === 0 ? {} : { repairs: row.repairs }),
            ...(row.pauses === undefined || row.pauses.length === 0 ? {} : { pauses: row.pauses })
          })
        )
      })
    }).pipe(port(sql, "StreakStore.histories")),

  remove: (key) =>
    Effect.gen(function*() {
      yield* sql`DELETE FROM achievements WHERE ${isKey(sql, key)}`
      yield* unlinkAll(sql, key)
      yield* sql`DELETE FROM activity_days WHERE ${isKey(sql, key)}`
      yield* sql`DELETE FROM streaks WHERE ${isKey(sql, key)}`
    }).pipe(port(sql, "StreakStore.remove")),

  // The partial index on due_at serves this; no SKIP LOCKED is needed, because the claiming
  // transaction runs alone until it has saved each row with its next dueAt and committed.
  claimDue: (now, limit) =>
    sql`SELECT * FROM streaks WHERE due_at IS NOT NULL AND due_at <= ${now.getTime()}
        ORDER BY due_at, project_id, program_id, user_hash, ledger LIMIT ${Math.max(0, limit)}`
      .pipe(Effect.map((rows) => rows.map(decodeRow)), port(sql, "StreakStore.claimDue"))
})
