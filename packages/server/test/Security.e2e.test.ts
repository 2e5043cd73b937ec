/**
 * Security probes against the reference server (`Main.layer`, MCP worker included) on Postgres:
 * - no credential of one workspace (API key, OAuth grant, a token a user consented to through the
 *   authorization server, MCP token, a signed-in user's session) reads, changes or learns of another
 *   workspace's data (its programs, hooks, deliveries, keys, apps, users and audit log) through any
 *   customer REST route (every `/v1/api` route of the OpenAPI document) or any MCP tool;
 * - no plaintext secret (tokens, keys, signing and webhook secrets, the admin token, the sealing
 *   key, passwords, session and invite tokens) is ever written to the log or to any table.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { SqlClient } from "@effect/sql"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Logger, LogLevel } from "effect"
import * as OAuthFlow from "./support/OAuthFlow.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const ADMIN = "security-probe-admin-token-7f3a"
const SEALING_KEY = "security-probe-sealing-key-91c2"

/** Every line the server logs, as the default logger would print it. */
const logged: Array<string> = []
const capture = Logger.replace(
  Logger.defaultLogger,
  Logger.make((options) => {
    logged.push(Logger.logfmtLogger.log(options))
  })
)

const settings = {
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_SECRET_KEY: SEALING_KEY,
  STREAKS_DB_POOL_SIZE: "4",
  STREAKS_DIRECTORY_CACHE_TTL: "0 seconds",
  // Receivers of these tests are on 127.0.0.1.
  STREAKS_ALLOW_INSECURE_WEBHOOK_URLS: "true",
  STREAKS_RATE_LIMIT_AUTH_FAILURES: "0"
}

const server = ReferenceServer.layer(settings).pipe(
  Layer.provide([capture, Logger.minimumLogLevel(LogLevel.All)]),
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

interface Reply {
  readonly status: number
  readonly text: string
  readonly body: any
}

/** A JSON `body`, or a `raw` body of its own type (an import's NDJSON). */
interface Init {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: unknown
  readonly raw?: { readonly contentType: string; readonly text: string }
}

const http = (path: string, init: Init = {}) =>
  Effect.flatMap(NodeServer.NodeServer, (s) =>
    Effect.promise(async (): Promise<Reply> => {
      const sent = init.raw !== undefined
        ? { type: init.raw.contentType, text: init.raw.text }
        : init.body !== undefined
        ? { type: "application/json", text: JSON.stringify(init.body) }
        : undefined
      const response = await fetch(`${s.url}${path}`, {
        method: init.method ?? (sent === undefined ? "GET" : "POST"),
        headers: { ...(sent !== undefined ? { "content-type": sent.type } : {}), ...init.headers },
        ...(sent !== undefined ? { body: sent.text } : {})
      })
      const text = await response.text()
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        body = undefined
      }
      return { status: response.status, text, body }
    }))

const admin = (path: string, body?: unknown, method?: string) =>
  http(path, {
    headers: { "x-admin-token": ADMIN },
    ...(body !== undefined ? { body } : {}),
    ...(method ? { method } : {})
  })

/** A bearer token, or a session as `session:<cookie>|<csrf>`, which goes as the cookie and CSRF header. */
const rest = (token: string, path: string, init: Omit<Init, "headers"> = {}) => {
  const session = /^session:(.*)\|(.*)$/.exec(token)
  const headers: Record<string, string> = session === null
    ? { authorization: `Bearer ${token}` }
    : { cookie: session[1]!, "x-csrf-token": session[2]! }
  return http(`/v1/api${path}`, { headers, ...init })
}

const PASSWORD = "security probe password 8d1e"

/** A user of the workspace, signed in through the form: `session:<cookie>|<csrf>`, and the token. */
const signedIn = (workspaceId: string, name: string) =>
  Effect.gen(function*() {
    const email = `${name}.owner@example.com`
    const user = yield* admin("/admin/users", {
      email,
      name,
      workspaces: [{ workspaceId, role: "owner" }],
      password: PASSWORD
    })
    const answer = yield* Effect.flatMap(NodeServer.NodeServer, (s) =>
      Effect.promise(() =>
        fetch(`${s.url}/sign-in`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ email, password: PASSWORD }).toString()
        })
      ))
    const cookie = answer.headers.getSetCookie().find((c) => c.startsWith("streaks_session="))!.split(";")[0]!
    const me = yield* http("/v1/api/me", { headers: { cookie } })
    return {
      userId: user.body.id as string,
      email,
      credential: `session:${cookie}|${me.body.csrfToken as string}`,
      token: cookie.slice("streaks_session=".length)
    }
  })

