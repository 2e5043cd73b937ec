/**
 * The edge over real HTTP (docs/operations.md#rate-limits, docs/api.md#rate-limits,
 * docs/api.md#text-hygiene): a spent budget of failed authentications never refuses a credential
 * that verifies, on any door; each customer credential has its own bucket; every answer of a limited route says
 * where its nearest limit stands; and a URL that does not percent-decode to clean text answers
 * 400 on every route.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Agent, request as httpRequest } from "node:http"
import { NodeServer } from "../src/NodeServer.js"
import {
  ADMIN_TOKEN,
  admin,
  browserEvent,
  getState,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  webhookEvent
} from "./support/TestServer.js"

const RATE_LIMIT_POLICY = /^"(address|site|credential|failed-auth)";q=\d+;w=\d+$/
const RATE_LIMIT = /^"(address|site|credential|failed-auth)";r=\d+;t=\d+$/

const limitHeaders = (reply: { readonly headers: Headers }) => ({
  policy: reply.headers.get("ratelimit-policy") ?? "",
  limit: reply.headers.get("ratelimit") ?? ""
})

layer(
  testServer({
    rateLimit: { ipPerSecond: 10_000, sitePerSecond: 10_000, authFailuresPerMinute: 30, credentialPerSecond: 5 }
  }),
  { timeout: 120_000 }
)("the edge over real HTTP", (it) => {
  it.effect("100 wrong credentials then valid ones from one address at once: every valid one is served, the wrong ones end in 429", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "probe" })
      const wrong = [
        request("/admin/workspaces", { headers: { "x-admin-token": "guess" }, body: { name: "w", plan: "starter" } }),
        request("/v1/api/me", { headers: { authorization: "Bearer svc_api_guess" } }),
        serverEvent(t, { userHash: "m" }, { "x-streak-server-token": "sst_guess" }),
        webhookEvent(t, { userHash: "m" }, "whi_guess"),
        getState(t, "m", { headers: { "x-streak-server-token": "sst_guess" } })
      ]
      const guesses = yield* Effect.all(Array.from({ length: 100 }, (_, i) => wrong[i % wrong.length]!), {
        concurrency: 20
      })
      const statuses = guesses.map((g) => g.status)
      // The budget: 30 a minute (refilling by one every 2 seconds while the guesses run).
      const refusedByBudget = statuses.filter((s) => s === 429).length
      assert.isAtLeast(statuses.filter((s) => s === 401).length, 30)
      assert.isAtLeast(refusedByBudget, 60)
      assert.strictEqual(refusedByBudget + statuses.filter((s) => s === 401).length, 100)
      for (const g of guesses.filter((g) => g.status === 429)) {
        assert.deepStrictEqual(g.body, { error: "RATE_LIMITED" })
        assert.isAtLeast(Number(g.headers.get("retry-after")), 1)
      }
      // At the same moment, from the same address: wrong ones still 429, valid ones served on every door.
      const [valid, stillWrong] = yield* Effect.all([
        Effect.all([
          request("/admin/workspaces", {
            headers: { "x-admin-token": ADMIN_TOKEN },
            body: { name: "w", plan: "starter" }
          }),
          request("/v1/api/me", { headers: { authorization: `Bearer ${key.body.key}` } }),
          serverEvent(t, { userHash: "m1" }),
          webhookEvent(t, { userHash: "m2" }),
          getState(t, "m1"),
          browserEvent(t, { userHash: "m3" })
        ], { concurrency: "unbounded" }),
        Effect.all(wrong, { concurrency: "unbounded" })
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(valid.map((r) => r.status), [201, 200, 202, 202, 200, 202])
      assert.deepStrictEqual(stillWrong.map((r) => r.status), [429, 429, 429, 429, 429])
    }))

  it.effect("each customer credential has its own bucket; every /v1/api answer carries RateLimit-Policy and RateLimit", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const one = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "one" })).body.key as string
      const two = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "two" })).body.key as string
      // 5/s, a burst of 10: the eleventh request at once is refused.
      const burst = yield* Effect.all(
        Array.from({ length: 14 }, () => request("/v1/api/me", { headers: { authorization: `Bearer ${one}` } })),
        { concurrency: 1 }
      )
      const ok = burst.filter((r) => r.status === 200)
      const refused = burst.filter((r) => r.status === 429)
      assert.isAtLeast(ok.length, 10)
      assert.isAtLeast(refused.length, 2)
      for (const r of burst) {
        const h = limitHeaders(r)
        assert.strictEqual(h.policy, "\"credential\";q=10;w=2")
        assert.match(h.limit, /^"credential";r=\d+;t=\d+$/)
      }
      assert.strictEqual(refused[0]!.headers.get("ratelimit"), "\"credential\";r=0;t=2")
      assert.isAtLeast(Number(refused[0]!.headers.get("retry-after")), 1)
      // Another key of the same workspace is not affected.
      const other = yield* request("/v1/api/programs", { headers: { authorization: `Bearer ${two}` } })
      assert.strictEqual(other.status, 200)
      // A decode failure and a 404 after authentication carry them too; a 401 names the failure budget.
      const notFound = yield* request("/v1/api/programs/prg_nope/members/m", {
        headers: { authorization: `Bearer ${two}` }
      })
      assert.strictEqual(notFound.status, 404)
      assert.match(limitHeaders(notFound).limit, /^"credential";/)
      const unauthorized = yield* request("/v1/api/me", { headers: { authorization: "Bearer svc_api_nope" } })
      assert.include([401, 429], unauthorized.status)
      assert.match(limitHeaders(unauthorized).policy, /^"failed-auth";q=30;w=60$/)
    }))

  it.effect("POST /v1/e and POST /v1/alias answer RateLimit headers on success and on failure", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const replies = [
        yield* browserEvent(t, { userHash: "h1" }),
        yield* browserEvent(t, { userHash: "h1" }, "https://evil.example.net"),
        yield* browserEvent({ ...t, siteKey: "site_unknown0000000000" }, { userHash: "h1" }),
        yield* request("/v1/e", { headers: { "content-type": "application/json" }, raw: "{" }),
        yield* request("/v1/alias", { body: { siteKey: t.siteKey, token: "not-a-jwt" } }),
        yield* request("/v1/alias", { body: { siteKey: t.siteKey } })
      ]
      for (const r of replies) {
        const h = limitHeaders(r)
        assert.match(h.policy, RATE_LIMIT_POLICY, `${r.status} ${r.text}`)
        assert.match(h.limit, RATE_LIMIT, `${r.status} ${r.text}`)
      }
    }))

  it.effect("a path segment or query parameter that is not clean text after percent-decoding answers 400 INVALID_BODY on every route", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const apiKey = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "k" })).body.key as string
      const bearer = { authorization: `Bearer ${apiKey}` }
      const cases: Array<[string, Parameters<typeof request>[1]]> = [
        // The invalid UTF-8 that used to become member "a\uFFFD".
        [`/v1/state?siteKey=${t.siteKey}&userHash=a%ED%A0%80&event=${t.eventKey}`, {
          headers: { "x-streak-server-token": t.serverToken }
        }],
        [`/v1/state?siteKey=${t.siteKey}&userHash=a%FF&event=${t.eventKey}`, {
          headers: { "x-streak-server-token": t.serverToken }
        }],
        [`/v1/state?siteKey=${t.siteKey}&userHash=a%00&event=${t.eventKey}`, {
          headers: { "x-streak-server-token": t.serverToken }
        }],
        [`/v1/state?siteKey=${t.siteKey}&userHash=a&event=${t.eventKey}&unread=%G1`, {
          headers: { "x-streak-server-token": t.serverToken }
        }],
        [`/v1/webhook/${t.siteKey}%ED%A0%80/e`, { body: { event: t.eventKey, userHash: "m" } }],
        [`/v1/server/e?x=%`, {
          headers: { "x-streak-server-token": t.serverToken },
          body: { siteKey: t.siteKey, event: t.eventKey, userHash: "m" }
        }],
        [`/v1/e?x=%E0%A4%A`, {
          headers: { origin: "https://app.example.com" },
          body: { siteKey: t.siteKey, event: t.eventKey, userHash: "m" }
        }],
        [`/v1/alias?x=%FF`, { body: { siteKey: t.siteKey, token: "x" } }],
        [`/v1/api/programs/${t.programId}/members/a%ED%A0%80`, { headers: bearer }],
        [`/v1/api/programs/${t.programId}/members/m?x=%C3`, { headers: bearer }],
        [`/admin/workspaces/%FF`, {
          method: "PATCH",
          headers: { "x-admin-token": ADMIN_TOKEN },
          body: { plan: "pro" }
        }],
        [`/health?probe=%00`, {}],
        [`/no/such/route/%ED%A0%80`, {}]
      ]
      for (const [path, init] of cases) {
        const r = yield* request(path, init)
        assert.deepStrictEqual([r.status, r.body], [400, { error: "INVALID_BODY" }], path)
      }
      // Well-formed escapes still decode.
      const ok = yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=caf%C3%A9&event=${t.eventKey}`, {
        headers: { "x-streak-server-token": t.serverToken }
      })
      assert.strictEqual(ok.status, 200)
    }))

  it.effect("request bodies are held to their declared bounds: one over answers 400 INVALID_BODY, at the bound is accepted", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const over = [
        admin("/admin/workspaces", { name: "n".repeat(201), plan: "starter" }),
        admin("/admin/projects", {
          workspaceId: t.workspaceId,
          name: "p",
          allowedOrigins: Array.from({ length: 101 }, (_, i) => `https://a${i}.example.com`)
        }),
        admin("/admin/programs", {
          projectId: t.projectId,
          name: "p",
          eventKey: "bounded",
          milestones: [{ target: 100_001, msg: "far" }]
        }),
        admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "k".repeat(201) }),
        serverEvent(t, { userHash: "m", tz: "Z".repeat(65) }),
        serverEvent(t, { userHash: "m", siteKey: "s".repeat(65) })
      ]
      for (const reply of yield* Effect.all(over)) {
        assert.deepStrictEqual([reply.status, reply.body?.error], [400, "INVALID_BODY"], reply.text)
      }
      assert.strictEqual((yield* admin("/admin/workspaces", { name: "n".repeat(200), plan: "starter" })).status, 201)
    }))

  it.effect(
    "an idle kept-alive connection outlives Node's 5-second default: the next request on it is answered",
    () =>
      Effect.gen(function*() {
        const { url } = yield* NodeServer
        const agent = new Agent({ keepAlive: true, maxSockets: 1 })
        const get = () =>
          new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
            const req = httpRequest(`${url}/health`, { agent }, (res) => {
              res.resume().on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
            })
            req.on("error", reject).end()
          })
        const first = yield* Effect.promise(get)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 6_000)))
        const second = yield* Effect.promise(get)
        agent.destroy()
        assert.deepStrictEqual([first, second], [{ status: 200, reused: false }, { status: 200, reused: true }])
      }),
    30_000
  )
})
