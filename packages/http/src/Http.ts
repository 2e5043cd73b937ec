/**
 * The whole HTTP surface as layers: the HttpApi with every group, auth, error mapping, CORS
 * preflight, OpenAPI at `/openapi.json` and a docs page at `/docs`; and `layerServer`, which
 * serves it on a node:http server with the fast path in front.
 */
import { HttpApiBuilder } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as AdminHandlers from "./AdminHandlers.js"
import { Api } from "./Api.js"
import * as Auth from "./Auth.js"
import * as Cors from "./Cors.js"
import * as CustomerHandlers from "./CustomerHandlers.js"
import * as DocsPage from "./DocsPage.js"
import * as FastPath from "./FastPath.js"
import * as HttpErrors from "./HttpErrors.js"
import * as IngestHandlers from "./IngestHandlers.js"
import * as MetaHandlers from "./MetaHandlers.js"
import * as NodeServer from "./NodeServer.js"

/** The API implementation: provide core services, `HttpConfig`, `Jobs` and a `RateLimiter`. */
export const layerApi = HttpApiBuilder.api(Api).pipe(
  Layer.provide([IngestHandlers.layer, AdminHandlers.layer, CustomerHandlers.layer, MetaHandlers.layer]),
  Layer.provide([Auth.layerAdmin, Auth.layerCustomer]),
  Layer.provide([HttpErrors.ErrorMapping, Cors.layerPreflight()])
)

export interface ServerOptions extends NodeServer.Options {
  /**
   * Server spans on the fast path's routes too (`FastPath.Options.tracing`; default false). The
   * HttpApi routes have them whenever the runtime traces.
   */
  readonly tracing?: boolean | undefined
  /** How the fast path runs an action's front (`FastPath.Options.schedule`; default: at once). */
  readonly schedule?: ((front: () => void) => void) | undefined
}

/**
 * Serves the API (fast path in front) on `options.port` / `options.host`. `routes` registers routes
 * of its own on the same router (`HttpApiBuilder.Router.use`), behind the same error mapping: the
 * reference server mounts the MCP worker (`@streaks/mcp`) with it.
 */
export const layerServer = <E = never, R = never>(
  options: ServerOptions,
  routes: Layer.Layer<never, E, R> = Layer.empty
) =>
  NodeServer.layer(
    Effect.flatMap(NodeServer.httpApiHandler, (api) =>
      FastPath.front(api, { tracing: options.tracing, schedule: options.schedule })),
    options
  ).pipe(
    Layer.provide([
      DocsPage.layer({ path: "/docs", openApiPath: "/openapi.json" }),
      HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })
    ]),
    Layer.provide(routes),
    Layer.provide(layerApi),
    // One router for the API, its middleware and the docs page.
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, NodeHttpServer.layerContext])
  )
