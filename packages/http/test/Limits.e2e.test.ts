import { expect, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { Effect } from "effect"
import { NodeServer } from "../src/NodeServer.js"
import {
  ADMIN_TOKEN,
  browserEvent,
  getState,
  type Reply,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  webhookEvent
} from "./support/TestServer.js"

const expectError = (reply: Reply, status: number, code: string) =>
  expect({ status: reply.status, text: reply.text }).toEqual({ status, text: JSON.stringify({ error: code }) })

/** A JSON object whose compact JSON is about `bytes` long. */
const blob = (bytes: number) => ({ note: "x".repeat(bytes - 11) })

layer(testServer(), { timeout: 120_000 })("size limits over real HTTP", (it) => {
  it.effect("PAYLOAD_TOO_LARGE: a 5 KB meta answers 413 on every ingest door", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const meta = blob(5 * 1024)
      expectError(yield* browserEvent(t, { userHash: "m", meta }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* serverEvent(t, { userHash: "m", meta }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* webhookEvent(t, { userHash: "m", meta }), 413, "PAYLOAD_TOO_LARGE")
      // Nothing was recorded.
      expect((yield* getState(t, "m")).body.streak.current).toBe(0)
    }))

  it.effect("a meta just under 4 KB is accepted", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* serverEvent(t, { userHash: "m", meta: blob(4000) })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("PAYLOAD_TOO_LARGE: each analytics part over its limit (details, performance 4 KB; error 2 KB; consent 1 KB)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* browserEvent(t, { userHash: "m", details: blob(4200) }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* browserEvent(t, { userHash: "m", performance: blob(4200) }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* browserEvent(t, { userHash: "m", error: "e".repeat(2100) }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* browserEvent(t, { userHash: "m", consent: blob(1100) }), 413, "PAYLOAD_TOO_LARGE")
      const within = yield* browserEvent(t, {
        userHash: "m",
        details: blob(4000),
        performance: blob(4000),
        error: "e".repeat(2000),
        consent: blob(1000)
      })
      expect(within.status).toBe(202)
    }))

  it.effect("PAYLOAD_TOO_LARGE: a 70 KB body answers 413 on the ingest doors and on the API routes", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const padding = "p".repeat(70 * 1024)
      expectError(yield* browserEvent(t, { userHash: "m", padding }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* serverEvent(t, { userHash: "m", padding }), 413, "PAYLOAD_TOO_LARGE")
      expectError(yield* webhookEvent(t, { userHash: "m", padding }), 413, "PAYLOAD_TOO_LARGE")
      expectError(
        yield* request("/admin/workspaces", {
          headers: { "x-admin-token": ADMIN_TOKEN },
          body: { name: "A", plan: "starter", padding }
        }),
        413,
        "PAYLOAD_TOO_LARGE"
      )
      expectError(
        yield* request("/v1/alias", { body: { siteKey: t.siteKey, token: padding } }),
        413,
        "PAYLOAD_TOO_LARGE"
      )
      // The server is fine afterwards.
      expect((yield* serverEvent(t, { userHash: "m" })).status).toBe(202)
    }))

  it.effect("PAYLOAD_TOO_LARGE: a 70 KB body sent chunked (no Content-Length) answers 413 too", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const text = JSON.stringify({
        siteKey: t.siteKey,
        userHash: "m",
        event: "lesson_completed",
        padding: "p".repeat(70 * 1024)
      })
      const server = yield* NodeServer
      const reply = yield* Effect.promise(async () => {
        const encoder = new TextEncoder()
        const stream = new ReadableStream({
          start(controller) {
            for (let i = 0; i < text.length; i += 8192) controller.enqueue(encoder.encode(text.slice(i, i + 8192)))
            controller.close()
          }
        })
        const response = await fetch(`${server.url}/v1/server/e`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-streak-server-token": t.serverToken },
          body: stream,
          duplex: "half"
        } as RequestInit)
        return { status: response.status, text: await response.text() }
      })
      expect(reply).toEqual({ status: 413, text: JSON.stringify({ error: "PAYLOAD_TOO_LARGE" }) })
    }))

  it.effect("INVALID_BODY: userHash over 256, event over 128, idempotencyKey over 255 characters", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: "u".repeat(257) }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", event: "e".repeat(129) }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, { userHash: "m", idempotencyKey: "k".repeat(256) }), 400, "INVALID_BODY")
      expect((yield* serverEvent(t, { userHash: "u".repeat(256), idempotencyKey: "k".repeat(255) })).status).toBe(202)
    }))
})

