/**
 * `StreakStore` on Postgres: streak rows (locked FOR UPDATE while an action is counted), their
 * active days, and the scheduler's claim of due rows with SKIP LOCKED; with the fused statements
 * the ingest store uses (rows locked with their achievements, rows saved with their days).
 */
import { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import type { StreakKey, StreakRow } from "@streaks/core/Domain"
import type { Ledger } from "@streaks/core/Domain"
import type { MilestoneId, ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import type { StorageError } from "@streaks/core/Errors"
import type { StreakStore } from "@streaks/core/Ports"
import * as Calendar from "@streaks/core/Calendar"
import type { LocalDate } from "@streaks/core/Calendar"
import { Clock, Effect, Option } from "effect"
import { firstOccurrences, keyOf } from "./batch.js"
import { makeDistributed, makeRotation } from "./claimsByProject.js"
import {
  addedSpansText,
  groupOfSelected,
  isCounted,
  projectParameter,
  removedSpansText,
  summariesAddText,
  summariesChangeText,
  type SummaryGroup
} from "./activeSpans.js"
import { addedMembersText } from "./experimentMembers.js"
import { perProject, rowsPerProject } from "./perProject.js"
import { pipelined } from "./pipeline.js"
import { type Ctx, io, lastPerKey, toLocalDate } from "./sql.js"
import { achievedIds, achievementsOfK, decodeStreakRow, forgivenOf, keyArraysOf, streakColumns } from "./streakRows.js"

type Row = Record<string, unknown>

/** A row's granted freezes as JSON text for a `jsonb[]` element; NULL when it has none recorded. */
const grantsJson = (row: StreakRow): string | null =>
  row.grants === undefined ? null : JSON.stringify(row.grants.map((g) => ({ day: g.day, count: g.count })))

const EPOCH = Calendar.unsafeLocalDate("1970-01-01")

/**
 * Dates from day numbers since 1970-01-01 ("19723,19725"), ascending: each from the one before, so
 * that the short steps between a member's days take `Calendar`'s remembered shifts. Numbers out of
 * order (an aggregate the planner fed in another order) are sorted first.
 */
const daysOfNumbers = (text: string): Array<LocalDate> => {
  let numbers = text.split(",").map(Number)
  for (let i = 1; i < numbers.length; i++) {
    if (numbers[i]! < numbers[i - 1]!) {
      numbers = numbers.sort((a, b) => a - b)
      break
    }
  }
  const out = new Array<LocalDate>(numbers.length)
  let before = numbers[0]!
  out[0] = Calendar.addDays(EPOCH, before)
  for (let i = 1; i < numbers.length; i++) {
    const n = numbers[i]!
    out[i] = Calendar.addDays(out[i - 1]!, n - before)
    before = n
  }
  return out
}

/** A row's repairs and pauses as JSON text (migration 0011); NULL when it has neither. */
const forgivenessJson = (row: StreakRow): string | null =>
  (row.repairs === undefined || row.repairs.length === 0) && (row.pauses === undefined || row.pauses.length === 0)
    ? null
    : JSON.stringify({
      repairs: (row.repairs ?? []).map((r) => ({ period: r.period, at: r.at, reason: r.reason })),
      pauses: (row.pauses ?? []).map((p) => ({ id: p.id, start: p.start, end: p.end }))
    })

/** The `streak_summaries` group a row joins when it is saved: its values as the save writes them. */
const groupOfRow = (row: StreakRow): SummaryGroup => ({
  timezone: row.timezone,
  lastActiveDay: row.lastActiveDay ?? null,
  run: row.run,
  periodDays: row.periodDays ?? null,
  freezes: row.freezes ?? null,
  grants: grantsJson(row),
  forgiveness: forgivenessJson(row)
})

interface SummaryChange {
  readonly programId: string
  readonly ledger: string
  readonly group: SummaryGroup
  n: number
}

/**
 * What saving `rows` (each key once) changes in `streak_summaries`, each row leaving the group its
 * locked version is in (`groups`, by key) and joining its new one: folded by group, the groups no
 * row leaves or joins on balance left out. Groups equal as jsonb but not as text stay apart here;
 * the statement adds them up.
 */
const summaryChanges = (
  rows: ReadonlyArray<StreakRow>,
  groups: ReadonlyMap<string, SummaryGroup>
): Array<SummaryChange> => {
  const changes = new Map<string, SummaryChange>()
  const add = (row: StreakRow, group: SummaryGroup, n: number) => {
    if (!isCounted(group)) return
    const name = JSON.stringify([
      row.programId,
      row.ledger,
      group.timezone,
      group.lastActiveDay,
      group.run,
      group.periodDays,
      group.freezes,
      group.grants,
      group.forgiveness
    ])
    const change = changes.get(name)
    if (change === undefined) changes.set(name, { programId: row.programId, ledger: row.ledger, group, n })
    else change.n += n
  }
  for (const row of rows) {
    add(row, groups.get(keyOf(row))!, -1)
    add(row, groupOfRow(row), 1)
  }
  return [...changes.values()].filter((c) => c.n !== 0)
}

/** The statement timeout of a due claim from the start of the due range (`claimFrom` below). */
const rangeClaimTimeout = "60s"

/** Most programs a store remembers as having an experiment (`withExperiment` below); past it, it starts over. */
const MAX_HINTED_PROGRAMS = 10_000

/** How often `lock` re-runs when it lost the race to create a member's first row (see below). */
const lockAttempts = 5

export interface LockInput {
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

/** Rows returned by a locking statement, with their `streak_summaries` groups, by key. */
const rowsByKey = (
  rows: ReadonlyArray<Record<string, unknown>>
): Map<string, { readonly row: StreakRow; readonly group: SummaryGroup }> =>
  new Map(rows.map((r) => {
    const row = decodeStreakRow(r)
    return [keyOf(row), { row, group: groupOfSelected(r) }]
  }))

/**
 * What the Postgres ingest store (`Ingest.ts`) uses beyond the port: rows locked without creating
 * any, with their achievements (one statement), and rows saved with their new days (one statement).
 */
export interface StreakExtras {
  readonly lockExistingWithAchieved: (
    keys: ReadonlyArray<LockAhead>
  ) => Effect.Effect<ReadonlyArray<Option.Option<LockedRow>>, StorageError>
  /** `lock`, with the `streak_summaries` group each row is in as locked. */
  readonly lockWithGroups: (
    keys: ReadonlyArray<LockInput>
  ) => Effect.Effect<ReadonlyArray<{ readonly row: StreakRow; readonly group: SummaryGroup }>, StorageError>
  /**
   * `groups`: the `streak_summaries` group of each saved row's key as this transaction locked it
   * (`LockedRow.group`); when it holds every row's key, the rows' moves between groups are
   * computed here, without reading the rows again.
   */
  readonly saveAllWithDays: (
    rows: ReadonlyArray<StreakRow>,
    days: ReadonlyArray<{ readonly key: StreakKey; readonly day: LocalDate }>,
    months?: ReadonlyMap<string, string>,
    groups?: ReadonlyMap<string, SummaryGroup>
  ) => Effect.Effect<ReadonlyArray<boolean>, StorageError>
  /** The days of many keys in one statement, each key's in day order (`days` for each, at once). */
  readonly daysOfMany: (
    keys: ReadonlyArray<StreakKey>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<LocalDate>>, StorageError>
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
  /** The `streak_summaries` group the row is in, from its stored values. */
  readonly group: SummaryGroup
}

export const makeStreakStore = (ctx: Ctx): StreakStore["Type"] & StreakExtras => {
  const { query, sql, t } = ctx
  const tableName = (name: string) => `"${ctx.prefix}${name}"`
  const removedSpans = sql.literal(removedSpansText(tableName("active_spans"), "removed"))
  const summariesChange = sql.literal(summariesChangeText(tableName("streak_summaries"), "rows_before", "rows_in"))
  const removedSummaries = sql.literal(summariesChangeText(tableName("streak_summaries"), "gone", undefined))
  const summariesAdded = sql.literal(summariesAddText(tableName("streak_summaries"), "summary_changes"))
  const summariesAddedDistinct = sql.literal(summariesAddText(tableName("streak_summaries"), "summary_changes", true))
  const cols = sql.literal(streakColumns)
  const distributed = makeDistributed(ctx)
  const rotation = makeRotation(ctx)
  const whereKey = (k: StreakKey) =>
    sql`project_id = ${k.projectId} AND program_id = ${k.programId} AND user_hash = ${k.userHash} AND ledger = ${k.ledger}`

  // The row of each key `k` of the statement's one project (`perProject`) locked: one
  // primary-key seek per key, in input order (the caller sorts): a join or IN would let the
  // planner scan the whole table while its statistics still say it is small.
  const lockEachOf = (projectId: string, columns: Fragment) =>
    sql`CROSS JOIN LATERAL (
      SELECT ${columns} FROM ${t.streaks} r
      WHERE r.project_id = ${projectId} AND r.program_id = k.program_id AND r.user_hash = k.user_hash
        AND r.ledger = k.ledger
      FOR UPDATE
    ) s`
  // With the achievements of the keys that ask for them (`k.with_achieved`), as `achievedIds`
  // reads them: the copy of the locked version, so it includes what the lock's last holder
  // committed (an achievement added sets the copy); the table only where the copy is NULL.
  const lockEachAchieved = (projectId: string) =>
    lockEachOf(
      projectId,
      sql`${cols},
    CASE WHEN k.with_achieved THEN to_json(${
        achievedIds({ sql, t }, "r.achieved", achievementsOfK(sql, projectId, "k.user_hash"))
      }) END AS achieved`
    )

  // One round trip for all the keys of a batch in the common cases: the insert returns fresh rows
  // (new rows are locked by their inserting transaction), and the locking select returns the
  // existing ones, waiting for a concurrent holder and re-reading its committed version. Keys are
  // locked in one order (`inLockOrder`), so two batches locking overlapping keys cannot deadlock. A key
  // with no row: a concurrent transaction created it after this statement's snapshot was taken,
  // so the insert yielded to it and the snapshot cannot see it; running the statement again (new
  // snapshot) for those keys then finds and locks them. One statement per project (`perProject`),
  // the projects in lock order.
  const lockOnce = (projectId: string, inputs: ReadonlyArray<LockInput>, now: Date) =>
    sql`WITH input AS (
          SELECT * FROM unnest(${keyArraysOf(sql, inputs.map((i) => i.key))}, ${inputs.map((i) => i.timezone)}::text[])
            AS i (project_id, program_id, user_hash, ledger, zone)
        ), ins AS (
          INSERT INTO ${t.streaks} (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at)
          SELECT project_id, program_id, user_hash, ledger, 0, 0, zone, ${now} FROM input
          ON CONFLICT DO NOTHING
          RETURNING ${cols}
        ), locked AS (
          SELECT s.* FROM input k ${lockEachOf(projectId, cols)}
        )
        SELECT * FROM ins UNION ALL SELECT * FROM locked`

  const lock = (inputs: ReadonlyArray<LockInput>) =>
    Effect.gen(function*() {
      const now = new Date(yield* Clock.currentTimeMillis)
      const found = new Map<string, { readonly row: StreakRow; readonly group: SummaryGroup }>()
      let missing = inLockOrder(inputs, (i) => i.key)
      for (let attempt = 1; attempt <= lockAttempts && missing.length > 0; attempt++) {
        const rows = yield* rowsPerProject(
          missing,
          (i) => i.key.projectId,
          (projectId, group) => query(lockOnce(projectId, group, now))
        )
        for (const [k, row] of rowsByKey(rows)) found.set(k, row)
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
      rowsPerProject(
        sorted,
        (k) => k.projectId,
        (projectId, group) =>
          query(
            sql`SELECT s.* FROM unnest(${keyArraysOf(sql, group)}, ${group.map((k) => asked.get(keyOf(k))!)}::bool[])
          AS k (project_id, program_id, user_hash, ledger, with_achieved) ${lockEachAchieved(projectId)}`
          )
      ),
      (rows) => {
        const found = new Map(rows.map((r) => {
          const row = decodeStreakRow(r)
          return [keyOf(row), {
            row,
            achieved: r.achieved === null ? undefined : r.achieved as Array<MilestoneId>,
            meteredMonth: (r.metered_month as string | null) ?? undefined,
            group: groupOfSelected(r)
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
  // As CTEs (`rows_in`, `saved`, then the rollup's), to follow a `WITH`: the rows leave their
  // `streak_summaries` group as they were and join their new one, in the statement that saves
  // them. The rows of one project, which the read of the old rows names (`perProjectWrite`).
  const saveRowsCtes = (
    projectId: string,
    all: ReadonlyArray<StreakRow>,
    months?: ReadonlyMap<string, string>,
    groups?: ReadonlyMap<string, SummaryGroup>
  ) => {
    const rows = lastPerKey(all, keyOf)
    const known = groups !== undefined && rows.every((r) => groups.has(keyOf(r)))
    return sql`rows_in AS (
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
            ${rows.map((r) => months?.get(keyOf(r)) ?? null)}::text[], ${rows.map(forgivenessJson)}::jsonb[])
            AS r (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
              at_risk_notified_for, broken_notified_after, period_days, freezes, grants, frozen_notified_through,
              due_at, updated_at, metered_month, forgiveness)
        ), saved AS (
          INSERT INTO ${t.streaks} (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
            at_risk_notified_for, broken_notified_after, period_days, freezes, grants, frozen_notified_through, due_at,
            updated_at, metered_month, forgiveness)
          SELECT * FROM rows_in
          ON CONFLICT (project_id, program_id, user_hash, ledger) DO UPDATE SET
            last_active_day = excluded.last_active_day, run = excluded.run, best = excluded.best,
            timezone = excluded.timezone, at_risk_notified_for = excluded.at_risk_notified_for,
            broken_notified_after = excluded.broken_notified_after, period_days = excluded.period_days,
            freezes = excluded.freezes, grants = excluded.grants,
            frozen_notified_through = excluded.frozen_notified_through, due_at = excluded.due_at,
            updated_at = excluded.updated_at, forgiveness = excluded.forgiveness,
            metered_month = coalesce(excluded.metered_month, ${t.streaks}.metered_month)
        )${known ? summariesFromGroups(projectId, rows, groups) : summariesFromRows(projectId)}`
  }
  // Where the caller knows the locked rows' groups (ingest, which locked them at its load): their
  // moves folded here, and only the groups that change are written.
  const summariesFromGroups = (
    projectId: string,
    rows: ReadonlyArray<StreakRow>,
    groups: ReadonlyMap<string, SummaryGroup>
  ): Fragment => {
    const changes = summaryChanges(rows, groups)
    if (changes.length === 0) return sql``
    const of = <A>(f: (c: SummaryChange) => A) => changes.map(f)
    return sql`, summary_changes AS (
          SELECT ${projectId}::text AS project_id, c.* FROM unnest(${of((c) => c.programId)}::text[],
            ${of((c) => c.ledger)}::text[], ${of((c) => c.group.timezone)}::text[],
            ${of((c) => c.group.lastActiveDay)}::date[], ${of((c) => c.group.run)}::int[],
            ${of((c) => c.group.periodDays)}::int[], ${of((c) => c.group.freezes)}::int[],
            ${of((c) => c.group.grants)}::jsonb[], ${of((c) => c.group.forgiveness)}::jsonb[], ${of((c) => c.n)}::int[])
            AS c (program_id, ledger, timezone, last_active_day, run, period_days, freezes, grants, forgiveness, n)
        ), summaries AS (${
      changes.every((c) => c.group.grants === null && c.group.forgiveness === null)
        ? summariesAddedDistinct
        : summariesAdded
    })`
  }
  // Otherwise the rows as they were, each read by its key (one primary-key seek each, in the
  // statement's snapshot: the caller holds the rows' locks).
  const summariesFromRows = (projectId: string): Fragment =>
    sql`, rows_before AS (
          SELECT s.project_id, s.program_id, s.ledger, s.timezone, s.last_active_day, s.run, s.period_days,
            s.freezes, s.grants, s.forgiveness
          FROM rows_in i CROSS JOIN LATERAL (
            SELECT * FROM ${t.streaks} x WHERE x.project_id = ${projectId} AND x.program_id = i.program_id
              AND x.user_hash = i.user_hash AND x.ledger = i.ledger
          ) AS s
        ), summaries AS (${summariesChange})`
  // Inserts or replaces rows in one statement; a key given twice keeps its last row (an upsert
  // may not touch one row twice). `months`, by key: the usage month marked with the row; a row
  // without one keeps the month it had.
  const saveRows = (
    projectId: string,
    all: ReadonlyArray<StreakRow>,
    months?: ReadonlyMap<string, string>,
    groups?: ReadonlyMap<string, SummaryGroup>
  ) => sql`WITH ${saveRowsCtes(projectId, all, months, groups)} SELECT 1`
  type DayInput = { readonly key: StreakKey; readonly day: LocalDate }
  const insertDays = (inputs: ReadonlyArray<DayInput>) =>
    sql`INSERT INTO ${t.activity_days} (project_id, program_id, user_hash, ledger, day)
          SELECT * FROM unnest(${keyArraysOf(sql, inputs.map((i) => i.key))}, ${inputs.map((i) => i.day)}::date[])
          ON CONFLICT DO NOTHING
          RETURNING project_id, program_id, user_hash, ledger, day`
  // The new days' links in the `active_spans` rollup, in the statement that inserts them, which
  // has one project: its reads of the days name it as a parameter.
  const spansText = addedSpansText(tableName("active_spans"), tableName("activity_days"), "added", projectParameter)
    .split(projectParameter).map((part) => sql.literal(part))
  const spans = (projectId: string): Fragment =>
    spansText.slice(1).reduce<Fragment>((text, part) => sql`${text}${projectId}${part}`, spansText[0]!)
  // The added days' members' rows in the Proof rollup of their program's experiments, beside the
  // links (internal/experimentMembers.ts); `inTable`: in a statement after the one that inserted them.
  const proofTables = {
    experiments: tableName("experiments"),
    zones: tableName("experiment_zones"),
    members: tableName("experiment_members"),
    streaks: tableName("streaks")
  }
  const proofTextOf = (inTable: boolean) =>
    addedMembersText(proofTables, tableName("activity_days"), "added", projectParameter, inTable)
      .split(projectParameter).map((part) => sql.literal(part))
  const proofText = proofTextOf(false)
  const proofLaterText = proofTextOf(true)
  const withProject = (parts: ReadonlyArray<Fragment>, projectId: string): Fragment =>
    parts.slice(1).reduce<Fragment>((text, part) => sql`${text}${projectId}${part}`, parts[0]!)
  const proof = (projectId: string): Fragment => withProject(proofText, projectId)
  const addedRows = sql`SELECT project_id, program_id, user_hash, ledger, to_char(day, 'YYYY-MM-DD') AS day FROM added`
  // Without the Proof CTEs: the added rows, each with the programs among `programs` that have an
  // experiment (one probe of the experiments per statement, in the statement's snapshot, as the
  // CTEs would read them); NULL when none has.
  const addedRowsAsking = (projectId: string, programs: ReadonlyArray<string>) =>
    sql`SELECT project_id, program_id, user_hash, ledger, to_char(day, 'YYYY-MM-DD') AS day,
      (SELECT array_agg(DISTINCT x.program_id) FROM ${t.experiments} x
        WHERE x.project_id = ${projectId} AND x.program_id = ANY(${programs}::text[])) AS experiment_programs
      FROM added`
  // The Proof rollup of days a statement of this transaction inserted (`added`, as it returned them).
  const proofOfAdded = (projectId: string, added: ReadonlyArray<Row>) =>
    query(sql`WITH added AS (
        SELECT * FROM unnest(${added.map((r) => r.project_id)}::text[], ${added.map((r) => r.program_id)}::text[],
          ${added.map((r) => r.user_hash)}::text[], ${added.map((r) => r.ledger)}::text[],
          ${added.map((r) => r.day)}::date[]) AS a (project_id, program_id, user_hash, ledger, day)
      ), ${withProject(proofLaterText, projectId)} SELECT 1`)
  // Programs (by project) this store has seen with an experiment. A days statement whose live days
  // are of such a program carries the Proof CTEs; any other asks whether its programs have an
  // experiment instead, and only when one has is the rollup computed, by a second statement in the
  // same transaction (which also puts the program here). A hint either way: both forms are exact,
  // so a stale entry (another process started or removed an experiment) costs time, not rows.
  const withExperiment = new Set<string>()
  const programKey = (projectId: string, programId: string) => `${projectId}\u0000${programId}`
  // The inserted days' rows as `addDays`'s answers: true at the first position of each new pair.
  const daysAdded = (inputs: ReadonlyArray<DayInput>) => (rows: ReadonlyArray<Row>) =>
    firstOccurrences(
      inputs,
      (i) => `${keyOf(i.key)}\u0000${i.day}`,
      new Set(
        rows.map((r) => `${r.project_id}\u0000${r.program_id}\u0000${r.user_hash}\u0000${r.ledger}\u0000${r.day}`)
      )
    )
  // A project's writes in one statement; they touch different tables, so none needs to see the others.
  const writeOf = (
    projectId: string,
    rows: ReadonlyArray<StreakRow>,
    days: ReadonlyArray<DayInput>,
    months?: ReadonlyMap<string, string>,
    groups?: ReadonlyMap<string, SummaryGroup>
  ): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
    if (days.length === 0) return Effect.as(query(saveRows(projectId, rows, months, groups)), [])
    const live = [...new Set(days.flatMap((d) => d.key.ledger === "live" ? [d.key.programId] : []))]
    const known = live.some((p) => withExperiment.has(programKey(projectId, p)))
    // Days of the test ledger have no Proof rollup; nor do programs without an experiment.
    const proofCtes = known ? sql`, ${proof(projectId)}` : sql``
    const asking = !known && live.length > 0
    const final = asking ? addedRowsAsking(projectId, live) : addedRows
    const written = query(
      rows.length === 0
        ? sql`WITH added AS (${insertDays(days)}), ${spans(projectId)}${proofCtes} ${final}`
        : sql`WITH added AS (${insertDays(days)}), ${spans(projectId)}${proofCtes}, ${
          saveRowsCtes(projectId, rows, months, groups)
        } ${final}`
    )
    if (!asking) return written
    return Effect.flatMap(written, (added) => {
      const found = added[0]?.experiment_programs as ReadonlyArray<string> | null | undefined
      if (found === undefined || found === null) return Effect.succeed(added)
      if (withExperiment.size >= MAX_HINTED_PROGRAMS) withExperiment.clear()
      for (const p of found) withExperiment.add(programKey(projectId, p))
      return Effect.as(proofOfAdded(projectId, added), added)
    })
  }
  // The rows and days of a batch: one statement per project, as `perProject` sends reads, since
  // the rollups' reads of the old rows and days name the project (docs/scaling.md#statements-citus-can-plan);
  // a batch of one project is one statement. The projects in one order, so that two batches
  // changing the same rollup rows of two projects lock them in one order.
  const perProjectWrite = (
    rows: ReadonlyArray<StreakRow>,
    days: ReadonlyArray<DayInput>,
    months?: ReadonlyMap<string, string>,
    groups?: ReadonlyMap<string, SummaryGroup>
  ): Effect.Effect<ReadonlyArray<boolean>, SqlError> => {
    const rowsOf = new Map<string, Array<StreakRow>>()
    const daysOf = new Map<string, Array<DayInput>>()
    const push = <A>(map: Map<string, Array<A>>, projectId: string, item: A) => {
      const list = map.get(projectId)
      if (list === undefined) map.set(projectId, [item])
      else list.push(item)
    }
    for (const r of rows) push(rowsOf, r.projectId, r)
    for (const d of days) push(daysOf, d.key.projectId, d)
    const projects = [...new Set([...rowsOf.keys(), ...daysOf.keys()])].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
    const write = (projectId: string) =>
      writeOf(projectId, rowsOf.get(projectId) ?? [], daysOf.get(projectId) ?? [], months, groups)
    const written = projects.length === 1
      ? write(projects[0]!)
      : Effect.map(pipelined(projects.map(write)), (answers) => answers.flat())
    return Effect.map(written, daysAdded(days))
  }

  type RowsQuery = Parameters<StreakStore["Type"]["rows"]>[0]

  // Where this store's claims of the current sweep (one `now`) have got to, per project on Citus
  // ("" for the one cross-tenant statement): the last claimed row's place in the due index
  // (instant, then key). The rows a sweep has moved keep their entries in that index until no
  // snapshot can see the old versions (a long transaction anywhere on the server holds them),
  // and a claim from the start of the range visits each of them again, a heap page each: the
  // sweep's cost would grow with the square of its due rows. The claims start at the position
  // instead; rows before it that another transaction held when they were passed, or that a
  // rolled-back batch claimed, are taken once the range past it is drained.
  interface Position {
    /** The instant exactly, as Postgres prints it (a `Date` would drop its microseconds). */
    readonly dueAt: string
    readonly micros: bigint
    readonly key: StreakKey
  }
  let sweepAt: number | undefined
  const reached = new Map<string, Position>()
  const positionOf = (scope: string, now: Date) => {
    if (sweepAt !== now.getTime()) {
      sweepAt = now.getTime()
      reached.clear()
    }
    return reached.get(scope)
  }
  const textOrder = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0)
  const order = (x: Position, y: Position) =>
    x.micros !== y.micros
      ? (x.micros < y.micros ? -1 : 1)
      : textOrder(x.key.projectId, y.key.projectId) || textOrder(x.key.programId, y.key.programId) ||
        textOrder(x.key.userHash, y.key.userHash) || textOrder(x.key.ledger, y.key.ledger)
  // Concurrent claims of one store end in any order: the position only moves on.
  const advance = (scope: string, rows: ReadonlyArray<Row>) => {
    const last = rows[rows.length - 1]
    if (last === undefined) return
    const at: Position = {
      dueAt: String(last.due_position),
      micros: BigInt(String(last.due_micros)),
      key: {
        projectId: last.project_id as ProjectId,
        programId: last.program_id as ProgramId,
        userHash: last.user_hash as UserHash,
        ledger: last.ledger as Ledger
      }
    }
    const before = reached.get(scope)
    if (before === undefined || order(at, before) > 0) reached.set(scope, at)
  }
  // `s.due_at`: the selected `due_at` is its ISO text, and ORDER BY would take that output column
  // (no index, a sort of every due row) over the table's. A project's claim (Citus) has the
  // project fixed, and its index (Distribution.ts) leads with it.
  const placeIn = (byProject: boolean) =>
    byProject
      ? sql`(s.due_at, s.program_id, s.user_hash, s.ledger)`
      : sql`(s.due_at, s.project_id, s.program_id, s.user_hash, s.ledger)`
  const positionText = (byProject: boolean, at: Position) =>
    byProject
      ? sql`(${at.dueAt}::timestamptz, ${at.key.programId}::text, ${at.key.userHash}::text, ${at.key.ledger}::text)`
      : sql`(${at.dueAt}::timestamptz, ${at.key.projectId}::text, ${at.key.programId}::text, ${at.key.userHash}::text,
        ${at.key.ledger}::text)`
  const claimStatement = (project: string | undefined, now: Date, range: Fragment, limit: number) =>
    query(sql`SELECT ${cols}, s.due_at::text AS due_position,
        (extract(epoch FROM s.due_at) * 1000000)::bigint::text AS due_micros
      FROM ${t.streaks} s WHERE ${
      project === undefined ? sql`` : sql`s.project_id = ${project} AND `
    }s.due_at <= ${now}${range}
      ORDER BY ${
      project === undefined ? sql`s.due_at, s.project_id` : sql`s.due_at`
    }, s.program_id, s.user_hash, s.ledger LIMIT ${limit} FOR UPDATE SKIP LOCKED`)
  // A claim from the start of the due range visits the entries of every row moved since the
  // table's last vacuum (a heap fetch each, until one visit can mark them dead): after a sweep of
  // millions of due rows, longer than a request's statement timeout. Such claims are background
  // work; they may take up to `rangeClaimTimeout` in their transaction (`set_config(…, true)` is
  // `SET LOCAL`), never less than the connection's own timeout.
  const widenTimeout = query(sql`SELECT set_config('statement_timeout',
      CASE WHEN current_setting('statement_timeout')::interval = interval '0'
        OR current_setting('statement_timeout')::interval >= ${rangeClaimTimeout}::interval
      THEN current_setting('statement_timeout') ELSE ${rangeClaimTimeout} END, true)`)
  const claimFrom = (project: string | undefined, now: Date, limit: number) =>
    Effect.gen(function*() {
      const scope = project ?? ""
      const at = positionOf(scope, now)
      const place = placeIn(project !== undefined)
      if (at === undefined) yield* widenTimeout
      const past = yield* claimStatement(
        project,
        now,
        at === undefined ? sql`` : sql` AND ${place} >= ${positionText(project !== undefined, at)}`,
        limit
      )
      advance(scope, past)
      if (at === undefined || past.length >= limit) return past.map(decodeStreakRow)
      // The range past the position is drained: the rows before it that are still due, once.
      reached.delete(scope)
      yield* widenTimeout
      const before = yield* claimStatement(
        project,
        now,
        sql` AND ${place} < ${positionText(project !== undefined, at)}`,
        limit - past.length
      )
      advance(scope, before)
      return [...before, ...past].map(decodeStreakRow)
    })

  // Each key once, a primary-key seek each (LATERAL: see `lockEachOf`), without a lock; one
  // statement per project.
  const rowsOfKeys = (keys: ReadonlyArray<StreakKey>) => {
    const distinct = [...new Map(keys.map((k) => [keyOf(k), k])).values()]
    return rowsPerProject(distinct, (k) => k.projectId, (projectId, group) =>
      query(
        sql`SELECT s.* FROM unnest(${keyArraysOf(sql, group)}) AS k (project_id, program_id, user_hash, ledger)
        CROSS JOIN LATERAL (
          SELECT ${cols} FROM ${t.streaks} r
          WHERE r.project_id = ${projectId} AND r.program_id = k.program_id AND r.user_hash = k.user_hash
            AND r.ledger = k.ledger
          LIMIT 1
        ) s`
      ))
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
  // programs are never deleted, so every row is found. The project is named in the probe itself,
  // which Citus routes to its shard (not taken from the programs' reference table).
  const rowsOfMember = (projectId: ProjectId, userHash: UserHash) =>
    sql`SELECT s.* FROM ${t.programs} p
          CROSS JOIN (VALUES ('live'), ('test')) AS l (ledger)
          CROSS JOIN LATERAL (
            SELECT ${cols} FROM ${t.streaks} r
            WHERE r.project_id = ${projectId} AND r.program_id = p.id AND r.user_hash = ${userHash}
              AND r.ledger = l.ledger
            LIMIT 1
          ) s
        WHERE p.project_id = ${projectId}`

  const rows = (which: RowsQuery): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
    if ("keys" in which) return which.keys.length === 0 ? Effect.succeed([]) : rowsOfKeys(which.keys)
    return query(
      "programId" in which
        ? rowsOfProgram(which.programId, which.ledger)
        : rowsOfMember(which.projectId, which.userHash)
    )
  }

  return {
    lock: (keys) =>
      keys.length === 0
        ? Effect.succeed([])
        : lock(keys).pipe(Effect.map((locked) => locked.map((l) => l.row)), io("StreakStore.lock")),

    lockWithGroups: (keys) => keys.length === 0 ? Effect.succeed([]) : lock(keys).pipe(io("StreakStore.lock")),

    lockExistingWithAchieved: (keys: ReadonlyArray<LockAhead>) =>
      keys.length === 0
        ? Effect.succeed([])
        : lockExistingWithAchieved(keys).pipe(io("StreakStore.lockExistingWithAchieved")),

    // The due sweep's write and a policy change's: one statement per project of the batch.
    save: (rows) =>
      rows.length === 0 ? Effect.void : perProjectWrite(rows, []).pipe(Effect.asVoid, io("StreakStore.save")),

    addDays: (days) =>
      days.length === 0 ? Effect.succeed([]) : perProjectWrite([], days).pipe(io("StreakStore.addDays")),

    saveAllWithDays: (
      rows: ReadonlyArray<StreakRow>,
      days: ReadonlyArray<DayInput>,
      months?: ReadonlyMap<string, string>,
      groups?: ReadonlyMap<string, SummaryGroup>
    ) => {
      if (rows.length === 0 && days.length === 0) return Effect.succeed([])
      return perProjectWrite(rows, days, months, groups).pipe(io("StreakStore.saveAllWithDays"))
    },

    daysOfMany: (keys) =>
      keys.length === 0 ? Effect.succeed([]) : perProject(keys, (k) => k.projectId, (projectId, group) =>
        // One index seek per key, as `lock` does, in one statement per project.
        query(
          sql`SELECT k.i, to_char(d.day, 'YYYY-MM-DD') AS day
            FROM unnest(${keyArraysOf(sql, group)}, ${group.map((_, i) => i)}::int[])
              AS k(project_id, program_id, user_hash, ledger, i)
            CROSS JOIN LATERAL (
              SELECT a.day FROM ${t.activity_days} a
              WHERE a.project_id = ${projectId} AND a.program_id = k.program_id AND a.user_hash = k.user_hash
                AND a.ledger = k.ledger
            ) d
            ORDER BY k.i, d.day`
        ).pipe(Effect.map((rows) => {
          const out = group.map((): Array<LocalDate> => [])
          for (const r of rows) out[Number(r.i)]!.push(toLocalDate(r.day))
          return out
        }))).pipe(io("StreakStore.days")),

    days: (key, range) =>
      query(
        range === undefined
          ? sql`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM ${t.activity_days} WHERE ${whereKey(key)} ORDER BY day`
          : sql`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM ${t.activity_days}
            WHERE ${whereKey(key)} AND day BETWEEN ${range.from}::date AND ${range.to}::date ORDER BY day`
      )
        .pipe(Effect.map((rows) => rows.map((r) => toLocalDate(r.day))), io("StreakStore.days")),

    rows: (which) => rows(which).pipe(Effect.map((rows) => rows.map(decodeStreakRow)), io("StreakStore.rows")),

    // A range of the primary key (project, program, user hash), and one range scan of the days'
    // primary key over the same members (after the last page, up to this page's last member)
    // rather than a lookup per member. The days come as one text per row, day numbers since
    // 1970-01-01 (cheaper for Postgres to write than formatted dates, and independent of the
    // session's DateStyle), in index order: the aggregate is not asked to sort them, which the
    // decoding does for any that come otherwise.
    histories: (page) => {
      const from = page.from === undefined ? sql`` : sql` AND d.day >= ${page.from}::date`
      const to = page.to === undefined ? sql`` : sql` AND d.day <= ${page.to}::date`
      const after = page.after === undefined ? sql`` : sql` AND s.user_hash > ${page.after}`
      const daysAfter = page.after === undefined ? sql`` : sql` AND d.user_hash > ${page.after}`
      return query(
        sql`WITH page AS (
            SELECT s.user_hash, s.timezone, s.grants, s.forgiveness FROM ${t.streaks} s
            WHERE s.project_id = ${page.projectId} AND s.program_id = ${page.programId} AND s.ledger = ${page.ledger}${after}
            ORDER BY s.user_hash LIMIT ${Math.max(1, page.limit)}
          ), days AS (
            SELECT d.user_hash, string_agg((d.day - DATE '1970-01-01')::text, ',') AS days FROM ${t.activity_days} d
            WHERE d.project_id = ${page.projectId} AND d.program_id = ${page.programId} AND d.ledger = ${page.ledger}${daysAfter}
              AND d.user_hash <= (SELECT max(user_hash) FROM page)${from}${to}
            GROUP BY d.user_hash
          )
          SELECT p.user_hash, p.timezone, p.grants, p.forgiveness, days.days
          FROM page p LEFT JOIN days ON days.user_hash = p.user_hash
          ORDER BY p.user_hash`
      ).pipe(
        Effect.map((found) =>
          found.map((r) => ({
            userHash: r.user_hash as UserHash,
            timezone: r.timezone as string,
            grants: (r.grants as ReadonlyArray<{ day: LocalDate; count: number }> | null) ?? [],
            days: typeof r.days === "string" && r.days !== "" ? daysOfNumbers(r.days) : [],
            ...forgivenOf(r.forgiveness as Parameters<typeof forgivenOf>[0])
          }))
        ),
        io("StreakStore.histories")
      )
    },

    // The row goes with its days and achievements, and so does the copy of its achieved ids.
    remove: (key) =>
      query(sql`WITH removed AS (DELETE FROM ${t.activity_days} WHERE ${whereKey(key)}
              RETURNING project_id, program_id, user_hash, ledger, day),
            ${removedSpans},
            a AS (DELETE FROM ${t.achievements} WHERE ${whereKey(key)}),
            proof AS (DELETE FROM ${t.experiment_members} WHERE project_id = ${key.projectId}
              AND program_id = ${key.programId} AND user_hash = ${key.userHash} AND ${key.ledger}::text = 'live'),
            gone AS (DELETE FROM ${t.streaks} WHERE ${whereKey(key)} RETURNING *)
          ${removedSummaries}`)
        .pipe(Effect.asVoid, io("StreakStore.remove")),

    // The partial index on due_at and the key (WHERE due_at IS NOT NULL) serves the claims in
    // that order, so a sweep reads only due rows; SKIP LOCKED hands each row to one claimer.
    claimDue: (now, limit) =>
      limit <= 0 ?
        Effect.succeed([]) :
        Effect.flatMap(distributed, (byProject) =>
          byProject
            // On Citus: one project's due rows per statement (internal/claimsByProject.ts), oldest
            // first within each project and in the batch.
            ? rotation(limit, (projectId, n) => claimFrom(projectId, now, n))
              .pipe(Effect.map((rows) => [...rows].sort((a, b) => a.dueAt!.getTime() - b.dueAt!.getTime())))
            : claimFrom(undefined, now, limit)).pipe(io("StreakStore.claimDue"))
  }
}
