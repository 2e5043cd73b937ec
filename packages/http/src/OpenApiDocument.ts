/**
 * What `/openapi.json` says beyond what HttpApi derives from the schemas: the document's `info`,
 * security schemes and tags, and per route its summary, the credentials it accepts, examples, and
 * only the errors it can answer, each with the body the server sends (`{"error":CODE,"message"?}`).
 * `Api` carries `transform` as its `OpenApi.Transform`, so every reader of `OpenApi.fromApi(Api)`
 * (the `/openapi.json` route, the docs page, generated clients) gets the same document.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { Context, Option } from "effect"
import packageJson from "../package.json" with { type: "json" }
import * as HttpErrors from "./HttpErrors.js"

/** Error codes a route can answer: on a group, every route of it; on an endpoint, added to its group's. */
export class Errors extends Context.Tag("@streaks/http/OpenApiDocument/Errors")<
  Errors,
  ReadonlyArray<HttpErrors.Code>
>() {}

/** The security requirements of a route, replacing its middleware's; `{}` is "no credential needed". */
export class Security extends Context.Tag("@streaks/http/OpenApiDocument/Security")<
  Security,
  ReadonlyArray<Requirement>
>() {}

/** Examples of a route's request body, success body and query parameters. */
export class Examples extends Context.Tag("@streaks/http/OpenApiDocument/Examples")<Examples, {
  readonly request?: Readonly<Record<string, Example>> | undefined
  readonly response?: Readonly<Record<string, Example>> | undefined
  readonly parameters?: Readonly<Record<string, string>> | undefined
}>() {}

export interface Example {
  readonly summary: string
  readonly value: unknown
}

/** The credentials of the API, as OpenAPI security schemes; the middlewares' names are among them. */
export const securitySchemes = {
  serverToken: {
    type: "apiKey",
    in: "header",
    name: "X-Streak-Server-Token",
    description: "The project's server token (`sst_…`, returned once when the project is created), for calls " +
      "from your backend. Keep it out of browsers."
  },
  webhookSecret: {
    type: "apiKey",
    in: "header",
    name: "X-Streak-Webhook-Secret",
    description: "The webhook ingest secret (`whi_…`) of the program that counts the event."
  },
  identityToken: {
    type: "apiKey",
    in: "header",
    name: "X-Streak-Identity",
    description: "A signed identity token that reveals coupon and link reward values: an HS256 JWT with the claims " +
      "`sub` (userHash), `site` (siteKey) and `exp`, signed with the project's signing secret (`ass_…`). Also " +
      "accepted as the `identity` query parameter. An invalid or expired token counts as absent."
  },
  adminToken: {
    type: "apiKey",
    in: "header",
    name: "X-Admin-Token",
    description: "The deployment's admin token (`STREAKS_ADMIN_TOKEN`). Keep it on your servers."
  },
  bearer: {
    type: "http",
    scheme: "bearer",
    description: "A customer API key (`svc_api_…`, reaches every program of its workspace) or an OAuth access " +
      "token (`svc_oat_…`, reaches the workspaces of the user who connected the app)."
  },
  session: {
    type: "apiKey",
    in: "cookie",
    name: "streaks_session",
    description: "The session cookie set by signing in at `/sign-in`: reaches the user's workspaces with the user's " +
      "role. A state-changing request made with it must also send the session's CSRF token in `X-CSRF-Token` " +
      "(read it from `GET /v1/api/me`), else it answers 403 `FORBIDDEN`."
  }
} as const

/** One way to be let in: each named scheme must be satisfied (scopes are unused: `[]`). */
export type Requirement = { readonly [K in keyof typeof securitySchemes]?: ReadonlyArray<never> }

