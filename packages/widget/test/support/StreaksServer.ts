/**
 * A real Streaks server for the widget's tests: the HTTP server of `@streaks/http` with the built
 * widget at `/widget.js`, on a fresh Postgres database (`PgTest`), with helpers that provision a
 * tenant and record actions through the public API, as a customer would.
 */
import { DueChecks, OutboundEvents, SecretBox, Services } from "@streaks/core"
import { Http, HttpConfig, Jobs, NodeServer, RateLimit, WidgetScript } from "@streaks/http"
import { PgStorage } from "@streaks/storage-pg"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Option, Redacted } from "effect"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

export const ADMIN_TOKEN = "widget-admin-token"
export const EVENT = "lesson_completed"

/** The built module (`test/support/buildOnce.ts` builds it before the tests). */
export const widgetFile = fileURLToPath(new URL("../../dist/widget.js", import.meta.url))

const jobs = Layer.effect(
  Jobs.Jobs,
  Effect.map(DueChecks.DueChecks, (due) =>
    Jobs.Jobs.of({
      dueChecks: due.run(),
      deliveries: Effect.succeed({ attempted: 0, delivered: 0, failed: 0, retrying: 0 }),
      ready: Effect.succeed(true)
    }))
)

/** The server on a free port of 127.0.0.1. */
export const layer = Http.layerServer(
  { port: 0, shutdownTimeout: "1 second" },
  WidgetScript.layer(() => readFile(widgetFile, "utf8"))
).pipe(
  Layer.provide(jobs),
  Layer.provide(RateLimit.layer({ ipPerSecond: 10_000, sitePerSecond: 10_000 })),
  Layer.provide(
    HttpConfig.layer({ adminToken: Option.some(Redacted.make(ADMIN_TOKEN)), allowInsecureWebhookUrls: true })
  ),
  Layer.provide(Services.layer),
  Layer.provide(OutboundEvents.layerNoop),
  Layer.provide(SecretBox.layerEphemeral),
  Layer.provide(PgStorage.layer()),
  Layer.provide(PgTest.layer),
  // `layer(...)` of @effect/vitest builds under TestContext, whose clock stands at 1970: a real
  // server must see real time (dates, token expiry).
  Layer.provide(Layer.setClock(Clock.make()))
)

/** A request to the server; JSON bodies are sent and answers parsed when JSON. */
export const request = (
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}
) =>
  Effect.flatMap(NodeServer.NodeServer, (server) =>
    Effect.promise(async () => {
      const response = await fetch(`${server.url}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
      })
      const text = await response.text()
      let body: any = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        body = undefined
      }
      return { status: response.status, headers: response.headers, body, text }
    }))

const admin = (path: string, body: unknown) => request(path, { headers: { "x-admin-token": ADMIN_TOKEN }, body })

export interface TenantOptions {
  /** The project's allowed origins. */
  readonly origins: ReadonlyArray<string>
  readonly settings?: {
    readonly theme: { readonly name: string }
    readonly position: string
    readonly mainMessage: string
  }
  readonly milestones?: ReadonlyArray<{ target: number; msg: string; rewardType?: string; rewardValue?: string }>
  /**
   * The program's streak policy (docs/streak-semantics.md#streak-policies); without one it counts by
   * the daily rules (docs/streak-semantics.md#the-rules).
   */
  readonly policy?: {
    readonly cadence?: "daily" | "weekly" | "monthly"
    readonly target?: number
    readonly restDays?: ReadonlyArray<number>
    readonly freezes?: { readonly initial?: number; readonly max?: number; readonly earnEvery?: number }
  }
}

/** A workspace, project (time zone UTC) and program provisioned through the admin API, with an API key. */
export const tenant = (options: TenantOptions) =>
  Effect.gen(function*() {
    const workspace = yield* admin("/admin/workspaces", { name: "Acme", plan: "starter" })
    const project = yield* admin("/admin/projects", {
      workspaceId: workspace.body.id,
      name: "Acme app",
      allowedOrigins: options.origins,
      timezone: "UTC"
    })
    const program = yield* admin("/admin/programs", {
      projectId: project.body.id,
      name: "Daily lesson",
      eventKey: EVENT,
      milestones: options.milestones ?? [
        { target: 1, msg: "First day", rewardType: "message", rewardValue: "Welcome!" },
        { target: 3, msg: "Three days", rewardType: "coupon", rewardValue: "THREE-OFF" },
        { target: 7, msg: "A full week" }
      ],
      ...(options.settings !== undefined ? { settings: options.settings } : {}),
      ...(options.policy !== undefined ? { policy: options.policy } : {})
    })
    const apiKey = yield* admin(`/admin/workspaces/${workspace.body.id}/api-keys`, { name: "reports" })
    if ([workspace, project, program, apiKey].some((r) => r.status !== 201)) {
      return yield* Effect.dieMessage(`provisioning failed: ${program.text} ${apiKey.text}`)
    }
    return {
      siteKey: project.body.siteKey as string,
      serverToken: project.body.serverToken as string,
      signingSecret: project.body.signingSecret as string,
      programId: program.body.id as string,
      apiKey: apiKey.body.key as string
    }
  })

export type Tenant = Effect.Effect.Success<ReturnType<typeof tenant>>

const DAY_MS = 86_400_000

/** The UTC calendar date `n` days before today, `YYYY-MM-DD`. */
export const utcDate = (n = 0): string => new Date(Date.now() - n * DAY_MS).toISOString().slice(0, 10)

/** Counted actions of `userHash` on each of the `days` UTC dates before today (0 = today), from the backend. */
export const actionsOn = (t: Tenant, userHash: string, days: ReadonlyArray<number>) =>
  Effect.forEach(days, (n) =>
    Effect.flatMap(
      request("/v1/server/e", {
        headers: { "x-streak-server-token": t.serverToken },
        body: { siteKey: t.siteKey, userHash, event: EVENT, ts: new Date(Date.now() - n * DAY_MS).toISOString() }
      }),
      (r) => (r.status === 202 ? Effect.void : Effect.dieMessage(`action refused: ${r.status} ${r.text}`))
    ), { discard: true })

/** Live actions of the program by event type, from the customer REST `events` report. */
export const eventCounts = (t: Tenant) =>
  Effect.map(
    request(`/v1/api/reports/events?programId=${t.programId}`, { headers: { authorization: `Bearer ${t.apiKey}` } }),
    (r) => {
      const counts: Record<string, number> = {}
      for (const day of r.body.days as ReadonlyArray<{ eventType: string; count: number }>) {
        counts[day.eventType] = (counts[day.eventType] ?? 0) + day.count
      }
      return counts
    }
  )
