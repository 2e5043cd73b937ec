/**
 * The service's pool prepares parameterised statements once per connection (`PgConnection.make`),
 * on generic plans, and that changes nothing a caller sees: results, errors, transactions and
 * multi-statement texts.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Effect } from "effect"
import * as PgConnection from "../src/PgConnection.js"
import * as PgTest from "../src/PgTest.js"

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
      yield* sql.withTransaction(Effect.gen(function*() {
        const answers = yield* Effect.forEach([1, 2, 3], (n) => sql<{ readonly v: number }>`SELECT ${n}::int + 1 AS v /* prep_a */`)
        assert.deepStrictEqual(answers.map((rows) => rows[0]!.v), [2, 3, 4])
        const names = yield* preparedOf(sql, "prep_a")
        assert.strictEqual(names.length, 1, "one named statement for three calls of one text")
      }))
    }))

  it.effect("a statement without values runs unnamed, so a text of several statements still works", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql.unsafe(`CREATE TEMP TABLE prep_multi (v int); INSERT INTO prep_multi VALUES (1), (2)`)
        const rows = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM prep_multi WHERE v > ${0}`
        assert.strictEqual(rows[0]!.n, 2)
        assert.deepStrictEqual(yield* preparedOf(sql, "CREATE TEMP TABLE prep_multi"), [])
      }))
    }))

  it.effect("a failing prepared statement reports its error, and the same text works afterwards", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const divide = (d: number) => sql<{ readonly q: number }>`SELECT 10 / ${d}::int AS q /* prep_b */`
      const failed = yield* Effect.either(divide(0))
      assert.isTrue(failed._tag === "Left", "division by zero fails")
      const rows = yield* divide(5)
      assert.strictEqual(rows[0]!.q, 2)
      // A text that does not even parse is not remembered as prepared either.
      const broken = yield* Effect.either(sql`SELEC ${1}::int /* prep_c */`)
      assert.isTrue(broken._tag === "Left")
      const again = yield* Effect.either(sql`SELEC ${1}::int /* prep_c */`)
      assert.isTrue(again._tag === "Left", "still a syntax error, not 'prepared statement does not exist'")
      assert.include(String((again as { left: { cause: unknown } }).left.cause), "syntax error")
    }))

  it.effect("a rolled-back transaction leaves the connection's statements usable", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const probe = (n: number) => sql<{ readonly v: number }>`SELECT ${n}::int AS v /* prep_d */`
      yield* Effect.either(sql.withTransaction(Effect.zipRight(probe(1), Effect.fail("rollback" as const))))
      const rows = yield* sql.withTransaction(probe(7))
      assert.strictEqual(rows[0]!.v, 7)
    }))

  it.effect("a statement that takes keys as an array runs on one generic plan, not one made at every call, and the pool's sessions keep that mode", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // A batch statement's shape. Under Postgres's default `auto`, small arrays kept it on a
      // plan made anew at every call.
      const batch = (n: number) =>
        sql<{ readonly k: string }>`SELECT k FROM unnest(${Array.from({ length: n }, (_, i) => `key${i}`)}::text[]) AS k /* prep_generic */`
      const counts = yield* sql.withTransaction(Effect.gen(function*() {
        for (let n = 1; n <= 7; n++) yield* batch(n)
        return (yield* statementsOf(sql, "prep_generic")).map(({ custom, generic }) => ({ generic, custom }))
      }))
      assert.deepStrictEqual(counts, [{ generic: 7, custom: 0 }])
      const mode = yield* sql<{ readonly plan_cache_mode: string }>`SHOW plan_cache_mode`
      assert.strictEqual(mode[0]!.plan_cache_mode, "force_generic_plan")
    }))

  it.scoped("with prepare: false (for PgBouncer in transaction mode) nothing is prepared", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      const sql = yield* PgConnection.make({ url, maxConnections: 1, prepare: false }).pipe(Effect.provide(Reactivity.layer))
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* Effect.forEach([1, 2], (n) => sql`SELECT ${n}::int AS v /* prep_e */`)
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
    sql<{ readonly v: string | null; readonly n: number }>`SELECT v, n::int FROM unnest(${awkward}::text[], ${[1.5, -2, 3]}::float8[]) WITH ORDINALITY AS t (v, f, n) /* prep_arrays */`,
    (rows) => rows.map((r) => r.v)
  )

layer(PgTest.layer, { timeout: "120 seconds" })("PgConnection array parameters", (it) => {
  it.effect("arrays reach Postgres element for element on the service's pool", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      assert.deepStrictEqual(yield* roundTrip(sql), awkward)
      assert.deepStrictEqual(yield* sql.withTransaction(roundTrip(sql)), awkward)
    }))

  it.scoped("and with prepare: false", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      const sql = yield* PgConnection.make({ url, maxConnections: 1, prepare: false }).pipe(Effect.provide(Reactivity.layer))
      assert.deepStrictEqual(yield* roundTrip(sql), awkward)
    }))
})
