/**
 * `GET /widget.js`: the display widget's ES module (docs/widget.md, built by `@streaks/widget`) for
 * any page: `text/javascript`, a strong `ETag` (304 to a matching `If-None-Match`), five minutes of
 * public caching and `Access-Control-Allow-Origin: *`, since browsers fetch module scripts with CORS.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, type Layer } from "effect"
import { createHash } from "node:crypto"

/** The path the module is served at. */
export const path = "/widget.js"

/**
 * Reads the module's text, e.g. `() => import("@streaks/widget/source").then((m) => m.default)`.
 * Called at the first request, and again after a failure (a module built since is then served).
 */
export type Load = () => Promise<string>

interface Script {
  readonly body: string
  readonly etag: string
}

const headers = (etag: string) => ({
  etag,
  "cache-control": "public, max-age=300",
  "access-control-allow-origin": "*",
  "x-content-type-options": "nosniff"
})

// `If-None-Match` lists tags (weak ones compare equal too) or is `*`.
const matches = (ifNoneMatch: string | undefined, etag: string): boolean =>
  ifNoneMatch !== undefined &&
  ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t === etag || t === `W/${etag}`
  })

/**
 * The route, for `HttpApiBuilder.Router` (e.g. among `Http.layerServer`'s routes, as the reference
 * server mounts it). When `load` fails the route answers 503
 * `SERVICE_UNAVAILABLE` and logs why (e.g. the widget was never built: `pnpm install` builds it).
 */
export const layer = (load: Load): Layer.Layer<never> => {
  let script: Script | undefined
  const get = Effect.suspend(() =>
    script !== undefined ? Effect.succeed(script) : Effect.tryPromise(async () => {
      const body = await load()
      const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
      script = { body, etag }
      return script
    })
  )
  const handler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { body, etag } = yield* get
    if (matches(request.headers["if-none-match"], etag)) {
      return HttpServerResponse.empty({ status: 304, headers: headers(etag) })
    }
    return HttpServerResponse.text(body, { contentType: "text/javascript; charset=utf-8", headers: headers(etag) })
  }).pipe(
    Effect.catchTag("UnknownException", (error) =>
      Effect.as(
        Effect.logWarning(
          `GET /widget.js: the widget module cannot be read (build it: pnpm --filter @streaks/widget build): ${
            String(error.cause)
          }`
        ),
        HttpServerResponse.unsafeJson({ error: "SERVICE_UNAVAILABLE" }, { status: 503 })
      ))
  )
  return HttpApiBuilder.Router.use((router) => Effect.zipRight(router.get(path, handler), router.head(path, handler)))
}
