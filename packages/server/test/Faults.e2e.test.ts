/**
 * The reference server (`Main.layer`) under faults, over real HTTP on Postgres, with production
 * settings for webhook URLs (no insecure URLs): a database that hangs (a statement held by another
 * connection's lock) answers 503 `SERVICE_UNAVAILABLE` within the statement timeout, on a customer
 * credential check too (never 401), and recovers without a restart; subscription URLs into the
 * operator's network are refused.
 */
import { assert, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { PgClient } from "@effect/sql-pg"
import { Clock, Deferred, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as Main from "../src/Main.js"
import * as ServerConfig from "../src/ServerConfig.js"

const ADMIN = "faults-admin-token"

const server = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = yield* PgTest.url
    const fromEnv = yield* ServerConfig.config
    return Layer.effect(NodeServer.NodeServer, NodeServer.NodeServer).pipe(Layer.provide(Main.layer({
      ...fromEnv,
      port: 0,
      host: "127.0.0.1",
      databaseUrl: Option.some(url),
      dataDir: "./.streaks-test",
      adminToken: Option.some(Redacted.make(ADMIN)),
      secretKey: Option.some(Redacted.make("faults-secret-key")),
      allowInsecureWebhookUrls: false,
      databaseStatementTimeout: Duration.millis(500),
      rateLimitAuthFailures: 10_000
    })))
  })
).pipe(Layer.provideMerge(PgTest.layer), Layer.provideMerge(Layer.setClock(Clock.make())))

interface Reply {
  readonly status: number
  readonly body: any
  readonly ms: number
}

const call = (path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) =>
  Effect.flatMap(NodeServer.NodeServer, (s) =>
    Effect.promise(async (): Promise<Reply> => {
      const started = Date.now()
      const response = await fetch(`${s.url}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
      })
      const text = await response.text()
      return { status: response.status, body: text === "" ? undefined : JSON.parse(text), ms: Date.now() - started }
    }))

const admin = (path: string, body: unknown) => call(path, { headers: { "x-admin-token": ADMIN }, body })

/** A workspace, project and program, and an API key of the workspace. */
const tenant = Effect.gen(function*() {
  const ws = yield* admin("/admin/workspaces", { name: "Faults", plan: "starter" })
  const project = yield* admin("/admin/projects", {
    workspaceId: ws.body.id,
    name: "p",
    allowedOrigins: ["https://a.example"]
  })
  const program = yield* admin("/admin/programs", {
    projectId: project.body.id,
    name: "Daily",
    eventKey: "done",
    milestones: []
  })
  const key = yield* admin(`/admin/workspaces/${ws.body.id}/api-keys`, { name: "k" })
  assert.deepStrictEqual([ws.status, project.status, program.status, key.status], [201, 201, 201, 201])
  return { programId: program.body.id as string, apiKey: key.body.key as string }
})

/** Another connection holds an exclusive lock on `table` until the scope closes (then rolls back). */
const locked = (table: string) =>
  Effect.gen(function*() {
    const url = yield* PgTest.url
    const held = yield* Deferred.make<void>()
    yield* Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
        yield* Deferred.succeed(held, undefined)
        return yield* Effect.never
      }))
    }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })), Effect.orDie, Effect.forkScoped)
    yield* Deferred.await(held)
  })

layer(server, { timeout: 120_000 })("the reference server under faults", (it) => {
  it.effect("a credential check held up by the database answers 503 within the statement timeout, never 401; it recovers without a restart", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const me = () => call("/v1/api/me", { headers: { authorization: `Bearer ${t.apiKey}` } })
      assert.strictEqual((yield* me()).status, 200)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* locked("streaks_api_keys")
        const held = yield* me()
        assert.deepStrictEqual([held.status, held.body], [503, { error: "SERVICE_UNAVAILABLE" }])
        assert.isBelow(held.ms, 2_000)
        const write = yield* admin("/admin/workspaces", { name: "w", plan: "starter" })
        assert.strictEqual(write.status, 201, "tables not locked still work")
      }))
      assert.strictEqual((yield* me()).status, 200)
    }))

  it.effect("a write held up by a lock answers 503 within the statement timeout", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.gen(function*() {
        yield* locked("streaks_workspaces")
        const held = yield* admin("/admin/workspaces", { name: "w", plan: "starter" })
        assert.deepStrictEqual([held.status, held.body], [503, { error: "SERVICE_UNAVAILABLE" }])
        assert.isBelow(held.ms, 2_000)
      }))
      assert.strictEqual((yield* admin("/admin/workspaces", { name: "w", plan: "starter" })).status, 201)
    }))

  it.effect("subscription URLs into the operator's network are refused with 400 INVALID_BODY", () =>
    Effect.gen(function*() {
      const t = yield* tenant
      const hook = (url: string) =>
        call("/v1/api/hooks", {
          headers: { authorization: `Bearer ${t.apiKey}` },
          body: { programId: t.programId, url, eventTypes: ["milestone.achieved"] }
        })
      for (
        const url of [
          "https://169.254.169.254/latest/meta-data",
          "https://10.0.0.5/hook",
          "https://[::1]/hook",
          "https://localhost/hook",
          "http://127.0.0.1:9/hook",
          "https://100.100.100.100/x"
        ]
      ) {
        const reply = yield* hook(url)
        assert.deepStrictEqual([reply.status, reply.body?.error], [400, "INVALID_BODY"], url)
      }
      assert.strictEqual((yield* hook("https://93.184.216.34/hook")).status, 201)
    }))
})
