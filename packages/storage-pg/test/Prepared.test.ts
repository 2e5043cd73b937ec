/**
 * On the service's pool (`PgConnection.make`) the adapter prepares its parameterised statements
 * once per connection (`internal/statements.ts`), on generic plans, and that changes nothing a
 * caller sees: results, errors, transactions and multi-statement texts; batch statements seek
 * their keys whatever the table held when planned.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Context, Effect } from "effect"
import { unsafeLocalDate } from "@streaks/core/Calendar"
import { StreakKey } from "@streaks/core/Domain"
import type { ProgramId, ProjectId, UserHash } from "@streaks/core/Ids"
import { AchievementStore, IdempotencyStore, MemberStore, Outbox, StreakStore, Transactor } from "@streaks/core/Ports"
import { StateStore } from "@streaks/core/StateStore"
import * as Migrations from "../src/Migrations.js"
import * as PgConnection from "../src/PgConnection.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"
import type { AchievementExtras } from "../src/internal/achievementStore.js"
import * as Pools from "../src/internal/pools.js"
import { slot } from "../src/internal/activeSpans.js"
import { makeQuery } from "../src/internal/sql.js"
import type { StreakExtras } from "../src/internal/streakStore.js"
import * as Transactions from "../src/internal/transactor.js"

/** How the adapter runs its statements and transactions on `sql`. */
const adapterOn = (sql: SqlClient.SqlClient) => {
  const registered = Pools.poolOf(sql)
  return { query: makeQuery(registered), tx: Transactions.make(sql, registered) }
}

/**
 * Named statements of the connection running the current transaction whose text mentions `marker`,
 * with how many of their calls ran on the generic plan and how many on one made for the call.
 */
const statementsOf = (sql: SqlClient.SqlClient, marker: string) =>
  sql<{ readonly name: string; readonly generic: number; readonly custom: number }>`
    SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
    WHERE statement LIKE ${`%${marker}%`} AND statement NOT LIKE '%pg_prepared_statements%'`

/** The names of `statementsOf`. */
const preparedOf = (sql: SqlClient.SqlClient, marker: string) =>
  Effect.map(statementsOf(sql, marker), (rows) => rows.map((r) => r.name))

