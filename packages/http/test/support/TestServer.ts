/**
 * The real server for end-to-end tests: every route over real HTTP on a free port, served by the
 * HttpApi handlers alone (`Http.layerServer`, nothing in front), on a fresh Postgres database
 * (`PgTest`), with the admin token below and insecure webhook URLs allowed.
 */
import { DueChecks, Ids, OutboxSignal, Ports, SecretBox, Services } from "@streaks/core"
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import * as Http from "../../src/Http.js"
import * as HttpConfig from "../../src/HttpConfig.js"
import * as Jobs from "../../src/Jobs.js"
import * as OAuthRoutes from "../../src/OAuthRoutes.js"
import { NodeServer } from "../../src/NodeServer.js"
import * as RateLimit from "../../src/RateLimit.js"
import type * as Sessions from "../../src/Sessions.js"
import * as Contract from "./Contract.js"

export const ADMIN_TOKEN = "test-admin-token"

export interface Options {
  /** Routes of its own on the same router, as the reference server mounts the console's. */
  readonly routes?: Layer.Layer<never, never, Sessions.Sessions>
  readonly rateLimit?: {
    readonly ipPerSecond: number
    readonly sitePerSecond: number
    readonly credentialPerSecond?: number
    readonly authFailuresPerMinute?: number
  }
  /** Mount the authorization server's routes (`/oauth/*`), as the server process does. */
  readonly oauth?: boolean
}

const jobs = Layer.effect(
  Jobs.Jobs,
  Effect.map(DueChecks.DueChecks, (due) =>
    Jobs.Jobs.of({
      dueChecks: due.run(),
      deliveries: Effect.succeed({ attempted: 0, delivered: 0, failed: 0, retrying: 0 }),
      ready: Effect.succeed(true)
    }))
)

/** The server plus the core services and storage it runs on (for seeding and inspection). */
export const layer = (options: Options = {}) =>
  Http.layerServer(
    { port: 0, shutdownTimeout: "1 second" },
    Layer.mergeAll(
      options.routes ?? Layer.empty,
      options.oauth === true
        ? OAuthRoutes.layerRoutes.pipe(
          Layer.provide(OAuthRoutes.layerConfigWith({ publicUrl: Option.none(), dynamicRegistration: false }))
        )
        : Layer.empty
    )
  ).pipe(
    Layer.provide(jobs),
    // Tests fail authentication on purpose, many times from one address.
    Layer.provide(
      RateLimit.layer({
        authFailuresPerMinute: 10_000,
        ...(options.rateLimit ?? { ipPerSecond: 10_000, sitePerSecond: 10_000 })
      })
    ),
    Layer.provide(HttpConfig.layer({
      adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
      allowInsecureWebhookUrls: true
    })),
    Layer.provideMerge(Services.layer),
    Layer.provideMerge(OutboxSignal.layerNoop),
    Layer.provideMerge(SecretBox.layerEphemeral),
    Layer.provideMerge(PgStorage.layer()),
    Layer.provideMerge(PgTest.layer),
    // `layer(...)` of @effect/vitest builds this under TestContext, whose TestClock stands at 1970
    // and never moves: a real server must see real time (dates, ts skew, token expiry).
    Layer.provideMerge(Layer.setClock(Clock.make()))
  )

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

/**
 * A request to the test server; JSON bodies are stringified, answers parsed when JSON. Each answer
 * is checked against the server's `/openapi.json` (`Contract.violation`): a status, code or body
 * the document does not declare for the route fails the test.
 */
export const request = (
  path: string,
  init: {
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly body?: unknown
    readonly raw?: string
  } = {}
): Effect.Effect<Reply, never, NodeServer> =>
  Effect.flatMap(NodeServer, (server) =>
    Effect.promise(async () => {
      const method = init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST")
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
        ...(init.raw !== undefined
          ? { body: init.raw }
          : init.body !== undefined
          ? { body: JSON.stringify(init.body) }
          : {})
      })
      const text = await response.text()
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        body = undefined
      }
      const reply = { status: response.status, headers: response.headers, body, text }
      const broken = await Contract.violation(server.url, method, path, reply)
      if (broken !== undefined) throw new Error(`OpenAPI contract: ${broken}`)
      return reply
    }))

/** Admin calls carry the test admin token. */
export const admin = (path: string, body?: unknown, method?: string) =>
  request(path, {
    headers: { "x-admin-token": ADMIN_TOKEN },
    ...(body !== undefined ? { body } : {}),
    ...(method !== undefined ? { method } : {})
  })

export interface TenantOptions {
  readonly origins?: ReadonlyArray<string>
  readonly timezone?: string
  readonly browserCounting?: "count" | "display-only"
  readonly legacyNoOriginIngest?: boolean
  readonly plan?: string
  /** Overrides of the program `tenant` creates (default: `lesson_completed`, milestones 1 and 3). */
  readonly program?: {
    readonly eventKey?: string
    readonly milestones?: ReadonlyArray<{ target: number; msg: string; rewardType?: string; rewardValue?: string }>
    readonly settings?: { theme: { name: string }; position: string; mainMessage: string }
  }
}

