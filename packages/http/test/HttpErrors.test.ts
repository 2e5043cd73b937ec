import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Schema } from "effect"
import * as Http from "node:http"
import * as Cors from "../src/Cors.js"
import * as HttpErrors from "../src/HttpErrors.js"
import * as NodeServer from "../src/NodeServer.js"

// --- a throwaway API ---------------------------------------------------------------------------

class Teapot extends Schema.TaggedError<Teapot>()("Teapot", { detail: Schema.String }) {}
class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {}) {}
class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", { retryAfterSeconds: Schema.Number }) {}
class InProgress extends Schema.TaggedError<InProgress>()("InProgress", {}) {
  readonly code = "IDEMPOTENCY_KEY_IN_PROGRESS" as const
}
class NotRegistered extends Schema.TaggedError<NotRegistered>()("NotRegistered", {}) {}

class Items extends HttpApiGroup.make("items")
  .add(
    HttpApiEndpoint.post("create", "/v1/items")
      .setPayload(Schema.Struct({ name: Schema.String, count: Schema.Number }))
      .addSuccess(Schema.Struct({ ok: Schema.Literal(true), size: Schema.Number }), { status: 202 })
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/items")
      .setUrlParams(Schema.Struct({ limit: Schema.NumberFromString }))
      .addSuccess(Schema.Struct({ limit: Schema.Number }))
  )
  .add(
    HttpApiEndpoint.post("fail", "/v1/fail")
      .setPayload(
        Schema.Struct({ kind: Schema.Literal("teapot", "quota", "limited", "inProgress", "defect", "unregistered") })
      )
  )
{}

class TestApi extends HttpApi.make("test")
  .add(Items)
  .addError(HttpErrors.httpError(Teapot, 418, "TEAPOT"))
  .addError(HttpErrors.httpError(QuotaExceeded, 429, "QUOTA_EXCEEDED"))
  .addError(HttpErrors.httpError(RateLimited, 429, "RATE_LIMITED"))
  .addError(HttpErrors.httpError(InProgress, 409, "IDEMPOTENCY_KEY_IN_PROGRESS"))
{}

const ItemsLive = HttpApiBuilder.group(TestApi, "items", (h) =>
  h
    .handle("create", ({ payload }) => Effect.succeed({ ok: true as const, size: payload.name.length }))
    .handle("list", ({ urlParams }) => Effect.succeed({ limit: urlParams.limit }))
    .handle("fail", ({ payload }) => {
      switch (payload.kind) {
        case "teapot":
          return Effect.fail(new Teapot({ detail: "internal detail" }))
        case "quota":
          return Effect.fail(new QuotaExceeded())
        case "limited":
          return Effect.fail(new RateLimited({ retryAfterSeconds: 2.2 }))
        case "inProgress":
          return Effect.fail(new InProgress())
        case "defect":
          return Effect.die(new Error("secret internals: password=hunter2"))
        case "unregistered":
          // A handler that escapes the type system with an error the API does not declare.
          return Effect.fail(new NotRegistered() as unknown as Teapot)
      }
    }))

const logs: Array<string> = []
const captureLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ cause, message }) => logs.push(`${String(message)} ${String(cause)}`))
)

const ApiLive = HttpApiBuilder.api(TestApi).pipe(
  Layer.provide(ItemsLive),
  Layer.provide(HttpErrors.ErrorMapping),
  Layer.provide(Cors.layerPreflight())
)
const ServerLive = NodeServer.layerHttpApi({ port: 0 }).pipe(Layer.provide(ApiLive), Layer.provide(captureLogs))

// --- a raw HTTP client -------------------------------------------------------------------------

interface Reply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
}

/**
 * One request on a fresh connection. `body` is sent with Content-Length unless `chunked`, in which
 * case it goes out in 16 KiB chunks with Transfer-Encoding: chunked. Errors writing the body after
 * the server answered (it may close early) are ignored: the answer is what is checked.
 */
const send = (
  base: string,
  method: string,
  path: string,
  options: { readonly body?: string; readonly headers?: Record<string, string>; readonly chunked?: boolean } = {}
) =>
  Effect.promise(() =>
    new Promise<Reply>((resolve, reject) => {
      const body = options.body === undefined ? undefined : Buffer.from(options.body)
      const headers: Record<string, string> = { ...options.headers }
      if (body !== undefined && options.chunked !== true) headers["content-length"] = String(body.length)
      let answered = false
      const req = Http.request(`${base}${path}`, { method, headers, agent: false }, (res) => {
        answered = true
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on(
          "end",
          () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() })
        )
        res.on("error", reject)
      })
      req.on("error", (e) => {
        if (!answered) reject(e)
      })
      if (body === undefined) return req.end()
      if (options.chunked !== true) return req.end(body)
      let offset = 0
      const writeMore = (): void => {
        while (offset < body.length && !req.destroyed) {
          const chunk = body.subarray(offset, offset + 16 * 1024)
          offset += chunk.length
          if (!req.write(chunk)) return void req.once("drain", writeMore)
        }
        if (!req.destroyed) req.end()
      }
      writeMore()
    })
  )