export interface Route {
  readonly summary: string
  readonly description: string
  /**
   * Codes this route answers besides its group's. Routes with a body add INVALID_BODY and
   * PAYLOAD_TOO_LARGE themselves, routes with query or path parameters INVALID_BODY.
   */
  readonly errors?: ReadonlyArray<HttpErrors.Code> | undefined
  /** Replaces the security of the route's middleware (e.g. the public doors, which have none). */
  readonly security?: ReadonlyArray<Requirement> | undefined
  /** The description of the success answer. */
  readonly success?: string | undefined
  readonly examples?: Examples["Type"] | undefined
}

class SuccessDescription extends Context.Tag("@streaks/http/OpenApiDocument/SuccessDescription")<
  SuccessDescription,
  string
>() {}

/** The annotations of one route: `HttpApiEndpoint.post(...).annotateContext(OpenApiDocument.route({...}))`. */
export const route = (r: Route): Context.Context<never> => {
  let context: Context.Context<never> = Context.add(
    OpenApi.annotations({ summary: r.summary, description: r.description }),
    Errors,
    r.errors ?? []
  )
  if (r.security !== undefined) context = Context.add(context, Security, r.security)
  if (r.examples !== undefined) context = Context.add(context, Examples, r.examples)
  if (r.success !== undefined) context = Context.add(context, SuccessDescription, r.success)
  return context
}

/** The annotations of a group: its tag (title, description) and the codes every route of it answers. */
export const group = (
  g: { readonly title: string; readonly description: string; readonly errors: ReadonlyArray<HttpErrors.Code> }
): Context.Context<never> =>
  Context.add(OpenApi.annotations({ title: g.title, description: g.description }), Errors, g.errors)

const description = `Per-member streaks (consecutive days of activity) for programs inside projects: record members'
actions through four ingest doors, read their streaks, and provision workspaces, projects and programs.

- Every failure answers \`{"error": CODE}\` with a status listed on its route, and each route lists only
  the codes it can answer. A \`message\` may be added to the body: show it, do not parse it.
- Times are ISO 8601 date-times with a zone designator ([RFC 3339](https://www.rfc-editor.org/rfc/rfc3339));
  time zones are [IANA names](https://www.iana.org/time-zones).
- Outbound events are signed as [Standard Webhooks](https://www.standardwebhooks.com/).
- This document: [/openapi.json](/openapi.json); the interactive page: [/docs](/docs).`

// Codes are listed in the catalogue's order.
const catalogue = Object.keys(HttpErrors.codes) as ReadonlyArray<HttpErrors.Code>

type Json = Record<string, any>

/** The error answers of one status: the codes' enum, their meanings, an example each. */
const errorResponse = (status: number, codes: ReadonlyArray<HttpErrors.Code>): Json => {
  const response: Json = {
    description: codes.map((code) => `\`${code}\`: ${HttpErrors.codes[code].meaning}`).join("\n\n"),
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["error"],
          properties: {
            error: { type: "string", enum: [...codes] },
            message: { type: "string", description: "A human-readable detail; do not parse it." }
          },
          additionalProperties: false
        },
        examples: Object.fromEntries(codes.map((code) => [code, { summary: code, value: { error: code } }]))
      }
    }
  }
  if (status === 429 || codes.includes("IDEMPOTENCY_KEY_IN_PROGRESS")) {
    response.headers = {
      "Retry-After": {
        description: "Seconds to wait before retrying.",
        schema: { type: "integer", minimum: 1 }
      }
    }
  }
  return response
}

/** The routes whose 400 names the field at fault (docs/api.md#put-programsprogramidpolicy). */
const namesField = (method: string, path: string): boolean =>
  method === "put" && path === "/v1/api/programs/{programId}/policy"

/** The routes whose every answer says where its nearest limit stands (docs/api.md#rate-limits). */
const limited = (method: string, path: string): boolean =>
  path.startsWith("/v1/api/") || (method === "post" && (path === "/v1/e" || path === "/v1/alias"))

/** The routes browsers call, whose answers carry CORS headers for the project's allowed origins. */
const browserDoor = (method: string, path: string): boolean =>
  (method === "post" && (path === "/v1/e" || path === "/v1/alias")) || (method === "get" && path === "/v1/state")

