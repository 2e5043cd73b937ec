/**
 * The MCP worker end to end: the reference server (`Main.layer`) on Postgres with the worker at
 * `/mcp`, talked to by the official SDK's client over Streamable HTTP, its answers compared with
 * the customer REST API's; the bearer, query-string and `Origin` rules over plain HTTP; the
 * operator's MCP-token routes; and `streaks mcp` serving the worker on a port of its own.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Main from "../src/Main.js"
import * as McpWorker from "../src/McpWorker.js"
import * as ServerConfig from "../src/ServerConfig.js"

const ADMIN = "mcp-e2e-admin"
const AGENT_ORIGIN = "https://agent.example"
const DAY = 86_400_000

/**
 * The environment of the servers: read by `ServerConfig.config` (every other setting at its
 * default) and by the worker's `McpConfig`. The directory cache is off, so that a program's status
 * change shows at once (the tests switch programs to live).
 */
const environment = (url: Redacted.Redacted<string>) =>
  ConfigProvider.fromMap(
    new Map([
      ["DATABASE_URL", Redacted.value(url)],
      ["STREAKS_ADMIN_TOKEN", ADMIN],
      ["STREAKS_SECRET_KEY", "mcp-e2e-secret-key"],
      ["STREAKS_DB_POOL_SIZE", "4"],
      ["STREAKS_DIRECTORY_CACHE_TTL", "0 seconds"],
      ["STREAKS_MCP_ALLOWED_ORIGINS", AGENT_ORIGIN]
    ])
  )

/** `streaks mcp` alone, on the same database, its address for the tests. */
class Standalone extends Effect.Tag("mcp-e2e/Standalone")<Standalone, { readonly url: string }>() {}

