/**
 * Spans on the fast path, over real HTTP with stand-in services: none unless `tracing` is set; with
 * it, one server span per hot request, as the platform gives the HttpApi routes, child of the
 * caller's `traceparent`, without the query string, and parent of the door's own work.
 */
import { assert, describe, it } from "@effect/vitest"
import { Errors } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import type { Tracer } from "effect"
import { Effect, Exit, Layer, Logger, Option } from "effect"
import * as FastPath from "../src/FastPath.js"
import * as RecordingTracer from "./support/RecordingTracer.js"
import * as StandIns from "./support/StandIns.js"

const storageDown = Exit.fail(new Errors.StorageError({ message: "down" }))

/** Stand-ins that fail with a `StorageError` (503); `resolveProject` first notes the span it runs under. */
const services = (seen: Array<Option.Option<Tracer.Span>>) =>
  StandIns.failingWith(storageDown, () =>
    Effect.flatMap(Effect.option(Effect.currentSpan), (span) => {
      seen.push(span)
      return storageDown
    }))

/** The doors log each storage failure; these are expected. */
const quiet = Logger.replace(Logger.defaultLogger, Logger.none)

/** A server whose only routes are the fast path's; anything else answers 404. */
const serve = (options: FastPath.Options, spans: Array<Tracer.Span>, seen: Array<Option.Option<Tracer.Span>>) =>
  Effect.gen(function*() {
    const fast = yield* FastPath.front((_req, res) => {
      res.writeHead(404)
      res.end()
    }, options)
    return yield* NodeServer.serve(fast, { port: 0 })
  }).pipe(Effect.provide(Layer.mergeAll(services(seen), RecordingTracer.layer(spans), quiet)))

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const callerSpanId = "00f067aa0ba902b7"

/** Five hot requests and one that is not: the statuses, in order. */
const callAll = (url: string) =>
  Effect.promise(async () => {
    const replies = [
      await fetch(`${url}/v1/server/e`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpanId}-01` },
        body: JSON.stringify({ siteKey: "site_x", userHash: "u1", event: "e" })
      }),
      await fetch(`${url}/v1/server/e`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" }),
      await fetch(`${url}/v1/state?siteKey=site_x&userHash=u1&event=e&identity=secret-identity-token`),
      await fetch(`${url}/v1/webhook/site_x/e`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ userHash: "u1", event: "e" })
      }),
      await fetch(`${url}/v1/e`, { method: "OPTIONS", headers: { origin: "https://app.example" } }),
      await fetch(`${url}/health`)
    ]
    return replies.map((r) => r.status)
  })

const attribute = (span: Tracer.Span, key: string) => span.attributes.get(key)

describe("FastPath tracing", () => {
  it.live("makes no spans by default", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const seen: Array<Option.Option<Tracer.Span>> = []
      const server = yield* serve({}, spans, seen)
      assert.deepStrictEqual(yield* callAll(server.url), [503, 400, 503, 503, 204, 404])
      assert.deepStrictEqual(spans.map((s) => s.name), [])
      assert.isTrue(seen.length > 0 && seen.every(Option.isNone))
    }).pipe(Effect.scoped))

  it.live("with tracing, one server span per hot request, with its status", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const seen: Array<Option.Option<Tracer.Span>> = []
      const server = yield* serve({ tracing: true }, spans, seen)
      assert.deepStrictEqual(yield* callAll(server.url), [503, 400, 503, 503, 204, 404])
      yield* RecordingTracer.ended(spans, 5)
      const summary = spans.map((
        s
      ) => [s.name, s.kind, attribute(s, "url.path"), attribute(s, "http.response.status_code"), s.status._tag])
      assert.deepStrictEqual(summary, [
        ["http.server POST", "server", "/v1/server/e", 503, "Ended"],
        ["http.server POST", "server", "/v1/server/e", 400, "Ended"],
        ["http.server GET", "server", "/v1/state", 503, "Ended"],
        ["http.server POST", "server", "/v1/webhook/site_x/e", 503, "Ended"],
        ["http.server OPTIONS", "server", "/v1/e", 204, "Ended"]
      ])
      assert.strictEqual(attribute(spans[0]!, "http.request.method"), "POST")
    }).pipe(Effect.scoped))

  it.live("a span continues the caller's trace and is the parent of the door's work", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const seen: Array<Option.Option<Tracer.Span>> = []
      const server = yield* serve({ tracing: true }, spans, seen)
      yield* callAll(server.url)
      const first = spans[0]!
      assert.strictEqual(first.traceId, traceId)
      assert.deepStrictEqual(Option.map(first.parent, (p) => p.spanId), Option.some(callerSpanId))
      // Each door's project lookup ran under its own request's span: the server door's under the
      // first, the state door's under the third, the webhook's under the fourth.
      assert.deepStrictEqual(seen.map(Option.map((s) => s.spanId)), [
        Option.some(first.spanId),
        Option.some(spans[2]!.spanId),
        Option.some(spans[3]!.spanId)
      ])
    }).pipe(Effect.scoped))

  it.live("keeps the query string out of the span", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const server = yield* serve({ tracing: true }, spans, [])
      yield* callAll(server.url)
      yield* RecordingTracer.ended(spans, 5)
      const state = spans.find((s) => attribute(s, "url.path") === "/v1/state")!
      const values = [...state.attributes.values()].map(String)
      assert.isTrue(values.length > 0)
      assert.isFalse(values.some((v) => v.includes("secret-identity-token") || v.includes("userHash")))
    }).pipe(Effect.scoped))
})
