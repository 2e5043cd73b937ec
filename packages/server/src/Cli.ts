/**
 * The `streaks` command line: `serve` runs the service, `migrate` prepares the database and
 * exits, `demo` provisions a demo tenant and prints its credentials (shown once), `mcp` runs the
 * MCP worker on its own (Streamable HTTP, or stdio for a local agent), `users invite` creates a
 * user and prints the one-time link where they set a password (docs/operations.md#creating-the-first-owner),
 * `users set-role` and `users remove` change a user's roles or remove the user, `import` loads a file of past actions into a program.
 */
import { Command, Options } from "@effect/cli"
import { PgStorage } from "@streaks/storage-pg"
import { Accounts, Errors, OutboxSignal, SecretBox, Services } from "@streaks/core"
import { Config, Console, Effect, Layer, Option, Redacted } from "effect"
import * as CliOperator from "./CliOperator.js"
import * as Demo from "./Demo.js"
import * as ImportCommand from "./ImportCommand.js"
import * as Main from "./Main.js"
import * as McpWorker from "./McpWorker.js"
import * as SecretKey from "./SecretKey.js"
import * as ServerConfig from "./ServerConfig.js"

// runMain's own reporting is off (it would print CLI usage errors twice), so report here.
const reportFailure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(self, (cause) => Effect.logError("streaks failed", cause))

const serve = Command.make("serve", {}, () =>
  Effect.flatMap(ServerConfig.config, (config) =>
    // Refused before anything starts (no connection, no migration): see SecretKey.check.
    Effect.zipRight(SecretKey.check(config), Layer.launch(Main.layer(config)))).pipe(reportFailure))

const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    yield* Effect.provide(
      Effect.void,
      PgStorage.layer({ prefix: config.tablePrefix }).pipe(Layer.provide(Main.layerDatabase(config)))
    )
    yield* Console.log("migrations applied")
  }).pipe(reportFailure))

const origin = Options.text("origin").pipe(
  Options.withDescription("Browser origin allowed to call /v1/e and /v1/state"),
  Options.withDefault("http://localhost:3000")
)

const demo = Command.make("demo", { origin }, ({ origin }) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    const key = yield* SecretKey.resolve(config.secretKey, config.dataDir, config.databaseUrl)
    const services = Services.layer.pipe(
      Layer.provide(OutboxSignal.layerNoop),
      Layer.provideMerge(SecretBox.layer(key)),
      Layer.provideMerge(PgStorage.layer({ prefix: config.tablePrefix })),
      Layer.provide(Main.layerDatabase(config))
    )
    const created = yield* Effect.provide(Demo.provision({ origin }), services)
    yield* Console.log(JSON.stringify(created, null, 2))
  }).pipe(reportFailure))

const coreServices = (config: ServerConfig.ServerConfig) =>
  Effect.map(
    SecretKey.resolve(config.secretKey, config.dataDir, config.databaseUrl),
    (key) =>
      Services.layer.pipe(
        Layer.provide(OutboxSignal.layerNoop),
        Layer.provideMerge(SecretBox.layer(key)),
        Layer.provideMerge(PgStorage.layer({ prefix: config.tablePrefix })),
        Layer.provide(Main.layerDatabase(config))
      )
  )

const email = Options.text("email").pipe(Options.withDescription("The user's e-mail address"))
const name = Options.text("name").pipe(Options.withDescription("The user's name"))
const workspace = Options.text("workspace").pipe(
  Options.withDescription("A workspace and the user's role in it, as <workspaceId>:<owner|admin|viewer>; repeatable"),
  Options.repeated
)
const baseUrl = Options.text("base-url").pipe(
  Options.withDescription("Where the service is reached (default: STREAKS_PUBLIC_URL, else http://HOST:PORT)"),
  Options.optional
)

/** `<workspaceId>:<role>` options as the memberships Accounts takes (a missing role is refused there). */
const membershipsOf = (options: ReadonlyArray<string>) =>
  options.map((w) => {
    const at = w.lastIndexOf(":")
    return { workspaceId: at < 0 ? w : w.slice(0, at), role: at < 0 ? "" : w.slice(at + 1) }
  })

