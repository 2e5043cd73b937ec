/**
 * The HTTP surface as the reference server serves it, for end-to-end tests of the fast path:
 * `Http.layerServer` with `FastPath.front` in front (as `Main` installs
 * it), on a fresh Postgres database. A request that carries the `PLAIN` header skips the fast path
 * and goes to the HttpApi handlers alone, so a test can put the two answers side by side.
 */
import { DueChecks, OutboxSignal, SecretBox, Services } from "@streaks/core"
import { Http, HttpConfig, Jobs, NodeServer, RateLimit } from "@streaks/http"
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import * as FastPath from "../../src/FastPath.js"

export const ADMIN_TOKEN = "fast-path-admin-token"

/** A request header that sends the request past the fast path, to the HttpApi handlers. */
export const PLAIN = "x-test-httpapi-only"

const jobs = Layer.effect(
  Jobs.Jobs,
  Effect.map(DueChecks.DueChecks, (due) =>
    Jobs.Jobs.of({
      dueChecks: due.run(),
      deliveries: Effect.succeed({ attempted: 0, delivered: 0, failed: 0, retrying: 0 }),
      ready: Effect.succeed(true)
    }))
)

/** The server (`NodeServer`) plus the core services and storage it runs on. */
export const layer = (options: { readonly tracing?: boolean } = {}) =>
  Http.layerServer(
    { port: 0, shutdownTimeout: "1 second" },
    Layer.empty,
    (api) =>
      Effect.map(
        FastPath.front(api, { tracing: options.tracing }),
        (fast): typeof api => (req, res) => req.headers[PLAIN] === undefined ? fast(req, res) : api(req, res)
      )
  ).pipe(
    Layer.provide(jobs),
    // Tests fail authentication on purpose, many times from one address.
    Layer.provide(RateLimit.layer({ ipPerSecond: 10_000, sitePerSecond: 10_000, authFailuresPerMinute: 10_000 })),
    Layer.provide(
      HttpConfig.layer({ adminToken: Option.some(Redacted.make(ADMIN_TOKEN)), allowInsecureWebhookUrls: true })
    ),
    Layer.provideMerge(Services.layer),
    Layer.provideMerge(OutboxSignal.layerNoop),
    Layer.provideMerge(SecretBox.layerEphemeral),
    Layer.provideMerge(PgStorage.layer()),
    Layer.provideMerge(PgTest.layer),
    // `layer(...)` of @effect/vitest builds this under TestContext, whose TestClock stands at 1970
    // and never moves: a real server must see real time (dates, ts skew, token expiry).
    Layer.provideMerge(Layer.setClock(Clock.make()))
  )

export const ORIGIN = "https://app.example.com"

const admin = (url: string, path: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-admin-token": ADMIN_TOKEN },
      body: JSON.stringify(body)
    })
    if (response.status !== 201) throw new Error(`${path} answered ${response.status}: ${await response.text()}`)
    return (await response.json()) as Record<string, string>
  })

/**
 * A workspace, a project that allows `ORIGIN` and a program counting `lesson_completed` (milestones
 * 1 and 2, the second with a coupon), provisioned through the admin API, with their secrets.
 */
export const tenant = Effect.gen(function*() {
  const { url } = yield* NodeServer.NodeServer
  const workspace = yield* admin(url, "/admin/workspaces", { name: "Acme", plan: "starter" })
  const project = yield* admin(url, "/admin/projects", {
    workspaceId: workspace["id"],
    name: "Acme app",
    allowedOrigins: [ORIGIN],
    timezone: "UTC"
  })
  const program = yield* admin(url, "/admin/programs", {
    projectId: project["id"],
    name: "Daily lesson",
    eventKey: "lesson_completed",
    milestones: [{ target: 1, msg: "First day!" }, {
      target: 2,
      msg: "Two days",
      rewardType: "coupon",
      rewardValue: "TWO"
    }]
  })
  return {
    siteKey: project["siteKey"]!,
    serverToken: project["serverToken"]!,
    signingSecret: project["signingSecret"]!,
    eventKey: program["eventKey"]!,
    webhookSecret: program["webhookSecret"]!
  }
})

export type Tenant = Effect.Effect.Success<typeof tenant>