const json = (reply: Reply): unknown => JSON.parse(reply.text)
const jsonHeaders = { "content-type": "application/json" }
const item = (name: string) => JSON.stringify({ name, count: 1 })

const assertError = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.deepStrictEqual(json(reply), { error: code })
  assert.match(String(reply.headers["content-type"]), /^application\/json/)
}

// --- tests ---------------------------------------------------------------------------------------

layer(ServerLive)("HttpErrors.ErrorMapping over HTTP", (it) => {
  const call = (method: string, path: string, options?: Parameters<typeof send>[3]) =>
    Effect.flatMap(NodeServer.NodeServer, ({ url }) => send(url, method, path, options))

  it.effect("a valid body is accepted", () =>
    Effect.gen(function*() {
      const reply = yield* call("POST", "/v1/items", { body: item("a"), headers: jsonHeaders })
      assert.strictEqual(reply.status, 202)
      assert.deepStrictEqual(json(reply), { ok: true, size: 1 })
    }))

  it.effect("invalid JSON, missing field, wrong type, empty and text bodies → 400 INVALID_BODY", () =>
    Effect.gen(function*() {
      for (
        const [body, headers] of [
          ["{not json", jsonHeaders],
          [JSON.stringify({ name: "a" }), jsonHeaders],
          [JSON.stringify({ name: 1, count: 1 }), jsonHeaders],
          ["", jsonHeaders],
          ["null", jsonHeaders],
          ["[]", jsonHeaders],
          ["hello", { "content-type": "text/plain" }],
          [item("a"), { "content-type": "text/plain" }]
        ] as const
      ) {
        assertError(yield* call("POST", "/v1/items", { body, headers }), 400, "INVALID_BODY")
      }
    }))

  it.effect("a JSON body without content-type is read as JSON", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* call("POST", "/v1/items", { body: item("a") })).status, 202)
    }))

  it.effect("a bad or missing query parameter → 400 INVALID_BODY; a good one succeeds", () =>
    Effect.gen(function*() {
      assertError(yield* call("GET", "/v1/items?limit=x"), 400, "INVALID_BODY")
      assertError(yield* call("GET", "/v1/items"), 400, "INVALID_BODY")
      const ok = yield* call("GET", "/v1/items?limit=5")
      assert.strictEqual(ok.status, 200)
      assert.deepStrictEqual(json(ok), { limit: 5 })
    }))

  it.effect("unknown route and wrong method → 404 NOT_FOUND", () =>
    Effect.gen(function*() {
      assertError(yield* call("GET", "/nope"), 404, "NOT_FOUND")
      assertError(yield* call("POST", "/v1/items/1", { body: item("a"), headers: jsonHeaders }), 404, "NOT_FOUND")
      assertError(yield* call("DELETE", "/v1/items"), 404, "NOT_FOUND")
      assertError(yield* call("GET", "/v1/fail"), 404, "NOT_FOUND")
    }))

  it.effect("a 70 KB body with Content-Length → 413 PAYLOAD_TOO_LARGE", () =>
    Effect.gen(function*() {
      assertError(
        yield* call("POST", "/v1/items", { body: item("x".repeat(70_000)), headers: jsonHeaders }),
        413,
        "PAYLOAD_TOO_LARGE"
      )
    }))

  it.effect("a 1 MB chunked body → 413 PAYLOAD_TOO_LARGE, then the connection closes", () =>
    Effect.gen(function*() {
      const reply = yield* call("POST", "/v1/items", {
        body: item("x".repeat(1024 * 1024)),
        headers: jsonHeaders,
        chunked: true
      })
      assertError(reply, 413, "PAYLOAD_TOO_LARGE")
      assert.strictEqual(reply.headers["connection"], "close")
    }))

  it.effect("a 70 KB chunked body (just over the cap) → 413", () =>
    Effect.gen(function*() {
      const reply = yield* call("POST", "/v1/items", {
        body: item("x".repeat(70_000)),
        headers: jsonHeaders,
        chunked: true
      })
      assertError(reply, 413, "PAYLOAD_TOO_LARGE")
    }))

  it.effect("a 60 KB body is accepted, with Content-Length or chunked", () =>
    Effect.gen(function*() {
      const a = yield* call("POST", "/v1/items", { body: item("x".repeat(60_000)), headers: jsonHeaders })
      assert.strictEqual(a.status, 202, a.text)
      assert.deepStrictEqual(json(a), { ok: true, size: 60_000 })
      const b = yield* call("POST", "/v1/items", {
        body: item("x".repeat(60_000)),
        headers: jsonHeaders,
        chunked: true
      })
      assert.strictEqual(b.status, 202, b.text)
    }))

  it.effect("a registered tagged error answers its status and {error: CODE}, nothing more", () =>
    Effect.gen(function*() {
      const teapot = yield* call("POST", "/v1/fail", { body: JSON.stringify({ kind: "teapot" }), headers: jsonHeaders })
      assertError(teapot, 418, "TEAPOT")
      assert.notInclude(teapot.text, "internal detail")
      assertError(
        yield* call("POST", "/v1/fail", { body: JSON.stringify({ kind: "quota" }), headers: jsonHeaders }),
        429,
        "QUOTA_EXCEEDED"
      )
    }))

  it.effect("an error with a retry delay also carries Retry-After (whole seconds, rounded up)", () =>
    Effect.gen(function*() {
      const limited = yield* call("POST", "/v1/fail", {
        body: JSON.stringify({ kind: "limited" }),
        headers: jsonHeaders
      })
      assertError(limited, 429, "RATE_LIMITED")
      assert.strictEqual(limited.headers["retry-after"], "3")
      const inProgress = yield* call("POST", "/v1/fail", {
        body: JSON.stringify({ kind: "inProgress" }),
        headers: jsonHeaders
      })
      assertError(inProgress, 409, "IDEMPOTENCY_KEY_IN_PROGRESS")
      assert.strictEqual(inProgress.headers["retry-after"], "1")
      const quota = yield* call("POST", "/v1/fail", { body: JSON.stringify({ kind: "quota" }), headers: jsonHeaders })
      assert.isUndefined(quota.headers["retry-after"])
    }))

  it.effect("a defect answers 500 INTERNAL without internals, and is logged", () =>
    Effect.gen(function*() {
      logs.length = 0
      const reply = yield* call("POST", "/v1/fail", { body: JSON.stringify({ kind: "defect" }), headers: jsonHeaders })
      assertError(reply, 500, "INTERNAL")
      assert.notInclude(reply.text, "hunter2")
      assert.isTrue(logs.some((l) => l.includes("hunter2")), logs.join("\n"))
    }))

  it.effect("an error the API does not declare answers 500 INTERNAL, and is logged", () =>
    Effect.gen(function*() {
      logs.length = 0
      const reply = yield* call("POST", "/v1/fail", {
        body: JSON.stringify({ kind: "unregistered" }),
        headers: jsonHeaders
      })
      assertError(reply, 500, "INTERNAL")
      assert.isTrue(logs.some((l) => l.includes("NotRegistered")), logs.join("\n"))
    }))

  it.effect("Cors.layerPreflight answers OPTIONS on the CORS routes with 204, for any origin", () =>
    Effect.gen(function*() {
      for (const path of ["/v1/e", "/v1/state?siteKey=x", "/v1/alias"]) {
        const reply = yield* call("OPTIONS", path, {
          headers: { origin: "https://unknown.test", "access-control-request-method": "POST" }
        })
        assert.strictEqual(reply.status, 204, path)
        assert.strictEqual(reply.text, "")
        assert.strictEqual(reply.headers["access-control-allow-origin"], "https://unknown.test")
        assert.strictEqual(reply.headers["access-control-allow-methods"], Cors.allowMethods)
        assert.strictEqual(reply.headers["access-control-allow-headers"], Cors.allowHeaders)
        assert.strictEqual(reply.headers["access-control-max-age"], String(Cors.maxAgeSeconds))
      }
      // Other paths are not CORS routes: OPTIONS there is an unknown route.
      assertError(yield* call("OPTIONS", "/v1/items"), 404, "NOT_FOUND")
    }))
})

