/**
 * The MCP worker over Streamable HTTP (docs/mcp.md): `POST /mcp` with `Authorization: Bearer`
 * on every request, the `Origin` rule, the RFC 9728 protected-resource document, and the routes
 * that mount all of it on the reference server's router or serve it alone.
 *
 * The worker is stateless (no `sessionIdGenerator`): each request gets its own SDK server and
 * transport and is answered as JSON, so any replica can answer any request and nothing is kept
 * between them. `GET` (a stream the server would push on) and `DELETE` (ending a session) answer
 * 405, which clients take as "none".
 *
 * The SDK is loaded at the first exchange, not with this module: a server whose `/mcp` is never
 * called does not pay its start-up time and memory (docs/decisions/0004).
 */
import type { HttpServerError } from "@effect/platform"
import {
  HttpApiBuilder,
  HttpIncomingMessage,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { ClientAddress, Credentials, Ingest } from "@streaks/core"
import type { Layer, Runtime } from "effect"
import { Effect, Option } from "effect"
import type { IncomingMessage } from "node:http"
import type { TLSSocket } from "node:tls"
import { McpConfig } from "./McpConfig.js"
import { McpLimits } from "./McpLimits.js"
import type * as Tools from "./Tools.js"

/** Where the worker answers. */
export const path = "/mcp"

/** Where the protected-resource document is served (RFC 9728 §3), and its path-suffixed form. */
export const metadataPath = "/.well-known/oauth-protected-resource"

/** Largest request body read, as on the REST API. */
const maxBodyBytes = 64 * 1024

const tokenPrefixes = [Credentials.prefixes.apiKey, Credentials.prefixes.oauth, Credentials.prefixes.mcp]

type Headers = Readonly<Record<string, string>>

const json = (status: number, body: unknown, headers: Headers = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

/**
 * The client of the request (address and scheme): forwarding headers are believed only from the
 * deployment's trusted proxies (`ClientAddress.TrustedProxies`, none when absent).
 */
const clientOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.serviceOption(ClientAddress.TrustedProxies), (trust) =>
    ClientAddress.resolveHeaders(
      Option.getOrElse(trust, () => ClientAddress.none),
      Option.getOrUndefined(request.remoteAddress),
      ((request.source as Partial<IncomingMessage> | undefined)?.socket as Partial<TLSSocket> | undefined)
        ?.encrypted === true,
      request.headers
    ))

/**
 * The base URL of the service as the caller reaches it (see `McpConfig.baseUrl`): else the
 * client's scheme (from a trusted proxy) and the `Host` header.
 */
const baseUrlOf = (
  config: McpConfig["Type"],
  request: HttpServerRequest.HttpServerRequest,
  client: ClientAddress.Client
): string => Option.getOrElse(config.baseUrl, () => `${client.scheme}://${request.headers["host"] ?? "localhost"}`)

/**
 * The RFC 9728 document: the worker is a resource that takes bearer tokens in the header only,
 * issued by the authorization server at the service's base URL (docs/oauth.md), so that an MCP
 * client can run the OAuth flow itself.
 */
export const metadata = (baseUrl: string) => ({
  resource: `${baseUrl}${path}`,
  resource_name: "Streaks MCP worker",
  authorization_servers: [baseUrl],
  bearer_methods_supported: ["header"]
})

/**
 * Whether the query string carries a token (`access_token`, RFC 6750 §2.3, or any value with a
 * credential's prefix): such a request is refused even with a valid header, since the token has
 * already reached logs and browser histories on its way.
 */
const tokenInQuery = (url: string): boolean => {
  const q = url.indexOf("?")
  if (q === -1) return false
  const params = new URLSearchParams(url.slice(q + 1))
  if (params.has("access_token")) return true
  for (const value of params.values()) if (tokenPrefixes.some((prefix) => value.startsWith(prefix))) return true
  return false
}

/** CORS headers of an answer to an allowed browser origin. */
const corsHeaders = (origin: string | undefined): Headers =>
  origin === undefined ? {} : {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": "mcp-session-id, mcp-protocol-version, www-authenticate",
    vary: "origin"
  }

const preflight = (origin: string | undefined, limit: Readonly<Record<string, string>>) =>
  HttpServerResponse.empty({
    status: 204,
    headers: {
      ...corsHeaders(origin),
      ...limit,
      "access-control-allow-methods": "POST, GET, DELETE, OPTIONS",
      "access-control-allow-headers":
        "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
      "access-control-max-age": "600"
    }
  })

const isTooLarge = (error: HttpServerError.RequestError) =>
  error.cause instanceof Error && error.cause.message === "maxBytes exceeded"

/**
 * One JSON-RPC exchange through a fresh SDK server and stateless transport, answered as JSON
 * (a notification or a response alone: 202 with no body).
 */
const exchange = (
  request: HttpServerRequest.HttpServerRequest,
  baseUrl: string,
  body: string,
  principal: Credentials.McpPrincipal,
  runtime: Runtime.Runtime<Tools.Requirements>,
  clientAddress: string
) =>
  Effect.promise(async () => {
    const [{ WebStandardStreamableHTTPServerTransport }, Protocol] = await Promise.all([
      import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
      import("./Protocol.js")
    ])
    const server = Protocol.make(Effect.succeed(principal), runtime, clientAddress)
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    try {
      await server.connect(transport)
      const answer = await transport.handleRequest(
        new Request(`${baseUrl}${request.url}`, { method: "POST", headers: request.headers, body })
      )
      return { status: answer.status, contentType: answer.headers.get("content-type"), text: await answer.text() }
    } finally {
      await server.close()
    }
  })

/**
 * The `/mcp` route: `Origin` (403), a token in the query string (400), the bearer token (401
 * with the challenge), then the exchange. Needs the tools' services and `McpConfig`.
 */
export const handler: Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  never,
  HttpServerRequest.HttpServerRequest | McpConfig | Tools.Requirements
> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* McpConfig
  const limits = yield* Effect.serviceOption(McpLimits)
  const client = yield* clientOf(request)
  // Answers given before the token is read carry the address's failed-authentication standing.
  const standing = Option.isSome(limits) ? yield* limits.value.standing(client.address) : {}
  const origin = request.headers["origin"]
  if (origin !== undefined && !Ingest.originAllowed(origin, config.allowedOrigins)) {
    return json(403, { error: "FORBIDDEN_ORIGIN" }, standing)
  }
  if (request.method === "OPTIONS") return preflight(origin, standing)
  const baseUrl = baseUrlOf(config, request, client)
  let cors = corsHeaders(origin)
  if (tokenInQuery(request.url)) {
    return json(400, {
      error: "INVALID_BODY",
      message: "send the token in the Authorization header (Bearer), never in the query string"
    }, { ...cors, ...standing, "www-authenticate": `Bearer error="invalid_request"` })
  }
  const principal = yield* Effect.either(
    (yield* Credentials.Credentials).authenticateMcp(request.headers["authorization"])
  )
  if (principal._tag === "Left") {
    if (principal.left._tag !== "Unauthorized") return json(503, { error: "SERVICE_UNAVAILABLE" }, cors)
    // A token that does not verify spends the address's budget; once it is spent, 429 instead.
    if (Option.isSome(limits)) {
      const gate = yield* limits.value.failedAuthentication(client.address)
      cors = { ...cors, ...gate.headers }
      if (!gate.allowed) {
        return json(429, { error: "RATE_LIMITED" }, { ...cors, "retry-after": String(gate.retryAfterSeconds) })
      }
    }
    return json(401, { error: "UNAUTHORIZED" }, {
      ...cors,
      "www-authenticate": `Bearer resource_metadata="${baseUrl}${metadataPath}"`
    })
  }
  if (Option.isSome(limits)) {
    const gate = yield* limits.value.credential(`${principal.right.kind}:${principal.right.id}`)
    cors = { ...cors, ...gate.headers }
    if (!gate.allowed) {
      return json(429, { error: "RATE_LIMITED" }, { ...cors, "retry-after": String(gate.retryAfterSeconds) })
    }
  }
  if (request.method !== "POST") {
    return HttpServerResponse.empty({ status: 405, headers: { ...cors, allow: "POST, OPTIONS" } })
  }
  if (Number(request.headers["content-length"] ?? 0) > maxBodyBytes) {
    return json(413, { error: "PAYLOAD_TOO_LARGE" }, cors)
  }
  const body = yield* Effect.either(HttpIncomingMessage.withMaxBodySize(request.text, Option.some(maxBodyBytes)))
  if (body._tag === "Left") {
    return isTooLarge(body.left)
      ? json(413, { error: "PAYLOAD_TOO_LARGE" }, cors)
      : json(400, { error: "INVALID_BODY" }, cors)
  }
  const runtime = yield* Effect.runtime<Tools.Requirements>()
  const answer = yield* exchange(request, baseUrl, body.right, principal.right, runtime, client.address)
  return answer.text === ""
    ? HttpServerResponse.empty({ status: answer.status, headers: cors })
    : HttpServerResponse.text(answer.text, {
      status: answer.status,
      headers: cors,
      ...(answer.contentType !== null ? { contentType: answer.contentType } : {})
    })
})

