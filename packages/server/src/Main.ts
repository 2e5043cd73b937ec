/**
 * The composition root: configuration → database (DATABASE_URL or the embedded default) →
 * storage → core services → HTTP server, webhook dispatcher and scheduler, as one layer.
 */
import { SqlClient } from "@effect/sql"
import { ClientAddress, DirectoryCache, DueChecks, Imports, SecretBox, Services } from "@streaks/core"
import { AccessLog, ConsolePage, Http, HttpConfig, Jobs, OAuthRoutes, RateLimit, WidgetScript } from "@streaks/http"
// By module: the package's index would load the MCP SDK at start, which `/mcp` loads when first called.
import * as McpConfig from "@streaks/mcp/McpConfig"
import { McpLimits } from "@streaks/mcp/McpLimits"
import * as StreamableHttp from "@streaks/mcp/StreamableHttp"
import { Scheduler } from "@streaks/scheduler"
import { PgConnection, PgStorage } from "@streaks/storage-pg"
import { Dispatcher, Egress } from "@streaks/webhooks"
import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { join } from "node:path"
import * as FastPath from "./FastPath.js"
import * as SecretKey from "./SecretKey.js"
import * as SimulationWorkers from "./SimulationWorkers.js"
import type { ServerConfig } from "./ServerConfig.js"

/** The SQL client: `DATABASE_URL`, else the embedded cluster kept under `dataDir/pg`. */
export const layerDatabase = (config: ServerConfig) =>
  PgConnection.layer({
    url: config.databaseUrl,
    dataDir: join(config.dataDir, "pg"),
    port: config.embeddedPort,
    pool: {
      maxConnections: config.databasePoolSize,
      prepare: config.databasePrepare,
      statementTimeout: config.databaseStatementTimeout,
      connectTimeout: config.databaseConnectTimeout
    }
  })

/** Storage (migrated at start), the secret box, core services and the dispatcher. */
export const layerCore = (config: ServerConfig) => {
  const storage = PgStorage.layer({ prefix: config.tablePrefix })
  const secretBox = Layer.unwrapEffect(
    Effect.map(SecretKey.resolve(config.secretKey, config.dataDir, config.databaseUrl), SecretBox.layer)
  )
  // Deliveries connect only to public addresses (the SSRF guard), unless insecure URLs are allowed.
  const dispatcher = Dispatcher.layer().pipe(
    Layer.provide(Egress.layerHttpClient({ allowPrivate: config.allowInsecureWebhookUrls }))
  )
  const base = Layer.mergeAll(storage, secretBox)
  // A second transaction opens beside the one in flight once 24 actions wait, about a batch under
  // load: it uses the CPU that one transaction at a time leaves idle, and batches stay as large
  // (`BatchOptions`). State reads do the same with their read batches (`ReadOptions`).
  const twoBeside = { workers: 2, minBatchBeside: 24 }
  return Services.layerWith({ ingest: twoBeside, state: twoBeside, imports: { lease: config.importLease } }).pipe(
    Layer.provide(SimulationWorkers.layer(config.simulationWorkers)),
    // Every service reads projects and programs through the one cache, so writes empty it.
    Layer.provide(DirectoryCache.layer({ ttl: config.directoryCacheTtl })),
    // Subscription hosts are resolved when created: a name into a private network is refused.
    Layer.provide(Egress.layerHostResolver()),
    Layer.provideMerge(dispatcher),
    Layer.provideMerge(base)
  )
}

/** The on-demand jobs of `/admin/jobs/*` and the readiness probe of `/ready`. */
const layerJobs = Layer.effect(
  Jobs.Jobs,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dueChecks = yield* DueChecks.DueChecks
    const dispatcher = yield* Dispatcher.Dispatcher
    return Jobs.Jobs.of({
      dueChecks: dueChecks.run(),
      deliveries: dispatcher.runOnce,
      ready: sql`select 1`.pipe(Effect.as(true), Effect.orElseSucceed(() => false))
    })
  })
)

/** `GET /widget.js`: the display widget's module, read when first asked for (a bundle inlines it). */
const widgetRoutes = WidgetScript.layer(() => import("@streaks/widget/source").then((module) => module.default))

