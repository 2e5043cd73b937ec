/**
 * Tracing through the fast path on Postgres (`FastPath.front` with `tracing: true`, in front of
 * `Http.layerServer`): a counted action and a state read each get their server span with a 2xx
 * status, as the HttpApi routes do.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import { Effect, Layer, type Tracer } from "effect"
import * as FastPathServer from "./support/FastPathServer.js"
import * as RecordingTracer from "./support/RecordingTracer.js"

const spans: Array<Tracer.Span> = []

const serverSpans = (path: string) =>
  spans.filter((s) => s.kind === "server" && s.attributes.get("url.path") === path && s.status._tag === "Ended")

const call = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(NodeServer.NodeServer, ({ url }) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, init)
      await response.arrayBuffer()
      return response.status
    }))

layer(FastPathServer.layer({ tracing: true }).pipe(Layer.provide(RecordingTracer.layer(spans))), {
  timeout: 120_000
})("tracing through the fast path over real HTTP", (it) => {
  it.effect("the hot routes and the HttpApi routes each make a server span per request", () =>
    Effect.gen(function*() {
      const t = yield* FastPathServer.tenant
      const action = JSON.stringify({ siteKey: t.siteKey, event: t.eventKey, userHash: "member-1" })
      expect(
        yield* call("/v1/server/e", {
          method: "POST",
          headers: { "content-type": "application/json", "x-streak-server-token": t.serverToken },
          body: action
        })
      ).toBe(202)
      const query = new URLSearchParams({ siteKey: t.siteKey, userHash: "member-1", event: t.eventKey })
      expect(yield* call(`/v1/state?${query}`, { headers: { "x-streak-server-token": t.serverToken } })).toBe(200)
      expect(yield* call("/health")).toBe(200)
      yield* RecordingTracer.ended(spans, 3)
      expect(serverSpans("/v1/server/e").map((s) => [s.name, s.attributes.get("http.response.status_code")]))
        .toEqual([["http.server POST", 202]])
      expect(serverSpans("/v1/state").map((s) => [s.name, s.attributes.get("http.response.status_code")]))
        .toEqual([["http.server GET", 200]])
      expect(serverSpans("/health").map((s) => s.name)).toEqual(["http.server GET"])
    }))
})
