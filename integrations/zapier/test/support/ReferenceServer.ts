/**
 * The Streaks reference server for these tests: `Main.layer` (HTTP, webhook dispatcher,
 * scheduler) on a fresh Postgres database and a free port on 127.0.0.1, configured as the
 * command would be from `settings`, plus the admin calls that provision what a customer has.
 */
import { NodeServer } from "@streaks/http"
import * as Main from "@streaks/server/Main"
import * as ServerConfig from "@streaks/server/ServerConfig"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Redacted } from "effect"

export const ADMIN_TOKEN = "zapier-e2e-admin"

export interface Running {
  readonly url: string
  readonly dispose: () => Promise<void>
}

/** Starts a server; `dispose` stops it and drops its database. */
export const start = async (settings: Readonly<Record<string, string>> = {}): Promise<Running> => {
  const layer = Layer.unwrapEffect(
    Effect.gen(function*() {
      const url = Redacted.value(yield* PgTest.url)
      const environment = ConfigProvider.fromMap(
        new Map([
          ["DATABASE_URL", url],
          ["STREAKS_ADMIN_TOKEN", ADMIN_TOKEN],
          ["STREAKS_SECRET_KEY", "zapier-e2e-secret-key"],
          // Zapier's hook URLs are https; the local receiver of the tests is plain http on loopback.
          ["STREAKS_ALLOW_INSECURE_WEBHOOK_URLS", "true"],
          ["STREAKS_DB_POOL_SIZE", "5"],
          ...Object.entries(settings)
        ])
      )
      const config = yield* Effect.withConfigProvider(ServerConfig.config, environment)
      return Main.layer({ ...config, port: 0, host: "127.0.0.1" }).pipe(
        Layer.provide(Layer.setConfigProvider(environment))
      )
    })
  ).pipe(Layer.provide(PgTest.layer))
  const runtime = ManagedRuntime.make(layer)
  const server = await runtime.runPromise(NodeServer.NodeServer)
  return { url: server.url, dispose: () => runtime.dispose() }
}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** A JSON call to the server, outside the app (what an operator or another system does). */
export const call = async (
  base: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}
): Promise<Answer> => {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { "content-type": "application/json", ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
}

/** An admin call: POST unless `method` says otherwise. */
export const admin = (base: string, path: string, body?: unknown, method = "POST") =>
  call(base, path, { headers: { "x-admin-token": ADMIN_TOKEN }, method, ...(body !== undefined ? { body } : {}) })

const expectStatus = (answer: Answer, status: number, what: string) => {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`)
  return answer.body
}

export interface Customer {
  readonly workspaceId: string
  readonly siteKey: string
  readonly serverToken: string
  readonly apiKey: string
  readonly apiKeyId: string
  /** Live, milestones at 1 day (a coupon) and 3 days (a message), no policy. */
  readonly programId: string
  /** Live, a policy with freezes (one at start, at most two, one earned every 2 days), no milestones. */
  readonly freezeProgramId: string
  /** Live, a policy that allows one repair within 7 days of a missed day, no milestones. */
  readonly repairProgramId: string
}

/** A workspace with one project in UTC, three live programs and an API key, through the admin API. */
export const provision = async (base: string, name = "Acme"): Promise<Customer> => {
  const ws = expectStatus(await admin(base, "/admin/workspaces", { name, plan: "pro" }), 201, "workspace")
  const project = expectStatus(
    await admin(base, "/admin/projects", { workspaceId: ws.id, name: "App", allowedOrigins: [], timezone: "UTC" }),
    201,
    "project"
  )
  const program = expectStatus(
    await admin(base, "/admin/programs", {
      projectId: project.id,
      name: "Lessons",
      eventKey: "lesson",
      milestones: [
        { target: 1, msg: "Day one", rewardType: "coupon", rewardValue: "WELCOME-5" },
        { target: 3, msg: "Three days" }
      ]
    }),
    201,
    "program"
  )
  const freezeProgram = expectStatus(
    await admin(base, "/admin/programs", {
      projectId: project.id,
      name: "Workouts",
      eventKey: "workout",
      milestones: [],
      policy: { freezes: { initial: 1, max: 2, earnEvery: 2 } }
    }),
    201,
    "freeze program"
  )
  const repairProgram = expectStatus(
    await admin(base, "/admin/programs", {
      projectId: project.id,
      name: "Reading",
      eventKey: "reading",
      milestones: [],
      policy: { repairWindowDays: 7, repairsPer30Days: 1 }
    }),
    201,
    "repair program"
  )
  for (const id of [program.id, freezeProgram.id, repairProgram.id]) {
    expectStatus(await admin(base, `/admin/programs/${id}/status`, { status: "live" }), 200, "status")
  }
  const key = expectStatus(await admin(base, `/admin/workspaces/${ws.id}/api-keys`, { name: "zapier" }), 201, "key")
  return {
    workspaceId: ws.id,
    siteKey: project.siteKey,
    serverToken: project.serverToken,
    apiKey: key.key,
    apiKeyId: key.id,
    programId: program.id,
    freezeProgramId: freezeProgram.id,
    repairProgramId: repairProgram.id
  }
}

/** One action through the server door (another system than Zapier), dated `ts` if given. */
export const act = (base: string, customer: Customer, event: string, userHash: string, ts?: string) =>
  call(base, "/v1/server/e", {
    headers: { "x-streak-server-token": customer.serverToken },
    body: { siteKey: customer.siteKey, userHash, event, tz: "UTC", ...(ts !== undefined ? { ts } : {}) }
  })

/** Noon UTC of the date `daysAgo` days before today, as an ISO instant. */
export const noonDaysAgo = (daysAgo: number): string => {
  const d = new Date()
  d.setUTCHours(12, 0, 0, 0)
  d.setUTCDate(d.getUTCDate() - daysAgo)
  return d.toISOString()
}
