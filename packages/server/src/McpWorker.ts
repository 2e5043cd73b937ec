/**
 * `streaks mcp`: the MCP worker (`@streaks/mcp`) run on its own, over Streamable HTTP on a port of
 * its own or over stdio for a local agent, on the same database and core services as
 * `streaks serve` (which also mounts it at `/mcp`).
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { ClientAddress } from "@streaks/core"
// By module, and the stdio side when it runs: the package's index would load the MCP SDK with
// every command of the CLI.
import * as McpConfig from "@streaks/mcp/McpConfig"
import * as StreamableHttp from "@streaks/mcp/StreamableHttp"
import { Config, Effect, FiberRef, HashSet, Layer, Logger } from "effect"
import { createServer } from "node:http"
import * as Main from "./Main.js"
import type { ServerConfig } from "./ServerConfig.js"

/** Where `streaks mcp` listens: `STREAKS_MCP_PORT`, default 8788 (beside the server's 8787). */
export const port: Config.Config<number> = Config.withDefault(Config.port("STREAKS_MCP_PORT"), 8788)

/** The core services on the configured database, as `streaks serve` runs them. */
const layerServices = (config: ServerConfig) =>
  Main.layerCore(config).pipe(Layer.provideMerge(Main.layerDatabase(config)))

/**
 * The worker alone over Streamable HTTP on `config.host` and `port` (0: any free port), with the
 * services it needs, the trusted proxies and the same limits as under `serve`; every path but
 * `/mcp` and the protected-resource document answers 404.
 */
export const layerHttp = (config: ServerConfig, port: number) =>
  HttpServer.serve(StreamableHttp.app).pipe(
    Layer.provide(McpConfig.layerConfig),
    Layer.provide(Main.layerMcpLimits(config)),
    Layer.provide(ClientAddress.layer(config.trustedProxies)),
    Layer.provide(layerServices(config)),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port, host: config.host }))
  )

/** Logs `Streaks MCP worker listening on http://…/mcp` once the server is up. */
export const logListening = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) =>
    Effect.logInfo(`Streaks MCP worker listening on ${address}${StreamableHttp.path}`)
  )
)

/**
 * Serves one local agent over stdin/stdout as the holder of `token` until the agent closes stdin.
 * Fails at once when the token is not valid.
 */
export const runStdio = (config: ServerConfig, token: string) =>
  Effect.flatMap(
    Effect.promise(() => import("@streaks/mcp/Stdio")),
    (Stdio) => Effect.provide(Stdio.run(token), layerServices(config))
  )

/** Runs `self` with every log line on stderr: over stdio, stdout carries the protocol alone. */
export const logToStderr = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(self, FiberRef.currentLoggers, HashSet.make(Logger.prettyLogger({ stderr: true, colors: false })))
