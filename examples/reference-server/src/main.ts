/**
 * Starts the Streaks server from code with a configuration of your own, then walks through the
 * API with the typed client and keeps serving until Ctrl-C.
 *
 *   npx -y pnpm@10.34.8 --filter @streaks-examples/reference-server start
 *
 * Database: `DATABASE_URL` when set, else an embedded Postgres under `./.streaks-reference`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { NodeServer } from "@streaks/http"
import { Main, ServerConfig } from "@streaks/server"
import { Console, Context, Effect, Layer, Option, Redacted } from "effect"
import * as Client from "./Client.js"
import * as Walkthrough from "./Walkthrough.js"

const adminToken = process.env.STREAKS_ADMIN_TOKEN ?? "reference-example-admin-token"

const program = Effect.gen(function*() {
  // The environment's configuration (DATABASE_URL, STREAKS_*, with the documented defaults),
  // then this deployment's choices on top, in code.
  const fromEnv = yield* ServerConfig.config
  const config: ServerConfig.ServerConfig = {
    ...fromEnv,
    port: process.env.PORT === undefined ? 8790 : fromEnv.port,
    dataDir: process.env.STREAKS_DATA_DIR === undefined ? "./.streaks-reference" : fromEnv.dataDir,
    embeddedPort: process.env.STREAKS_EMBEDDED_PG_PORT === undefined ? 54339 : fromEnv.embeddedPort,
    adminToken: Option.some(Redacted.make(adminToken))
  }

  // Main.layer is everything `streaks serve` runs: database, migrations, services, HTTP server,
  // webhook dispatcher and scheduler. Building it starts them; closing the scope stops them.
  const context = yield* Layer.build(Main.layer(config))
  const { url } = Context.get(context, NodeServer.NodeServer)

  const result = yield* Walkthrough.run({ baseUrl: url, adminToken }).pipe(Effect.provide(Client.layer))
  yield* Console.log(JSON.stringify(result, null, 2))
  yield* Console.log(`Streaks is serving on ${url} (OpenAPI: ${url}/openapi.json). Ctrl-C stops it.`)
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