layer(PgTest.layer, { timeout: "120 seconds" })("PgConnection prepared statements", (it) => {
  it.effect("a parameterised statement is prepared once per connection and answers as before", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { query, tx } = adapterOn(sql)
      yield* tx.withTransaction(Effect.gen(function*() {
        const answers = yield* Effect.forEach(
          [1, 2, 3],
          (n) => query(sql`SELECT ${n}::int + 1 AS v /* prep_a */`)
        )
        assert.deepStrictEqual(answers.map((rows) => rows[0]!.v), [2, 3, 4])
        const names = yield* preparedOf(sql, "prep_a")
        assert.strictEqual(names.length, 1, "one named statement for three calls of one text")
      }))
    }))

  it.effect("a statement without values runs unnamed, so a text of several statements still works", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { query, tx } = adapterOn(sql)
      yield* tx.withTransaction(Effect.gen(function*() {
        yield* query(sql.unsafe(`CREATE TEMP TABLE prep_multi (v int); INSERT INTO prep_multi VALUES (1), (2)`))
        const rows = yield* query(sql`SELECT count(*)::int AS n FROM prep_multi WHERE v > ${0}`)
        assert.strictEqual(rows[0]!.n, 2)
        assert.deepStrictEqual(yield* preparedOf(sql, "CREATE TEMP TABLE prep_multi"), [])
      }))
    }))

  it.effect("a failing prepared statement reports its error, and the same text works afterwards", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { query } = adapterOn(sql)
      const divide = (d: number) => query(sql`SELECT 10 / ${d}::int AS q /* prep_b */`)
      const failed = yield* Effect.either(divide(0))
      assert.isTrue(failed._tag === "Left", "division by zero fails")
      const rows = yield* divide(5)
      assert.strictEqual(rows[0]!.q, 2)
      // A text that does not even parse is not remembered as prepared either.
      const broken = yield* Effect.either(query(sql`SELEC ${1}::int /* prep_c */`))
      assert.isTrue(broken._tag === "Left")
      const again = yield* Effect.either(query(sql`SELEC ${1}::int /* prep_c */`))
      assert.isTrue(again._tag === "Left", "still a syntax error, not 'prepared statement does not exist'")
      assert.include(String((again as { left: { cause: unknown } }).left.cause), "syntax error")
    }))

  it.effect("a rolled-back transaction leaves the connection's statements usable", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { query, tx } = adapterOn(sql)
      const probe = (n: number) => query(sql`SELECT ${n}::int AS v /* prep_d */`)
      yield* Effect.either(tx.withTransaction(Effect.zipRight(probe(1), Effect.fail("rollback" as const))))
      const rows = yield* tx.withTransaction(probe(7))
      assert.strictEqual(rows[0]!.v, 7)
    }))

  it.effect("a statement that takes keys as an array runs on one generic plan, not one made at every call, and the pool's sessions keep that mode", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { query, tx } = adapterOn(sql)
      // A batch statement's shape. Under Postgres's default `auto`, small arrays kept it on a
      // plan made anew at every call.
      const batch = (n: number) =>
        query(
          sql`SELECT k FROM unnest(${Array.from({ length: n }, (_, i) => `key${i}`)}::text[]) AS k /* prep_generic */`
        )
      const counts = yield* tx.withTransaction(Effect.gen(function*() {
        for (let n = 1; n <= 7; n++) yield* batch(n)
        return (yield* statementsOf(sql, "prep_generic")).map(({ custom, generic }) => ({ generic, custom }))
      }))
      assert.deepStrictEqual(counts, [{ generic: 7, custom: 0 }])
      const mode = yield* sql<{ readonly plan_cache_mode: string }>`SHOW plan_cache_mode`
      assert.strictEqual(mode[0]!.plan_cache_mode, "force_generic_plan")
    }))

  // A batch statement prepared while its tables were small (a new install, the bench's truncated
  // tables) keeps its generic plan on that connection: a join there could become a hash join over
  // a scan of the whole table, at every call, however large the table grows.
  const scansAfterGrowth = (
    prefix: string,
    tables: ReadonlyArray<string>,
    call: (round: number) => Effect.Effect<unknown, unknown>,
    grow: Effect.Effect<unknown, unknown>
  ) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const scans = Effect.map(
        sql<{ readonly n: number }>`SELECT coalesce(sum(seq_scan), 0)::int AS n FROM pg_stat_xact_user_tables
          WHERE relname IN ${sql.in(tables.map((t) => prefix + t))}`,
        (rows) => rows[0]!.n
      )
      // One connection throughout: its statements are planned at their first call, on the empty
      // tables, and keep that plan as the tables grow.
      return yield* Context.get(PgStorage.make(sql, prefix), Transactor).withTransaction(Effect.gen(function*() {
        yield* call(0)
        yield* grow
        const before = yield* scans
        yield* call(1)
        return (yield* scans) - before
      }))
    })

  it.effect("the ingest store's claims and answers seek each key, even on plans made while the keys table was empty", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "keyplan_" })
      const keys = Context.get(PgStorage.make(sql, "keyplan_"), IdempotencyStore)
      const now = new Date("2025-01-15T12:00:00Z")
      const claims = (round: number) =>
        Array.from({ length: 10 }, (_, i) => ({ projectId: "prj_plan" as ProjectId, key: `k${round}-${i}`, now }))
      const scanned = yield* scansAfterGrowth(
        "keyplan_",
        ["idempotency_keys"],
        (round) =>
          Effect.zipRight(
            keys.claim(claims(round)),
            keys.complete(claims(round).map((c) => ({ ...c, response: { status: 202, body: { ok: true } } })))
          ),
        sql`INSERT INTO keyplan_idempotency_keys (project_id, key, state, created_at, claimed_at)
          SELECT 'prj_plan', 'filler-' || g, 'in_progress', ${now}, ${now} FROM generate_series(1, 20000) g`
      )
      assert.strictEqual(scanned, 0, "no scan of the whole keys table")
    }))

  it.effect("lookup seeks each member and alias, even on a plan made while both tables were empty", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "memberplan_" })
      const members = Context.get(PgStorage.make(sql, "memberplan_"), MemberStore)
      const refs = (round: number) =>
        Array.from(
          { length: 10 },
          (_, i) => ({ projectId: "prj_plan" as ProjectId, userHash: `u${round}-${i}` as UserHash })
        )
      const scanned = yield* scansAfterGrowth(
        "memberplan_",
        ["members", "aliases"],
        (round) => members.lookup(refs(round)),
        Effect.zipRight(
          sql`INSERT INTO memberplan_members (project_id, user_hash, timezone)
            SELECT 'prj_plan', 'filler-' || g, 'UTC' FROM generate_series(1, 20000) g`,
          sql`INSERT INTO memberplan_aliases (project_id, anonymous_id, user_hash)
            SELECT 'prj_plan', 'anon-' || g, 'filler-' || g FROM generate_series(1, 20000) g`
        )
      )
      assert.strictEqual(scanned, 0, "no scan of the whole members or aliases table")
    }))

  it.effect("the batch reads of streak rows (the state read, rows by key, the ingest store's locks ahead, the achievements) seek each key, even on plans made while the tables were empty", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "rowplan_" })
      const storage = PgStorage.make(sql, "rowplan_")
      const streaks = Context.get(storage, StreakStore) as StreakStore["Type"] & StreakExtras
      const achievements = Context.get(storage, AchievementStore) as AchievementStore["Type"] & AchievementExtras
      const state = Context.get(storage, StateStore)
      const keys = (round: number) =>
        Array.from(
          { length: 10 },
          (_, i) =>
            new StreakKey({
              projectId: "prj_plan" as ProjectId,
              programId: "prg_plan" as ProgramId,
              userHash: `u${round}-${i}` as UserHash,
              ledger: "live"
            })
        )
      const from = unsafeLocalDate("2025-01-01")
      const to = unsafeLocalDate("2025-01-31")
      const filler = (table: string, columns: string, values: string) =>
        sql.unsafe(`INSERT INTO rowplan_${table} (${columns}) SELECT ${values} FROM generate_series(1, 20000) g`)
      const scanned = yield* scansAfterGrowth(
        "rowplan_",
        ["streaks", "members", "aliases", "activity_days", "achievements"],
        (round) =>
          Effect.all([
            state.standing(keys(round), from, to),
            streaks.rows({ keys: keys(round) }),
            streaks.lockExistingWithAchieved(keys(round).map((key) => ({ key, withAchieved: false }))),
            streaks.lockExistingWithAchieved(keys(round).map((key) => ({ key, withAchieved: true }))),
            achievements.achievedIds(keys(round)),
            achievements.achieved(keys(round))
          ]),
        Effect.all([
          filler(
            "streaks",
            "project_id, program_id, user_hash, ledger, run, best, timezone, updated_at",
            "'prj_plan', 'prg_plan', 'filler-' || g, 'live', 1, 1, 'UTC', now()"
          ),
          filler("members", "project_id, user_hash, timezone", "'prj_plan', 'filler-' || g, 'UTC'"),
          filler("aliases", "project_id, anonymous_id, user_hash", "'prj_plan', 'anon-' || g, 'filler-' || g"),
          filler(
            "activity_days",
            "project_id, program_id, user_hash, ledger, day",
            "'prj_plan', 'prg_plan', 'filler-' || g, 'live', date '2025-01-10'"
          ),
          filler(
            "achievements",
            "project_id, program_id, user_hash, ledger, milestone_id, achieved_at",
            "'prj_plan', 'prg_plan', 'filler-' || g, 'live', 'ms_1', now()"
          )
        ])
      )
      assert.strictEqual(scanned, 0, "no scan of a whole table")
    }))

  it.effect("the due sweep's claims walk their partial indexes, even on plans made while the tables were empty", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "dueplan_" })
      const storage = PgStorage.make(sql, "dueplan_")
      const streaks = Context.get(storage, StreakStore)
      const outbox = Context.get(storage, Outbox)
      const now = new Date("2025-01-15T12:00:00Z")
      const scanned = yield* scansAfterGrowth(
        "dueplan_",
        ["streaks", "outbox"],
        () => Effect.all([streaks.claimDue(now, 10), outbox.claimDue(now, 10, new Date(now.getTime() + 60_000))]),
        // Rows due later: the claims find none, and must not read them all to say so. (A scan
        // of the empty outbox would count as well.)
        sql.unsafe(
          `INSERT INTO dueplan_streaks (project_id, program_id, user_hash, ledger, run, best, timezone, updated_at, due_at)
          SELECT 'prj_plan', 'prg_plan', 'filler-' || g, 'live', 1, 1, 'UTC', now(), timestamptz '2025-02-01' FROM generate_series(1, 20000) g`
        )
      )
      assert.strictEqual(scanned, 0, "no scan of a whole table")
    }))

  it.scoped("each open connection of a pool writes the report rollups in a slot of its own", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      for (const prepare of [true, false]) {
        const sql = yield* PgConnection.make({ url, maxConnections: 6, prepare }).pipe(Effect.provide(Reactivity.layer))
        const { pool } = Pools.poolOf(sql)!
        const slots = yield* Effect.promise(async () => {
          const clients = await Promise.all(Array.from({ length: 6 }, () => pool.connect()))
          const answers = await Promise.all(
            clients.map((c) => c.query(`SELECT ${slot} AS slot, current_setting('streaks.rollup_slot') AS set`))
          )
          for (const c of clients) c.release()
          return answers.map((a) => a.rows[0] as { slot: number; set: string })
        })
        assert.strictEqual(new Set(slots.map((s) => s.slot)).size, 6, `distinct slots (prepare: ${prepare})`)
        for (const s of slots) {
          assert.isTrue(s.slot >= 0 && s.slot < 16)
          assert.strictEqual(String(s.slot), s.set, "the slot the connection was given, not its pid's")
        }
      }
    }))

  it.scoped("with prepare: false (for PgBouncer in transaction mode) nothing is prepared", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      const sql = yield* PgConnection.make({ url, maxConnections: 1, prepare: false }).pipe(
        Effect.provide(Reactivity.layer)
      )
      const { query, tx } = adapterOn(sql)
      yield* tx.withTransaction(Effect.gen(function*() {
        yield* Effect.forEach([1, 2], (n) => query(sql`SELECT ${n}::int AS v /* prep_e */`))
        assert.deepStrictEqual(yield* preparedOf(sql, "prep_e"), [])
      }))
      // Unnamed statements are planned at every call anyway: the connection keeps the server's setting.
      const mode = yield* sql<{ readonly plan_cache_mode: string }>`SHOW plan_cache_mode`
      assert.strictEqual(mode[0]!.plan_cache_mode, "auto")
    }))
})