// --- NodeServer: graceful close ------------------------------------------------------------------

const slow = (ms: number): NodeServer.Handler => (_req, res) => {
  setTimeout(() => res.writeHead(200, { "content-type": "text/plain" }).end("done"), ms)
}

/** A handler that reports each request's arrival, so a test knows it is in flight. */
const arrivals = (handler: NodeServer.Handler) => {
  let signal = () => {}
  const arrived = new Promise<void>((resolve) => signal = resolve)
  const wrapped: NodeServer.Handler = (req, res) => {
    signal()
    handler(req, res)
  }
  return { arrived: Effect.promise(() => arrived), handler: wrapped }
}

describe("NodeServer graceful close", () => {
  it.live("closing waits for in-flight requests, then stops accepting", () =>
    Effect.gen(function*() {
      let started = 0
      const { reply, url } = yield* Effect.scoped(Effect.gen(function*() {
        const { arrived, handler } = arrivals(slow(300))
        const { url } = yield* NodeServer.serve(handler, { port: 0, shutdownTimeout: "5 seconds" })
        // fetch keeps the connection alive: Node alone would keep the socket open after the answer.
        const reply = yield* Effect.fork(Effect.promise(async () => {
          const res = await fetch(url)
          return { status: res.status, text: await res.text() }
        }))
        yield* arrived // the request is in flight when the scope closes
        started = Date.now()
        return { reply, url }
      }))
      const closedAfter = Date.now() - started
      const answer = yield* reply.await
      assert.isTrue(answer._tag === "Success" && answer.value.status === 200 && answer.value.text === "done")
      assert.isAtLeast(closedAfter, 200) // the handler answers 300 ms after the request arrived
      assert.isBelow(closedAfter, 3000) // not the 5 s keep-alive or shutdown timeout
      const after = yield* Effect.exit(Effect.tryPromise(() => fetch(url)))
      assert.strictEqual(after._tag, "Failure")
    }))

  it.live("after many requests have come and gone, closing still waits for each one in flight", () =>
    Effect.gen(function*() {
      const inFlight: Array<Promise<number>> = []
      let started = 0
      yield* Effect.scoped(Effect.gen(function*() {
        let arrivedSlow = 0
        let bothArrived = () => {}
        const arrived = new Promise<void>((resolve) => bothArrived = resolve)
        const handler: NodeServer.Handler = (req, res) => {
          if (req.url === "/quick") return void res.writeHead(200).end("quick")
          if (++arrivedSlow === 2) bothArrived()
          slow(300)(req, res)
        }
        const { url } = yield* NodeServer.serve(handler, { port: 0, shutdownTimeout: "5 seconds" })
        // Responses come and go (their places among those in flight are reused), then two stay.
        for (let round = 0; round < 3; round++) {
          yield* Effect.all(Array.from({ length: 10 }, () => send(url, "GET", "/quick")), { concurrency: "unbounded" })
        }
        for (let i = 0; i < 2; i++) inFlight.push(fetch(`${url}/slow`).then((r) => r.status))
        yield* Effect.promise(() => arrived)
        started = Date.now()
      }))
      // Both answered, and both sockets closed after their answer: not the 5 s keep-alive or
      // shutdown timeout, which a response missing from those in flight would cost.
      const closedAfter = Date.now() - started
      const statuses = yield* Effect.promise(() => Promise.all(inFlight))
      assert.deepStrictEqual(statuses, [200, 200])
      assert.isBelow(closedAfter, 3000)
    }))

  it.live("closing cuts requests still running at the shutdown timeout", () =>
    Effect.gen(function*() {
      let started = 0
      const reply = yield* Effect.scoped(Effect.gen(function*() {
        const { arrived, handler } = arrivals(() => {}) // never answers
        const { url } = yield* NodeServer.serve(handler, { port: 0, shutdownTimeout: "200 millis" })
        const reply = yield* Effect.fork(Effect.exit(Effect.tryPromise(() => fetch(url))))
        yield* arrived
        started = Date.now()
        return reply
      }))
      const closedAfter = Date.now() - started
      assert.isAtLeast(closedAfter, 190)
      assert.isBelow(closedAfter, 2000)
      const answer = yield* reply.await
      assert.isTrue(answer._tag === "Success" && answer.value._tag === "Failure")
    }))

  it.live("a fast path answers its routes and hands the rest to the fallback", () =>
    Effect.scoped(Effect.gen(function*() {
      const fast: NodeServer.FastPath = (req, res) => {
        if (req.url !== "/fast") return false
        res.writeHead(202, { "content-type": "application/json" }).end(`{"ok":true}`)
        return true
      }
      const fallback: NodeServer.Handler = (_req, res) => void res.writeHead(404).end("fallback")
      const { url } = yield* NodeServer.serve(NodeServer.withFastPath(fast, fallback), { port: 0 })
      const a = yield* send(url, "POST", "/fast", { body: "{}" })
      const b = yield* send(url, "GET", "/slow")
      assert.deepStrictEqual([a.status, a.text, b.status, b.text], [202, `{"ok":true}`, 404, "fallback"])
    })))

  it.live("listening on a taken port fails with ServeError", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port } = yield* NodeServer.serve(slow(0), { port: 0 })
      const exit = yield* Effect.exit(NodeServer.serve(slow(0), { port }))
      assert.isTrue(exit._tag === "Failure" && String(exit.cause).includes("ServeError"), String(exit))
    })))
})
