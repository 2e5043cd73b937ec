/**
 * The databases of a chaos run: a fresh database on the machine's Postgres (dropped at the end),
 * and a throwaway embedded cluster of our own that can be stopped and started again on the same
 * port and data directory (the machine's shared Postgres is never stopped).
 */
import { EmbeddedPostgres } from "@streaks/storage-pg"
import { Effect, Exit, Logger, LogLevel, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"

/** `CREATE DATABASE` on the server of `adminUrl`; returns its URL and a function that drops it. */
export const freshDatabase = async (adminUrl: string) => {
  const name = `streaks_chaos_${randomBytes(5).toString("hex")}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  }
}

/** Runs `sql` on `url` with a short-lived connection. */
export const query = async <R extends Record<string, unknown>>(
  url: string,
  sql: string,
  values: Array<unknown> = []
) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<R>(sql, values)).rows
  } finally {
    await client.end()
  }
}

/** An embedded cluster in a temp directory on a fixed port: `start`, `stop`, `start` again, `remove`. */
export const embeddedCluster = async () => {
  const dir = mkdtempSync(join(tmpdir(), "streaks-chaos-pg-"))
  chmodSync(dir, 0o755) // as root, OS user postgres must traverse it
  const dataDir = join(dir, "data")
  const port = await Effect.runPromise(EmbeddedPostgres.freePort)
  let scope: Scope.CloseableScope | undefined
  let url = ""
  const start = async () => {
    const opened = await Effect.runPromise(Scope.make())
    const info = await Effect.runPromise(
      Scope.extend(EmbeddedPostgres.make({ dataDir, port, database: "streaks", persistent: true }), opened).pipe(
        Logger.withMinimumLogLevel(LogLevel.Warning)
      )
    )
    scope = opened
    url = Redacted.value(info.url)
  }
  const stop = async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
    scope = undefined
  }
  return {
    port,
    start,
    stop,
    url: () => url,
    remove: async () => {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