const rateLimitHeaders: Json = {
  "RateLimit-Policy": {
    description: "The limit nearest to refusing this request, as a structured field: " +
      "`\"<name>\";q=<quota>;w=<window seconds>` (`address`, `site`, `credential` or `failed-auth`).",
    schema: { type: "string", maxLength: 128 },
    example: "\"credential\";q=200;w=2"
  },
  RateLimit: {
    description: "What is left of that limit: `\"<name>\";r=<remaining>;t=<seconds until it is whole again>`.",
    schema: { type: "string", maxLength: 128 },
    example: "\"credential\";r=199;t=1"
  }
}

const corsHeaders: Json = {
  "Access-Control-Allow-Origin": {
    description: "The request's `Origin`, present only when it is one of the project's allowed origins.",
    schema: { type: "string", maxLength: 2048 }
  }
}

/** Adds `headers` to every 2xx and 4xx answer of an operation. */
const withHeaders = (responses: Json, headers: Json): void => {
  for (const [status, response] of Object.entries(responses)) {
    if (!/^[24]/.test(status)) continue
    const r = response as Json
    r.headers = { ...headers, ...r.headers }
  }
}

/**
 * Every integer says its width: `int32` when its declared range fits, else `int64` (every integer
 * the API writes is a safe JavaScript integer).
 */
const integerFormats = (value: unknown): void => {
  if (Array.isArray(value)) return value.forEach(integerFormats)
  if (typeof value !== "object" || value === null) return
  const node = value as Json
  if (node.type === "integer" && node.format === undefined) {
    const fits = typeof node.minimum === "number" && typeof node.maximum === "number" &&
      node.minimum >= -(2 ** 31) && node.maximum < 2 ** 31
    node.format = fits ? "int32" : "int64"
  }
  Object.values(node).forEach(integerFormats)
}

interface Annotated {
  readonly errors: ReadonlyArray<HttpErrors.Code>
  readonly security: Option.Option<ReadonlyArray<Requirement>>
  readonly examples: Option.Option<Examples["Type"]>
  readonly success: Option.Option<string>
}

/** The annotations of every endpoint of `api`, by `"method path"` as the document writes them. */
const annotationsOf = (api: HttpApi.HttpApi.Any): Map<string, Annotated> => {
  const found = new Map<string, Annotated>()
  HttpApi.reflect(api as HttpApi.HttpApi<string, any, any, any>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group }) => {
      const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
      found.set(`${endpoint.method.toLowerCase()} ${path}`, {
        errors: [
          ...Context.getOrElse(group.annotations, Errors, () => []),
          ...Context.getOrElse(endpoint.annotations, Errors, () => [])
        ],
        security: Context.getOption(endpoint.annotations, Security),
        examples: Context.getOption(endpoint.annotations, Examples),
        success: Context.getOption(endpoint.annotations, SuccessDescription)
      })
    }
  })
  return found
}

