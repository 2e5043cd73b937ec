/**
 * The Postgres `Transactor` (`internal/Transactions.ts`): `BEGIN` goes out with the first statement
 * on a pipelining pool, and a connection that shows no node-postgres client falls back to
 * `sql.withTransaction`; either way a unit of work commits or rolls back as one.
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
  for (
    const [name, clientOf] of [["BEGIN sent ahead", (sql: SqlClient.SqlClient) => sql], [
      "fallback",
      hidingClient
    ]] as const
  ) {
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
})