// A tiny per-site budget (1/s, burst 2): each test takes a fresh tenant, so a fresh site bucket.
layer(testServer({ rateLimit: { ipPerSecond: 10_000, sitePerSecond: 1 } }), { timeout: 120_000 })(
  "per-site rate limit over real HTTP",
  (it) => {
    it.effect("RATE_LIMITED: /v1/e over the site's limit answers 429 with Retry-After", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const replies: Array<Reply> = []
        for (let i = 0; i < 4; i++) replies.push(yield* browserEvent(t, { userHash: `m-${i}` }))
        expect(replies.slice(0, 2).map((r) => r.status)).toEqual([202, 202])
        const limited = replies.slice(2)
        for (const r of limited) {
          expectError(r, 429, "RATE_LIMITED")
          const retryAfter = Number(r.headers.get("retry-after"))
          expect(Number.isInteger(retryAfter)).toBe(true)
          expect(retryAfter).toBeGreaterThanOrEqual(1)
          // The widget on an allowed origin can read the answer and its Retry-After.
          expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.com")
          expect(r.headers.get("access-control-expose-headers") ?? "").toMatch(/Retry-After/i)
        }
        // A refused action was not recorded.
        expect((yield* getState(t, "m-3")).body.streak.current).toBe(0)
      }))

    it.effect("failed authentications do not spend the site's budget: refused origins first, then the widget still counts", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        // Anyone may hold the public siteKey; calls that fail the door's auth spend their IP's failures.
        for (let i = 0; i < 6; i++) {
          expectError(
            yield* browserEvent(t, { userHash: `x-${i}` }, "https://evil.example.net"),
            403,
            "FORBIDDEN_ORIGIN"
          )
        }
        expect((yield* browserEvent(t, { userHash: "real-1" })).status).toBe(202)
        expect((yield* browserEvent(t, { userHash: "real-2" })).status).toBe(202)
        expectError(yield* browserEvent(t, { userHash: "real-3" }), 429, "RATE_LIMITED")
      }))

    it.effect("RATE_LIMITED: after Retry-After the site may send again", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        let last: Reply | undefined
        for (let i = 0; i < 3; i++) last = yield* browserEvent(t, { userHash: "m" })
        expect(last!.status).toBe(429)
        const wait = Number(last!.headers.get("retry-after"))
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, wait * 1000)))
        expect((yield* browserEvent(t, { userHash: "m" })).status).toBe(202)
      }))

    it.effect("rate limits are per site: one site over its limit does not slow another", () =>
      Effect.gen(function*() {
        const a = yield* tenant()
        const b = yield* tenant()
        for (let i = 0; i < 3; i++) yield* browserEvent(a, { userHash: "m" })
        expect((yield* browserEvent(a, { userHash: "m" })).status).toBe(429)
        expect((yield* browserEvent(b, { userHash: "m" })).status).toBe(202)
      }))

    it.effect("the server and webhook doors are not rate limited", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        for (let i = 0; i < 5; i++) {
          expect((yield* serverEvent(t, { userHash: `m-${i}` })).status).toBe(202)
          expect((yield* webhookEvent(t, { userHash: `w-${i}` })).status).toBe(202)
        }
      }))

    it.effect("RATE_LIMITED: /v1/alias over the site's limit answers 429 with Retry-After", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const statuses: Array<number> = []
        let last: Reply | undefined
        for (let i = 0; i < 3; i++) {
          const token = yield* Credentials.signAliasToken(t.signingSecret, {
            userHash: `member-${i}`,
            anonymousId: `anon-${i}`,
            siteKey: t.siteKey
          })
          last = yield* request("/v1/alias", { body: { siteKey: t.siteKey, token } })
          statuses.push(last.status)
        }
        expect(statuses).toEqual([200, 200, 429])
        expect(last!.body).toEqual({ error: "RATE_LIMITED" })
        expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      }))
  }
)

// A tiny per-IP budget (1/s, burst 2): every request of this block comes from 127.0.0.1.
layer(testServer({ rateLimit: { ipPerSecond: 1, sitePerSecond: 10_000 } }), { timeout: 120_000 })(
  "per-IP rate limit over real HTTP",
  (it) => {
    it.effect("RATE_LIMITED: /v1/e over the IP's limit answers 429 with Retry-After, whatever the site", () =>
      Effect.gen(function*() {
        const a = yield* tenant()
        const b = yield* tenant()
        const statuses: Array<number> = []
        let last: Reply | undefined
        for (const t of [a, b, a, b]) {
          last = yield* browserEvent(t, { userHash: "m" })
          statuses.push(last.status)
        }
        expect(statuses.slice(0, 2)).toEqual([202, 202])
        expect(statuses.slice(2)).toEqual([429, 429])
        expectError(last!, 429, "RATE_LIMITED")
        expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        // Admin and server calls are not limited.
        expect((yield* serverEvent(a, { userHash: "m2" })).status).toBe(202)
      }))
  }
)
