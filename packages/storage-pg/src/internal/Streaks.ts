/**
 * The per-action path on Postgres: streak rows (locked FOR UPDATE while an action is counted),
 * activity days, achievements, the scheduler's claim of due rows with SKIP LOCKED, and the
 * widgets' read of all of them at once (`StateStore`).
 */
import { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Achievement, type StreakKey, StreakRow, unsafeMake } from "@streaks/core/Domain"
import type { FreezeGrant, Ledger } from "@streaks/core/Domain"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import type { StorageError } from "@streaks/core/Errors"
import type { AchievementStore, StreakStore } from "@streaks/core/Ports"
import type { StateStore } from "@streaks/core/StateStore"
import type { LocalDate } from "@streaks/core/Calendar"
import { Clock, Effect, Option } from "effect"
import { firstOccurrences, keyOf } from "./Batch.js"
import { makeDistributed, makeRotation } from "./perProject.js"
import { pipelined } from "./Pipeline.js"
import {
  type Ctx,
  io,
  lastPerKey,
  opt,
  toDate,
  toLocalDate,
  toOptionalDate,
  toOptionalLocalDate,
  trusted
} from "./Sql.js"

type Row = Record<string, unknown>

// Dates are selected as text: node-postgres would parse `date` into a local-time JS Date.
// Instants as ISO text in UTC, which `new Date` reads natively: node-postgres's own timestamptz
// parser (a regular expression and a field-by-field build) costs more on every read.
const isoInstant = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`

// The policy fields (migration 0006) are NULL in rows written before them: absent, read as defaults.
const streakColumns =
  `project_id, program_id, user_hash, ledger, to_char(last_active_day, 'YYYY-MM-DD') AS last_active_day, run, best,
  timezone, to_char(at_risk_notified_for, 'YYYY-MM-DD') AS at_risk_notified_for,
  to_char(broken_notified_after, 'YYYY-MM-DD') AS broken_notified_after, period_days, freezes, grants,
  to_char(frozen_notified_through, 'YYYY-MM-DD') AS frozen_notified_through, ${isoInstant("due_at")}, ${
    isoInstant("updated_at")
  },
  metered_month`

// Rows of the hot statements (every action locks one) skip the Schema constructor: `unsafeMake`.
export const decodeStreakRow = (r: Row): StreakRow =>
  unsafeMake(StreakRow, {
    projectId: r.project_id as ProjectId,
    programId: r.program_id as ProgramId,
    userHash: r.user_hash as UserHash,
    ledger: r.ledger as Ledger,
    ...opt("lastActiveDay", toOptionalLocalDate(r.last_active_day)),
    run: r.run as number,
    best: r.best as number,
    timezone: r.timezone as string,
    ...opt("atRiskNotifiedFor", toOptionalLocalDate(r.at_risk_notified_for)),
    ...opt("brokenNotifiedAfter", toOptionalLocalDate(r.broken_notified_after)),
    ...opt("periodDays", r.period_days as number | null),
    ...opt("freezes", r.freezes as number | null),
    ...opt("grants", r.grants as ReadonlyArray<FreezeGrant> | null),
    ...opt("frozenNotifiedThrough", toOptionalLocalDate(r.frozen_notified_through)),
    ...opt("dueAt", toOptionalDate(r.due_at)),
    updatedAt: toDate(r.updated_at)
  })

/** A row's granted freezes as JSON text for a `jsonb[]` element; NULL when it has none recorded. */
const grantsJson = (row: StreakRow): string | null =>
  row.grants === undefined ? null : JSON.stringify(row.grants.map((g) => ({ day: g.day, count: g.count })))

/** How often `lock` re-runs when it lost the race to create a member's first row (see below). */
const lockAttempts = 5

interface LockInput {
  readonly key: StreakKey
  readonly timezone: string
}

/**
 * Each key once, in the one order every locking statement takes its rows in, so that two
 * transactions locking overlapping keys cannot deadlock.
 */
const inLockOrder = <I>(inputs: ReadonlyArray<I>, keyOfInput: (input: I) => StreakKey): Array<I> =>
  [...new Map(inputs.map((i) => [keyOf(keyOfInput(i)), i]))]
    .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
    .map(([, i]) => i)

/** Rows returned by a locking statement, by key. */
const rowsByKey = (rows: ReadonlyArray<Record<string, unknown>>): Map<string, StreakRow> =>
  new Map(rows.map((r) => {
    const row = decodeStreakRow(r)
    return [keyOf(row), row]
  }))

/**
 * A key's achieved milestone ids as an array: the streak row's copy (migration 0003) where it is
 * known, else the achievements table (`a`) matched by `sameKey`. The one place of that rule.
 */
const achievedIds = ({ sql, t }: Pick<Ctx, "sql" | "t">, copy: string, sameKey: Fragment) =>
  sql`CASE WHEN ${sql.literal(copy)} IS NOT NULL THEN ${sql.literal(copy)}
    ELSE ARRAY(SELECT a.milestone_id FROM ${t.achievements} a WHERE ${sameKey}) END`

/** The achievements of the unnested key `k`, for a member whose hash is in `userHash`. */
const achievementsOfK = (sql: Ctx["sql"], userHash: string) =>
  sql.literal(`a.project_id = k.project_id AND a.program_id = k.program_id AND a.user_hash = ${userHash}
    AND a.ledger = k.ledger`)

/** The four key columns of many keys as arrays, for `unnest`. */
const keyArraysOf = (
  sql: Ctx["sql"],
  keys: ReadonlyArray<Pick<StreakKey, "projectId" | "programId" | "userHash" | "ledger">>
) =>
  sql`${keys.map((k) => k.projectId)}::text[], ${keys.map((k) => k.programId)}::text[],
    ${keys.map((k) => k.userHash)}::text[], ${keys.map((k) => k.ledger)}::text[]`

/**
 * What the Postgres ingest store (`Ingest.ts`) uses beyond the port: rows locked without creating
 * any, with their achievements (one statement), and rows saved with their new days (one statement).
 */
export interface StreakExtras {
  readonly lockExistingWithAchieved: (
    keys: ReadonlyArray<LockAhead>
  ) => Effect.Effect<ReadonlyArray<Option.Option<LockedRow>>, StorageError>
  readonly saveAllWithDays: (
    rows: ReadonlyArray<StreakRow>,
    days: ReadonlyArray<{ readonly key: StreakKey; readonly day: LocalDate }>,
    months?: ReadonlyMap<string, string>
  ) => Effect.Effect<ReadonlyArray<boolean>, StorageError>
}

/** A key to lock ahead, and whether to read its achievements with it. */
export interface LockAhead {
  readonly key: StreakKey
  readonly withAchieved: boolean
}

/** A row locked ahead, with its achieved milestone ids (`undefined` where not asked or not known with the row). */
export interface LockedRow {
  readonly row: StreakRow
  readonly achieved: ReadonlyArray<MilestoneId> | undefined
  /**
   * The usage month ("YYYY-MM") in which an action on this row marked its member active, saved
   * with the row in the same transaction as the mark (`metered_month`); undefined when not known.
   */
  readonly meteredMonth: string | undefined
}

export const makeStreakStore = (ctx: Ctx): StreakStore["Type"] & StreakExtras => {
  const { query, sql, t } = ctx
  const cols = sql.literal(streakColumns)
  const distributed = makeDistributed(ctx)
  const rotation = makeRotation(ctx)
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

  // The row of each key `k` locked: one primary-key seek per key, in input order (the caller
  // sorts): a join or IN would let the planner scan the whole table while its statistics still
  // say it is small.
  const lockEachOf = (columns: Fragment) =>
    sql`CROSS JOIN LATERAL (
      SELECT ${columns} FROM ${t.streaks} r
      WHERE r.project_id = k.project_id AND r.program_id = k.program_id AND r.user_hash = k.user_hash AND r.ledger = k.ledger
      FOR UPDATE
    ) s`
  const lockEach = lockEachOf(cols)
  // With the achievements of the keys that ask for them (`k.with_achieved`), as `achievedIds`
  // reads them: the copy of the locked version, so it includes what the lock's last holder
  // committed (an achievement added sets the copy); the table only where the copy is NULL.
  const lockEachAchieved = lockEachOf(sql`${cols},
    CASE WHEN k.with_achieved THEN to_json(${
    achievedIds({ sql, t }, "r.achieved", achievementsOfK(sql, "k.user_hash"))
  }) END AS achieved`)

  // One round trip for all the keys of a batch in the common cases: the insert returns fresh rows
  // (new rows are locked by their inserting transaction), and the locking select returns the
  // existing ones, waiting for a concurrent holder and re-reading its committed version. Keys are
  // locked in one order (`inLockOrder`), so two batches locking overlapping keys cannot deadlock. A key
  // with no row: a concurrent transaction created it after this statement's snapshot was taken,
  // so the insert yielded to it and the snapshot cannot see it; running the statement again (new
  // snapshot) for those keys then finds and locks them.
  const lockOnce = (inputs: ReadonlyArray<LockInput>, now: Date) =>
    sql`WITH input AS (
          SELECT * FROM unnest(${keyArraysOf(sql, inputs.map((i) => i.key))}, ${inputs.map((i) => i.timezone)}::text[])
            AS i (project_id, program_id, user_hash, ledger, zone)
        ), ins AS (
          INSERT INTO ${t.streaks} (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
          SELECT project_id, program_id, user_hash, ledger, 0, 0, zone, ${now} FROM input
          ON CONFLICT DO NOTHING
          RETURNING ${cols}
        ), locked AS (
          SELECT s.* FROM input k ${lockEach}
        )
        SELECT * FROM ins UNION ALL SELECT * FROM locked`

  const lock = (inputs: ReadonlyArray<LockInput>) =>
    Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      const found = new Map<string, StreakRow>()
      let missing = inLockOrder(inputs, (i) => i.key)
      for (let attempt = 1; attempt <= lockAttempts && missing.length > 0; attempt++) {
        for (const [k, row] of rowsByKey(yield* query(lockOnce(missing, now)))) found.set(k, row)
        missing = missing.filter((i) => !found.has(keyOf(i.key)))
      }
      if (missing.length > 0) return yield* new SqlError({ message: "a row vanished repeatedly while being created" })
      return inputs.map((i) => found.get(keyOf(i.key))!)
    })

  const lockExistingWithAchieved = (keys: ReadonlyArray<LockAhead>) => {
    // A key given twice is locked once, with its achievements if either asks.
    const names = keys.map((k) => keyOf(k.key))
    const asked = new Map<string, boolean>()
    keys.forEach(({ withAchieved }, n) => asked.set(names[n]!, withAchieved || asked.get(names[n]!) === true))
    const sorted = inLockOrder(keys.map((k) => k.key), (k) => k)
    return Effect.map(
      query(sql`SELECT s.* FROM unnest(${keyArraysOf(sql, sorted)}, ${sorted.map((k) => asked.get(keyOf(k))!)}::bool[])
        AS k (project_id, program_id, user_hash, ledger, with_achieved) ${lockEachAchieved}`),
      (rows) => {
        const found = new Map(rows.map((r) => {
          const row = decodeStreakRow(r)
          return [keyOf(row), {
            row,
            achieved: r.achieved === null ? undefined : r.achieved as Array<MilestoneId>,
            meteredMonth: (r.metered_month as string | null) ?? undefined
          }] as const
        }))
        return keys.map(({ withAchieved }, n) =>
          Option.map(
            Option.fromNullable(found.get(names[n]!)),
            (l) => (withAchieved ? l : { ...l, achieved: undefined })
          )
        )
      }
    )
  }

  // Inserts or replaces rows in one statement; a key given twice keeps its last row (an upsert
  // may not touch one row twice). `months`, by key: the usage month marked with the row; a row
  // without one keeps the month it had.
  const saveRows = (all: ReadonlyArray<StreakRow>, months?: ReadonlyMap<string, string>) => {
    const rows = lastPerKey(all, keyOf)
    return sql`INSERT INTO ${t.streaks} (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
            at_risk_notified_for, broken_notified_after, period_days, freezes, grants, frozen_notified_through, due_at,
            updated_at, metered_month)
          SELECT * FROM unnest(${keyArraysOf(sql, rows)},
            ${rows.map((r) => r.lastActiveDay ?? null)}::date[], ${rows.map((r) => r.run)}::int[],
            ${rows.map((r) => r.best)}::int[], ${rows.map((r) => r.timezone)}::text[],
            ${rows.map((r) => r.atRiskNotifiedFor ?? null)}::date[], ${
      rows.map((r) => r.brokenNotifiedAfter ?? null)
    }::date[],
            ${rows.map((r) => r.periodDays ?? null)}::int[], ${rows.map((r) => r.freezes ?? null)}::int[],
            ${rows.map(grantsJson)}::jsonb[], ${rows.map((r) => r.frozenNotifiedThrough ?? null)}::date[],
            ${rows.map((r) => r.dueAt?.toISOString() ?? null)}::timestamptz[], ${
      rows.map((r) => r.updatedAt.toISOString())
    }::timestamptz[],
            ${rows.map((r) => months?.get(keyOf(r)) ?? null)}::text[])
          ON CONFLICT (project_id, program_id, user_hash, ledger) DO UPDATE SET
            last_active_day = excluded.last_active_day, run = excluded.run, best = excluded.best,
            timezone = excluded.timezone, at_risk_notified_for = excluded.at_risk_notified_for,
            broken_notified_after = excluded.broken_notified_after, period_days = excluded.period_days,
            freezes = excluded.freezes, grants = excluded.grants,
            frozen_notified_through = excluded.frozen_notified_through, due_at = excluded.due_at,
            updated_at = excluded.updated_at,
            metered_month = coalesce(excluded.metered_month, ${t.streaks}.metered_month)`
  }
  type DayInput = { readonly key: StreakKey; readonly day: LocalDate }
  const insertDays = (inputs: ReadonlyArray<DayInput>) =>
    sql`INSERT INTO ${t.activity_days} (project_id, program_id, user_hash, ledger, day)
          SELECT * FROM unnest(${keyArraysOf(sql, inputs.map((i) => i.key))}, ${inputs.map((i) => i.day)}::date[])
          ON CONFLICT DO NOTHING
          RETURNING project_id, program_id, user_hash, ledger, to_char(day, 'YYYY-MM-DD') AS day`
  // The inserted days' rows as `addDays`'s answers: true at the first position of each new pair.
  const daysAdded = (inputs: ReadonlyArray<DayInput>) => (rows: ReadonlyArray<Row>) =>
    firstOccurrences(
      inputs,
      (i) => `${keyOf(i.key)}\u0000${i.day}`,
      new Set(
        rows.map((r) => `${r.project_id}\u0000${r.program_id}\u0000${r.user_hash}\u0000${r.ledger}\u0000${r.day}`)
      )
    )
  const addDays = (inputs: ReadonlyArray<DayInput>) => Effect.map(query(insertDays(inputs)), daysAdded(inputs))
  // Both writes in one statement; they touch different tables, so neither needs to see the other.
  const saveAllWithDays = (
    rows: ReadonlyArray<StreakRow>,
    days: ReadonlyArray<DayInput>,
    months?: ReadonlyMap<string, string>
  ) =>
    Effect.map(
      query(sql`WITH added AS (${insertDays(days)}), saved AS (${saveRows(rows, months)}) SELECT * FROM added`),
      daysAdded(days)
    )

  type RowsQuery = Parameters<StreakStore["Type"]["rows"]>[0]

  // Each key once, a primary-key seek each (LATERAL: see `lockEachOf`), without a lock.
  const rowsOfKeys = (keys: ReadonlyArray<StreakKey>) => {
    const distinct = [...new Map(keys.map((k) => [keyOf(k), k])).values()]
    return query(
      sql`SELECT s.* FROM unnest(${keyArraysOf(sql, distinct)}) AS k (project_id, program_id, user_hash, ledger)
      CROSS JOIN LATERAL (
        SELECT ${cols} FROM ${t.streaks} r
        WHERE r.project_id = k.project_id AND r.program_id = k.program_id AND r.user_hash = k.user_hash
          AND r.ledger = k.ledger
        LIMIT 1
      ) s`
    )
  }

  // A range of the primary key (project, program): the table has no index by program (migration
  // 0002), and the project comes from the program's row.
  const rowsOfProgram = (programId: ProgramId, ledger: Ledger) =>
    sql`SELECT ${cols} FROM ${t.streaks}
        WHERE project_id IN (SELECT project_id FROM ${t.programs} WHERE id = ${programId})
          AND program_id = ${programId} AND ledger = ${ledger}
        ORDER BY user_hash`

  // A probe per program of the project and ledger, each a primary-key seek (LIMIT 1 keeps the
  // planner from turning it into a scan), so that an alias merge costs the same in a small
  // project and in a huge one. The streaks table has no index by member (migration 0002):
  // programs are never deleted, so every row is found.
  const rowsOfMember = (projectId: ProjectId, userHash: UserHash) =>
    sql`SELECT s.* FROM ${t.programs} p
          CROSS JOIN (VALUES ('live'), ('test')) AS l (ledger)
          CROSS JOIN LATERAL (
            SELECT ${cols} FROM ${t.streaks} r
            WHERE r.project_id = p.project_id AND r.program_id = p.id AND r.user_hash = ${userHash}
              AND r.ledger = l.ledger
            LIMIT 1
          ) s
        WHERE p.project_id = ${projectId}`

  const rows = (query: RowsQuery): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
    if ("keys" in query) return query.keys.length === 0 ? Effect.succeed([]) : rowsOfKeys(query.keys)
    return "programId" in query
      ? rowsOfProgram(query.programId, query.ledger)
      : rowsOfMember(query.projectId, query.userHash)
  }

  return {
    lock: (keys) => keys.length === 0 ? Effect.succeed([]) : lock(keys).pipe(io("StreakStore.lock")),

    lockExistingWithAchieved: (keys: ReadonlyArray<LockAhead>) =>
      keys.length === 0
        ? Effect.succeed([])
        : lockExistingWithAchieved(keys).pipe(io("StreakStore.lockExistingWithAchieved")),

    // The due sweep's write and a policy change's: one statement for a whole batch.
    save: (rows) => rows.length === 0 ? Effect.void : query(saveRows(rows)).pipe(Effect.asVoid, io("StreakStore.save")),

    addDays: (days) => days.length === 0 ? Effect.succeed([]) : addDays(days).pipe(io("StreakStore.addDays")),

    saveAllWithDays: (
      rows: ReadonlyArray<StreakRow>,
      days: ReadonlyArray<DayInput>,
      months?: ReadonlyMap<string, string>
    ) => {
      if (days.length === 0) {
        return rows.length === 0
          ? Effect.succeed([])
          : Effect.as(query(saveRows(rows, months)), []).pipe(io("StreakStore.saveAllWithDays"))
      }
      return (rows.length === 0 ? addDays(days) : saveAllWithDays(rows, days, months)).pipe(
        io("StreakStore.saveAllWithDays")
      )
    },

    days: (key, range) =>
      (range === undefined
        ? sql`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM ${t.activity_days} WHERE ${whereKey(key)} ORDER BY day`
        : sql`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM ${t.activity_days}
            WHERE ${whereKey(key)} AND day BETWEEN ${range.from}::date AND ${range.to}::date ORDER BY day`)
        .pipe(Effect.map((rows) => rows.map((r) => toLocalDate(r.day))), io("StreakStore.days")),

    rows: (query) => rows(query).pipe(Effect.map((rows) => rows.map(decodeStreakRow)), io("StreakStore.rows")),

    // The row goes with its days and achievements, and so does the copy of its achieved ids.
    remove: (key) =>
      sql`WITH d AS (DELETE FROM ${t.activity_days} WHERE ${whereKey(key)}),
            a AS (DELETE FROM ${t.achievements} WHERE ${whereKey(key)})
          DELETE FROM ${t.streaks} WHERE ${whereKey(key)}`
        .pipe(Effect.asVoid, io("StreakStore.remove")),

    // The partial index on due_at (WHERE due_at IS NOT NULL) serves `due_at <= now ORDER BY due_at`,
    // so a sweep reads only due rows; SKIP LOCKED hands each row to one claimer.
    claimDue: (now, limit) =>
      limit <= 0 ?
        Effect.succeed([]) :
        Effect.flatMap(distributed, (byProject) =>
          byProject
            // On Citus: one project's due rows per statement (internal/perProject.ts), oldest
            // first within each project and in the batch.
            ? rotation(limit, (projectId, n) =>
              sql`SELECT ${cols} FROM ${t.streaks} s WHERE s.project_id = ${projectId} AND s.due_at <= ${now}
                ORDER BY s.due_at LIMIT ${n} FOR UPDATE SKIP LOCKED`).pipe(
                Effect.map((rows) =>
                  rows.map(decodeStreakRow).sort((a, b) => a.dueAt!.getTime() - b.dueAt!.getTime())
                )
              )
            // `s.due_at`: the selected `due_at` is its ISO text, and ORDER BY would take that output
            // column (no index, a sort of every due row) over the table's.
            : sql`SELECT ${cols} FROM ${t.streaks} s WHERE s.due_at <= ${now}
              ORDER BY s.due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
              .pipe(Effect.map((rows) =>
                rows.map(decodeStreakRow)
              ))).pipe(io("StreakStore.claimDue"))
  }
}

