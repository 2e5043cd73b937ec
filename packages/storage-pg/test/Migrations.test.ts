/**
 * Migrations: idempotent, safe when replicas start at once, and confined to their table prefix.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import * as Migrations from "../src/Migrations.js"
import * as PgTest from "../src/PgTest.js"

/** A separate connection pool on the test database, as a second replica would have. */
const pool = Effect.flatMap(
  PgTest.url,
  (url) =>
    Effect.map(Layer.build(PgClient.layer({ url, maxConnections: 2 })), (ctx) => Context.get(ctx, SqlClient.SqlClient))
)

const runOn = (sql: SqlClient.SqlClient, options: Migrations.Options) =>
  Migrations.run(options).pipe(Effect.provideService(SqlClient.SqlClient, sql))

const exists = (table: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => Effect.map(sql`SELECT to_regclass(${table}) IS NOT NULL AS ok`, (rows) => rows[0]?.ok === true)
  )

const applied = (prefix: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      Effect.map(sql.unsafe<{ readonly n: number }>(`SELECT count(*)::int AS n FROM "${prefix}migrations"`), (rows) =>
        Number(rows[0]?.n))
  )

/** How `information_schema` describes some columns of some tables, by table and column. */
const columnsOf = (tables: ReadonlyArray<string>, columns: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{
      readonly table: string
      readonly column: string
      readonly type: string
      readonly nullable: string
      readonly fallback: string | null
      readonly collation: string | null
    }>`SELECT table_name AS table, column_name AS column, data_type AS type, is_nullable AS nullable,
        column_default AS fallback, collation_name AS collation
      FROM information_schema.columns WHERE ${sql.in("table_name", tables)} AND ${sql.in("column_name", columns)}
      ORDER BY 1, 2`)

/** Every migration's id, in order. */
const ids = Object.keys(Migrations.migrations("x_")).map((key) => Number(key.slice(0, 4)))

