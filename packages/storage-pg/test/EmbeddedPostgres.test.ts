/**
 * The embedded cluster: it starts, serves queries, shuts down cleanly, keeps its data across
 * restarts, and reports why when it cannot start.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as EmbeddedPostgres from "../src/EmbeddedPostgres.js"
import * as PgConnection from "../src/PgConnection.js"

// mkdtemp gives 0700; as root the cluster runs as OS user postgres, which must traverse it.
const tempDir = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "streaks-pg-test-"))
    await Fs.chmod(dir, 0o755)
    return dir
  }),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)

// These tests run initdb; on a loaded 2-core machine that alone can take several seconds.
const CLUSTER_TIMEOUT = 60_000

const exists = (path: string) => Effect.promise(() => Fs.access(path).then(() => true, () => false))

const acceptsConnections = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = Net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
  })

// The cluster and a pool on it, as the server composes them.
const cluster = (options: EmbeddedPostgres.Options) =>
  PgConnection.layerEmbedded().pipe(Layer.provideMerge(EmbeddedPostgres.layer(options)))

const dataDir = Path.join(Os.tmpdir(), `streaks-pg-layer-${process.pid}-${Date.now()}`)

layer(cluster({ dataDir, persistent: false, database: "app" }))("EmbeddedPostgres.layer", (it) => {
  it.effect("a new cluster starts and answers select 1 on its own database", () =>
    Effect.gen(function*() {
      const pg = yield* EmbeddedPostgres.EmbeddedPostgres
      const sql = yield* PgClient.PgClient
      assert.isTrue(pg.firstStart)
      assert.strictEqual(pg.host, "127.0.0.1")
      const rows = yield* sql<{ one: number; db: string }>`select 1 as one, current_database() as db`
      assert.deepStrictEqual(rows, [{ one: 1, db: "app" }])
    }))

  it.effect("a throwaway cluster is UTF8, uses scram-sha-256 passwords and skips fsync", () =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const [row] = yield* sql<{ enc: string; method: string; fsync: string; listen: string }>`
        select pg_encoding_to_char(encoding) as enc, current_setting('password_encryption') as method,
          current_setting('fsync') as fsync, current_setting('listen_addresses') as listen
        from pg_database where datname = current_database()`
      assert.deepStrictEqual(row, { enc: "UTF8", method: "scram-sha-256", fsync: "off", listen: "127.0.0.1" })
    }))

  it.effect("the url of the cluster connects with its password", () =>
    Effect.gen(function*() {
      const pg = yield* EmbeddedPostgres.EmbeddedPostgres
      assert.include(Redacted.value(pg.url), `@127.0.0.1:${pg.port}/app`)
      const rows = yield* Effect.flatMap(PgClient.PgClient, (sql) => sql`select 1 as one`).pipe(
        Effect.provide(PgConnection.layerUrl(pg.url))
      )
      assert.deepStrictEqual(rows, [{ one: 1 }])
    }))
})

describe("EmbeddedPostgres lifecycle", () => {
  it.effect(
    "a restart on the same directory reuses the cluster: rows survive, firstStart is false",
    () =>
      Effect.gen(function*() {
        const dataDir = Path.join(yield* tempDir, "nested", "pg")

        const first = yield* Effect.gen(function*() {
          const pg = yield* EmbeddedPostgres.EmbeddedPostgres
          const sql = yield* PgClient.PgClient
          yield* sql`create table kept (id int primary key, note text not null)`
          yield* sql`insert into kept values (1, 'written by the first run')`
          return pg
        }).pipe(Effect.provide(cluster({ dataDir })))

        assert.isTrue(first.firstStart)
        // A clean (fast) shutdown removes the lock file and closes the port.
        assert.isFalse(yield* exists(Path.join(dataDir, "postmaster.pid")))
        assert.isFalse(yield* acceptsConnections(first.port))

        const second = yield* Effect.gen(function*() {
          const pg = yield* EmbeddedPostgres.EmbeddedPostgres
          const sql = yield* PgClient.PgClient
          const rows = yield* sql<{ note: string }>`select note from kept where id = 1`
          return { pg, rows }
        }).pipe(Effect.provide(cluster({ dataDir })))

        assert.isFalse(second.pg.firstStart)
        assert.deepStrictEqual(second.rows, [{ note: "written by the first run" }])
        assert.isFalse(yield* exists(Path.join(dataDir, "postmaster.pid")))
      }).pipe(Effect.scoped),
    CLUSTER_TIMEOUT
  )

  it.effect(
    "the server's path (PgConnection.layer without a URL) reuses the cluster on a fixed port",
    () =>
      Effect.gen(function*() {
        const dataDir = Path.join(yield* tempDir, "pg")
        const port = yield* EmbeddedPostgres.freePort
        const server = PgConnection.layer({ url: Option.none(), dataDir, port })
        const query = <A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
          Effect.flatMap(PgClient.PgClient, f).pipe(Effect.provide(server))

        yield* query((sql) =>
          sql`create table kept (id int primary key)`.pipe(Effect.zipRight(sql`insert into kept values (7)`))
        )
        assert.isFalse(yield* acceptsConnections(port))
        const rows = yield* query((sql) =>
          sql<{ id: number; port: string; fsync: string }>`
          select id, current_setting('port') as port, current_setting('fsync') as fsync from kept`
        )
        // Persistent: the server's data is written durably.
        assert.deepStrictEqual(rows, [{ id: 7, port: String(port), fsync: "on" }])
      }).pipe(Effect.scoped),
    CLUSTER_TIMEOUT
  )

  it.effect("a second start on a running cluster attaches to it and leaves it running", () =>
    Effect.gen(function*() {
      const dataDir = Path.join(yield* tempDir, "pg")
      const first = yield* EmbeddedPostgres.make({ dataDir })
      // A second start on a directory whose cluster is running (e.g. `streaks demo` beside
      // `streaks serve`) attaches to it instead of starting a second postmaster.
      const second = yield* Effect.scoped(
        Effect.gen(function*() {
          const pg = yield* EmbeddedPostgres.make({ dataDir })
          const rows = yield* Effect.flatMap(PgClient.PgClient, (sql) => sql`select 1 as one`).pipe(
            Effect.provide(PgConnection.layerUrl(pg.url))
          )
          return { pg, rows }
        })
      )
      assert.strictEqual(second.pg.port, first.port)
      assert.deepStrictEqual(second.rows, [{ one: 1 }])
      // Closing the attached scope left the first cluster running.
      assert.isTrue(yield* acceptsConnections(first.port))
    }).pipe(Effect.scoped), CLUSTER_TIMEOUT)

  it.effect(
    "a throwaway cluster whose port is taken fails with the reason and leaves no directory",
    () =>
      Effect.gen(function*() {
        const dataDir = Path.join(yield* tempDir, "pg")
        const port = yield* occupiedPort
        const result = yield* Effect.either(Effect.scoped(EmbeddedPostgres.make({ dataDir, port, persistent: false })))
        assert.strictEqual(result._tag, "Left")
        if (result._tag === "Left") {
          assert.isTrue(result.left.log.some((l) => l.includes("Address already in use")), result.left.log.join("\n"))
          assert.include(result.left.message, "Address already in use")
        }
        assert.isFalse(yield* exists(dataDir))
      }).pipe(Effect.scoped),
    CLUSTER_TIMEOUT
  )
})

// A port held by a plain TCP listener for the rest of the scope.
const occupiedPort = Effect.acquireRelease(
  Effect.async<Net.Server>((resume) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(Effect.map((server) => (server.address() as Net.AddressInfo).port))
