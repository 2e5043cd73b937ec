/**
 * The one place where HTTP failures become `{"error":"CODE"}` answers (RECIPES recipe 1): body,
 * query and path decode failures, unknown routes, oversize bodies, core errors and defects.
 */
import {
  HttpApiBuilder,
  HttpApiError,
  HttpApiSchema,
  HttpApp,
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import * as Multipart from "@effect/platform/Multipart"
import type { Layer } from "effect"
import { Cause, Effect, Option, ParseResult, Schema } from "effect"
import * as RateLimitHeaders from "./RateLimitHeaders.js"
import * as TextHygiene from "./TextHygiene.js"

/** Largest request body read (docs/api.md#order-of-checks, step 1): 64 KiB. */
export const maxBodyBytes = 64 * 1024

/**
 * Every error code a client can receive, with its status and what it means (docs/api.md#errors).
 * `statusOf` and the OpenAPI document both read it. A defect answers 500 `INTERNAL`, which no route
 * declares: it is a bug, not part of the contract.
 */
export const codes = {
  INVALID_BODY: {
    status: 400,
    meaning: "The body is not JSON, or a field is missing, of the wrong type or out of range (for example a bad " +
      "ISO 8601 `ts` or one more than 5 minutes ahead, an unknown IANA `tz` or `eventType`, a raw e-mail address " +
      "as `userHash`); also a query or path parameter that does not decode, and text holding U+0000 or an unpaired " +
      "surrogate anywhere in the URL or the body."
  },
  INVALID_SITE_KEY: { status: 400, meaning: "No project has this siteKey." },
  SITE_KEY_MISMATCH: { status: 400, meaning: "The siteKey in the body differs from the one in the URL." },
  INVALID_WIDGET_KIND: {
    status: 400,
    meaning: "No program of the project counts this event key (the match is exact)."
  },
  SERVER_TOKEN_REQUIRED: {
    status: 401,
    meaning:
      "`X-Streak-Server-Token` is missing or is not this project's (a call without an `Origin` header must carry it)."
  },
  WEBHOOK_SECRET_REQUIRED: {
    status: 401,
    meaning: "`X-Streak-Webhook-Secret` is missing or wrong, or no program counts the event (the two look the same)."
  },
  INVALID_ALIAS_TOKEN: { status: 401, meaning: "The alias token is malformed, wrongly signed or expired." },
  UNAUTHORIZED: {
    status: 401,
    meaning: "The admin token, the bearer credential or the session is missing, wrong, revoked or ended."
  },
  FORBIDDEN_ORIGIN: { status: 403, meaning: "The browser's `Origin` is not among the project's allowed origins." },
  FORBIDDEN: {
    status: 403,
    meaning: "The credential may not do this: a write by a viewer, a session-only route called with an API key or " +
      "OAuth token, or a state-changing request made with a session but without its CSRF token."
  },
  NOT_FOUND: {
    status: 404,
    meaning: "Nothing with this id, or nothing within the credential's reach (existence is never revealed)."
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: {
    status: 409,
    meaning: "The first request with this `idempotencyKey` is still being processed; retry after `Retry-After` (1 s)."
  },
  ALIAS_CONFLICT: { status: 409, meaning: "The anonymous id is already linked to another member." },
  CONFLICT: { status: 409, meaning: "The e-mail address is already taken by another user." },
  NOT_REPAIRABLE: {
    status: 409,
    meaning: "The period is not `missed` in the ledger, its repair window is over, or the member used the repairs " +
      "of the last 30 days; nothing changed."
  },
  PAUSE_OVERLAPS: { status: 409, meaning: "The pause overlaps another of the member's pauses." },
  PAUSE_STARTED: { status: 409, meaning: "The pause has started: it can no longer be removed." },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    meaning: "The body is over 64 KiB, or one of an action's parts over its limit (`meta`, `details`, " +
      "`performance`: 4096 bytes of JSON each; `error`: 2048; `consent`: 1024)."
  },
  RATE_LIMITED: {
    status: 429,
    meaning: "Too many requests from this address, for this site or with this credential, or too many failed " +
      "authentications from this address (a credential that verifies is never refused for those); retry after " +
      "`Retry-After` seconds."
  },
  SERVICE_UNAVAILABLE: { status: 503, meaning: "Storage could not be reached; the request had no effect. Retry later." }
} as const

/** An error code of the API (`{"error":CODE}`). */
export type Code = keyof typeof codes

/** The JSON text of an error answer: `{"error":"CODE"}`. */
export const errorBody = (code: string): string => JSON.stringify({ error: code })

/** An error answer: `status` with `{"error":"CODE"}` as JSON, plus optional headers (`Retry-After`…). */
export const errorResponse = (
  status: number,
  code: string,
  headers?: Record<string, string>
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(errorBody(code), { status, contentType: "application/json", headers })

/**
 * An encode-only error schema for a core tagged error: a handler failing with an instance of
 * `cls` answers `status` with `{"error":code}`. Register it once on the API with `.addError(...)`.
 * Decoding always fails, so `HttpApiClient` cannot turn the answer back into `cls`.
 */
export const httpError = <Self, const Code extends string>(
  cls: new(...args: any) => Self,
  status: number,
  code: Code
) =>
  Schema.transformOrFail(
    Schema.Struct({ error: Schema.Literal(code) }),
    Schema.declare((u: unknown): u is Self => u instanceof cls),
    {
      strict: true,
      decode: (i, _, ast) => ParseResult.fail(new ParseResult.Forbidden(ast, i, "encode-only")),
      encode: () => ParseResult.succeed({ error: code })
    }
  ).annotations(HttpApiSchema.annotations({ status }))

// The platform-node body reader fails with this message when the MaxBodySize limit is passed
// (platform-node-shared 0.61 stream.ts); re-check it when upgrading @effect/platform-node.
const isTooLarge = (e: HttpServerError.RequestError): boolean =>
  e.cause instanceof Error && e.cause.message === "maxBytes exceeded"

const invalidBody = errorResponse(400, "INVALID_BODY")
const notFound = errorResponse(404, "NOT_FOUND")
const tooLarge = errorResponse(413, "PAYLOAD_TOO_LARGE")
const internal = errorResponse(500, "INTERNAL")

const bodyError = (e: unknown): HttpServerResponse.HttpServerResponse | undefined => {
  if (e instanceof HttpServerError.RequestError && e.reason === "Decode") return isTooLarge(e) ? tooLarge : invalidBody
  // A multipart body (which no route takes) that does not parse, or is over a part's limit.
  if (e instanceof Multipart.MultipartError) return e.reason.endsWith("TooLarge") ? tooLarge : invalidBody
  return undefined
}

/**
 * Answers a defect with 500 `{"error":"INTERNAL"}` and logs the cause: internals (messages,
 * stacks) go to the log, never to the client. Responses raised as defects (the platform's way to
 * short-circuit) and interruptions (client gone, shutdown) are left to the platform.
 */
const onDefect = <E>(cause: Cause.Cause<E>): Effect.Effect<HttpServerResponse.HttpServerResponse, E> => {
  const defect = Cause.dieOption(cause)
  if (Option.isNone(defect) || HttpServerResponse.isServerResponse(defect.value)) return Effect.failCause(cause)
  return logged("Unhandled defect in HTTP handler", cause)
}

const logged = (message: string, cause: Cause.Cause<unknown>) =>
  Effect.flatMap(
    Effect.serviceOption(HttpServerRequest.HttpServerRequest),
    (request) =>
      Effect.logError(message, cause).pipe(
        Effect.annotateLogs(Option.match(request, {
          onNone: () => ({}),
          onSome: (r) => ({ method: r.method, url: r.url })
        })),
        Effect.as(internal)
      )
  )

/**
 * Seconds a client should wait before retrying after `e`: its numeric `retryAfterSeconds` (core
 * `RateLimited`), or 1 for `IDEMPOTENCY_KEY_IN_PROGRESS` (docs/api.md#idempotency); otherwise none.
 */
export const retryAfterOf = (e: unknown): number | undefined => {
  if (typeof e !== "object" || e === null) return undefined
  const { code, retryAfterSeconds } = e as { readonly code?: unknown; readonly retryAfterSeconds?: unknown }
  if (typeof retryAfterSeconds === "number" && Number.isFinite(retryAfterSeconds)) {
    return Math.max(1, Math.ceil(retryAfterSeconds))
  }
  return code === "IDEMPOTENCY_KEY_IN_PROGRESS" ? 1 : undefined
}

const IMPORT_ROUTE = /^\/v1\/api\/programs\/[^/?#]+\/imports\/?(?:[?#]|$)/

const STREAMED_TYPE = /^\s*(application\/x-ndjson|text\/csv)\s*(;|$)/i

/**
 * Whether a request's body is streamed with no overall cap: an NDJSON or CSV body of
 * `POST /v1/api/programs/{id}/imports` (docs/api.md#import-history), whose lines are checked one by
 * one. Any other body of that route is capped as every body is.
 */
export const isStreamedBody = (method: string, url: string, contentType: string | undefined): boolean =>
  method === "POST" && contentType !== undefined && STREAMED_TYPE.test(contentType) && IMPORT_ROUTE.test(url)

/**
 * The middleware function behind `ErrorMapping`: refuses bodies declaring more than
 * `maxBodyBytes` before reading them, caps what is read at `maxBodyBytes`, and maps
 * - `HttpApiDecodeError` (payload, query, path, headers) → 400 `INVALID_BODY`,
 * - unreadable or non-JSON body → 400 `INVALID_BODY`, body over the cap → 413 `PAYLOAD_TOO_LARGE`,
 * - a URL whose path or query does not decode to clean text (`TextHygiene.cleanUrl`) → 400
 *   `INVALID_BODY`, on every route, known or not,
 * - `RouteNotFound` (unknown path or method) → 404 `NOT_FOUND`,
 * - any other defect → 500 `INTERNAL` (logged).
 * Other typed failures pass through, so HttpApi encodes them with their registered schema
 * (`httpError`); when `retryAfterOf` gives a delay, the answer also carries `Retry-After`.
 */
export const mapErrors = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const declared = request.headers["content-length"]
    // A history import streams its body line by line, each line limited as an action's body.
    const streamed = isStreamedBody(request.method, request.url, request.headers["content-type"])
    if (!streamed && declared !== undefined && Number(declared) > maxBodyBytes) return Effect.succeed(tooLarge)
    // No route takes a multipart body, and the platform's multipart reader can wait forever on a
    // body that never brings its boundary: refused before anything reads it.
    if (request.headers["content-type"]?.toLowerCase().trimStart().startsWith("multipart/") === true) {
      return Effect.succeed(invalidBody)
    }
    const checked = Effect.flatMap(TextHygiene.refuses, (refused) => (refused ? Effect.succeed(invalidBody) : app))
    return Effect.zipRight(
      RateLimitHeaders.fallback(request),
      HttpIncomingMessage.withMaxBodySize(checked, streamed ? Option.none() : Option.some(maxBodyBytes))
    )
  }).pipe(Effect.catchAllCause((cause) => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const e: unknown = failure.value
      if (e instanceof HttpApiError.HttpApiDecodeError) return Effect.succeed(invalidBody)
      if (e instanceof HttpServerError.RouteNotFound) return Effect.succeed(notFound)
      const body = bodyError(e)
      if (body !== undefined) return Effect.succeed(body)
      // A storage outage is never the client's fault: keep its cause in the log (the answer is 503).
      if (typeof e === "object" && e !== null && (e as { readonly _tag?: unknown })._tag === "StorageError") {
        return Effect.zipRight(Effect.logError("storage failure", cause), Effect.failCause(cause))
      }
      // Status and body come from the error's registration; the header is added on the way out.
      const retryAfter = retryAfterOf(e)
      return retryAfter === undefined ? Effect.failCause(cause) : Effect.zipRight(
        HttpApp.appendPreResponseHandler((_, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(retryAfter)))
        ),
        Effect.failCause(cause)
      )
    }
    // HttpApi reads the body with `orDie`, so a bad or oversize body arrives as a defect.
    const body = Option.flatMapNullable(Cause.dieOption(cause), bodyError)
    return Option.isSome(body) ? Effect.succeed(body.value) : onDefect(cause)
  }))

/**
 * The `HttpApiBuilder.middleware` layer of `mapErrors`: provide it to the API layer
 * (`HttpApiBuilder.api(Api).pipe(Layer.provide(HttpErrors.ErrorMapping))`). It wraps the router
 * inside HttpApi's own error encoding, so it sees the raw errors.
 */
export const ErrorMapping: Layer.Layer<never> = HttpApiBuilder.middleware(mapErrors)

/**
 * Last-resort wrapper for a whole app (use around `HttpApiBuilder.httpApp` before serving): a
 * failure HttpApi could not encode (an error not registered on the API) or a defect answers
 * 500 `{"error":"INTERNAL"}` and is logged, instead of the platform's empty 500.
 */
export const withInternalFallback = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.catchAllCause(app, (cause) => {
    const failure = Cause.failureOption(cause)
    if (Option.isNone(failure)) return onDefect(cause)
    // Respondable platform errors (RouteNotFound…) keep their own answer if they get this far.
    if (HttpServerError.isServerError(failure.value)) return Effect.failCause(cause)
    return logged("Unencodable failure in HTTP handler", cause)
  })
