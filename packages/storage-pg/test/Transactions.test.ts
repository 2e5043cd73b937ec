/**
 * The Postgres `Transactor` (`internal/Transactions.ts`): `BEGIN` goes out with the first statement
 * on a pipelining pool, with generic plans for the transaction, and a connection that shows no
 * node-postgres client falls back to `sql.withTransaction`; either way a unit of work commits or
 * rolls back as one.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Transactions from "../src/internal/Transactions.js"
import * as PgTest from "../src/PgTest.js"

/** The same client, but its reserved connections hide their node-postgres client (another driver version). */
const hidingClient = (sql: SqlClient.SqlClient): SqlClient.SqlClient =>
  Object.assign(Object.create(sql) as SqlClient.SqlClient, {
    reserve: Effect.map(sql.reserve, (connection) => ({ ...connection, pg: undefined }))
  })

const count = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(sql.unsafe<{ readonly n: number }>(`SELECT count(*)::int AS n FROM ${table}`), (rows) => rows[0]!.n)

layer(PgTest.layer, { timeout: "120 seconds" })("Postgres Transactor", (it) => {
  for (const [name, clientOf] of [["BEGIN sent ahead", (sql: SqlClient.SqlClient) => sql], ["fallback", hidingClient]] as const) {
    it.effect(`${name}: a unit of work commits as one, and a failing one leaves nothing behind`, () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const table = `tx_${name.replace(/\W/g, "_").toLowerCase()}`
        yield* sql.unsafe(`CREATE TABLE ${table} (v int)`)
        const tx = Transactions.make(clientOf(sql), true)
        const insert = (v: number) => sql.unsafe(`INSERT INTO ${table} VALUES (${v})`)

        // The first call is the one that finds out whether `BEGIN` can go ahead.
        const failed = yield* Effect.flip(tx.withTransaction(Effect.zipRight(insert(1), Effect.fail("no" as const))))
        assert.strictEqual(failed, "no")
        assert.strictEqual(yield* count(sql, table), 0)

        yield* tx.withTransaction(Effect.all([insert(2), insert(3)]))
        assert.strictEqual(yield* count(sql, table), 2)

        // Later transactions: the connection went back to the pool clean.
        const again = yield* Effect.flip(tx.withTransaction(Effect.zipRight(insert(4), Effect.fail("no" as const))))
        assert.strictEqual(again, "no")
        yield* tx.withTransaction(insert(5))
        assert.strictEqual(yield* count(sql, table), 3)
      }))
  }

  it.effect("BEGIN sent ahead: a transaction plans its statements generically, and the connection keeps its own setting after it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tx = Transactions.make(sql, true)
      // A batch statement's shape: keys as an array. Under `auto`, Postgres plans each call anew.
      const batch = (keys: ReadonlyArray<string>) =>
        sql<{ readonly k: string }>`SELECT k FROM unnest(${keys}::text[]) AS k /* tx_generic */`
      const plans = yield* tx.withTransaction(Effect.gen(function*() {
        for (let n = 1; n <= 7; n++) yield* batch(Array.from({ length: n }, (_, i) => `key${i}`))
        const mode = yield* sql<{ readonly plan_cache_mode: string }>`SHOW plan_cache_mode`
        const counts = yield* sql<{ readonly generic: number; readonly custom: number }>`
          SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
          WHERE statement LIKE '%tx_generic%' AND statement NOT LIKE '%pg_prepared_statements%'`
        return { mode: mode[0]!.plan_cache_mode, counts }
      }))
      assert.strictEqual(plans.mode, "force_generic_plan")
      assert.deepStrictEqual(plans.counts, [{ generic: 7, custom: 0 }])
      // SET LOCAL ended with the transaction: the pool's connections plan reads as the server says.
      const after = yield* sql<{ readonly plan_cache_mode: string }>`SHOW plan_cache_mode`
      assert.strictEqual(after[0]!.plan_cache_mode, "auto")
    }))
})
