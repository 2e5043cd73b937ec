/**
 * The public doors (`/v1/e`, `/v1/server/e`, `/v1/webhook/:siteKey/e`, `/v1/state`, `/v1/alias`)
 * as effects from request facts to an `Answer`. Both the HttpApi handlers and the reference
 * server's lean fast path run them, so the two give the same statuses, bodies and headers by
 * construction.
 */
import { Aliases, Errors, EventInput, Ids, Ingest, StateQuery } from "@streaks/core"
import { Cause, Effect, Exit, Option } from "effect"
import { statusOf } from "./Api.js"
import * as Cors from "./Cors.js"
import * as RateLimit from "./RateLimit.js"
import { RateLimiter } from "./RateLimit.js"

/** What one request tells a door besides its body. */
export interface Facts {
  readonly origin: string | undefined
  readonly serverToken: string | undefined
  readonly ip: string
}

/** A complete answer: status, JSON body and headers. */
export interface Answer {
  readonly status: number
  readonly body: unknown
  readonly headers: Readonly<Record<string, string>>
}

type Coded = { readonly code: string; readonly retryAfterSeconds?: number }

/** `{"error":CODE}` with its status, `Retry-After` where docs/api.md#errors gives one. */
export const errorAnswer = (e: Coded, headers: Readonly<Record<string, string>> = {}): Answer => ({
  status: statusOf[e.code] ?? 500,
  body: { error: e.code },
  headers: e.code === "IDEMPOTENCY_KEY_IN_PROGRESS"
    ? { ...headers, "retry-after": "1" }
    : e.retryAfterSeconds !== undefined
    ? { ...headers, "retry-after": String(e.retryAfterSeconds) }
    : headers
})

// A client may try again shortly: an outage or an overload is not its fault.
const storageDown = { code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 1 }

/**
 * Renders the outcome of a door: client errors with their code, storage failures as 503 (logged).
 * A door's work runs in its caller's fiber: on a warm cache the hot doors run no fiber besides it.
 */
const settle = <A, R>(
  self: Effect.Effect<A, Errors.ClientError | Errors.StorageError, R>,
  ok: (a: A) => Answer,
  headers: () => Readonly<Record<string, string>>
): Effect.Effect<Answer, never, R> =>
  Effect.matchCauseEffect(self, {
    onSuccess: (a) => Effect.succeed(ok(a)),
    onFailure: (cause) => failed(cause, headers())
  })

/** Whether a door's failure is a failed authentication (it spends the IP's budget, not the site's). */
const authenticated = <A>(exit: Exit.Exit<A, { readonly code?: string } | unknown>): boolean => {
  if (Exit.isSuccess(exit)) return true
  const error = Cause.failureOption(exit.cause)
  const code = Option.isSome(error) ? (error.value as { readonly code?: string }).code : undefined
  return code === undefined || !RateLimit.authenticationFailures.has(code)
}

/** The door's headers, with `Deprecation: true` when the deprecated no-origin mode let the call through. */
const withDeprecation = (headers: Record<string, string>, deprecated: boolean): Record<string, string> =>
  deprecated ? { ...headers, deprecation: "true" } : headers

type IngestServices = Ingest.Ingest | RateLimiter

/** `POST /v1/e` and `POST /v1/server/e` with a decoded action (the HttpApi handlers and the fast path). */
export const ingest = (
  door: "browser" | "server",
  action: EventInput.Action,
  facts: Facts
): Effect.Effect<Answer, never, IngestServices> =>
  Effect.flatMap(Ingest.Ingest, (service) =>
    Effect.matchCauseEffect(service.resolveProject(action.siteKey ?? ""), {
      onFailure: (cause) => failed(cause, {}),
      onSuccess: (project) => {
        if (door === "server") {
          return settle(
            service.record({ project, action, auth: { door, serverToken: facts.serverToken } }),
            (answer) => ({ status: 202, body: answer.body, headers: withDeprecation({}, answer.deprecation) }),
            () => ({})
          )
        }
        const cors = facts.origin !== undefined ? Cors.actualHeaders(facts.origin, project.allowedOrigins) : {}
        // Limits of step 4 of docs/api.md#order-of-checks: the IP's, then the site's budget, which
        // only callers that pass the door's authentication spend (a failing caller spends its own
        // IP's failures).
        return Effect.flatMap(RateLimiter, (limiter) => {
          const limits = { ip: facts.ip, siteKey: project.siteKey }
          const record = Effect.flatMap(
            Effect.exit(
              service.record({ project, action, auth: { door, origin: facts.origin, serverToken: facts.serverToken } })
            ),
            (exit) =>
              Effect.zipRight(
                RateLimit.afterPublicDoor(limiter, { ...limits, authenticated: authenticated(exit) }),
                exit
              )
          )
          return settle(
            Effect.zipRight(RateLimit.beforePublicDoor(limiter, limits), record),
            (answer) => ({ status: 202, body: answer.body, headers: withDeprecation(cors, answer.deprecation) }),
            () => cors
          )
        })
      }
    }))