const invite = Command.make("invite", { email, name, workspace, baseUrl }, (input) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    const workspaces = membershipsOf(input.workspace)
    const services = yield* coreServices(config)
    const created = yield* Effect.provide(
      Effect.flatMap(Accounts.Accounts, (accounts) =>
        accounts.createUser({ email: input.email, name: input.name, workspaces }, CliOperator.by)),
      services
    )
    const base = Option.getOrElse(input.baseUrl, () =>
      config.publicUrl ?? `http://${config.host}:${config.port}`)
      .replace(/\/+$/, "")
    yield* Console.log(JSON.stringify(
      {
        id: created.user.id,
        email: created.user.email,
        inviteUrl: `${base}/invite?token=${encodeURIComponent(created.inviteToken ?? "")}`
      },
      null,
      2
    ))
  }).pipe(reportFailure))

const user = Options.text("user").pipe(Options.withDescription("The user's id (usr_…) or e-mail address"))

/** The user named by id or by e-mail address (compared without regard to case), else NotFound. */
const userNamed = (accounts: Accounts.Accounts["Type"], named: string) =>
  Effect.flatMap(accounts.users, (all) => {
    const found = all.find((u) => u.id === named || u.emailKey === named.trim().toLowerCase())
    return found === undefined ? Effect.fail(new Errors.NotFound({ message: "user not found" })) : Effect.succeed(found)
  })

const setRole = Command.make("set-role", { user, workspace }, (input) =>
  Effect.gen(function*() {
    const services = yield* coreServices(yield* ServerConfig.config)
    const updated = yield* Effect.provide(
      Effect.gen(function*() {
        const accounts = yield* Accounts.Accounts
        const found = yield* userNamed(accounts, input.user)
        return yield* accounts.setMemberships(found.id, membershipsOf(input.workspace), CliOperator.by)
      }),
      services
    )
    yield* Console.log(
      JSON.stringify({ id: updated.id, email: updated.email, workspaces: updated.memberships }, null, 2)
    )
  }).pipe(reportFailure))

const remove = Command.make("remove", { user }, (input) =>
  Effect.gen(function*() {
    const services = yield* coreServices(yield* ServerConfig.config)
    const removed = yield* Effect.provide(
      Effect.gen(function*() {
        const accounts = yield* Accounts.Accounts
        const found = yield* userNamed(accounts, input.user)
        yield* accounts.removeUser(found.id, CliOperator.by)
        return found
      }),
      services
    )
    yield* Console.log(JSON.stringify({ removed: removed.id, email: removed.email }, null, 2))
  }).pipe(reportFailure))

const users = Command.make("users").pipe(Command.withSubcommands([invite, setRole, remove]))

const stdio = Options.boolean("stdio").pipe(
  Options.withDescription("Serve one local agent over stdin/stdout, as the holder of STREAKS_MCP_TOKEN")
)
const mcpPort = Options.integer("port").pipe(
  Options.withDescription("Port of the Streamable HTTP endpoint /mcp (default: STREAKS_MCP_PORT, else 8788)"),
  Options.optional
)

// As `serve`, refused before anything starts without the key that opens the server's secrets.
const mcpStdio = Effect.gen(function*() {
  const config = yield* ServerConfig.config
  const token = yield* Config.redacted("STREAKS_MCP_TOKEN")
  yield* SecretKey.check(config)
  yield* McpWorker.runStdio(config, Redacted.value(token))
})

const mcpHttp = (port: Option.Option<number>) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    const chosen = Option.isSome(port) ? port.value : yield* McpWorker.port
    yield* SecretKey.check(config)
    yield* Layer.launch(McpWorker.logListening.pipe(Layer.provideMerge(McpWorker.layerHttp(config, chosen))))
  })

const mcp = Command.make("mcp", { stdio, port: mcpPort }, ({ port, stdio }) =>
  Effect.if(stdio, {
    onTrue: () => McpWorker.logToStderr(reportFailure(mcpStdio)),
    onFalse: () => reportFailure(mcpHttp(port))
  }))

export const command = Command.make("streaks").pipe(
  Command.withSubcommands([serve, migrate, demo, mcp, users, ImportCommand.command])
)

export const run = Command.run(command, { name: "streaks", version: "0.1.0" })