/** A workspace with a live program, a member with activity, a subscription, an experiment and every kind of secret. */
const tenant = (name: string) =>
  Effect.gen(function*() {
    const workspace = yield* admin("/admin/workspaces", { name, plan: "starter" })
    const project = yield* admin("/admin/projects", {
      workspaceId: workspace.body.id,
      name,
      allowedOrigins: [`https://${name}.example`],
      timezone: "UTC"
    })
    const program = yield* admin("/admin/programs", {
      projectId: project.body.id,
      name: "Daily",
      eventKey: "lesson",
      milestones: [{ target: 1, msg: "First", rewardType: "coupon", rewardValue: `${name}-COUPON` }]
    })
    const rotated = yield* admin(`/admin/programs/${program.body.id}/webhook-secret`, {})
    const apiKey = yield* admin(`/admin/workspaces/${workspace.body.id}/api-keys`, { name: "key" })
    const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [workspace.body.id], appName: "Zapier" })
    const mcp = yield* admin("/admin/mcp-tokens", { name: "agent", workspaceIds: [workspace.body.id] })
    yield* admin(`/admin/programs/${program.body.id}/status`, { status: "live" })
    // A user of the workspace who connects an app by consent.
    const redirectUri = "https://app.example/callback"
    const client = yield* admin("/admin/oauth-clients", { name: `${name} app`, redirectUris: [redirectUri] })
    const password = `${name}-password-long-enough`
    const email = `${name}-owner@example.com`
    yield* admin("/admin/users", {
      email,
      name,
      workspaces: [{ workspaceId: workspace.body.id, role: "owner" }],
      password
    })
    const base = (yield* NodeServer.NodeServer).url
    const cookie = yield* Effect.promise(() => OAuthFlow.signIn(base, email, password))
    const consented = yield* Effect.promise(() =>
      OAuthFlow.consent(base, {
        clientId: client.body.clientId,
        clientSecret: client.body.clientSecret,
        redirectUri,
        cookie,
        workspaceIds: [workspace.body.id]
      })
    )
    const member = `${name}-member`
    const token = apiKey.body.key as string
    const hook = yield* rest(token, "/hooks", {
      body: { programId: program.body.id, url: "http://127.0.0.1:9/hook", eventTypes: ["milestone.achieved"] }
    })
    const counted = yield* http("/v1/server/e", {
      headers: { "x-streak-server-token": project.body.serverToken },
      body: { siteKey: project.body.siteKey, userHash: member, event: "lesson" }
    })
    const viaWebhook = yield* http(`/v1/webhook/${project.body.siteKey}/e`, {
      headers: { "x-streak-webhook-secret": rotated.body.webhookSecret },
      body: { userHash: `${member}-2`, event: "lesson" }
    })
    const experiment = yield* rest(token, `/programs/${program.body.id}/experiments`, { body: { holdoutPercent: 10 } })
    const person = yield* signedIn(workspace.body.id, name)
    const invited = yield* admin("/admin/users", {
      email: `${name}.invited@example.com`,
      name: `${name} invited`,
      workspaces: [{ workspaceId: workspace.body.id, role: "viewer" }]
    })
    const sql = yield* SqlClient.SqlClient
    const [message] = yield* sql<{ id: string }>`SELECT id FROM streaks_outbox WHERE subscription_id = ${hook.body.id}`
      .pipe(Effect.orDie)
    expect([workspace, project, program, apiKey, grant, mcp, hook, experiment].map((r) => r.status)).toEqual([
      201,
      201,
      201,
      201,
      201,
      201,
      201,
      201
    ])
    expect([rotated.status, counted.status, viaWebhook.status]).toEqual([200, 202, 202])
    return {
      ids: {
        workspaceId: workspace.body.id as string,
        projectId: project.body.id as string,
        siteKey: project.body.siteKey as string,
        programId: program.body.id as string,
        member,
        subscriptionId: hook.body.id as string,
        experimentId: experiment.body.id as string,
        coupon: `${name}-COUPON`,
        apiKeyId: apiKey.body.id as string,
        grantId: grant.body.id as string,
        userId: person.userId,
        email: person.email,
        invitedId: invited.body.id as string,
        messageId: message!.id
      },
      credentials: {
        apiKey: token,
        oauth: grant.body.accessToken as string,
        consented: consented.accessToken,
        mcp: mcp.body.token as string,
        session: person.credential
      },
      secrets: [
        project.body.serverToken,
        project.body.signingSecret,
        program.body.webhookSecret,
        rotated.body.webhookSecret,
        token,
        grant.body.accessToken,
        mcp.body.token,
        hook.body.secret,
        person.token,
        PASSWORD,
        new URL(invited.body.inviteUrl).searchParams.get("token")!,
        client.body.clientSecret,
        password,
        cookie.split("=")[1]!,
        consented.code,
        consented.verifier,
        consented.accessToken,
        consented.refreshToken
      ] as ReadonlyArray<string>
    }
  })