/** `POST /v1/webhook/:siteKey/e` with a decoded action. */
export const webhook = (
  urlSiteKey: string,
  action: EventInput.Action,
  secret: string | undefined
): Effect.Effect<Answer, never, Ingest.Ingest> =>
  Effect.gen(function*() {
    const service = yield* Ingest.Ingest
    const work = Effect.flatMap(service.resolveProject(urlSiteKey), (project) =>
      service.record({ project, action, auth: { door: "webhook", secret, urlSiteKey } }))
    return yield* settle(work, (answer) => ({ status: 202, body: answer.body, headers: {} }), () => ({}))
  })

export interface StateFacts extends Facts {
  readonly identityToken: string | undefined
}

/** What `GET /v1/state` reads from its URL. */
export interface StateQueryParams {
  readonly siteKey: string
  readonly userHash: string
  readonly event: string | undefined
  readonly kind: string | undefined
}

type StateServices = StateQuery.StateQuery | Ingest.Ingest

/**
 * How every door answers a failure: a client error answers its code, a storage failure 503
 * (logged); a defect is passed on for the caller to answer.
 */
const failed = (
  cause: Cause.Cause<Errors.ClientError | Errors.StorageError>,
  headers: Readonly<Record<string, string>>
): Effect.Effect<Answer> => {
  const error = Cause.failureOption(cause)
  if (Option.isNone(error)) return Exit.failCause(cause as Cause.Cause<never>)
  if (error.value._tag !== "StorageError") return Exit.succeed(errorAnswer(error.value, headers))
  return Effect.as(Effect.logError("storage failure on a public door", error.value), errorAnswer(storageDown, headers))
}

/** `GET /v1/state` with its query already read (the HttpApi handler and the fast path). */
export const state = (query: StateQueryParams, facts: StateFacts): Effect.Effect<Answer, never, StateServices> => {
  const texts = [query.siteKey, query.userHash, query.event, query.kind, facts.identityToken]
  if (!texts.every((t) => t === undefined || Ids.isWellFormedText(t))) {
    return Exit.succeed(errorAnswer(EventInput.uncleanText()))
  }
  const event = query.event ?? query.kind
  if (
    event === undefined || event === "" ||
    (query.kind !== undefined && query.event !== undefined && query.kind !== query.event)
  ) {
    return Exit.succeed(errorAnswer(new Errors.InvalidBody({ message: "event: is missing, or differs from kind" })))
  }
  const request: StateQuery.StateRequest = {
    siteKey: query.siteKey,
    userHash: query.userHash,
    event,
    origin: facts.origin,
    serverToken: facts.serverToken,
    identityToken: facts.identityToken
  }
  const read = (cors: Record<string, string>) =>
    Effect.flatMap(StateQuery.StateQuery, (service) =>
      settle(
        service.state(request),
        (answer) => ({ status: 200, body: answer.body, headers: withDeprecation(cors, answer.deprecation) }),
        () => cors
      ))
  const origin = facts.origin
  if (origin === undefined) return read({})
  // Only for the CORS headers: an unknown siteKey is the state query's to report, after its body
  // checks (a bad userHash is INVALID_BODY before INVALID_SITE_KEY: docs/api.md#order-of-checks).
  return Effect.flatMap(Ingest.Ingest, (service) =>
    Effect.matchCauseEffect(service.resolveProject(query.siteKey), {
      onSuccess: (project) => read(Cors.actualHeaders(origin, project.allowedOrigins)),
      onFailure: (cause) => {
        const error = Cause.failureOption(cause)
        return Option.isSome(error) && error.value._tag === "InvalidSiteKey" ? read({}) : failed(cause, {})
      }
    }))
}

/** `POST /v1/alias`: a short-lived alias token links an anonymous visitor (docs/api.md#aliases). */
export const alias = (
  body: { readonly siteKey: string; readonly token: string },
  facts: Facts
): Effect.Effect<Answer, never, Aliases.Aliases | Ingest.Ingest | RateLimiter> =>
  Effect.gen(function*() {
    const aliases = yield* Aliases.Aliases
    const ingestService = yield* Ingest.Ingest
    const limiter = yield* RateLimiter
    let cors: Record<string, string> = {}
    const work = Effect.gen(function*() {
      const project = yield* ingestService.resolveProject(body.siteKey)
      if (facts.origin !== undefined) cors = Cors.actualHeaders(facts.origin, project.allowedOrigins)
      const limits = { ip: facts.ip, siteKey: project.siteKey }
      yield* RateLimit.beforePublicDoor(limiter, limits)
      const linked = yield* Effect.exit(aliases.linkWithToken(body))
      yield* RateLimit.afterPublicDoor(limiter, { ...limits, authenticated: authenticated(linked) })
      return yield* linked
    })
    return yield* settle(
      work,
      () => ({ status: 200, body: { ok: true }, headers: cors }),
      () => cors
    )
  })