/** The default program's event key. */
export const EVENT = "lesson_completed"

/** A workspace, project and program provisioned through the admin API, with their secrets. */
export const tenant = (options: TenantOptions = {}) =>
  Effect.gen(function*() {
    const workspace = yield* admin("/admin/workspaces", { name: "Acme", plan: options.plan ?? "starter" })
    const project = yield* admin("/admin/projects", {
      workspaceId: workspace.body.id,
      name: "Acme app",
      allowedOrigins: options.origins ?? ["https://app.example.com"],
      timezone: options.timezone ?? "UTC",
      ...(options.browserCounting !== undefined ? { browserCounting: options.browserCounting } : {}),
      ...(options.legacyNoOriginIngest !== undefined ? { legacyNoOriginIngest: options.legacyNoOriginIngest } : {})
    })
    const program = yield* admin("/admin/programs", {
      projectId: project.body.id,
      name: "Daily lesson",
      eventKey: options.program?.eventKey ?? EVENT,
      milestones: options.program?.milestones ?? [
        { target: 1, msg: "First day!" },
        { target: 3, msg: "Three days", rewardType: "coupon", rewardValue: "THREE-OFF" }
      ],
      ...(options.program?.settings !== undefined ? { settings: options.program.settings } : {})
    })
    if (workspace.status !== 201 || project.status !== 201 || program.status !== 201) {
      return yield* Effect.dieMessage(
        `tenant provisioning failed: ${workspace.status} ${project.status} ${program.status} ${program.text}`
      )
    }
    return {
      workspaceId: workspace.body.id as string,
      projectId: project.body.id as string,
      siteKey: project.body.siteKey as string,
      serverToken: project.body.serverToken as string,
      signingSecret: project.body.signingSecret as string,
      programId: program.body.id as string,
      eventKey: program.body.eventKey as string,
      webhookSecret: program.body.webhookSecret as string,
      milestones: program.body.milestones as ReadonlyArray<{ id: string; target: number }>
    }
  })

export type Tenant = Effect.Effect.Success<ReturnType<typeof tenant>>

const DAY_MS = 86_400_000

/** `ts` of an action `n` days before now (an exact multiple of 24 h: the previous UTC dates). */
export const daysAgo = (n: number): string => new Date(Date.now() - n * DAY_MS).toISOString()

/** The UTC calendar date `n` days before today, `YYYY-MM-DD`. */
export const utcDate = (n = 0): string => new Date(Date.now() - n * DAY_MS).toISOString().slice(0, 10)

/** `POST /v1/server/e` with the tenant's server token; `siteKey` and `event` default to the tenant's. */
export const serverEvent = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  request("/v1/server/e", {
    headers: { "x-streak-server-token": t.serverToken, ...headers },
    body: { siteKey: t.siteKey, event: t.eventKey, ...body }
  })

/**
 * `POST /v1/e` from a browser on `origin` (`null`: no Origin header, a server-side call);
 * `siteKey` and `event` default to the tenant's.
 */
export const browserEvent = (
  t: Tenant,
  body: Record<string, unknown>,
  origin: string | null = "https://app.example.com",
  headers: Record<string, string> = {}
) =>
  request("/v1/e", {
    headers: { ...(origin !== null ? { origin } : {}), ...headers },
    body: { siteKey: t.siteKey, event: t.eventKey, ...body }
  })

/** `POST /v1/webhook/:siteKey/e` with the program's webhook secret (or `secret`, `null` for none). */
export const webhookEvent = (t: Tenant, body: Record<string, unknown>, secret: string | null = t.webhookSecret) =>
  request(`/v1/webhook/${t.siteKey}/e`, {
    headers: secret === null ? {} : { "x-streak-webhook-secret": secret },
    body: { event: t.eventKey, ...body }
  })

/** `GET /v1/state` for a member, by default with the server token (no Origin). */
export const getState = (
  t: Tenant,
  userHash: string,
  options: { readonly query?: Record<string, string>; readonly headers?: Record<string, string> } = {}
) => {
  const query = new URLSearchParams({ siteKey: t.siteKey, userHash, event: t.eventKey, ...options.query })
  return request(`/v1/state?${query}`, {
    headers: options.headers ?? { "x-streak-server-token": t.serverToken }
  })
}

/**
 * What the action log holds for a program and ledger over the last 30 days: every stored action
 * by event type, and how many of them counted (moved a streak). Read from storage directly.
 */
export const actionCounts = (programId: string, ledger: "live" | "test") =>
  Effect.gen(function*() {
    const log = yield* Ports.ActionLog
    const rows = yield* log.countsByDay({
      programIds: [Ids.unsafe("ProgramId", programId)],
      from: new Date(Date.now() - 30 * DAY_MS),
      to: new Date(Date.now() + DAY_MS),
      ledger
    })
    const byType: Record<string, number> = {}
    let counted = 0
    for (const r of rows) {
      byType[r.eventType] = (byType[r.eventType] ?? 0) + r.count
      counted += r.counted
    }
    return { byType, counted, total: rows.reduce((n, r) => n + r.count, 0) }
  }).pipe(Effect.orDie)