type Tenant = Effect.Effect.Success<ReturnType<typeof tenant>>

/** Which of `victim`'s identifiers appear in `text`. */
const leaks = (text: string, victim: Tenant) =>
  Object.entries(victim.ids).filter(([, id]) => text.includes(id)).map(([k]) => k)

/**
 * How to call each customer route on the victim's resources: path parameters, query and body. A
 * route of the OpenAPI document that is missing here fails the test, so new routes get probed.
 */
const probes = (victim: Tenant) => {
  const v = victim.ids
  return {
    "GET /v1/api/me": [{ path: "/me" }],
    "GET /v1/api/programs": [{ path: "/programs" }],
    "POST /v1/api/programs/{programId}/events": [{
      path: `/programs/${v.programId}/events`,
      body: { userHash: v.member }
    }],
    "GET /v1/api/programs/{programId}/members/{userHash}": [{ path: `/programs/${v.programId}/members/${v.member}` }],
    "GET /v1/api/programs/{programId}/members/{userHash}/ledger": [{
      path: `/programs/${v.programId}/members/${v.member}/ledger`
    }],
    "POST /v1/api/programs/{programId}/members/{userHash}/freezes": [{
      path: `/programs/${v.programId}/members/${v.member}/freezes`,
      body: { count: 1 }
    }],
    "POST /v1/api/programs/{programId}/members/{userHash}/repairs": [{
      path: `/programs/${v.programId}/members/${v.member}/repairs`,
      body: { period: new Date().toISOString().slice(0, 10), reason: "probe" }
    }],
    "POST /v1/api/programs/{programId}/members/{userHash}/pauses": [{
      path: `/programs/${v.programId}/members/${v.member}/pauses`,
      body: { start: new Date().toISOString().slice(0, 10), end: new Date().toISOString().slice(0, 10) }
    }],
    "GET /v1/api/programs/{programId}/members/{userHash}/pauses": [{
      path: `/programs/${v.programId}/members/${v.member}/pauses`
    }],
    "DELETE /v1/api/programs/{programId}/members/{userHash}/pauses/{pauseId}": [{
      path: `/programs/${v.programId}/members/${v.member}/pauses/pau_probe`,
      method: "DELETE"
    }],
    "POST /v1/api/programs/{programId}/outages": [{
      path: `/programs/${v.programId}/outages`,
      body: { start: new Date(Date.now() - 3_600_000).toISOString(), end: new Date().toISOString(), reason: "probe" }
    }],
    "GET /v1/api/programs/{programId}/outages": [{ path: `/programs/${v.programId}/outages` }],
    "PUT /v1/api/programs/{programId}/policy": [{
      path: `/programs/${v.programId}/policy`,
      method: "PUT",
      body: { cadence: "weekly" }
    }],
    "POST /v1/api/programs/{programId}/simulations": [{
      path: `/programs/${v.programId}/simulations`,
      body: { policy: { cadence: "weekly" } }
    }],
    "POST /v1/api/programs/{programId}/imports": [{
      path: `/programs/${v.programId}/imports`,
      raw: {
        contentType: "application/x-ndjson",
        text: `${JSON.stringify({ userHash: v.member, ts: new Date().toISOString() })}\n`
      }
    }],
    "GET /v1/api/programs/{programId}/imports/{importId}": [{ path: `/programs/${v.programId}/imports/imp_probe` }],
    "POST /v1/api/hooks": [{
      path: "/hooks",
      body: { programId: v.programId, url: "http://127.0.0.1:9/x", eventTypes: ["milestone.achieved"] }
    }],
    "DELETE /v1/api/hooks/{id}": [{ path: `/hooks/${v.subscriptionId}`, method: "DELETE" }],
    "GET /v1/api/programs/{programId}/webhook-samples": [
      { path: `/programs/${v.programId}/webhook-samples?type=milestone.achieved` },
      { path: `/programs/${v.programId}/webhook-samples?type=reward.unlocked` }
    ],
    "GET /v1/api/usage": [{ path: "/usage" }],
    "GET /v1/api/reports/{report}": ["overview", "events", "insights"].flatMap((r) => [
      { path: `/reports/${r}` },
      { path: `/reports/${r}?programId=${v.programId}` }
    ]),
    "POST /v1/api/programs/{programId}/experiments": [{
      path: `/programs/${v.programId}/experiments`,
      body: { holdoutPercent: 20 }
    }],
    "GET /v1/api/programs/{programId}/experiments/current": [{ path: `/programs/${v.programId}/experiments/current` }],
    "GET /v1/api/programs/{programId}/experiments": [{ path: `/programs/${v.programId}/experiments` }],
    "GET /v1/api/programs/{programId}/experiments/{experimentId}": [{
      path: `/programs/${v.programId}/experiments/${v.experimentId}`
    }],
    "POST /v1/api/programs/{programId}/experiments/current/stop": [{
      path: `/programs/${v.programId}/experiments/current/stop`,
      method: "POST"
    }],
    "GET /v1/api/api-keys": [{ path: "/api-keys" }],
    "POST /v1/api/api-keys": [{ path: "/api-keys", body: { name: "stolen", workspaceId: v.workspaceId } }],
    "DELETE /v1/api/api-keys/{id}": [{ path: `/api-keys/${v.apiKeyId}`, method: "DELETE" }],
    "GET /v1/api/connected-apps": [{ path: "/connected-apps" }],
    "DELETE /v1/api/connected-apps/{grantId}": [{ path: `/connected-apps/${v.grantId}`, method: "DELETE" }],
    "POST /v1/api/programs/{programId}/webhook-secret": [{
      path: `/programs/${v.programId}/webhook-secret`,
      method: "POST"
    }],
    "GET /v1/api/hooks": [{ path: "/hooks" }],
    "GET /v1/api/hooks/{id}/deliveries": [{ path: `/hooks/${v.subscriptionId}/deliveries` }],
    "POST /v1/api/hooks/{id}/deliveries/{messageId}/redeliver": [{
      path: `/hooks/${v.subscriptionId}/deliveries/${v.messageId}/redeliver`,
      method: "POST"
    }],
    "GET /v1/api/audit": [{ path: "/audit?limit=200" }]
  } as Record<
    string,
    ReadonlyArray<
      { readonly path: string; readonly method?: string; readonly body?: unknown; readonly raw?: Init["raw"] }
    >
  >
}

