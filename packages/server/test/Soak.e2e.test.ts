/**
 * The soak (docs/operations.md#soak): 24 concurrent clients, each on one kept-alive connection,
 * send random bodies to every door of the reference server (`Main.layer`, fast path included) for
 * `STREAKS_SOAK_SECONDS` (default 600): JSON of the right shape or not, bytes that are not text,
 * bodies at, over and far over the 64 KiB limit, declared or chunked, valid and wrong credentials.
 * Every request must get an answer (no socket closed before it), and never a 500. A 503 (the
 * database is slow to answer, or too many actions wait for it: retry later) is an answer, counted
 * apart. Off unless `STREAKS_SOAK=1`; loopback only. It prints requests, answers and failures.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Logger, LogLevel } from "effect"
import { Agent, request as httpRequest } from "node:http"
import * as ReferenceServer from "./support/ReferenceServer.js"

const enabled = process.env["STREAKS_SOAK"] === "1"
const seconds = Number(process.env["STREAKS_SOAK_SECONDS"] ?? 600)
const clients = Number(process.env["STREAKS_SOAK_CLIENTS"] ?? 24)
const ADMIN = "soak-admin-token"

const server = ReferenceServer.layer({
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_SECRET_KEY: "soak-secret-key",
  STREAKS_DB_POOL_SIZE: "4"
}).pipe(
  Layer.provide(Logger.minimumLogLevel(LogLevel.Error)),
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

/** A small deterministic generator: each client's sequence is its own. */
const random = (seed: number) => {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 2 ** 32
  }
}

interface Tenant {
  readonly siteKey: string
  readonly serverToken: string
  readonly webhookSecret: string
  readonly eventKey: string
  readonly programId: string
  readonly apiKey: string
}

interface Outcome {
  readonly status: number | undefined
  readonly error: string | undefined
}

const send = (
  agent: Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  chunked: boolean
): Promise<Outcome> =>
  new Promise((resolve) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      method,
      path,
      agent,
      headers: {
        ...headers,
        ...(body !== undefined && !chunked ? { "content-length": String(body.length) } : {})
      }
    }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode, error: undefined }))
      res.on("error", (e) => resolve({ status: res.statusCode, error: `response: ${e.message}` }))
    })
    req.on("error", (e) => resolve({ status: undefined, error: (e as NodeJS.ErrnoException).code ?? e.message }))
    if (body === undefined) return req.end()
    if (!chunked) return req.end(body)
    // Chunked, in pieces: the server sees the body arrive over several reads.
    let at = 0
    const next = () => {
      if (at >= body.length) return req.end()
      const piece = body.subarray(at, at + 16 * 1024)
      at += piece.length
      req.write(piece, next)
    }
    next()
  })

const bodyOf = (r: () => number, t: Tenant): Buffer => {
  const pick = r()
  const member = `soak-${Math.floor(r() * 1000)}`
  if (pick < 0.35) {
    return Buffer.from(JSON.stringify({ siteKey: t.siteKey, userHash: member, event: t.eventKey }))
  }
  if (pick < 0.5) {
    const junk = Buffer.alloc(Math.floor(r() * 2000))
    for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(r() * 256)
    return junk
  }
  if (pick < 0.6) {
    return Buffer.from(JSON.stringify({ siteKey: t.siteKey, userHash: member, meta: { x: "m".repeat(5000) } }))
  }
  if (pick < 0.7) return Buffer.from(`{"siteKey":"${t.siteKey}","userHash":"${member}","pad":"${"p".repeat(60_000)}"}`)
  if (pick < 0.8) return Buffer.alloc(70 * 1024 + Math.floor(r() * 200 * 1024), 0x7b) // over 64 KiB
  if (pick < 0.9) {
    return Buffer.from(JSON.stringify({ userHash: member, event: r() < 0.5 ? t.eventKey : "nope", ts: "soon" }))
  }
  return Buffer.from("[".repeat(Math.floor(r() * 5000)))
}

