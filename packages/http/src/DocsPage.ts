/**
 * The API's interactive page (`/docs`): Swagger UI over `/openapi.json`, with every file of the
 * viewer served by this server from the installed `swagger-ui-dist` package, so the page works
 * where the browser has no internet access and no request leaves the server's origin.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { createRequire } from "node:module"
import { dirname, join, posix } from "node:path"

/** The viewer's files the page loads, with their content types; nothing else of the package is served. */
export const assets: Readonly<Record<string, string>> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png"
}

let viewerDir: string | undefined

/**
 * Where `swagger-ui-dist` is installed, found from this package (its own dependency). In the
 * server's single-file CommonJS bundle there is no `import.meta`, but a `require` of its own, which
 * finds this package first.
 */
const installedViewer = (): string => {
  if (viewerDir === undefined) {
    const here = typeof require === "function"
      ? createRequire(require.resolve("@streaks/http"))
      : createRequire(import.meta.url)
    viewerDir = dirname(here.resolve("swagger-ui-dist/package.json"))
  }
  return viewerDir
}

const html = (assetBase: string, specUrl: string): string =>
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Streaks API</title>
    <link rel="icon" type="image/png" href="${assetBase}/favicon-32x32.png" />
    <link rel="stylesheet" href="${assetBase}/swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${assetBase}/swagger-ui-bundle.js"></script>
    <script>
      window.ui = SwaggerUIBundle({
        url: ${JSON.stringify(specUrl)},
        dom_id: "#swagger-ui",
        deepLinking: true,
        docExpansion: "list",
        defaultModelsExpandDepth: 0,
        // Swagger UI would send the document to its public validator: nothing leaves this origin.
        validatorUrl: null
      })
    </script>
  </body>
</html>
`

export interface Options {
  /** Where the page is served; its files are served under it (`/docs/swagger-ui.css`). Default `/docs`. */
  readonly path?: `/${string}` | undefined
  /** Where the OpenAPI document is served. Default `/openapi.json`. */
  readonly openApiPath?: `/${string}` | undefined
}

/**
 * The page and its files as routes of the HttpApi router. The page refers to both by relative URLs,
 * so it also works behind a proxy that serves the API under a prefix. The files are streamed from
 * disk on each request (with `ETag` and `Last-Modified`), never held in the server's memory.
 */
export const layer = (options: Options = {}) => {
  const path = options.path ?? "/docs"
  const page = HttpServerResponse.html(
    html(posix.basename(path), posix.relative(posix.dirname(path), options.openApiPath ?? "/openapi.json"))
  )
  return HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      yield* router.get(path, Effect.succeed(page))
      for (const [name, contentType] of Object.entries(assets)) {
        yield* router.get(
          `${path}/${name}`,
          Effect.suspend(() =>
            HttpServerResponse.file(join(installedViewer(), name), {
              headers: { "content-type": contentType, "cache-control": "public, max-age=3600" }
            })
          )
        )
      }
    })
  )
}
