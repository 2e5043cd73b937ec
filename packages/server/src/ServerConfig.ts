/**
 * The server's configuration, from the environment (docs/operations.md#configuration). A `.env`
 * file is not needed; every variable has a safe default for a local run.
 */
import { ClientAddress } from "@streaks/core"
import { Config, Duration, type Option, type Redacted } from "effect"
import { defaultWorkers } from "./SimulationWorkers.js"

export interface ServerConfig {
  readonly port: number
  readonly host: string
  /** None: the embedded default database under `dataDir`. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** Seals signing secrets (docs/decisions/0001); None: a key generated into `dataDir`. */
  readonly secretKey: Option.Option<Redacted.Redacted<string>>
  readonly dueCheckInterval: Duration.Duration
  /**
   * How long a running history import's owner may go without a heartbeat before another process
   * claims the job (docs/operations.md#bringing-your-history).
   */
  readonly importLease: Duration.Duration
  readonly rateLimitIp: number
  readonly rateLimitSite: number
  /** Requests per second per credential on `/v1/api/*` and `/mcp` (burst twice this). */
  readonly rateLimitCredential: number
  /** Failed authentications per minute per client address, on every route that authenticates. */
  readonly rateLimitAuthFailures: number
  /** The reverse proxies whose `Forwarded` / `X-Forwarded-*` headers are believed (default none). */
  readonly trustedProxies: ClientAddress.Trust
  readonly allowInsecureWebhookUrls: boolean
  /** `STREAKS_PUBLIC_URL`: the base of links the service hands out (invites); absent: the request's origin. */
  readonly publicUrl?: string | undefined
  readonly tablePrefix: string
  /** Port of the embedded cluster (reused across restarts). */
  readonly embeddedPort: number
  /** Postgres connections per process (each replica opens this many). */
  readonly databasePoolSize: number
  /** Prepare statements once per connection; off behind PgBouncer < 1.21 in transaction mode. */
  readonly databasePrepare: boolean
  /** Longest a statement may run (lock waits included) before Postgres cancels it; zero: none. */
  readonly databaseStatementTimeout: Duration.Duration
  /** Longest wait for a new Postgres connection, or for a free one of a full pool. */
  readonly databaseConnectTimeout: Duration.Duration
  /** How long project and program lookups are served from memory (`DirectoryCache`); zero: off. */
  readonly directoryCacheTtl: Duration.Duration
  /** One log line per request (`AccessLog`); off by default. */
  readonly accessLog: boolean
  /** Worker threads a policy simulation replays in; 0: the server's own thread (`SimulationWorkers`). */
  readonly simulationWorkers: number
}

export const config: Config.Config<ServerConfig> = Config.all({
  port: Config.withDefault(Config.port("PORT"), 8787),
  host: Config.withDefault(Config.string("HOST"), "127.0.0.1"),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  dataDir: Config.withDefault(Config.string("STREAKS_DATA_DIR"), "./.streaks"),
  adminToken: Config.option(Config.redacted("STREAKS_ADMIN_TOKEN")),
  secretKey: Config.option(Config.redacted("STREAKS_SECRET_KEY")),
  dueCheckInterval: Config.withDefault(Config.duration("STREAKS_DUE_CHECK_INTERVAL"), Duration.hours(1)),
  importLease: Config.withDefault(Config.duration("STREAKS_IMPORT_LEASE"), Duration.seconds(30)),
  rateLimitIp: Config.withDefault(Config.number("STREAKS_RATE_LIMIT_IP"), 50),
  rateLimitSite: Config.withDefault(Config.number("STREAKS_RATE_LIMIT_SITE"), 500),
  rateLimitCredential: Config.withDefault(Config.number("STREAKS_RATE_LIMIT_CREDENTIAL"), 100),
  rateLimitAuthFailures: Config.withDefault(Config.number("STREAKS_RATE_LIMIT_AUTH_FAILURES"), 30),
  trustedProxies: ClientAddress.config,
  allowInsecureWebhookUrls: Config.withDefault(Config.boolean("STREAKS_ALLOW_INSECURE_WEBHOOK_URLS"), false),
  publicUrl: Config.map(
    Config.option(Config.string("STREAKS_PUBLIC_URL")),
    (url) => url._tag === "Some" ? url.value.replace(/\/+$/, "") : undefined
  ),
  tablePrefix: Config.withDefault(Config.string("STREAKS_TABLE_PREFIX"), "streaks_"),
  embeddedPort: Config.withDefault(Config.port("STREAKS_EMBEDDED_PG_PORT"), 54329),
  databasePoolSize: Config.withDefault(Config.integer("STREAKS_DB_POOL_SIZE"), 10),
  databasePrepare: Config.withDefault(Config.boolean("STREAKS_DB_PREPARE"), true),
  databaseStatementTimeout: Config.withDefault(Config.duration("STREAKS_DB_STATEMENT_TIMEOUT"), Duration.seconds(5)),
  databaseConnectTimeout: Config.withDefault(Config.duration("STREAKS_DB_CONNECT_TIMEOUT"), Duration.seconds(5)),
  directoryCacheTtl: Config.withDefault(Config.duration("STREAKS_DIRECTORY_CACHE_TTL"), Duration.seconds(1)),
  accessLog: Config.withDefault(Config.boolean("STREAKS_ACCESS_LOG"), false),
  simulationWorkers: Config.withDefault(
    Config.integer("STREAKS_SIMULATION_WORKERS").pipe(
      Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 })
    ),
    defaultWorkers()
  )
})
