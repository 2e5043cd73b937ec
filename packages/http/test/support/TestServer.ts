/**
 * The real server for end-to-end tests: every route over real HTTP on a free port, on a fresh
 * Postgres database (`PgTest`), with the admin token below and insecure webhook URLs allowed.
 */
import { DueChecks, OutboundEvents, SecretBox, Services } from "@streaks/core"
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Effect, Layer, Option, Redacted } from "effect"
import * as Http from "../../src/Http.js"
import * as HttpConfig from "../../src/HttpConfig.js"
import * as Jobs from "../../src/Jobs.js"
import { NodeServer } from "../../src/NodeServer.js"
import * as RateLimit from "../../src/RateLimit.js"

export const ADMIN_TOKEN = "test-admin-token"

export interface Options {
  readonly rateLimit?: { readonly ipPerSecond: number; readonly sitePerSecond: number }
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
  Http.layerServer({ port: 0, shutdownTimeout: "1 second" }).pipe(
    Layer.provide(jobs),
    Layer.provide(RateLimit.layer(options.rateLimit ?? { ipPerSecond: 10_000, sitePerSecond: 10_000 })),
    Layer.provide(HttpConfig.layer({
      adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
      allowInsecureWebhookUrls: true
    })),
    Layer.provideMerge(Services.layer),
    Layer.provideMerge(OutboundEvents.layerNoop),
    Layer.provideMerge(SecretBox.layerEphemeral),
    Layer.provideMerge(PgStorage.layer()),
    Layer.provide(PgTest.layer)
  )

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

/** A request to the test server; JSON bodies are stringified, answers parsed when JSON. */
export const request = (
  path: string,
  init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: unknown; readonly raw?: string } = {}
): Effect.Effect<Reply, never, NodeServer> =>
  Effect.flatMap(NodeServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${server.url}${path}`, {
        method: init.method ?? (init.body === undefined && init.raw === undefined ? "GET" : "POST"),
        headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
        ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
      })
      const text = await response.text()
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        body = undefined
      }
      return { status: response.status, headers: response.headers, body, text }
    }))

/** Admin calls carry the test admin token. */
export const admin = (path: string, body?: unknown, method?: string) =>
  request(path, {
    headers: { "x-admin-token": ADMIN_TOKEN },
    ...(body !== undefined ? { body } : {}),
    ...(method !== undefined ? { method } : {})
  })

/** A workspace, project and program provisioned through the admin API, with their secrets. */
export const tenant = (options: { readonly origins?: ReadonlyArray<string>; readonly timezone?: string; readonly browserCounting?: "count" | "display-only"; readonly legacyNoOriginIngest?: boolean; readonly plan?: string } = {}) =>
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
      eventKey: "lesson_completed",
      milestones: [
        { target: 1, msg: "First day!" },
        { target: 3, msg: "Three days", rewardType: "coupon", rewardValue: "THREE-OFF" }
      ]
    })
    return {
      workspaceId: workspace.body.id as string,
      projectId: project.body.id as string,
      siteKey: project.body.siteKey as string,
      serverToken: project.body.serverToken as string,
      signingSecret: project.body.signingSecret as string,
      programId: program.body.id as string,
      webhookSecret: program.body.webhookSecret as string,
      milestones: program.body.milestones as ReadonlyArray<{ id: string; target: number }>
    }
  })