/** What the Postgres ingest store uses beyond the port: the achieved milestone ids alone, the row's copy first. */
export interface AchievementExtras {
  readonly achievedIds: (keys: ReadonlyArray<StreakKey>) => Effect.Effect<
    ReadonlyArray<ReadonlyArray<MilestoneId>>,
    StorageError
  >
}

export const makeAchievementStore = ({ query, sql, t }: Ctx): AchievementStore["Type"] & AchievementExtras => {
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

  // The streak row's copy gains the new id in the same statement. Where the copy is not known
  // yet it is built from the table as this statement sees it (without the new row) plus the new
  // id, so from a member's first achievement on the copy is known. A concurrent add to the same
  // row waits for this one's row lock and then re-applies its SET to the updated copy. One
  // statement per achievement, each a primary-key seek whatever plan it was prepared with.
  const addOne = (a: Achievement) =>
    query(sql`WITH added AS (
          INSERT INTO ${t.achievements} (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
          VALUES (${a.projectId}, ${a.programId}, ${a.userHash}, ${a.ledger}, ${a.milestoneId}, ${a.achievedAt})
          ON CONFLICT DO NOTHING RETURNING milestone_id
        ), copied AS (
          UPDATE ${t.streaks} s SET achieved = ${
      achievedIds({ sql, t }, "s.achieved", whereKey(a))
    } || added.milestone_id
          FROM added WHERE ${whereKey(a)}
        )
        SELECT 1 AS ok FROM added`).pipe(Effect.map((rows) => rows.length > 0), io("AchievementStore.add"))

  return {
    // Per key a range of the achievements' primary key, oldest first: LATERAL with OFFSET 0, which
    // the planner cannot pull up into a join (a join planned while the table was small scanned it
    // whole at every call, for the life of the connection).
    achieved: (keys) =>
      keys.length === 0 ?
        Effect.succeed([]) :
        query(sql`SELECT k.n, a.milestone_id, a.achieved_at
          FROM unnest(${keyArraysOf(sql, keys)}) WITH ORDINALITY AS k (project_id, program_id, user_hash, ledger, n)
          CROSS JOIN LATERAL (
            SELECT milestone_id, achieved_at FROM ${t.achievements} a
            WHERE a.project_id = k.project_id AND a.program_id = k.program_id AND a.user_hash = k.user_hash
              AND a.ledger = k.ledger
            OFFSET 0
          ) a
          ORDER BY k.n, a.achieved_at, a.milestone_id`).pipe(
          Effect.map((rows) => {
            const achieved = keys.map((): Array<Achievement> => [])
            for (const r of rows) {
              const key = keys[Number(r.n) - 1]!
              achieved[Number(r.n) - 1]!.push(
                new Achievement({
                  projectId: key.projectId,
                  programId: key.programId,
                  userHash: key.userHash,
                  ledger: key.ledger,
                  milestoneId: r.milestone_id as MilestoneId,
                  achievedAt: toDate(r.achieved_at)
                }, trusted)
              )
            }
            return achieved
          }),
          io("AchievementStore.achieved")
        ),

    // Per key the copy on its streak row (migration 0003), a primary-key seek into the page the
    // action has just locked (LATERAL with LIMIT 1: see `standing`); only where the copy is not
    // known (NULL: no row yet, or a row from before the migration) is the achievements table read,
    // one primary-key range seek per key (LATERAL, whatever the planner believes of the table).
    achievedIds: (keys) =>
      keys.length === 0 ?
        Effect.succeed([]) :
        query(sql`SELECT k.n, m.milestone_id
          FROM unnest(${keyArraysOf(sql, keys)}) WITH ORDINALITY AS k (project_id, program_id, user_hash, ledger, n)
          LEFT JOIN LATERAL (
            SELECT achieved FROM ${t.streaks} s
            WHERE s.project_id = k.project_id AND s.program_id = k.program_id AND s.user_hash = k.user_hash
              AND s.ledger = k.ledger LIMIT 1
          ) s ON true
          CROSS JOIN LATERAL unnest(${achievedIds({ sql, t }, "s.achieved", achievementsOfK(sql, "k.user_hash"))})
            AS m (milestone_id)
          ORDER BY k.n, m.milestone_id`).pipe(
          Effect.map((rows) => {
            const achieved = keys.map((): Array<MilestoneId> => [])
            for (const r of rows) achieved[Number(r.n) - 1]!.push(r.milestone_id as MilestoneId)
            return achieved
          }),
          io("AchievementStore.achievedIds")
        ),

    // Sent together (one round trip on a pipelining connection), in input order; a pair given
    // twice is sent once, and answers `false` at its later positions.
    add: (achievements) => {
      const name = (a: Achievement) => `${keyOf(a)}\u0000${a.milestoneId}`
      const seen = new Set<string>()
      const firsts = achievements.filter((a) => !seen.has(name(a)) && seen.add(name(a)) !== undefined)
      return Effect.map(pipelined(firsts.map(addOne)), (added) => {
        const inserted = new Set(firsts.filter((_, i) => added[i]).map(name))
        return firstOccurrences(achievements, name, inserted)
      })
    }
  }
}

