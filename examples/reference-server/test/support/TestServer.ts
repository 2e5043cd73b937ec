/**
 * The reference server for tests, started the way `src/main.ts` starts it: `Main.layer(config)`
 * (database, migrations, services, HTTP server, webhook dispatcher, scheduler), configured in
 * code for a free port of 127.0.0.1 and the throwaway database of `PgTest` (on DATABASE_URL's
 * server when set, else an embedded cluster), dropped when the layer is released.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Main, ServerConfig } from "@streaks/server"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"

export const ADMIN_TOKEN = "reference-server-test-admin-token"

/** Provides `NodeServer` (its `url`) for the life of the layer. */
export const layer = Layer.unwrapScoped(
  Effect.gen(function*() {
    const database = yield* PgTest.PgTestDatabase
    const fromEnv = yield* ServerConfig.config
    // Removed after the server has stopped: it was acquired first, so it is released last.
    const dataDir = yield* Effect.flatMap(
      FileSystem.FileSystem,
      (fs) => fs.makeTempDirectoryScoped({ prefix: "streaks-reference-" })
    )
    return Main.layer({
      ...fromEnv,
      port: 0,
      host: "127.0.0.1",
      databaseUrl: Option.some(database.url),
      dataDir,
      adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
      secretKey: Option.some(Redacted.make("reference-server-test-secret-key"))
    })
  })
).pipe(
  Layer.provide([PgTest.layer, NodeFileSystem.layer]),
  // Main logs where it listens and which database it uses; keep test output to warnings.
  Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
)
