import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import * as Sender from "../src/Sender.js"
import * as Signature from "../src/Signature.js"

interface Seen {
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  readonly url: string
}

/** A receiver on 127.0.0.1 answering with `reply`; records what it saw. */
const receiver = (reply: (req: IncomingMessage, res: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; seen: Array<Seen>; close: () => void }>((resume) => {
      const seen: Array<Seen> = []
      const server = createServer((req, res) => {
        let body = ""
        req.on("data", (c) => (body += c)).on("end", () => {
          seen.push({ headers: req.headers, body, url: req.url ?? "" })
          reply(req, res)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}`,
          seen,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    (r) => Effect.sync(() => r.close())
  )

const secret = Signature.generateSecret()
const body = JSON.stringify({ id: "msg_a", type: "streak.at_risk", data: {} })
const send = (url: string, timeout?: Duration.DurationInput) =>
  Sender.send({ url, id: "msg_a", body, secret, now: new Date(), ...(timeout !== undefined ? { timeout } : {}) }).pipe(
    Effect.provide(NodeHttpClient.layerUndici)
  )

describe("Sender", () => {
  it.scopedLive("a 200 is delivered, signed so that standardwebhooks verifies the raw body", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_, res) => res.writeHead(200).end("ok"))
      const attempt = yield* send(`${r.url}/hook`)
      assert.strictEqual(attempt.outcome, "delivered")
      assert.strictEqual(attempt.status, 200)
      const seen = r.seen[0]!
      assert.strictEqual(seen.body, body)
      assert.strictEqual(seen.headers["content-type"], "application/json")
      assert.deepStrictEqual(
        new Webhook(secret).verify(seen.body, {
          "webhook-id": String(seen.headers["webhook-id"]),
          "webhook-timestamp": String(seen.headers["webhook-timestamp"]),
          "webhook-signature": String(seen.headers["webhook-signature"])
        }),
        JSON.parse(body)
      )
    }))

  it.scopedLive("500 is retried, 410 is gone, 429 carries its Retry-After", () =>
    Effect.gen(function*() {
      const statuses = [500, 410, 429]
      const r = yield* receiver((_, res) => {
        const status = statuses.shift()!
        res.writeHead(status, status === 429 ? { "retry-after": "7" } : {}).end()
      })
      const a = yield* send(r.url)
      const b = yield* send(r.url)
      const c = yield* send(r.url)
      assert.deepStrictEqual([a.outcome, b.outcome, c.outcome], ["retry", "gone", "retry"])
      assert.strictEqual(Duration.toMillis(c.retryAfter!), 7000)
    }))

  it.scopedLive("a redirect is a failure and its target is never called", () =>
    Effect.gen(function*() {
      const r = yield* receiver((req, res) =>
        req.url === "/moved" ? res.writeHead(200).end() : res.writeHead(302, { location: "/moved" }).end()
      )
      const attempt = yield* send(`${r.url}/start`)
      assert.strictEqual(attempt.outcome, "retry")
      assert.strictEqual(attempt.status, 302)
      assert.deepStrictEqual(r.seen.map((s) => s.url), ["/start"])
    }))

  it.scopedLive("a receiver that never answers times out as a retry", () =>
    Effect.gen(function*() {
      const r = yield* receiver(() => {})
      const attempt = yield* send(r.url, "300 millis")
      assert.strictEqual(attempt.outcome, "retry")
      assert.strictEqual(attempt.error, "timeout")
      assert.isUndefined(attempt.status)
    }))

  it.scopedLive("a 2xx with a huge body is delivered after reading at most a few KB of it; memory stays flat", () =>
    Effect.gen(function*() {
      const offered = 1024 * 1024 * 1024
      const chunk = Buffer.alloc(64 * 1024, 120)
      let written = 0
      let closed = false
      const r = yield* receiver((_, res) => {
        res.writeHead(200, { "content-type": "text/plain", "content-length": String(offered) })
        res.on("close", () => (closed = true))
        // Streams 1 GB, respecting backpressure: it only gets further if the client keeps reading.
        const pump = () => {
          while (!closed && written < offered) {
            written += chunk.length
            if (!res.write(chunk)) return void res.once("drain", pump)
          }
          if (!closed) res.end()
        }
        pump()
      })
      const rssBefore = process.memoryUsage().rss
      const started = Date.now()
      const attempt = yield* send(r.url)
      assert.strictEqual(attempt.outcome, "delivered")
      assert.strictEqual(attempt.status, 200)
      assert.isBelow(Date.now() - started, 5_000)
      // Give the receiver a moment to see its connection closed.
      yield* Effect.sleep("200 millis")
      assert.isTrue(closed, "the connection of the unread body is closed")
      assert.isBelow(written, 32 * 1024 * 1024, "the receiver could only write what socket buffers hold")
      assert.isBelow(process.memoryUsage().rss - rssBefore, 64 * 1024 * 1024)
    }))

  it.scopedLive("a body that trickles after a 2xx does not hold the attempt: the status decides", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_, res) => {
        res.writeHead(200)
        const timer = setInterval(() => res.write("."), 100)
        res.on("close", () => clearInterval(timer))
      })
      const started = Date.now()
      const attempt = yield* send(r.url, "10 seconds")
      assert.strictEqual(attempt.outcome, "delivered")
      assert.isBelow(Date.now() - started, 3_000)
    }))

  it.scopedLive("a receiver that accepts the request but sends no headers within headersTimeout is a timeout", () =>
    Effect.gen(function*() {
      const r = yield* receiver(() => {})
      const started = Date.now()
      const attempt = yield* Sender.send({
        url: r.url,
        id: "msg_a",
        body,
        secret,
        now: new Date(),
        headersTimeout: "300 millis"
      }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      assert.strictEqual(attempt.error, "timeout")
      assert.isBelow(Date.now() - started, 3_000)
    }))

  it.scopedLive("the same message keeps its webhook-id across attempts; each attempt has its own timestamp", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_, res) => res.writeHead(500).end())
      yield* Sender.send({ url: r.url, id: "msg_same", body, secret, now: new Date(Date.now() - 10_000) }).pipe(
        Effect.provide(NodeHttpClient.layerUndici)
      )
      yield* Sender.send({ url: r.url, id: "msg_same", body, secret, now: new Date() }).pipe(
        Effect.provide(NodeHttpClient.layerUndici)
      )
      assert.deepStrictEqual(r.seen.map((s) => s.headers["webhook-id"]), ["msg_same", "msg_same"])
      assert.notStrictEqual(r.seen[0]!.headers["webhook-timestamp"], r.seen[1]!.headers["webhook-timestamp"])
    }))
})
