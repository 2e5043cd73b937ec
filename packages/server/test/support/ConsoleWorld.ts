/**
 * The world of the console's browser tests: the reference server (`Main.layer`) on a fresh Postgres
 * database, two workspaces provisioned through the admin API (one of them over its plan, so that
 * its reports are paused), members with a history of actions, a webhook subscription with
 * deliveries to a local receiver, an OAuth app connected by the operator, a Proof experiment whose
 * horizons have matured, and a user who owns both workspaces.
 */
import * as PgTest from "@streaks/storage-pg/PgTest"
import { SqlClient } from "@effect/sql"
import { Clock, ConfigProvider, Effect, Layer, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { createServer, type Server } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import * as Main from "../../src/Main.js"
import * as ServerConfig from "../../src/ServerConfig.js"

export const ADMIN_TOKEN = "console-admin-token"
export const PASSWORD = "correct horse battery staple"
export const EMAIL = "pat@acme.example"
export const EVENT = "lesson_completed"

/**
 * Builds the console from its current sources (`pnpm --filter @streaks/console build`), so that the
 * server serves what the sources say and not what the last install built.
 */
export const buildConsole = Effect.sync(() => {
  const tsx = createRequire(import.meta.url).resolve("tsx/cli")
  const script = fileURLToPath(new URL("../../../console/scripts/build.ts", import.meta.url))
  execFileSync(process.execPath, [tsx, script], { stdio: "ignore" })
})

/** The reference server as `streaks serve` runs it, with webhooks allowed to a local http receiver. */
export const server = Layer.unwrapEffect(
  Effect.gen(function*() {
    yield* buildConsole
    const url = yield* PgTest.url
    const env = new Map([
      ["DATABASE_URL", Redacted.value(url)],
      ["STREAKS_SECRET_KEY", "console-e2e-secret-key"],
      ["STREAKS_ADMIN_TOKEN", ADMIN_TOKEN],
      ["STREAKS_ALLOW_INSECURE_WEBHOOK_URLS", "true"],
      ["STREAKS_RATE_LIMIT_IP", "100000"],
      ["STREAKS_RATE_LIMIT_SITE", "100000"],
      ["STREAKS_RATE_LIMIT_CREDENTIAL", "100000"],
      // Deliveries run when the test asks (POST /admin/jobs/deliveries), not on a timer.
      ["STREAKS_DUE_CHECK_INTERVAL", "24 hours"]
    ])
    const config = yield* Effect.withConfigProvider(ServerConfig.config, ConfigProvider.fromMap(env))
    return Main.layer({ ...config, port: 0 })
  })
).pipe(Layer.provideMerge(PgTest.layer), Layer.provide(Layer.setClock(Clock.make())))

export interface Reply {
  readonly status: number
  readonly body: any
  readonly text: string
}

/** A JSON request to the server. */
export const call = async (
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}
): Promise<Reply> => {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  })
  const text = await response.text()
  let body: any
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: response.status, body, text }
}

const DAY_MS = 86_400_000

export interface World {
  readonly url: string
  readonly workspaceId: string
  readonly pausedWorkspaceId: string
  readonly programId: string
  readonly pausedProgramId: string
  readonly siteKey: string
  readonly webhookSecret: string
  readonly apiKey: string
  readonly grantToken: string
  readonly receiver: Server
}

/**
 * A receiver that answers 200, except 500 to every fifth message it sees, on every attempt of it (so
 * failed deliveries show among the newest, whoever the Proof holdout keeps from receiving events,
 * and however often the dispatcher retries).
 */
