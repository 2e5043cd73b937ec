/**
 * Test harness for every package that needs Postgres: each build of `layer` (so each test file
 * using `layer(PgTest.layer)`) gets its own fresh, empty database, dropped afterwards.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Distribution from "./Distribution.js"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"
import * as Migrations from "./Migrations.js"
import * as PgConnection from "./PgConnection.js"

/** The database a test runs on, for tests that need a raw URL (a second process, psql, ...). */
export interface TestDatabase {
  readonly database: string
  /** `postgres://` URL of the test database (may embed a password, hence redacted). */
  readonly url: Redacted.Redacted<string>
  /** `"url"`: a database on DATABASE_URL's server; `"embedded"`: a throwaway embedded cluster. */
  readonly source: "url" | "embedded"
  /** The throwaway cluster's data directory (embedded only); gone once the scope closed. */
  readonly dataDir?: string
}

export class PgTestDatabase extends Context.Tag("@streaks/storage-pg/PgTest/PgTestDatabase")<
  PgTestDatabase,
  TestDatabase
>() {}

/** URL of the current test database. */
export const url: Effect.Effect<Redacted.Redacted<string>, never, PgTestDatabase> = Effect.map(
  PgTestDatabase,
  (db) => db.url
)

/**
 * A fresh database per build. With `DATABASE_URL` set (CI): `CREATE DATABASE streaks_t_<random>`
 * on that server, `DROP DATABASE … WITH (FORCE)` when the scope closes. Without it (a fresh
 * machine): a throwaway embedded cluster in a new temp directory on a free port, deleted after.
 */
export const layer: Layer.Layer<
  PgClient.PgClient | SqlClient.SqlClient | PgTestDatabase,
  SqlError.SqlError | EmbeddedPostgres.EmbeddedPostgresError
> = Layer.scopedContext(Effect.gen(function*() {
  const adminUrl = yield* Config.option(Config.string("DATABASE_URL")).pipe(
    Effect.map(Option.filter((s) => s.trim() !== "")),
    Effect.orDie // a string setting cannot be invalid, only missing
  )
  const database = `streaks_t_${randomBytes(6).toString("hex")}`
  // Acquired in this order in one scope, so released in reverse: pool, then database/cluster.
  const db = Option.isSome(adminUrl) ? yield* onServer(adminUrl.value, database) : yield* embedded(database)
  const client = yield* PgConnection.make({
    url: db.url,
    maxConnections: 5,
    idleTimeout: "10 seconds",
    applicationName: "streaks-test"
  })
  return Context.make(PgClient.PgClient, client).pipe(
    Context.add(SqlClient.SqlClient, client),
    Context.add(PgTestDatabase, db)
  )
})).pipe(Layer.provide(Reactivity.layer))

const onServer = (adminUrl: string, database: string) =>
  Effect.acquireRelease(
    Effect.as(
      admin(adminUrl, (sql) => sql`create database ${sql(database)}`).pipe(
        Effect.zipRight(citus(adminUrl, database))
      ),
      {
        database,
        url: Redacted.make(withDatabase(adminUrl, database)),
        source: "url"
      } satisfies TestDatabase
    ),
    // FORCE: a connection some test leaked must not keep the database alive.
    () =>
      admin(adminUrl, (sql) => sql`drop database if exists ${sql(database)} with (force)`).pipe(
        Effect.catchAll((e) => Effect.logWarning(`could not drop test database ${database}`, e))
      )
  )

// A short-lived single connection, so that no admin session stays open during the tests.
const admin = <A>(
  adminUrl: string,
  f: (sql: PgClient.PgClient) => Effect.Effect<A, SqlError.SqlError>
) =>
  Effect.flatMap(PgClient.PgClient, f).pipe(
    Effect.provide(
      PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1, applicationName: "streaks-test-admin" })
    )
  )

/**
 * `STREAKS_TEST_CITUS_WORKERS=host:port,…` (`DATABASE_URL` on a Citus coordinator whose
 * `citus.enable_create_database_propagation` is on): each test database gets the extension on
 * every node and the workers, then the migrations under the default prefix and the tables
 * distributed (`Distribution.run`), so that a test of the service runs on a distributed schema.
 * docs/scaling.md#running-the-tests-on-citus.
 */
const citus = (adminUrl: string, database: string) =>
  Effect.gen(function*() {
    const workers = yield* Config.string("STREAKS_TEST_CITUS_WORKERS").pipe(
      Config.withDefault(""),
      Effect.orDie,
      Effect.map((text) => text.split(",").map((w) => w.trim()).filter((w) => w !== ""))
    )
    if (workers.length === 0) return
    const here = withDatabase(adminUrl, database)
    for (const worker of workers) {
      const url = new URL(here)
      url.host = worker
      yield* admin(url.toString(), (sql) => sql`create extension if not exists citus`)
    }
    const coordinator = new URL(here)
    yield* admin(here, (sql) =>
      Effect.gen(function*() {
        yield* sql`create extension if not exists citus`
        yield* sql`select citus_set_coordinator_host(${coordinator.hostname}, ${Number(coordinator.port || 5432)})`
        for (const worker of workers) {
          const [host, port] = worker.split(":")
          yield* sql`select citus_add_node(${host!}, ${Number(port ?? 5432)})`
        }
        yield* Migrations.run().pipe(Effect.orDie)
        yield* Distribution.run()
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
  })

const embedded = (database: string) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "streaks-pg-"))
          await Fs.chmod(dir, 0o755) // mkdtemp gives 0700; as root, OS user postgres must traverse it
          return dir
        },
        catch: (cause) =>
          new EmbeddedPostgres.EmbeddedPostgresError({
            message: "cannot create a temp dir",
            dataDir: "",
            log: [],
            cause
          })
      }),
      (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
    )
    const pg = yield* EmbeddedPostgres.make({
      dataDir: Path.join(dir, "data"),
      database,
      persistent: false // throwaway: no fsync, directory deleted on stop
    })
    return { database, url: pg.url, source: "embedded", dataDir: dir } satisfies TestDatabase
  })

const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}
