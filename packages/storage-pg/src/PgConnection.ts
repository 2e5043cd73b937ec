/**
 * The `PgClient` / `SqlClient` of the service: on `DATABASE_URL` when one is given, otherwise
 * on the embedded default cluster kept in a data directory.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Option, Redacted, type Scope } from "effect"
import pg from "pg"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"
import * as Pools from "./internal/pools.js"
import * as Socket from "./internal/socket.js"

export interface PoolOptions {
  /** Per process; N replicas use N × this many connections. Default 10. */
  readonly maxConnections?: number
  readonly applicationName?: string
  /**
   * The storage adapter prepares each of its parameterised statements once per connection
   * (default true). Turn it off behind a pooler that does not keep prepared statements across
   * transactions (PgBouncer before 1.21 in transaction mode).
   */
  readonly prepare?: boolean
  /**
   * Longest a statement may run, lock waits included, before Postgres cancels it (its
   * `statement_timeout`; default 5 seconds; zero: none). A database that hangs then fails the
   * request (503) instead of holding it.
   */
  readonly statementTimeout?: Duration.DurationInput
  /** Longest wait for a new connection, or for a free one of a full pool (default 5 seconds). */
  readonly connectTimeout?: Duration.DurationInput
}

// No name transforms: our SQL is written in snake_case and rows are mapped explicitly.
const pool = (options: PoolOptions | undefined) => ({
  prepare: options?.prepare ?? true,
  statementTimeout: options?.statementTimeout ?? "5 seconds",
  maxConnections: options?.maxConnections ?? 10,
  minConnections: 0,
  idleTimeout: "30 seconds",
  connectTimeout: options?.connectTimeout ?? "5 seconds",
  // Recycle connections now and then so that a failed-over or restarted server is picked up.
  connectionTTL: "30 minutes",
  applicationName: options?.applicationName ?? "streaks"
} as const)

// Stores ask for `SqlClient`; Postgres-only code (LISTEN/NOTIFY, json) for `PgClient`.
const clientContext = (client: PgClient.PgClient) =>
  Context.make(PgClient.PgClient, client).pipe(Context.add(SqlClient.SqlClient, client))

const millis = (d: Duration.DurationInput | undefined) => (d === undefined ? undefined : Duration.toMillis(d))

/**
 * Sent first on each new connection of a preparing pool (pipelined: no round trip of its own).
 * Under Postgres's default `auto`, a prepared statement taking a batch's keys as arrays
 * (`unnest($1::text[], …)`) was planned at every call at low load: a plan for the arrays' actual
 * length is estimated cheaper than the generic one, which assumes 100 elements, so `auto` never
 * settled on it. At 10 concurrent callers that planning doubled Postgres's CPU per state read
 * (docs/performance.md). Our statements look rows up by key, the same way on either plan. On a
 * Postgres before 12 the statement fails alone and the connection keeps `auto` (docs/operations.md).
 * In a database with the Citus extension, custom plans instead: Citus distributes a statement
 * whose shard comes from a parameter only once the parameters are known
 * (docs/scaling.md#statements-citus-can-plan).
 */
const genericPlans = `SELECT set_config('plan_cache_mode', CASE WHEN to_regclass('pg_catalog.pg_dist_partition') IS NULL
  THEN 'force_generic_plan' ELSE 'force_custom_plan' END, false)`

/**
 * Each connection's slot in the report rollups (`internal/activeSpans.ts`): one that no other open
 * connection of the process holds (while it has at most 16), searched from a random start so that
 * two processes seldom begin alike; two of a process's transactions then never wait on each
 * other's rollup rows. Sent with the plan mode, in the connection's first statement; given back
 * when the pool removes the connection.
 */
const ROLLUP_SLOTS = 16
const slotsHeld = new Map<number, number>()
const slotOfClient = new WeakMap<object, number>()
const takeSlot = (client: object): string => {
  const start = Math.floor(Math.random() * ROLLUP_SLOTS)
  let slot = start
  for (let i = 0; i < ROLLUP_SLOTS; i++) {
    const s = (start + i) % ROLLUP_SLOTS
    if (!slotsHeld.has(s)) {
      slot = s
      break
    }
  }
  slotsHeld.set(slot, (slotsHeld.get(slot) ?? 0) + 1)
  slotOfClient.set(client, slot)
  return `set_config('streaks.rollup_slot', '${slot}', false)`
}
const giveSlot = (client: object) => {
  const slot = slotOfClient.get(client)
  if (slot === undefined) return
  slotOfClient.delete(client)
  const n = slotsHeld.get(slot)! - 1
  if (n === 0) slotsHeld.delete(slot)
  else slotsHeld.set(slot, n)
}

/** TCP keep-alive probes start after a connection has been idle this long, so a dead peer is noticed. */
const keepAliveDelay = Duration.seconds(10)

/**
 * A `PgClient` as `PgClient.make` builds it, from a node-postgres pool of our own
 * (`PgClient.fromPool`): its connections pipeline, send what is issued in one tick in one write
 * (`internal/socket.ts`) and keep generic plans (`genericPlans`); the storage adapter prepares
 * each of its parameterised statements once per connection on it (`internal/statements.ts`), so
 * Postgres skips parsing and planning on every call, the larger part of its CPU for our short
 * primary-key statements. Connections use TCP keep-alive; `statementTimeout` (none unless given)
 * becomes each connection's `statement_timeout`.
 */
