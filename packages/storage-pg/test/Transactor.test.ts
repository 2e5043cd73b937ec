/**
 * The Postgres `Transactor` (`internal/transactor.ts`): on a pool made by `PgConnection`, `BEGIN`
 * goes out with the first statement on a client the transactor reserves itself; on a client made
 * elsewhere it is `sql.withTransaction`. Either way a unit of work commits or rolls back as one,
 * and statements of `@effect/sql` inside it run on the transaction's connection.
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import * as Pools from "../src/internal/pools.js"
import * as Transactions from "../src/internal/transactor.js"
import * as PgTest from "../src/PgTest.js"

const count = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(sql.unsafe<{ readonly n: number }>(`SELECT count(*)::int AS n FROM ${table}`), (rows) => rows[0]!.n)

/** A client of `@effect/sql-pg`'s own on the test database: no pool registered behind it. */
const foreign = Effect.flatMap(
  PgTest.url,
  (url) =>
    Effect.map(Layer.build(PgClient.layer({ url, maxConnections: 2 })), (ctx) => Context.get(ctx, SqlClient.SqlClient))
)

layer(PgTest.layer, { timeout: "120 seconds" })("Postgres Transactor", (it) => {
  for (const name of ["BEGIN sent ahead", "sql.withTransaction"] as const) {
    it.scoped(`${name}: a unit of work commits as one, and a failing one leaves nothing behind`, () =>
      Effect.gen(function*() {
        const sql = name === "BEGIN sent ahead" ? yield* SqlClient.SqlClient : yield* foreign
        assert.strictEqual(Pools.poolOf(sql) !== undefined, name === "BEGIN sent ahead")
        const table = `tx_${name.replace(/\W/g, "_").toLowerCase()}`
        yield* sql.unsafe(`CREATE TABLE ${table} (v int)`)
        const tx = Transactions.make(sql, Pools.poolOf(sql))
        const insert = (v: number) => sql`INSERT INTO ${sql(table)} VALUES (${v})`

        const failed = yield* Effect.flip(tx.withTransaction(Effect.zipRight(insert(1), Effect.fail("no" as const))))
        assert.strictEqual(failed, "no")
        assert.strictEqual(yield* count(sql, table), 0)

        yield* tx.withTransaction(Effect.all([insert(2), insert(3)], { concurrency: "unbounded" }))
        assert.strictEqual(yield* count(sql, table), 2)

        // A nested transaction is a savepoint of the outer one: rolled back alone, committed with it.
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* insert(4)
          yield* Effect.flip(tx.withTransaction(Effect.zipRight(insert(5), Effect.fail("inner" as const))))
          // Inside the transaction its own rows are seen; outside, nothing yet.
          assert.strictEqual(yield* count(sql, table), 3)
        }))
        assert.strictEqual(yield* count(sql, table), 3)

        // Later transactions: the connection went back to the pool clean.
        const again = yield* Effect.flip(tx.withTransaction(Effect.zipRight(insert(6), Effect.fail("no" as const))))
        assert.strictEqual(again, "no")
        yield* tx.withTransaction(insert(7))
        assert.strictEqual(yield* count(sql, table), 4)
      }))
  }
})
