/**
 * Runs the backend on Postgres: `DATABASE_URL` when set, else an embedded Postgres kept under
 * `STREAKS_DATA_DIR` (default `./.streaks-embed`). The program this backend counts into is
 * provisioned on the first start and remembered in `<data dir>/tenant.json`.
 *
 *   npx -y pnpm@10.34.8 --filter @streaks-examples/embed-in-existing-backend start
 */
import { serve } from "@hono/node-server"
import { SecretBox } from "@streaks/core"
import { PgConnection, PgStorage } from "@streaks/storage-pg"
import { Layer, Option, Redacted } from "effect"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { makeApp } from "./app.js"
import { ensureTenant, makeRuntime, type Tenant } from "./Streaks.js"

const port = Number(process.env.PORT ?? 3000)
const dataDir = resolve(process.env.STREAKS_DATA_DIR ?? "./.streaks-embed")
const databaseUrl = Option.fromNullable(process.env.DATABASE_URL).pipe(Option.filter((url) => url !== ""))

// Storage: every port on Postgres. PgStorage.layer() migrates the schema when it starts.
const storage = PgStorage.layer().pipe(
  Layer.provide(PgConnection.layer({ url: databaseUrl, dataDir: join(dataDir, "pg") }))
)
const secretKey = process.env.STREAKS_SECRET_KEY
const runtime = makeRuntime(storage, secretKey === undefined ? undefined : SecretBox.layer(Redacted.make(secretKey)))

// Promise-based code calls Effect services with `runtime.runPromise`: it resolves with the value
// or rejects with the failure (here at start-up, where any failure should stop the process).
const tenantFile = join(dataDir, "tenant.json")
const saved = existsSync(tenantFile) ? JSON.parse(readFileSync(tenantFile, "utf8")) as Tenant : undefined
const tenant = await runtime.runPromise(ensureTenant(saved))
mkdirSync(dataDir, { recursive: true })
writeFileSync(tenantFile, JSON.stringify(tenant, null, 2))

const app = makeApp(runtime, tenant)
const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, (info) => {
  console.log(
    `listening on http://127.0.0.1:${info.port} (database: ${
      Option.isSome(databaseUrl) ? "DATABASE_URL" : `embedded under ${dataDir}`
    })`
  )
  console.log(`try: curl -s -X POST -H 'x-user-id: member-42' http://127.0.0.1:${info.port}/me/lessons/intro/complete`)
})

// Shutdown: stop taking requests, then release the runtime (pool closed, embedded Postgres stopped).
const shutdown = () => server.close(() => void runtime.dispose().then(() => process.exit(0)))
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)