export const make = (
  config: PgClient.PgClientConfig & { readonly prepare?: boolean; readonly statementTimeout?: Duration.DurationInput }
): Effect.Effect<PgClient.PgClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> => {
  let created: pg.Pool | undefined
  let copying: pg.Pool | undefined
  return PgClient.fromPool({
    acquire: Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const connection = {
            connectionString: config.url === undefined ? undefined : Redacted.value(config.url),
            host: config.host,
            port: config.port,
            database: config.database,
            user: config.username,
            password: config.password === undefined ? undefined : Redacted.value(config.password),
            connectionTimeoutMillis: millis(config.connectTimeout),
            keepAlive: true,
            keepAliveInitialDelayMillis: Duration.toMillis(keepAliveDelay),
            application_name: config.applicationName ?? "streaks"
          }
          // COPY streams a query through its own submit, which a pipelined connection refuses:
          // history imports get a small pool of plain connections, opened only when one runs.
          copying = new pg.Pool({ ...connection, max: 2, idleTimeoutMillis: 10_000, allowExitOnIdle: true })
          copying.on("error", () => {})
          const pool = created = new pg.Pool({
            // Statements issued together on one connection (a transaction's independent writes) go
            // out at once instead of one round trip each; Postgres still runs them in order
            // (node-postgres's `pipeline` option, documented but not yet in its type definitions).
            // Pipelined connections cannot stream through a cursor (`sql\`…\`.stream`): nothing
            // here does.
            ...({ pipeline: true } as {}),
            // Given a stream of its own (a test watching the wire), the pool uses it instead.
            stream: config.stream ?? Socket.make,
            connectionString: config.url === undefined ? undefined : Redacted.value(config.url),
            host: config.host,
            port: config.port,
            database: config.database,
            user: config.username,
            password: config.password === undefined ? undefined : Redacted.value(config.password),
            connectionTimeoutMillis: millis(config.connectTimeout),
            keepAlive: true,
            keepAliveInitialDelayMillis: Duration.toMillis(keepAliveDelay),
            // Sent with the connection's startup message: no statement of its own.
            ...(config.statementTimeout !== undefined && Duration.toMillis(config.statementTimeout) > 0
              ? { statement_timeout: Duration.toMillis(config.statementTimeout) }
              : {}),
            idleTimeoutMillis: millis(config.idleTimeout),
            max: config.maxConnections,
            min: config.minConnections,
            maxLifetimeSeconds: config.connectionTTL === undefined
              ? undefined
              : Duration.toSeconds(config.connectionTTL),
            application_name: config.applicationName ?? "streaks"
          })
          // A broken idle connection is dropped by the pool; the next query reports the failure.
          pool.on("error", () => {})
          pool.on("connect", (client) =>
            client.query(
              config.prepare !== false ? `${genericPlans}, ${takeSlot(client)}` : `SELECT ${takeSlot(client)}`,
              () => {}
            ))
          pool.on("remove", giveSlot)
          await pool.query("SELECT 1").catch((e) => pool.end().then(() => Promise.reject(e)))
          return pool
        },
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }),
      (pool) =>
        Effect.promise(() => Promise.all([pool.end(), copying?.end()])).pipe(
          Effect.interruptible,
          Effect.timeoutOption(1000)
        )
    ),
    ...(config.applicationName !== undefined ? { applicationName: config.applicationName } : {})
  }).pipe(Effect.tap((client) => {
    if (created !== undefined) {
      Pools.register(client, {
        pool: created,
        prepare: config.prepare !== false,
        ...(copying === undefined ? {} : { copying })
      })
    }
  }))
}

/** `make` as a layer. */
const layerClient = (config: Parameters<typeof make>[0]) =>
  Layer.scopedContext(Effect.map(make(config), clientContext)).pipe(Layer.provide(Reactivity.layer))

/** A pool on a `postgres://` URL. */
export const layerUrl = (
  url: string | Redacted.Redacted<string>,
  options?: PoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError> =>
  layerClient({ url: typeof url === "string" ? Redacted.make(url) : url, ...pool(options) })

/** A pool on the running cluster of `EmbeddedPostgres`. */
export const layerEmbedded = (
  options?: PoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError, EmbeddedPostgres.EmbeddedPostgres> =>
  Layer.unwrapEffect(
    Effect.map(EmbeddedPostgres.EmbeddedPostgres, (info) => layerClient(connectOptions(info, options)))
  )

/**
 * With a URL, connect to it; otherwise start (or reuse) the persistent embedded cluster in
 * `dataDir` and connect to it. The cluster is stopped after the pool is closed.
 */
export const layer = (config: {
  readonly url: Option.Option<string | Redacted.Redacted<string>>
  readonly dataDir: string
  /** Fixed port for the embedded cluster; a free one otherwise. */
  readonly port?: number
  readonly database?: string
  readonly pool?: PoolOptions
}): Layer.Layer<
  PgClient.PgClient | SqlClient.SqlClient,
  SqlError.SqlError | EmbeddedPostgres.EmbeddedPostgresError
> =>
  Option.match(config.url, {
    onSome: (url) => layerUrl(url, config.pool),
    onNone: () =>
      Layer.scopedContext(Effect.gen(function*() {
        // One scope, so finalizers run in reverse: pool closed first, then the cluster stopped.
        const pg = yield* EmbeddedPostgres.make({
          dataDir: config.dataDir,
          persistent: true,
          ...(config.port !== undefined ? { port: config.port } : {}),
          ...(config.database !== undefined ? { database: config.database } : {})
        })
        return clientContext(yield* make(connectOptions(pg, config.pool)))
      })).pipe(Layer.provide(Reactivity.layer))
  })

/** `PgClient` settings for a running embedded cluster. */
export const connectOptions = (pg: EmbeddedPostgres.Info, options?: PoolOptions): Parameters<typeof make>[0] => ({
  host: pg.host,
  port: pg.port,
  database: pg.database,
  username: pg.username,
  password: pg.password,
  ...pool(options)
})
