/**
 * The test harness: every build of PgTest.layer gets its own fresh database, on DATABASE_URL's
 * server when set and on a throwaway embedded cluster otherwise, and leaves nothing behind.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as PgConnection from "../src/PgConnection.js"
import * as PgTest from "../src/PgTest.js"

const databaseUrl = process.env.DATABASE_URL === "" ? undefined : process.env.DATABASE_URL

const build = Effect.map(Layer.build(PgTest.layer), (ctx) => ({
  sql: Context.get(ctx, PgClient.PgClient),
  db: Context.get(ctx, PgTest.PgTestDatabase)
}))

// Without DATABASE_URL each build runs initdb, which can take seconds on a loaded machine.
const CLUSTER_TIMEOUT = 60_000

const exists = (path: string) => Effect.promise(() => Fs.access(path).then(() => true, () => false))

layer(PgTest.layer)("PgTest.layer", (it) => {
  it.effect("gives an empty database named streaks_t_*", () =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const db = yield* PgTest.PgTestDatabase
      assert.match(db.database, /^streaks_t_[0-9a-f]{12}$/)
      assert.strictEqual(db.source, databaseUrl === undefined ? "embedded" : "url")
      const [row] = yield* sql<{ db: string; tables: number }>`
        select current_database() as db,
          (select count(*)::int from information_schema.tables where table_schema = 'public') as tables`
      assert.deepStrictEqual(row, { db: db.database, tables: 0 })
    }))

  it.effect("PgTest.url reaches the same database from a second pool", () =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`create table seen (id int)`
      yield* sql`insert into seen values (42)`
      const url = yield* PgTest.url
      const rows = yield* Effect.flatMap(PgClient.PgClient, (other) => other<{ id: number }>`select id from seen`).pipe(
        Effect.provide(PgConnection.layerUrl(url))
      )
      assert.deepStrictEqual(rows, [{ id: 42 }])
    }))
})

describe("PgTest.layer builds", () => {
  it.effect.skipIf(databaseUrl === undefined)(
    "with DATABASE_URL two builds get two databases, both dropped when their scopes close",
    () =>
      Effect.gen(function*() {
        const [a, b] = yield* Effect.scoped(Effect.gen(function*() {
          const a = yield* build
          const b = yield* build
          yield* a.sql`create table only_in_a (id int)`
          const inB = yield* b.sql<{ n: number }>`
            select count(*)::int as n from information_schema.tables where table_name = 'only_in_a'`
          assert.deepStrictEqual(inB, [{ n: 0 }])
          return [a.db, b.db] as const
        }))
        assert.notStrictEqual(a.database, b.database)
        const left = yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql<{ datname: string }>`select datname from pg_database where datname in (${a.database}, ${b.database})`)
          .pipe(
            Effect.provide(PgConnection.layerUrl(databaseUrl!))
          )
        assert.deepStrictEqual(left, [])
      }),
    CLUSTER_TIMEOUT
  )

  it.effect(
    "without DATABASE_URL a build runs on a throwaway embedded cluster, deleted afterwards",
    () =>
      Effect.gen(function*() {
        const db = yield* Effect.scoped(Effect.gen(function*() {
          const { db, sql } = yield* build
          const [row] = yield* sql<{ db: string }>`select current_database() as db`
          assert.strictEqual(row?.db, db.database)
          return db
        }))
        assert.strictEqual(db.source, "embedded")
        assert.isDefined(db.dataDir)
        assert.isFalse(yield* exists(db.dataDir!))
        // The cluster is gone too: its URL no longer connects.
        const after = yield* Effect.either(Effect.provide(Effect.void, PgConnection.layerUrl(db.url)))
        assert.strictEqual(after._tag, "Left")
      }).pipe(
        // Force the embedded path even when CI sets DATABASE_URL.
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      ),
    CLUSTER_TIMEOUT
  )

  it.effect("a connection left open does not keep a test database alive", () =>
    Effect.gen(function*() {
      const outer = yield* Effect.scope
      const db = yield* Effect.scoped(Effect.gen(function*() {
        const { db } = yield* build
        // A pool the harness does not know about, still open when the database goes away.
        const leaked = yield* Layer.build(PgConnection.layerUrl(db.url)).pipe(Scope.extend(outer))
        yield* Context.get(leaked, PgClient.PgClient)`select 1`
        return db
      }))
      if (db.source === "url") {
        const left = yield* Effect.flatMap(PgClient.PgClient, (sql) =>
          sql`select 1 from pg_database where datname = ${db.database}`).pipe(
            Effect.provide(PgConnection.layerUrl(databaseUrl!))
          )
        assert.deepStrictEqual(left, [])
      } else {
        assert.isFalse(yield* exists(db.dataDir!))
      }
    }).pipe(Effect.scoped), CLUSTER_TIMEOUT)
})