/** Rewrites one operation: its error answers, headers, security and examples. */
const completeOperation = (method: string, path: string, op: Json, annotated: Annotated | undefined): void => {
  const responses: Json = op.responses
  for (const status of Object.keys(responses)) if (Number(status) >= 400) delete responses[status]
  // What every route with inputs answers (HttpErrors.mapErrors): a body, query or path value that
  // does not decode or is not clean text, and a body over the limit.
  // Every route refuses a URL that does not percent-decode to clean text.
  const implied: Array<HttpErrors.Code> = ["INVALID_BODY"]
  if (op.requestBody !== undefined) implied.push("PAYLOAD_TOO_LARGE")
  const wanted = new Set([...implied, ...(annotated?.errors ?? [])])
  const codes = catalogue.filter((code) => wanted.has(code))
  const statuses = [...new Set(codes.map((code) => HttpErrors.codes[code].status))].sort((a, b) => a - b)
  for (const status of statuses) {
    responses[status] = errorResponse(status, codes.filter((code) => HttpErrors.codes[code].status === status))
  }
  if (namesField(method, path) && responses[400] !== undefined) {
    responses[400].content["application/json"].schema.properties.field = {
      type: "string",
      description: "The path in the policy of the field at fault, e.g. `target` or `freezes.initial`."
    }
  }
  if (limited(method, path)) withHeaders(responses, rateLimitHeaders)
  if (browserDoor(method, path)) withHeaders(responses, corsHeaders)
  if (annotated === undefined) return
  if (Option.isSome(annotated.security)) op.security = annotated.security.value.map((r) => ({ ...r }))
  const success = Object.keys(responses).find((status) => Number(status) < 300)
  if (success !== undefined && Option.isSome(annotated.success)) {
    responses[success].description = annotated.success.value
  }
  if (Option.isNone(annotated.examples)) return
  const { parameters, request, response } = annotated.examples.value
  if (request !== undefined && op.requestBody?.content?.["application/json"] !== undefined) {
    op.requestBody.content["application/json"].examples = request
  }
  const successContent = success === undefined ? undefined : responses[success].content?.["application/json"]
  if (response !== undefined && successContent !== undefined) successContent.examples = response
  if (parameters !== undefined) {
    for (const p of op.parameters as Array<Json>) if (parameters[p.name] !== undefined) p.example = parameters[p.name]
  }
}

/**
 * Drops what Effect's JSON Schema adds for its own use: the same `$id` on every `unknown` (one
 * identifier for many schemas, which validators refuse) and the titles and stock descriptions of
 * built-in refinements (`maxLength(256)`: "a string at most 256 character(s) long"), which only
 * repeat the keywords beside them.
 */
const tidySchemas = (value: unknown): void => {
  if (Array.isArray(value)) return value.forEach(tidySchemas)
  if (typeof value !== "object" || value === null) return
  const node = value as Json
  if (typeof node.$id === "string" && node.$id.startsWith("/schemas/")) delete node.$id
  if (typeof node.title === "string" && /^[A-Za-z]+\(.*\)$/.test(node.title)) {
    delete node.title
    delete node.description
  }
  Object.values(node).forEach(tidySchemas)
}

const references = (value: unknown): Array<string> =>
  Array.from(JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g), (m) => m[1]!)

/** Removes the component schemas that nothing in the document reaches any more (HttpApi's decode error). */
const dropUnreferenced = (spec: Json): void => {
  const schemas: Json = spec.components.schemas
  const reached = new Set<string>()
  const pending = references({ ...spec, components: { ...spec.components, schemas: {} } })
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (reached.has(name)) continue
    reached.add(name)
    pending.push(...references(schemas[name]))
  }
  for (const name of Object.keys(schemas)) if (!reached.has(name)) delete schemas[name]
}

/**
 * The `OpenApi.Transform` of `api` (pass the API itself, lazily: the transform runs when the
 * document is first made): the document HttpApi made, with this module's `info`, security
 * schemes and per-route errors, security and examples.
 */
export const transform = (api: () => HttpApi.HttpApi.Any) => (spec: Json): Json => {
  const annotations = annotationsOf(api())
  for (const [path, item] of Object.entries(spec.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      completeOperation(method, path, op, annotations.get(`${method} ${path}`))
    }
  }
  spec.info = {
    title: "Streaks API",
    version: packageJson.version,
    summary: "Streaks, milestones and signed webhooks, correct in every time zone.",
    description,
    license: { name: "MIT", identifier: "MIT" }
  }
  spec.servers = [{
    url: "/",
    description: "The deployment that serves this document (production, staging or local alike)",
    "x-internal": false
  }]
  spec.components.securitySchemes = { ...spec.components.securitySchemes, ...securitySchemes }
  tidySchemas(spec.paths)
  tidySchemas(spec.components.schemas)
  integerFormats(spec.paths)
  integerFormats(spec.components.schemas)
  dropUnreferenced(spec)
  return spec
}