/** Values that an array literal must quote or escape, each of which must come back as it was sent. */
const awkward = ["plain", "", "NULL", null, "say \"hi\"", "C:\\dir\\", "a,b", "{x}", " padded ", "é😀", "'quoted'"]

const roundTrip = (sql: SqlClient.SqlClient) =>
  Effect.map(
    adapterOn(sql).query(
      sql`SELECT v, n::int FROM unnest(${awkward}::text[], ${[1.5, -2, 3]}::float8[]) WITH ORDINALITY AS t (v, f, n)
        /* prep_arrays */`
    ),
    (rows) => rows.map((r) => r.v)
  )

layer(PgTest.layer, { timeout: "120 seconds" })("PgConnection array parameters", (it) => {
  it.effect("arrays reach Postgres element for element on the service's pool", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      assert.deepStrictEqual(yield* roundTrip(sql), awkward)
      assert.deepStrictEqual(yield* adapterOn(sql).tx.withTransaction(roundTrip(sql)), awkward)
    }))

  it.scoped("and with prepare: false", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      const sql = yield* PgConnection.make({ url, maxConnections: 1, prepare: false }).pipe(
        Effect.provide(Reactivity.layer)
      )
      assert.deepStrictEqual(yield* roundTrip(sql), awkward)
    }))
})
