/**
 * The whole HTTP surface as layers: the HttpApi with every group, auth, error mapping, CORS
 * preflight, OpenAPI at `/openapi.json` and a docs page at `/docs`; and `layerServer`, which
 * serves it on a node:http server of our own.
 */
import { HttpApiBuilder } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as AccountPages from "./AccountPages.js"
import * as AdminHandlers from "./AdminHandlers.js"
import { Api } from "./Api.js"
import * as Auth from "./Auth.js"
import * as Cors from "./Cors.js"
import * as CustomerHandlers from "./CustomerHandlers.js"
import * as DocsPage from "./DocsPage.js"
import * as HttpErrors from "./HttpErrors.js"
import * as IngestHandlers from "./IngestHandlers.js"
import * as MetaHandlers from "./MetaHandlers.js"
import * as NodeServer from "./NodeServer.js"
import * as Sessions from "./Sessions.js"

/** The API implementation: provide core services, `HttpConfig`, `Jobs` and a `RateLimiter`. */
export const layerApi = HttpApiBuilder.api(Api).pipe(
  Layer.provide([IngestHandlers.layer, AdminHandlers.layer, CustomerHandlers.layer, MetaHandlers.layer]),
  Layer.provide([Auth.layerAdmin, Auth.layerCustomer]),
  Layer.provide([HttpErrors.ErrorMapping, Cors.layerPreflight()]),
  Layer.provide(Sessions.layer)
)

/**
 * Serves the API on `options.port` / `options.host`, every route through the HttpApi handlers.
 * `routes` registers routes of its own on the same router (`HttpApiBuilder.Router.use`), behind the
 * same error mapping: the reference server mounts the MCP worker (`@streaks/mcp`) with it. `front`
 * may put a node:http listener in front of the API's (`NodeServer.withFastPath`): the reference
 * server (`@streaks/server`) installs its fast path for the hot public routes there.
 */
export const layerServer = <E = never, R = never, E2 = never, R2 = never>(
  options: NodeServer.Options,
  routes: Layer.Layer<never, E, R> = Layer.empty,
  front: (api: NodeServer.Handler) => Effect.Effect<NodeServer.Handler, E2, R2> = Effect.succeed
) =>
  NodeServer.layer(Effect.flatMap(NodeServer.httpApiHandler, front), options).pipe(
    Layer.provide([
      DocsPage.layer({ path: "/docs", openApiPath: "/openapi.json" }),
      HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" }),
      AccountPages.layer
    ]),
    Layer.provide(routes),
    Layer.provide(layerApi),
    // The sign-in pages, the API's session credential and `routes` (the OAuth consent page) share it.
    Layer.provide(Sessions.layer),
    // One router for the API, its middleware and the docs page.
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, NodeHttpServer.layerContext])
  )
