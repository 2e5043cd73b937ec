/**
 * The `PgClient` / `SqlClient` of the service: on `DATABASE_URL` when one is given, otherwise
 * on the embedded default cluster kept in a data directory.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import type { SqlError } from "@effect/sql"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"

export interface PoolOptions {
  /** Per process; N replicas use N × this many connections. Default 10. */
  readonly maxConnections?: number
  readonly applicationName?: string
}

// No name transforms: our SQL is written in snake_case and rows are mapped explicitly.
const pool = (options: PoolOptions | undefined) => ({
  maxConnections: options?.maxConnections ?? 10,
  minConnections: 0,
  idleTimeout: "30 seconds",
  connectTimeout: "10 seconds",
  // Recycle connections now and then so that a failed-over or restarted server is picked up.
  connectionTTL: "30 minutes",
  applicationName: options?.applicationName ?? "streaks"
} as const)

// Stores ask for `SqlClient`; Postgres-only code (LISTEN/NOTIFY, json) for `PgClient`.
const clientContext = (client: PgClient.PgClient) =>
  Context.make(PgClient.PgClient, client).pipe(Context.add(SqlClient.SqlClient, client))

/** A pool on a `postgres://` URL. */
export const layerUrl = (
  url: string | Redacted.Redacted<string>,
  options?: PoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError> =>
  PgClient.layer({ url: typeof url === "string" ? Redacted.make(url) : url, ...pool(options) })

/** A pool on the running cluster of `EmbeddedPostgres`. */
export const layerEmbedded = (
  options?: PoolOptions
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError, EmbeddedPostgres.EmbeddedPostgres> =>
  Layer.unwrapEffect(Effect.map(EmbeddedPostgres.EmbeddedPostgres, (pg) => PgClient.layer(connectOptions(pg, options))))

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
        return clientContext(yield* PgClient.make(connectOptions(pg, config.pool)))
      })).pipe(Layer.provide(Reactivity.layer))
  })

/** `PgClient` settings for a running embedded cluster. */
export const connectOptions = (pg: EmbeddedPostgres.Info, options?: PoolOptions): PgClient.PgClientConfig => ({
  host: pg.host,
  port: pg.port,
  database: pg.database,
  username: pg.username,
  password: pg.password,
  ...pool(options)
})