layer(PgTest.layer, { timeout: "120 seconds" })("Migrations", (it) => {
  it.effect("running the migrations twice applies them once and then does nothing", () =>
    Effect.gen(function*() {
      const first = yield* Migrations.run({ prefix: "twice_" })
      const second = yield* Migrations.run({ prefix: "twice_" })
      assert.deepStrictEqual(first.map(([id]) => id), ids)
      assert.deepStrictEqual(second, [])
      assert.strictEqual(yield* applied("twice_"), ids.length)
    }))

  it.scoped("concurrent runs on two pools (as replicas starting at once) all succeed and migrate once", () =>
    Effect.gen(function*() {
      const a = yield* pool
      const b = yield* pool
      const results = yield* Effect.all(
        [
          runOn(a, { prefix: "race_" }),
          runOn(b, { prefix: "race_" }),
          runOn(a, { prefix: "race_" }),
          runOn(b, { prefix: "race_" })
        ],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.reduce((n, r) => n + r.length, 0), ids.length)
      assert.strictEqual(yield* applied("race_"), ids.length)
      assert.isTrue(yield* exists("race_streaks"))
    }))

  it.effect("the prefix option creates prefixed tables and a prefixed migrations table", () =>
    Effect.gen(function*() {
      yield* Migrations.run({ prefix: "acme_" })
      for (
        const table of ["projects", "programs", "streaks", "activity_days", "outbox", "idempotency_keys", "migrations"]
      ) {
        assert.isTrue(yield* exists(`acme_${table}`), `acme_${table}`)
      }
      assert.isFalse(yield* exists("acme_effect_sql_migrations"))
    }))

  it.effect("without options the tables are prefixed streaks_", () =>
    Effect.gen(function*() {
      yield* Migrations.run()
      assert.isTrue(yield* exists("streaks_projects"))
      assert.isTrue(yield* exists("streaks_migrations"))
    }))

  it.effect("a prefix that is not a plain lower-case identifier is refused before any SQL runs", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Migrations.run({ prefix: "x\"; DROP TABLE y; --" }))
      assert.strictEqual(error._tag, "MigrationError")
    }))

  it.effect("due streak rows and pending messages are claimed through their partial indexes", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "plan_" })
      // Tables are empty, so the planner would rightly prefer a scan; forbid it to prove the
      // index can serve the claim at all (the cost then follows the due rows, not the table).
      const plan = (query: string) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql.unsafe("SET LOCAL enable_seqscan = off")
          const rows = yield* sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${query}`)
          return rows.map((r) => String(r["QUERY PLAN"])).join("\n")
        }))
      const streaks = yield* plan(
        "SELECT * FROM plan_streaks WHERE due_at <= now() ORDER BY due_at LIMIT 10 FOR UPDATE SKIP LOCKED"
      )
      assert.include(streaks, "plan_streaks_due")
      const outbox = yield* plan(
        "SELECT id FROM plan_outbox WHERE status = 'pending' AND next_attempt_at <= now() ORDER BY next_attempt_at, created_at, id LIMIT 10 FOR UPDATE SKIP LOCKED"
      )
      assert.include(outbox, "plan_outbox_due")
    }))

  it.effect("an action pays only the indexes that something reads, and a streak row has room for a HOT update", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "idx_" })
      const indexes = (table: string) =>
        Effect.map(
          sql<
            { readonly indexname: string }
          >`SELECT indexname FROM pg_indexes WHERE tablename = ${table} ORDER BY indexname`,
          (rows) => rows.map((r) => r.indexname)
        )
      // The streak row's key and due instant; the log's by program (reports).
      assert.deepStrictEqual(yield* indexes("idx_streaks"), ["idx_streaks_due", "idx_streaks_pkey"])
      assert.deepStrictEqual(yield* indexes("idx_actions"), ["idx_actions_program_ts"])
      const [options] = yield* sql<{ readonly reloptions: ReadonlyArray<string> | null }>`
        SELECT reloptions FROM pg_class WHERE relname = 'idx_streaks'`
      assert.deepStrictEqual(options?.reloptions, ["fillfactor=80"])
    }))

  it.effect("a streak row has room for its achieved milestones, not known (NULL) until the adapter sets it", () =>
    Effect.gen(function*() {
      yield* Migrations.run({ prefix: "copy_" })
      const columns = yield* columnsOf(["copy_streaks"], ["achieved"])
      assert.deepStrictEqual(columns.map(({ fallback, nullable, type }) => ({ type, nullable, fallback })), [
        { type: "ARRAY", nullable: "YES", fallback: null }
      ])
    }))

  it.effect("the per-action tables compare their keys bytewise, and a seek with text parameters still uses the key", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run({ prefix: "coll_" })
      const keys = yield* columnsOf(
        ["coll_streaks", "coll_activity_days", "coll_achievements", "coll_usage", "coll_members", "coll_aliases"],
        [
          "project_id",
          "program_id",
          "user_hash",
          "ledger",
          "milestone_id",
          "anonymous_id",
          "workspace_id",
          "month",
          "member"
        ]
      )
      assert.strictEqual(keys.length, 21)
      assert.deepStrictEqual(keys.filter((k) => k.collation !== "C"), [])
      // Parameters arrive as text of the database's collation; the column's "C" wins (a
      // collation conflict would leave the key unusable and the seek a scan of the table).
      const plan = yield* sql.unsafe<{ readonly "QUERY PLAN": string }>(
        `EXPLAIN SELECT * FROM coll_streaks s JOIN unnest($1::text[], $2::text[]) AS k(program_id, user_hash)
           ON s.project_id = $3 AND s.program_id = k.program_id AND s.user_hash = k.user_hash AND s.ledger = 'live'`,
        ["{p}", "{u}", "prj"]
      )
      assert.include(plan.map((r) => r["QUERY PLAN"]).join("\n"), "coll_streaks_pkey")
    }))
})
