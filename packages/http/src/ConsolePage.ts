/**
 * `/console` (docs/console.md): the console's page for a signed-in browser, with the session's CSRF
 * token in `<meta name="csrf-token">`, on `/console` and every path under it (the app routes in the
 * browser), and the app's two files under `/console/assets/`. A browser that is not signed in is
 * sent to the sign-in page, which brings it back to the same path.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, type Layer, Option } from "effect"
import { createHash } from "node:crypto"
import * as Sessions from "./Sessions.js"

/** The console's built files (`@streaks/console/source`). */
export interface Files {
  readonly script: string
  readonly style: string
}

/**
 * Reads the built files, e.g. `() => import("@streaks/console/source").then((m) => m.default)`.
 * Called at the first request, and again after a failure.
 */
export type Load = () => Promise<Files>

interface Asset {
  readonly body: string
  readonly etag: string
  readonly contentType: string
}

const etagOf = (body: string) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`

const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

// The page and the app load nothing from another origin; the policy says so to the browser too.
const securityHeaders = {
  "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY"
}

/** The page: the app's files named by their ETag, so a new build is fetched at once. */
export const html = (csrfToken: string, scriptTag: string, styleTag: string): string =>
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="color-scheme" content="light dark" />
    <meta name="csrf-token" content="${escapeAttribute(csrfToken)}" />
    <title>Streaks console</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="/console/assets/console.css?v=${styleTag}" />
    <script type="module" src="/console/assets/console.js?v=${scriptTag}"></script>
  </head>
  <body>
    <div id="app"><main><p>Loading the console…</p></main></div>
    <noscript>The console needs JavaScript.</noscript>
  </body>
</html>
`

const unavailable = (error: unknown) =>
  Effect.as(
    Effect.logWarning(
      `GET /console: the console cannot be read (build it: pnpm --filter @streaks/console build): ${String(error)}`
    ),
    HttpServerResponse.unsafeJson({ error: "SERVICE_UNAVAILABLE" }, { status: 503 })
  )

/** The routes, for `HttpApiBuilder.Router` (the reference server mounts them beside the API). */
export const layer = (load: Load): Layer.Layer<never, never, Sessions.Sessions> => {
  let assets: { readonly script: Asset; readonly style: Asset } | undefined
  const loaded = Effect.suspend(() =>
    assets !== undefined ? Effect.succeed(assets) : Effect.tryPromise(async () => {
      const files = await load()
      assets = {
        script: { body: files.script, etag: etagOf(files.script), contentType: "text/javascript; charset=utf-8" },
        style: { body: files.style, etag: etagOf(files.style), contentType: "text/css; charset=utf-8" }
      }
      return assets
    })
  )

  const asset = (pick: (a: NonNullable<typeof assets>) => Asset) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const file = pick(yield* loaded)
      const headers = { etag: file.etag, "cache-control": "no-cache", ...securityHeaders }
      if (request.headers["if-none-match"] === file.etag) return HttpServerResponse.empty({ status: 304, headers })
      return HttpServerResponse.text(file.body, { contentType: file.contentType, headers })
    }).pipe(Effect.catchTag("UnknownException", (error) => unavailable(error.cause)))

  const page = (sessions: Sessions.Sessions["Type"]) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const signedIn = yield* sessions.current
      if (Option.isNone(signedIn)) return sessions.toSignIn(request.url)
      const files = yield* loaded
      return HttpServerResponse.text(
        html(signedIn.value.csrfToken, files.script.etag.slice(1, 13), files.style.etag.slice(1, 13)),
        { contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store", ...securityHeaders } }
      )
    }).pipe(
      // The built files could not be read, or the session store did not answer.
      Effect.catchAll((error) => unavailable(error instanceof Cause.UnknownException ? error.cause : error))
    )

  return HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      yield* router.get("/console/assets/console.js", asset((a) => a.script))
      yield* router.get("/console/assets/console.css", asset((a) => a.style))
      yield* router.get("/console", page(sessions))
      yield* router.get("/console/*", page(sessions))
    })
  )
}