if (!enabled) {
  describe("soak", () => {
    it.skip("24 clients of random bodies on every door for 10 minutes (STREAKS_SOAK=1)", () => {})
  })
} else {
  layer(server, { timeout: (seconds + 120) * 1000 })("soak", (it) => {
    it.effect(
      `${clients} clients of random bodies on every door for ${seconds} s: every request answered`,
      () =>
        Effect.gen(function*() {
          const { port, url } = yield* NodeServer.NodeServer
          const tenant = yield* Effect.promise(async (): Promise<Tenant> => {
            const post = async (path: string, body: unknown) =>
              (await fetch(`${url}${path}`, {
                method: "POST",
                headers: { "x-admin-token": ADMIN, "content-type": "application/json" },
                body: JSON.stringify(body)
              })).json() as Promise<any>
            const ws = await post("/admin/workspaces", { name: "soak", plan: "pro" })
            const project = await post("/admin/projects", { workspaceId: ws.id, name: "soak", allowedOrigins: [] })
            const program = await post("/admin/programs", { projectId: project.id, name: "soak", eventKey: "soaked" })
            const key = await post(`/admin/workspaces/${ws.id}/api-keys`, { name: "soak" })
            return {
              siteKey: project.siteKey,
              serverToken: project.serverToken,
              webhookSecret: program.webhookSecret,
              eventKey: "soaked",
              programId: program.id,
              apiKey: key.key
            }
          })
          const totals = { requests: 0, answers: 0, failures: 0, internal: 0, unavailable: 0 }
          const failures = new Map<string, number>()
          const until = Date.now() + seconds * 1000
          const client = async (n: number) => {
            const r = random(n + 1)
            const agent = new Agent({ keepAlive: true, maxSockets: 1 })
            while (Date.now() < until) {
              const door = Math.floor(r() * 6)
              const wrong = r() < 0.2
              const json = { "content-type": "application/json" }
              const [method, path, headers]: [string, string, Record<string, string>] = door === 0
                ? ["POST", "/v1/e", { ...json, ...(wrong ? {} : { "x-streak-server-token": tenant.serverToken }) }]
                : door === 1
                ? ["POST", "/v1/server/e", {
                  ...json,
                  "x-streak-server-token": wrong ? "sst_wrong" : tenant.serverToken
                }]
                : door === 2
                ? ["POST", `/v1/webhook/${tenant.siteKey}/e`, {
                  ...json,
                  "x-streak-webhook-secret": wrong ? "whi_wrong" : tenant.webhookSecret
                }]
                : door === 3
                ? ["POST", `/v1/api/programs/${tenant.programId}/events`, {
                  ...json,
                  authorization: `Bearer ${wrong ? "svc_api_wrong" : tenant.apiKey}`
                }]
                : door === 4
                ? ["POST", "/v1/alias", json]
                : ["POST", "/admin/workspaces", { ...json, "x-admin-token": wrong ? "wrong" : ADMIN }]
              totals.requests++
              const outcome = await send(agent, port, method, path, headers, bodyOf(r, tenant), r() < 0.3)
              if (outcome.error !== undefined) {
                totals.failures++
                const what = `${method} ${
                  path.replace(/\/v1\/webhook\/[^/]+/, "/v1/webhook/:siteKey").replace(/prg_\w+/, ":id")
                }: ${outcome.error}`
                failures.set(what, (failures.get(what) ?? 0) + 1)
              } else {
                totals.answers++
                if (outcome.status === 503) totals.unavailable++
                else if ((outcome.status ?? 0) >= 500) {
                  totals.internal++
                  const what = `${method} ${
                    path.replace(/\/v1\/webhook\/[^/]+/, "/v1/webhook/:siteKey")
                  }: ${outcome.status}`
                  failures.set(what, (failures.get(what) ?? 0) + 1)
                }
              }
            }
            agent.destroy()
          }
          yield* Effect.promise(() => Promise.all(Array.from({ length: clients }, (_, n) => client(n))))
          console.log(`soak: ${clients} clients, ${seconds} s:`, totals, Object.fromEntries(failures))
          expect(totals.requests).toBeGreaterThan(0)
          expect({ ...totals, failures: Object.fromEntries(failures) }).toEqual({
            ...totals,
            answers: totals.requests,
            failures: {},
            internal: 0
          })
        }),
      (seconds + 120) * 1000
    )
  })
}
