/**
 * The benchmark's database: a fresh database on `DATABASE_URL` when set (dropped afterwards),
 * else a throwaway embedded cluster (the same module the server and the tests use). With
 * `BENCH_DATABASE=name` as well, that database on `DATABASE_URL`, created if missing and kept
 * afterwards, so that `BENCH_SCALE` runs reuse its fill (`Scale.kept`).
 */
import { EmbeddedPostgres } from "@streaks/storage-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"

export interface Database {
  readonly url: string
  readonly description: string
  readonly close: () => Promise<void>
}

/**
 * A database named `name` on `DATABASE_URL` that is kept: created when missing (`existed` false),
 * else reused as it is; never dropped here.
 */
export const kept = async (name: string): Promise<Database & { readonly existed: boolean }> => {
  const adminUrl = process.env.DATABASE_URL
  if (adminUrl === undefined || adminUrl === "") throw new Error("a kept database needs DATABASE_URL")
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a database name: ${name}`)
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  const existed = (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount === 1
  if (!existed) await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), description: `DATABASE_URL (kept database ${name})`, existed, close: async () => {} }
}

export const open = async (): Promise<Database> => {
  const adminUrl = process.env.DATABASE_URL
  const keep = process.env.BENCH_DATABASE
  if (keep !== undefined && keep !== "" && !/^[a-z_][a-z0-9_]*$/.test(keep)) {
    throw new Error(`BENCH_DATABASE: ${JSON.stringify(keep)} is not a lower-case database name`)
  }
  if (adminUrl !== undefined && adminUrl !== "") {
    const kept = keep !== undefined && keep !== ""
    const name = kept ? keep : `streaks_bench_${Date.now()}`
    const admin = new pg.Client({ connectionString: adminUrl })
    await admin.connect()
    const exists = kept && (await admin.query("select 1 from pg_database where datname = $1", [name])).rowCount! > 0
    if (!exists) await admin.query(`create database ${name}`)
    await admin.end()
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return {
      url: url.toString(),
      description: `DATABASE_URL (database ${name}${kept ? ", kept" : ""})`,
      close: async () => {
        if (kept) return
        const c = new pg.Client({ connectionString: adminUrl })
        await c.connect()
        await c.query(`drop database if exists ${name} with (force)`)
        await c.end()
      }
    }
  }
  if (keep !== undefined && keep !== "") throw new Error("BENCH_DATABASE needs DATABASE_URL")
  const scope = Effect.runSync(Scope.make())
  const parent = mkdtempSync(join(tmpdir(), "streaks-bench-pg-"))
  const dataDir = join(parent, "pg")
  const info = await Effect.runPromise(
    Scope.extend(
      EmbeddedPostgres.make({ dataDir, persistent: false, postgresFlags: ["-c", "max_connections=200"] }),
      scope
    )
  )
  return {
    url: Redacted.value(info.url),
    description: `embedded PostgreSQL (throwaway cluster on port ${info.port})`,
    // The cluster removes its own folder; the one made for it goes too.
    close: () =>
      Effect.runPromise(Scope.close(scope, Exit.void)).finally(() => rmSync(parent, { recursive: true, force: true }))
  }
}
