/**
 * The service's pool does not wait on a hung database: a statement held up (here by a lock another
 * connection keeps) is cancelled after the statement timeout, and a storage port reports it as a
 * `StorageError` (which the HTTP layer answers 503).
 */
import { assert, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Ports } from "@streaks/core"
import type { ProgramId } from "@streaks/core/Ids"
import { Effect, Fiber, Layer, Redacted } from "effect"
import pg from "pg"
import * as Pools from "../src/internal/pools.js"
import * as Migrations from "../src/Migrations.js"
import * as PgConnection from "../src/PgConnection.js"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

/** A second connection that holds an exclusive lock on `table` until the scope closes. */
const lockHeld = (table: string) =>
  Effect.acquireRelease(
    Effect.flatMap(PgTest.url, (url) =>
      Effect.promise(async () => {
        const client = new pg.Client({ connectionString: Redacted.value(url) })
        await client.connect()
        await client.query("BEGIN")
        await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
        return client
      })),
    (client) => Effect.promise(() => client.query("ROLLBACK").then(() => client.end()))
  )

/** The service's pool (`PgConnection.layerUrl`) on the test database, with `options`. */
const servicePool = <A, E>(
  options: PgConnection.PoolOptions,
  use: Effect.Effect<A, E, SqlClient.SqlClient | Ports.Outbox>
) =>
  Effect.flatMap(
    PgTest.url,
    (url) => Effect.provide(use, PgStorage.layer().pipe(Layer.provideMerge(PgConnection.layerUrl(url, options))))
  )

const elapsed = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = Date.now()
    const exit = yield* Effect.exit(self)
    return { exit, ms: Date.now() - started }
  })

layer(PgTest.layer, { timeout: "120 seconds" })("the service's pool", (it) => {
  it.scoped("a statement blocked by another connection's lock fails after the statement timeout, as a StorageError from a port", () =>
    Effect.gen(function*() {
      // Migrate first, with the default pool, so the tables exist.
      yield* servicePool({}, Effect.void)
      yield* lockHeld("streaks_outbox")
      const result = yield* servicePool(
        { statementTimeout: "500 millis" },
        elapsed(
          Effect.flatMap(
            Ports.Outbox,
            (outbox) => outbox.recentDelivered("prg_blocked" as ProgramId, "milestone.achieved", 10)
          )
        )
      )
      assert.isTrue(result.exit._tag === "Failure")
      if (result.exit._tag === "Failure") {
        const error = result.exit.cause._tag === "Fail" ? result.exit.cause.error : undefined
        assert.strictEqual(error?._tag, "StorageError")
      }
      assert.isAtLeast(result.ms, 400)
      assert.isBelow(result.ms, 3_000)
    }))

  it.scoped("the default statement timeout is five seconds", () =>
    servicePool(
      {},
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ statement_timeout: string }>`SHOW statement_timeout`
        assert.strictEqual(rows[0]?.statement_timeout, "5s")
      })
    ))

  it.scoped("migrations wait for another replica's run longer than the statement timeout", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      // Another replica migrating: it holds the migrations' advisory lock for 1.5 s.
      const other = new pg.Client({ connectionString: Redacted.value(url) })
      yield* Effect.promise(async () => {
        await other.connect()
        await other.query("BEGIN")
        await other.query(`SELECT pg_advisory_xact_lock(${Migrations.lockKey})`)
      })
      const release = Effect.promise(() => other.query("COMMIT").then(() => other.end()))
      const migrated = yield* Effect.fork(
        Effect.provide(
          Migrations.run({ prefix: "waits_" }),
          PgConnection.layerUrl(url, { statementTimeout: "500 millis" })
        )
      )
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1500)))
      yield* release
      const applied = yield* Fiber.join(migrated)
      assert.isAbove(applied.length, 0)
    }))

  it.scoped("connections use TCP keep-alive", () =>
    Effect.gen(function*() {
      const url = yield* PgTest.url
      const client = yield* Effect.provide(PgClient.PgClient, PgConnection.layerUrl(url))
      const pool = Pools.poolOf(client)
      assert.isDefined(pool)
      const options = pool!.pool.options as { keepAlive?: boolean; keepAliveInitialDelayMillis?: number }
      assert.strictEqual(options.keepAlive, true)
      assert.isAbove(options.keepAliveInitialDelayMillis ?? 0, 0)
    }))
})