/** The protected-resource document's route (public, readable from any origin). */
export const metadataHandler: Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  never,
  HttpServerRequest.HttpServerRequest | McpConfig
> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* McpConfig
  const client = yield* clientOf(request)
  return json(200, metadata(baseUrlOf(config, request, client)), { "access-control-allow-origin": "*" })
})

/** The worker's routes: `/mcp` (every method) and the protected-resource document. */
export const router: HttpRouter.HttpRouter<never, McpConfig | Tools.Requirements> = HttpRouter.empty.pipe(
  HttpRouter.all(path, handler),
  HttpRouter.get(metadataPath, metadataHandler),
  HttpRouter.get(`${metadataPath}${path}`, metadataHandler)
)

/** The worker served alone: its routes, and 404 `{"error":"NOT_FOUND"}` for every other path. */
export const app = router.pipe(
  Effect.catchTag("RouteNotFound", () => Effect.succeed(json(404, { error: "NOT_FOUND" })))
)

/**
 * The worker's routes on the reference server's router (`Http.layerServer`'s `routes`), behind its
 * error mapping and body limit.
 */
export const layerRoutes: Layer.Layer<never, never, HttpApiBuilder.Router | McpConfig | Tools.Requirements> =
  HttpApiBuilder.Router.use((routes) =>
    Effect.gen(function*() {
      const context = yield* Effect.context<McpConfig | Tools.Requirements>()
      yield* routes.all(path, Effect.provide(handler, context))
      yield* routes.get(metadataPath, Effect.provide(metadataHandler, context))
      yield* routes.get(`${metadataPath}${path}`, Effect.provide(metadataHandler, context))
    })
  )