/** `/console`: the console's page and files (`@streaks/console`), read when first asked for. */
const consoleRoutes = ConsolePage.layer(() => import("@streaks/console/source").then((module) => module.default))

/**
 * The MCP worker at `/mcp` (`@streaks/mcp`), its settings from the environment, under the same
 * failed-authentication budgets and per-credential buckets as `/v1/api`.
 */
const mcpRoutes = StreamableHttp.layerRoutes.pipe(
  Layer.provide(McpConfig.layerConfig),
  Layer.provide(Layer.effect(McpLimits, Effect.map(RateLimit.RateLimiter, RateLimit.gate)))
)

/**
 * The authorization server (`/oauth/*` and its metadata, docs/oauth.md), its settings from the
 * environment, under the same failed-authentication budgets as the other credential routes.
 */
const oauthRoutes = OAuthRoutes.layerRoutes.pipe(Layer.provide(OAuthRoutes.layerConfig))

/** The rate limiter with the configured limits, shared by every route of one process. */
export const layerRateLimit = (config: ServerConfig) =>
  RateLimit.layer({
    ipPerSecond: config.rateLimitIp,
    sitePerSecond: config.rateLimitSite,
    credentialPerSecond: config.rateLimitCredential,
    authFailuresPerMinute: config.rateLimitAuthFailures
  })

/** The MCP worker's limits on their own (`streaks mcp`): the same budgets as under `serve`. */
export const layerMcpLimits = (config: ServerConfig) =>
  Layer.effect(McpLimits, Effect.map(RateLimit.RateLimiter, RateLimit.gate)).pipe(
    Layer.provide(layerRateLimit(config))
  )

/** Everything the service runs, for `Layer.launch`. */
export const layer = (config: ServerConfig) => {
  const core = layerCore(config).pipe(Layer.provideMerge(layerDatabase(config)))
  // The fast path answers the hot public routes in front of HttpApi.
  const http = Http.layerServer(
    { port: config.port, host: config.host },
    Layer.mergeAll(mcpRoutes, widgetRoutes, oauthRoutes, consoleRoutes),
    (api) =>
      Effect.flatMap(
        FastPath.front(api),
        (handler) => config.accessLog ? AccessLog.handler(handler) : Effect.succeed(handler)
      )
  ).pipe(
    Layer.provide(layerJobs),
    Layer.provide(layerRateLimit(config)),
    Layer.provide(ClientAddress.layer(config.trustedProxies)),
    Layer.provide(HttpConfig.layer({
      adminToken: config.adminToken,
      allowInsecureWebhookUrls: config.allowInsecureWebhookUrls,
      publicUrl: config.publicUrl
    }))
  )
  const scheduler = Scheduler.layer({ interval: config.dueCheckInterval })
  // History imports whose process died: claimed once their lease runs out, then finished or
  // marked interrupted (docs/operations.md#bringing-your-history). Checked at start and twice a lease.
  const importRecovery = Layer.scopedDiscard(Effect.gen(function*() {
    const imports = yield* Imports.Imports
    const check = imports.recover.pipe(
      Effect.tap((jobs) =>
        Effect.forEach(jobs, (job) => Effect.logInfo(`import ${job.id}: owner gone, now ${job.status}`))
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("import recovery failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Duration.unsafeDivide(config.importLease, 2))))
  }))
  const started = Layer.effectDiscard(
    Effect.gen(function*() {
      yield* Effect.logInfo(`Streaks listening on http://${config.host}:${config.port}`)
      yield* Effect.logInfo(
        Option.isSome(config.databaseUrl)
          ? "database: DATABASE_URL"
          : `database: embedded Postgres under ${join(config.dataDir, "pg")}`
      )
      if (Option.isNone(config.adminToken)) {
        yield* Effect.logWarning("STREAKS_ADMIN_TOKEN is not set: every /admin route answers 401")
      }
    })
  )
  // The reference server exports no traces, so spans (one per SQL statement of every batch) would
  // cost CPU and go nowhere; an embedder who installs a tracer composes the layers itself.
  return Layer.mergeAll(http, scheduler, importRecovery, started).pipe(
    Layer.provide(core),
    Layer.provide(Layer.setTracerEnabled(false))
  )
}
