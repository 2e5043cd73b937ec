/**
 * Tracing through the real server (`Http.layerServer` on Postgres, a runtime that traces): a counted
 * action, a state read and a health check each get the platform's server span, with their status.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, type Tracer } from "effect"
import * as RecordingTracer from "./support/RecordingTracer.js"
import { getState, layer as testServer, request, serverEvent, tenant } from "./support/TestServer.js"

const spans: Array<Tracer.Span> = []

const serverSpans = (path: string) =>
  spans.filter((s) => s.kind === "server" && s.attributes.get("url.path") === path && s.status._tag === "Ended")

layer(testServer().pipe(Layer.provide(RecordingTracer.layer(spans))), { timeout: 120_000 })(
  "tracing over real HTTP",
  (it) => {
    it.effect("the public doors and the other routes each make a server span per request", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        expect((yield* serverEvent(t, { userHash: "member-1" })).status).toBe(202)
        expect((yield* getState(t, "member-1")).status).toBe(200)
        expect((yield* request("/health")).status).toBe(200)
        yield* RecordingTracer.ended(spans, 3)
        expect(serverSpans("/v1/server/e").map((s) => [s.name, s.attributes.get("http.response.status_code")]))
          .toEqual([["http.server POST", 202]])
        expect(serverSpans("/v1/state").map((s) => [s.name, s.attributes.get("http.response.status_code")]))
          .toEqual([["http.server GET", 200]])
        expect(serverSpans("/health").map((s) => s.name)).toEqual(["http.server GET"])
      }))
  }
)