const receive = () =>
  new Promise<{ server: Server; url: string }>((resolve) => {
    const refused = new Map<string, boolean>()
    const server = createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        const id = String(req.headers["webhook-id"])
        if (!refused.has(id)) refused.set(id, refused.size % 5 === 0)
        res.writeHead(refused.get(id) === true ? 500 : 200).end()
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/streaks` }))
  })

const must = (reply: Reply, status: number, what: string): any => {
  if (reply.status !== status) throw new Error(`${what}: ${reply.status} ${reply.text}`)
  return reply.body
}

/** Runs `f` on `items`, `width` at a time. */
const inBatches = async <A>(items: ReadonlyArray<A>, width: number, f: (a: A) => Promise<unknown>) => {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(f))
}

/** Provisions the world through the public and admin HTTP API (and backdates one experiment in SQL). */
export const seed = (url: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const world = yield* Effect.promise(async () => {
      const admin = (path: string, body?: unknown, method?: string) =>
        call(url, path, {
          headers: { "x-admin-token": ADMIN_TOKEN },
          ...(body !== undefined ? { body } : {}),
          ...(method !== undefined ? { method } : {})
        })
      const workspace = must(await admin("/admin/workspaces", { name: "Acme", plan: "growth" }), 201, "workspace")
      const project = must(
        await admin("/admin/projects", {
          workspaceId: workspace.id,
          name: "Acme app",
          allowedOrigins: ["https://acme.example"],
          timezone: "UTC"
        }),
        201,
        "project"
      )
      const program = must(
        await admin("/admin/programs", {
          projectId: project.id,
          name: "Daily lesson",
          eventKey: EVENT,
          milestones: [{ target: 1, msg: "First day" }, { target: 3, msg: "Three days" }, { target: 7, msg: "A week" }],
          policy: { freezes: { initial: 1, max: 3, earnEvery: 7 }, repairWindowDays: 30, repairsPer30Days: 3 }
        }),
        201,
        "program"
      )
      must(await admin(`/admin/programs/${program.id}/status`, { status: "live" }), 200, "live")
      const key = must(await admin(`/admin/workspaces/${workspace.id}/api-keys`, { name: "backend" }), 201, "key")
      const bearer = { authorization: `Bearer ${key.key}` }
      const { server: receiver, url: hookUrl } = await receive()
      must(
        await call(url, "/v1/api/hooks", {
          headers: bearer,
          body: { programId: program.id, url: hookUrl, eventTypes: ["milestone.achieved", "streak.broken"] }
        }),
        201,
        "hook"
      )
      const grant = must(
        await admin("/admin/oauth-grants", { workspaceIds: [workspace.id], appName: "Zapier" }),
        201,
        "grant"
      )

      // A Proof experiment started 40 days ago (its start set back in SQL below), then 60 members with
      // histories: some came back a week after their first day, some did not.
      const experiment = must(
        await call(url, `/v1/api/programs/${program.id}/experiments`, {
          headers: bearer,
          body: { holdoutPercent: 50 }
        }),
        201,
        "experiment"
      )
      const act = (userHash: string, daysAgo: number, source?: { externalService: string; integrationId: string }) =>
        source === undefined
          ? call(url, "/v1/server/e", {
            headers: { "x-streak-server-token": project.serverToken },
            body: {
              siteKey: project.siteKey,
              userHash,
              event: EVENT,
              ts: new Date(Date.now() - daysAgo * DAY_MS).toISOString()
            }
          }).then((r) => must(r, 202, "action"))
          : call(url, `/v1/api/programs/${program.id}/events`, {
            headers: bearer,
            body: { userHash, ts: new Date(Date.now() - daysAgo * DAY_MS).toISOString(), ...source }
          }).then((r) => must(r, 202, "api action"))
      const actions: Array<[string, number]> = []
      for (let m = 0; m < 60; m++) {
        const first = 35 - (m % 20)
        actions.push([`member-${m}`, first])
        if (m % 3 !== 0) { for (let d = 7; d <= 9; d++) actions.push([`member-${m}`, first - d]) }
        if (m % 4 === 0) { for (let d = 0; d < 12; d++) actions.push([`member-${m}`, d]) }
      }
      // A member whose streak broke three days ago, to repair.
      for (const d of [9, 8, 7, 6, 1, 0]) actions.push(["bo", d])
      // A member with a long, varied history for the ledger calendar.
      for (const d of [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 13, 14, 15, 16, 17, 18, 19, 20]) actions.push(["ada", d])
      await inBatches(actions, 16, ([userHash, daysAgo]) => act(userHash, daysAgo))
      await inBatches(
        [0, 1, 2, 3, 4, 5],
        3,
        (d) => act(`zap-member-${d}`, d, { externalService: "zapier", integrationId: "zap_onboarding" })
      )
      return { workspace, project, program, key, grant, experiment, receiver }
    })
    yield* sql`update streaks_experiments set started_at = now() - interval '40 days' where id = ${world.experiment.id}`
    return yield* Effect.promise(async (): Promise<World> => {
      const admin = (path: string, body?: unknown) =>
        call(url, path, { headers: { "x-admin-token": ADMIN_TOKEN }, ...(body !== undefined ? { body } : {}) })
      must(
        await call(url, `/v1/api/programs/${world.program.id}/experiments/current/stop`, {
          method: "POST",
          headers: { authorization: `Bearer ${world.key.key}` }
        }),
        200,
        "stop"
      )
      // The deliveries of the milestones reached: the receiver refuses the first one.
      must(await admin("/admin/jobs/deliveries", {}), 200, "deliveries")

      // A second workspace over its plan (starter: 500 active streakers this month): reports pause.
      const over = must(await admin("/admin/workspaces", { name: "Beta", plan: "starter" }), 201, "workspace")
      const overProject = must(
        await admin("/admin/projects", { workspaceId: over.id, name: "Beta app", allowedOrigins: [], timezone: "UTC" }),
        201,
        "project"
      )
      const overProgram = must(
        await admin("/admin/programs", { projectId: overProject.id, name: "Weekly quiz", eventKey: "quiz_done" }),
        201,
        "program"
      )
      must(await admin(`/admin/programs/${overProgram.id}/status`, { status: "live" }), 200, "live")
      await inBatches(Array.from({ length: 501 }, (_, i) => i), 25, (i) =>
        call(url, "/v1/server/e", {
          headers: { "x-streak-server-token": overProject.serverToken },
          body: { siteKey: overProject.siteKey, userHash: `quizzer-${i}`, event: "quiz_done" }
        }).then((r) => must(r, 202, "action")))

      must(
        await admin("/admin/users", {
          email: EMAIL,
          name: "Pat",
          password: PASSWORD,
          workspaces: [{ workspaceId: world.workspace.id, role: "owner" }, { workspaceId: over.id, role: "owner" }]
        }),
        201,
        "user"
      )
      return {
        url,
        workspaceId: world.workspace.id,
        pausedWorkspaceId: over.id,
        programId: world.program.id,
        pausedProgramId: overProgram.id,
        siteKey: world.project.siteKey,
        webhookSecret: world.program.webhookSecret,
        apiKey: world.key.key,
        grantToken: world.grant.accessToken,
        receiver: world.receiver
      }
    })
  })