/** What the victim's own credential sees of its data, to compare before and after the probes. */
const standing = (victim: Tenant) =>
  Effect.gen(function*() {
    const key = victim.credentials.apiKey
    const member = yield* rest(key, `/programs/${victim.ids.programId}/members/${victim.ids.member}`)
    const experiment = yield* rest(key, `/programs/${victim.ids.programId}/experiments/current`)
    const sql = yield* SqlClient.SqlClient
    const hooks = yield* sql<
      { n: number }
    >`SELECT count(*)::int AS n FROM streaks_subscriptions WHERE id = ${victim.ids.subscriptionId}`
    const actions = yield* sql<
      { n: number }
    >`SELECT count(*)::int AS n FROM streaks_actions WHERE program_id = ${victim.ids.programId}`
    // The victim's own credentials still work, and its keys and apps are as they were.
    const own = yield* Effect.forEach(
      [victim.credentials.apiKey, victim.credentials.oauth, victim.credentials.session],
      (credential) => Effect.map(rest(credential, "/me"), (r) => r.status)
    )
    const keys = yield* rest(victim.credentials.session, "/api-keys")
    const apps = yield* rest(victim.credentials.session, "/connected-apps")
    const message = yield* sql<{ status: string }>`SELECT status FROM streaks_outbox WHERE id = ${victim.ids.messageId}`
    const secret = yield* sql<
      { h: string }
    >`SELECT webhook_secret_hash AS h FROM streaks_programs WHERE id = ${victim.ids.programId}`
    return {
      member: member.body,
      experiment: experiment.body?.experiment?.id ?? experiment.body?.id,
      hooks: hooks[0]!.n,
      actions: actions[0]!.n,
      own,
      keys: keys.body,
      apps: apps.body,
      message: message[0]!.status,
      secret: secret[0]!.h
    }
  }).pipe(Effect.orDie)