/**
 * `StateStore` on Postgres: the widgets' reads of a batch in one statement, per ref the alias, then
 * the member's zone, row, days in range and achievements, each a primary-key seek (a subquery, or
 * LATERAL with LIMIT 1, which the planner cannot pull up into a join: a join planned while the
 * tables were small, as generic plans are once per connection, scanned them whole at every call);
 * the achievements from the row's copy where it is known (see `achievedIds`).
 */
export const makeStateStore = ({ query, sql, t }: Ctx): StateStore["Type"] => {
  const cols = sql.literal(streakColumns)
  return {
    standing: (refs, from, to) =>
      refs.length === 0 ?
        Effect.succeed([]) :
        query(sql`SELECT k.n, m.member_hash, z.timezone AS member_zone, s.*,
            (SELECT string_agg(to_char(day, 'YYYY-MM-DD'), ',' ORDER BY day) FROM ${t.activity_days} d
              WHERE d.project_id = k.project_id AND d.program_id = k.program_id AND d.user_hash = m.member_hash
                AND d.ledger = k.ledger AND d.day BETWEEN ${from}::date AND ${to}::date) AS days,
            to_json(ARRAY(SELECT unnest(${
          achievedIds({ sql, t }, "s.achieved_copy", achievementsOfK(sql, "m.member_hash"))
        })
              ORDER BY 1)) AS achieved
          FROM unnest(${keyArraysOf(sql, refs)}) WITH ORDINALITY AS k (project_id, program_id, user_hash, ledger, n)
          CROSS JOIN LATERAL (SELECT coalesce(
            (SELECT user_hash FROM ${t.aliases} WHERE project_id = k.project_id AND anonymous_id = k.user_hash),
            k.user_hash) AS member_hash) m
          LEFT JOIN LATERAL (SELECT timezone FROM ${t.members}
            WHERE project_id = k.project_id AND user_hash = m.member_hash LIMIT 1) z ON true
          LEFT JOIN LATERAL (SELECT ${cols}, achieved AS achieved_copy FROM ${t.streaks}
            WHERE project_id = k.project_id AND program_id = k.program_id AND user_hash = m.member_hash
              AND ledger = k.ledger LIMIT 1) s ON true
          ORDER BY k.n`).pipe(
          Effect.map((rows) =>
            rows.map((r) => ({
              member: {
                userHash: r.member_hash as UserHash,
                timezone: Option.fromNullable(r.member_zone as string | null)
              },
              row: r.project_id == null ? Option.none() : Option.some(decodeStreakRow(r)),
              // Days as one comma-joined text and ids as JSON rather than arrays, which node-postgres
              // parses character by character.
              days: r.days === null ? [] : (r.days as string).split(",") as Array<LocalDate>,
              achieved: r.achieved as Array<MilestoneId>
            }))
          ),
          io("StateStore.standing")
        )
  }
}
