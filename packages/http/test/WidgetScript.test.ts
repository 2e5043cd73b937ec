/**
 * `GET /widget.js` (docs/widget.md): the route of `WidgetScript` on a router of its own, answering
 * web requests: the module with its caching and CORS headers, 304 for a matching `If-None-Match`,
 * and 503 while the module cannot be read, until it can.
 */
import { HttpApiBuilder, HttpApp } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as WidgetScript from "../src/WidgetScript.js"

/** `GET /widget.js` through the route's web handler (disposed with the test's scope). */
const route = (load: WidgetScript.Load) =>
  HttpApiBuilder.Router.router.pipe(
    Effect.provide(Layer.provideMerge(WidgetScript.layer(load), HttpApiBuilder.Router.Live)),
    Effect.flatMap((router) =>
      Effect.acquireRelease(
        Effect.sync(() => HttpApp.toWebHandlerLayer(router, NodeHttpServer.layerContext)),
        ({ dispose }) => Effect.promise(dispose)
      )
    ),
    Effect.map(({ handler }) => (headers: Record<string, string> = {}) =>
      Effect.promise(async () => {
        const response = await handler(new Request("http://streaks.test/widget.js", { headers }))
        return { status: response.status, headers: response.headers, text: await response.text() }
      })
    )
  )

describe("WidgetScript", () => {
  it.scoped("serves the module as text/javascript with an ETag, five minutes of public caching and any origin", () =>
    Effect.gen(function*() {
      const get = yield* route(async () => "export const x = 1\n")
      const response = yield* get()
      expect(response.status).toBe(200)
      expect(response.text).toBe("export const x = 1\n")
      expect(Object.fromEntries(response.headers)).toMatchObject({
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": "public, max-age=300",
        "access-control-allow-origin": "*",
        "x-content-type-options": "nosniff"
      })
      expect(response.headers.get("etag")).toMatch(/^"[\w-]{27}"$/)
    }))

  it.scoped("answers 304 without a body when If-None-Match names its ETag (also weak, in a list, or *)", () =>
    Effect.gen(function*() {
      const get = yield* route(async () => "export const x = 1\n")
      const etag = (yield* get()).headers.get("etag")!
      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const response = yield* get({ "if-none-match": ifNoneMatch })
        expect(response.status).toBe(304)
        expect(response.text).toBe("")
        expect(response.headers.get("etag")).toBe(etag)
      }
      expect((yield* get({ "if-none-match": "\"other\"" })).status).toBe(200)
    }))

  it.scoped("answers 503 SERVICE_UNAVAILABLE while the module cannot be read, and serves it once it can", () =>
    Effect.gen(function*() {
      let built = false
      const get = yield* route(async () => {
        if (!built) throw new Error("dist/source.js: not found")
        return "export {}\n"
      })
      const missing = yield* get()
      expect(missing.status).toBe(503)
      expect(JSON.parse(missing.text)).toEqual({ error: "SERVICE_UNAVAILABLE" })
      built = true
      const served = yield* get()
      expect(served.status).toBe(200)
      expect(served.text).toBe("export {}\n")
    }))
})