const connectMcp = (token: string) =>
  Effect.flatMap(NodeServer.NodeServer, (s) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "probe", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${token}` } }
          })
        )
        return client
      }),
      (client) => Effect.promise(() => client.close())
    ))

layer(server, { timeout: 180_000 })("security probes", (it) => {
  it.scoped(
    "no credential of workspace A reaches workspace B through any customer route or MCP tool (0 leaks, nothing changed)",
    () =>
      Effect.gen(function*() {
        const a = yield* tenant("alpha")
        const b = yield* tenant("bravo")
        const before = yield* standing(b)
        const document = (yield* http("/openapi.json")).body as { paths: Record<string, Record<string, unknown>> }
        const routes = Object.entries(document.paths).flatMap(([path, methods]) =>
          path.startsWith("/v1/api/") ? Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`) : []
        )
        const table = probes(b)
        expect(routes.filter((r) => table[r] === undefined), "customer routes without a probe").toEqual([])
        const findings: Array<string> = []
        let calls = 0
        for (const [kind, token] of Object.entries(a.credentials)) {
          for (const route of routes) {
            for (const probe of table[route]!) {
              const reply = yield* rest(token, probe.path, {
                ...(probe.method !== undefined ? { method: probe.method } : {}),
                ...(probe.body !== undefined ? { body: probe.body } : {}),
                ...(probe.raw !== undefined ? { raw: probe.raw } : {})
              })
              calls++
              const leaked = leaks(reply.text, b)
              if (leaked.length > 0) {
                findings.push(`${kind} ${route} ${probe.path}: ${reply.status} shows ${leaked.join(", ")}`)
              }
              const victimIds = [b.ids.programId, b.ids.subscriptionId, b.ids.apiKeyId, b.ids.grantId, b.ids.messageId]
              const body = probe.body as { programId?: string; workspaceId?: string } | undefined
              const targetsVictim = victimIds.some((id) => probe.path.includes(id)) ||
                body?.programId === b.ids.programId || body?.workspaceId === b.ids.workspaceId
              if (targetsVictim && reply.status < 400) {
                findings.push(`${kind} ${route} ${probe.path}: answered ${reply.status}`)
              }
              if (kind === "mcp" && reply.status !== 401) findings.push(`mcp token on REST ${route}: ${reply.status}`)
              if (reply.status >= 500) findings.push(`${kind} ${route} ${probe.path}: ${reply.status} ${reply.text}`)
            }
          }
        }
        // MCP: every tool, with each of A's bearer credentials, on B's program where the tool takes one.
        for (const [kind, token] of Object.entries(a.credentials).filter(([kind]) => kind !== "session")) {
          const client = yield* connectMcp(token)
          const { tools } = yield* Effect.promise(() => client.listTools())
          for (const tool of tools) {
            const properties = Object.keys(
              (tool.inputSchema as { properties?: Record<string, unknown> }).properties ?? {}
            )
            const args: Record<string, unknown> = {}
            if (properties.includes("programId")) args["programId"] = b.ids.programId
            if (properties.includes("userHash")) args["userHash"] = b.ids.member
            const result = yield* Effect.promise(() => client.callTool({ name: tool.name, arguments: args }))
            calls++
            const text = JSON.stringify(result)
            const leaked = leaks(text, b)
            if (leaked.length > 0) findings.push(`${kind} MCP ${tool.name}: shows ${leaked.join(", ")}`)
            if (properties.includes("programId") && result["isError"] !== true) {
              findings.push(`${kind} MCP ${tool.name}: no error on B's program`)
            }
          }
        }
        expect(findings).toEqual([])
        expect(calls).toBeGreaterThan(4 * routes.length)
        expect(yield* standing(b)).toEqual(before)
      }),
    120_000
  )

  it.effect("no customer credential, a consented OAuth token and a session included, lists, changes or removes users", () =>
    Effect.gen(function*() {
      const t = yield* tenant("delta")
      const victim = t.ids.userId
      const roles = () =>
        Effect.map(
          admin("/admin/users"),
          (r) => JSON.stringify((r.body.users as Array<{ id: string }>).find((u) => u.id === victim))
        )
      const before = yield* roles()
      const findings: Array<string> = []
      for (const [kind, token] of Object.entries(t.credentials)) {
        const session = /^session:(.*)\|(.*)$/.exec(token)
        const headers: Record<string, string> = session === null
          ? { authorization: `Bearer ${token}` }
          : { cookie: session[1]!, "x-csrf-token": session[2]! }
        const calls = [
          http("/admin/users", { headers }),
          http(`/admin/users/${victim}`, {
            headers,
            method: "PATCH",
            body: { workspaces: [{ workspaceId: t.ids.workspaceId, role: "viewer" }] }
          }),
          http(`/admin/users/${victim}`, { headers, method: "DELETE" })
        ]
        for (const reply of yield* Effect.all(calls)) {
          if (reply.status !== 401) findings.push(`${kind}: ${reply.status}`)
          if (reply.text.includes(t.ids.email)) findings.push(`${kind}: shows the e-mail`)
        }
      }
      expect(findings).toEqual([])
      expect(yield* roles()).toBe(before)
      expect(before).toContain(`"role":"owner"`)
    }))

  it.effect("no plaintext secret appears in the log or in a dump of every table", () =>
    Effect.gen(function*() {
      const t = yield* tenant("charlie")
      // Failures that log: a wrong admin token, unknown and revoked credentials, a wrong server token.
      yield* http("/admin/workspaces", { headers: { "x-admin-token": `${ADMIN}-wrong` }, body: { name: "x" } })
      yield* rest(`${t.credentials.apiKey}x`, "/me")
      yield* http("/v1/server/e", {
        headers: { "x-streak-server-token": `${t.secrets[0]}x` },
        body: { siteKey: t.ids.siteKey, userHash: "m", event: "lesson" }
      })
      yield* admin("/admin/jobs/deliveries", {})
      const secrets = [...t.secrets, ADMIN, SEALING_KEY]
      // The random part of each secret, so that a store keeping it without its prefix is caught too.
      const needles = secrets.flatMap((
        s
      ) => [s, s.replace(/^(sst_|ass_|whi_|svc_api_|svc_oat_|svc_mcp_|whsec_|sid_|ivt_)/, "")])
      const sql = yield* SqlClient.SqlClient
      const tables = yield* sql<{ name: string }>`
        SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`
      expect(tables.length).toBeGreaterThan(10)
      let dump = ""
      for (const { name } of tables) {
        const rows = yield* sql.unsafe<{ r: string }>(`SELECT row_to_json(t)::text AS r FROM "${name}" t`)
        dump += rows.map((row) => row.r).join("\n")
      }
      expect(dump).toContain(t.ids.programId) // the dump holds the tenant's rows
      expect(logged.length).toBeGreaterThan(0)
      const log = logged.join("\n")
      expect(needles.filter((n) => dump.includes(n)), "secrets in the tables").toEqual([])
      expect(needles.filter((n) => log.includes(n)), "secrets in the log").toEqual([])
    }).pipe(Effect.orDie))
})