/** The reference server and `streaks mcp`, both on any free port, on one fresh database. */
const servers = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = yield* PgTest.url
    const read = yield* Effect.withConfigProvider(ServerConfig.config, environment(url))
    const config = { ...read, port: 0 }
    return Layer.merge(
      Main.layer(config),
      Layer.effect(
        Standalone,
        HttpServer.addressFormattedWith((address) => Effect.succeed({ url: address }))
      ).pipe(Layer.provide(McpWorker.layerHttp(config, 0)))
    ).pipe(Layer.provide(Layer.setConfigProvider(environment(url))))
  })
).pipe(
  Layer.provide(PgTest.layer),
  // Built under TestContext, whose clock stands at 1970: the servers must see real time.
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

const base = Effect.map(NodeServer.NodeServer, (server) => server.url)

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

const http = (path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) =>
  Effect.flatMap(base, (url) =>
    Effect.promise(async (): Promise<Reply> => {
      const response = await fetch(`${url}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
      })
      const text = await response.text()
      return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
    }))

const admin = (path: string, body?: unknown, method?: string) =>
  http(path, {
    headers: { "x-admin-token": ADMIN },
    ...(body !== undefined ? { body } : {}),
    ...(method !== undefined ? { method } : {})
  })

const rest = (token: string, path: string, body?: unknown) =>
  http(`/v1/api${path}`, { headers: { authorization: `Bearer ${token}` }, ...(body !== undefined ? { body } : {}) })

/** A workspace with a project and a program (test mode), and a credential of each kind over it. */
const tenant = (name: string) =>
  Effect.gen(function*() {
    const workspace = yield* admin("/admin/workspaces", { name, plan: "starter" })
    const project = yield* admin("/admin/projects", {
      workspaceId: workspace.body.id,
      name,
      allowedOrigins: [],
      timezone: "UTC"
    })
    const program = yield* admin("/admin/programs", {
      projectId: project.body.id,
      name: "Daily lesson",
      eventKey: "lesson"
    })
    const apiKey = yield* admin(`/admin/workspaces/${workspace.body.id}/api-keys`, { name: "key" })
    const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [workspace.body.id], appName: "Zapier" })
    const mcp = yield* admin("/admin/mcp-tokens", { name: "Support agent", workspaceIds: [workspace.body.id] })
    expect([workspace.status, project.status, program.status, apiKey.status, grant.status, mcp.status]).toEqual([
      201,
      201,
      201,
      201,
      201,
      201
    ])
    return {
      workspaceId: workspace.body.id as string,
      programId: program.body.id as string,
      tokens: {
        apiKey: apiKey.body.key as string,
        oauth: grant.body.accessToken as string,
        mcp: mcp.body.token as string
      },
      mcpTokenId: mcp.body.id as string
    }
  })

/** The SDK client connected to `url`'s `/mcp` as the holder of `token`, closed with the scope. */
const connectTo = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "e2e-agent", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } }
        })
      )
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const connect = (token: string) => Effect.flatMap(base, (url) => connectTo(url, token))

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(() => client.callTool({ name, arguments: args }))

const textOf = (result: Record<string, unknown>) =>
  (result["content"] as ReadonlyArray<{ readonly text?: string }>)[0]?.text

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } }
}
const mcpHeaders = { accept: "application/json, text/event-stream" }

const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString()

layer(servers, { timeout: 120_000 })("the MCP worker", (it) => {
  it.scoped("lists its tools with their input and output schemas, for each kind of credential", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Listing")
      for (const token of Object.values(t.tokens)) {
        const client = yield* connect(token)
        const { tools } = yield* Effect.promise(() => client.listTools())
        expect(tools.map((tool) => tool.name)).toEqual([
          "list_programs",
          "get_member_streak",
          "explain_streak",
          "simulate_policy",
          "record_action",
          "repair_streak",
          "list_at_risk",
          "get_usage",
          "get_experiment_report"
        ])
        for (const tool of tools) {
          expect(tool.inputSchema.type).toBe("object")
          expect(tool.outputSchema?.type).toBe("object")
          expect(tool.annotations?.readOnlyHint).toBe(tool.name !== "record_action" && tool.name !== "repair_streak")
        }
      }
    }))

  it.scoped("each tool answers what the customer REST API answers to the same question", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Same answers")
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      const client = yield* connect(t.tokens.mcp)
      const key = t.tokens.apiKey
      for (const [userHash, days] of [["alice", [2, 1]], ["bob", [1]], ["carol", [1, 0]]] as const) {
        for (const day of days) {
          const viaMcp = yield* call(client, "record_action", {
            programId: t.programId,
            userHash: `${userHash}-mcp`,
            ts: daysAgo(day)
          })
          const viaRest = yield* rest(key, `/programs/${t.programId}/events`, {
            userHash: `${userHash}-rest`,
            ts: daysAgo(day)
          })
          expect(viaMcp.structuredContent).toEqual(viaRest.body)
          yield* rest(key, `/programs/${t.programId}/events`, { userHash, ts: daysAgo(day) })
        }
      }
      const again = yield* call(client, "record_action", { programId: t.programId, userHash: "carol-mcp" })
      const againRest = yield* rest(key, `/programs/${t.programId}/events`, { userHash: "carol-rest" })
      expect(again.structuredContent).toEqual(againRest.body)

      const programs = yield* rest(key, "/programs")
      expect((yield* call(client, "list_programs")).structuredContent).toEqual({
        programs: programs.body.map((p: any) => ({
          id: p.id,
          name: p.name,
          eventKey: p.eventKey,
          status: p.status,
          projectId: p.project.id,
          policy: p.policy
        }))
      })
      for (const userHash of ["alice", "bob", "carol", "nobody"]) {
        const member = yield* call(client, "get_member_streak", { programId: t.programId, userHash })
        expect(member.structuredContent).toEqual(
          (yield* rest(key, `/programs/${t.programId}/members/${userHash}`)).body
        )
      }
      expect((yield* call(client, "get_usage")).structuredContent).toEqual((yield* rest(key, "/usage")).body)
      expect((yield* call(client, "get_usage", { month: "2025-01" })).structuredContent)
        .toEqual((yield* rest(key, "/usage?month=2025-01")).body)

      // The Proof report: the tool's answer is the REST one, running or named.
      const started = (yield* rest(key, `/programs/${t.programId}/experiments`, { holdoutPercent: 20 })).body
      const viaTool = (yield* call(client, "get_experiment_report", { programId: t.programId })).structuredContent
      expect(viaTool).toEqual((yield* rest(key, `/programs/${t.programId}/experiments/current`)).body)
      expect(
        (yield* call(client, "get_experiment_report", { programId: t.programId, experimentId: started.id }))
          .structuredContent
      ).toEqual((yield* rest(key, `/programs/${t.programId}/experiments/${started.id}`)).body)
      expect((viaTool as any).report.horizons).toHaveLength(4)

      // At risk: alive but today not kept; each listed with the current the member view shows.
      const atRisk = (yield* call(client, "list_at_risk", { programId: t.programId })).structuredContent as any
      expect(atRisk.members.map((m: any) => m.userHash)).toEqual([
        "alice",
        "alice-mcp",
        "alice-rest",
        "bob",
        "bob-mcp",
        "bob-rest"
      ])
      for (const m of atRisk.members) {
        const member = (yield* rest(key, `/programs/${t.programId}/members/${m.userHash}`)).body
        expect([m.current, member.pending, member.todayDone]).toEqual([member.current, true, false])
      }
    }))

  it.scoped("record_action counts once with an idempotency key and keeps test progress apart from live", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Counting")
      const client = yield* connect(t.tokens.oauth)
      const member = () => Effect.map(rest(t.tokens.apiKey, `/programs/${t.programId}/members/m1`), (r) => r.body)
      const record = (args: Record<string, unknown>) =>
        Effect.map(
          call(client, "record_action", { programId: t.programId, userHash: "m1", ...args }),
          (r) => r.structuredContent
        )

      // A test program: nothing counts without test: true; with it, the test ledger moves.
      expect(yield* record({})).toEqual({ counted: false, reason: "PROGRAM_NOT_LIVE" })
      expect((yield* member()).current).toBe(0)
      expect(yield* record({ test: true, ts: daysAgo(1) })).toEqual({ counted: true })
      expect(yield* member()).toMatchObject({ current: 1, isLive: false })

      // Live: the same key counts once; its repeat replays the first answer and marks nothing.
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      expect(yield* member()).toMatchObject({ current: 0, isLive: true })
      expect(yield* record({ idempotencyKey: "run-1", ts: daysAgo(1) })).toEqual({ counted: true })
      expect(yield* record({ idempotencyKey: "run-1" })).toEqual({ counted: true })
      // The REST count action is the same door: the key replays there too.
      const viaRest = yield* rest(t.tokens.apiKey, `/programs/${t.programId}/events`, {
        userHash: "m1",
        idempotencyKey: "run-1"
      })
      expect([viaRest.status, viaRest.body]).toEqual([202, { counted: true }])
      expect(yield* member()).toMatchObject({ current: 1, todayDone: false })
      // A second action of that day moves nothing; a test action does not touch the live ledger.
      expect(yield* record({ ts: daysAgo(1) })).toMatchObject({ duplicate: true })
      expect(yield* record({ test: true })).toEqual({ counted: true })
      expect(yield* member()).toMatchObject({ current: 1, todayDone: false })
      expect(yield* record({})).toEqual({ counted: true })
      expect(yield* member()).toMatchObject({ current: 2, todayDone: true })
    }))

  it.scoped("repair_streak is audited as the REST repair is: actor mcp_token and the client's address; a refused repair leaves no entry", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Support")
      const policy = yield* admin(`/admin/programs/${t.programId}/policy`, { repairWindowDays: 7 }, "PUT")
      expect(policy.status).toBe(200)
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      const client = yield* connect(t.tokens.mcp)
      for (const n of [3, 2]) {
        expect(
          (yield* call(client, "record_action", { programId: t.programId, userHash: "m1", ts: daysAgo(n) }))
            .structuredContent
        ).toEqual({ counted: true })
      }
      const repairs = () =>
        Effect.map(
          rest(t.tokens.apiKey, "/audit"),
          (r) => (r.body.entries as ReadonlyArray<any>).filter((e) => e.action === "streak.repair")
        )
      const yesterday = daysAgo(1).slice(0, 10)

      // Refused (the day before yesterday was kept): NOT_REPAIRABLE, and nothing in the log.
      const refused = yield* call(client, "repair_streak", {
        programId: t.programId,
        userHash: "m1",
        period: daysAgo(2).slice(0, 10),
        reason: "ticket 41"
      })
      expect([refused.isError, textOf(refused)]).toEqual([true, "NOT_REPAIRABLE"])
      expect(yield* repairs()).toEqual([])

      const repaired = yield* call(client, "repair_streak", {
        programId: t.programId,
        userHash: "m1",
        period: yesterday,
        reason: "ticket 42"
      })
      expect(repaired.isError).not.toBe(true)
      expect(repaired.structuredContent).toMatchObject({ current: 3, pending: true })
      const entries = yield* repairs()
      expect(entries).toEqual([{
        id: expect.any(String),
        at: expect.any(String),
        workspaceId: t.workspaceId,
        actor: { kind: "mcp_token", id: t.mcpTokenId },
        clientAddress: expect.stringMatching(/127\.0\.0\.1/),
        action: "streak.repair",
        target: t.programId,
        details: { userHash: "m1" }
      }])
      // The operator's log has the same entry.
      const all = yield* admin("/admin/audit")
      expect(
        (all.body.entries as ReadonlyArray<any>).filter((e) => e.action === "streak.repair" && e.target === t.programId)
      )
        .toEqual(entries)
    }))

  it.scoped("a program of another workspace is NOT_FOUND for every kind of credential, like an unknown one", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Ours")
      const other = yield* tenant("Theirs")
      for (const token of Object.values(t.tokens)) {
        const client = yield* connect(token)
        const listed = (yield* call(client, "list_programs")).structuredContent as any
        expect(listed.programs.map((p: any) => p.id)).toEqual([t.programId])
        for (const programId of [other.programId, "prg_unknown"]) {
          for (
            const [name, args] of [
              ["get_member_streak", { programId, userHash: "m1" }],
              ["record_action", { programId, userHash: "m1", test: true }],
              ["list_at_risk", { programId }]
            ] as const
          ) {
            const result = yield* call(client, name, args)
            expect([result.isError, textOf(result)]).toEqual([true, "NOT_FOUND"])
          }
        }
      }
      const theirs = yield* rest(other.tokens.apiKey, `/programs/${other.programId}/members/m1`)
      expect(theirs.body.current).toBe(0)
    }))

  it.effect("no token, a wrong token and a revoked one answer 401 with the challenge naming the resource document", () =>
    Effect.gen(function*() {
      const url = yield* base
      const t = yield* tenant("Challenge")
      const challenge = `Bearer resource_metadata="${url}/.well-known/oauth-protected-resource"`
      expect(
        (yield* http("/mcp", { headers: { ...mcpHeaders, authorization: `Bearer ${t.tokens.mcp}` }, body: initialize }))
          .status
      ).toBe(200)
      expect((yield* admin(`/admin/mcp-tokens/${t.mcpTokenId}`, undefined, "DELETE")).status).toBe(204)
      for (
        const authorization of [undefined, "Bearer svc_mcp_wrong", `Basic ${t.tokens.mcp}`, `Bearer ${t.tokens.mcp}`]
      ) {
        const reply = yield* http("/mcp", {
          headers: { ...mcpHeaders, ...(authorization !== undefined ? { authorization } : {}) },
          body: initialize
        })
        expect([reply.status, reply.headers.get("www-authenticate"), reply.body], String(authorization))
          .toEqual([401, challenge, { error: "UNAUTHORIZED" }])
      }
      // The SDK's client cannot connect with the revoked token either.
      expect((yield* Effect.exit(Effect.scoped(connectTo(url, t.tokens.mcp))))._tag).toBe("Failure")
      const document = yield* http("/.well-known/oauth-protected-resource")
      expect([document.status, document.body]).toEqual([200, {
        resource: `${url}/mcp`,
        resource_name: "Streaks MCP worker",
        authorization_servers: [url],
        bearer_methods_supported: ["header"]
      }])
      expect((yield* http("/.well-known/oauth-protected-resource/mcp")).body).toEqual(document.body)
    }))

  it.effect("a token in the query string is refused, even beside a valid header", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Query")
      for (const headers of [mcpHeaders, { ...mcpHeaders, authorization: `Bearer ${t.tokens.mcp}` }]) {
        for (const query of [`access_token=${t.tokens.mcp}`, `token=${t.tokens.apiKey}`]) {
          const reply = yield* http(`/mcp?${query}`, { headers, body: initialize })
          expect([reply.status, reply.body?.error]).toEqual([400, "INVALID_BODY"])
        }
      }
    }))

  it.effect("a request from an Origin that is not allowed answers 403; an allowed one gets CORS headers", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Origins")
      const headers = { ...mcpHeaders, authorization: `Bearer ${t.tokens.mcp}` }
      const foreign = yield* http("/mcp", { headers: { ...headers, origin: "https://evil.example" }, body: initialize })
      expect([foreign.status, foreign.body]).toEqual([403, { error: "FORBIDDEN_ORIGIN" }])
      const noToken = yield* http("/mcp", {
        headers: { ...mcpHeaders, origin: "https://evil.example" },
        body: initialize
      })
      expect(noToken.status).toBe(403)
      const allowed = yield* http("/mcp", { headers: { ...headers, origin: AGENT_ORIGIN }, body: initialize })
      expect([allowed.status, allowed.headers.get("access-control-allow-origin")]).toEqual([200, AGENT_ORIGIN])
      const preflight = yield* http("/mcp", {
        method: "OPTIONS",
        headers: { origin: AGENT_ORIGIN, "access-control-request-method": "POST" }
      })
      expect([preflight.status, preflight.headers.get("access-control-allow-headers")]).toEqual([
        204,
        expect.stringContaining("authorization")
      ])
    }))

  it.effect("the operator's MCP-token routes: 201 shown once, validation, 404s, and no access to the REST API", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Tokens")
      const created = yield* admin("/admin/mcp-tokens", { name: "Agent", workspaceIds: [t.workspaceId] })
      expect(created.status).toBe(201)
      expect(Object.keys(created.body).sort()).toEqual(["id", "token"])
      expect(created.body.token).toMatch(/^svc_mcp_/)
      expect((yield* rest(created.body.token, "/me")).status).toBe(401)
      expect((yield* admin("/admin/mcp-tokens", { workspaceIds: [t.workspaceId] })).body).toEqual(
        expect.objectContaining({ error: "INVALID_BODY" })
      )
      expect((yield* admin("/admin/mcp-tokens", { name: "Agent", workspaceIds: [] })).status).toBe(400)
      expect((yield* admin("/admin/mcp-tokens", { name: "Agent", workspaceIds: ["ws_unknown"] })).status).toBe(404)
      expect((yield* http("/admin/mcp-tokens", { body: { name: "Agent", workspaceIds: [t.workspaceId] } })).status)
        .toBe(401)
      expect((yield* admin(`/admin/oauth-grants/${created.body.id}`, undefined, "DELETE")).status).toBe(404)
      expect((yield* admin(`/admin/mcp-tokens/${created.body.id}`, undefined, "DELETE")).status).toBe(204)
      expect((yield* admin(`/admin/mcp-tokens/${created.body.id}`, undefined, "DELETE")).status).toBe(404)
      expect((yield* admin("/admin/mcp-tokens/mcp_unknown", undefined, "DELETE")).status).toBe(404)
    }))

  it.effect("every /mcp answer names its nearest limit, under serve and under streaks mcp alike (403, 400, 401, 200)", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Limits")
      const { url: standalone } = yield* Standalone
      const mounted = yield* base
      const bearer = { ...mcpHeaders, "content-type": "application/json", authorization: `Bearer ${t.tokens.mcp}` }
      for (const origin of [mounted, standalone]) {
        const send = (path: string, headers: Record<string, string>) =>
          Effect.promise(() => fetch(`${origin}${path}`, { method: "POST", headers, body: JSON.stringify(initialize) }))
        const replies = [
          yield* send("/mcp", { ...bearer, origin: "https://evil.example" }),
          yield* send(`/mcp?access_token=${t.tokens.mcp}`, bearer),
          yield* send("/mcp", { ...bearer, authorization: "Bearer mcp_wrong" }),
          yield* send("/mcp", bearer)
        ]
        expect(replies.map((r) => r.status)).toEqual([403, 400, 401, 200])
        for (const r of replies.slice(0, 3)) {
          expect(r.headers.get("ratelimit-policy")).toMatch(/^"failed-auth";q=\d+;w=\d+$/)
          expect(r.headers.get("ratelimit")).toMatch(/^"failed-auth";r=\d+;t=\d+$/)
        }
        expect(replies[3]!.headers.get("ratelimit-policy")).toMatch(/^"credential";q=\d+;w=\d+$/)
      }
    }))

  it.scoped("streaks mcp serves the same worker on a port of its own, and nothing else there", () =>
    Effect.gen(function*() {
      const t = yield* tenant("Standalone")
      const { url } = yield* Standalone
      const client = yield* connectTo(url, t.tokens.mcp)
      const listed = (yield* call(client, "list_programs")).structuredContent as any
      expect(listed.programs.map((p: any) => p.id)).toEqual([t.programId])
      const other = yield* Effect.promise(() =>
        fetch(`${url}/v1/api/programs`).then(async (r) => [r.status, await r.json()])
      )
      expect(other).toEqual([404, { error: "NOT_FOUND" }])
    }))
})
