/**
 * The public doors (`/v1/e`, `/v1/server/e`, `/v1/webhook/:siteKey/e`, `/v1/state`, `/v1/alias`)
 * as plain functions from request facts to an `Answer`. Both the HttpApi handlers and the reference
 * server's lean fast path call them, so the two give the same statuses, bodies and headers by
 * construction.
 */
import { Aliases, Errors, EventInput, Finished, Ids, Ingest, StateQuery } from "@streaks/core"
import { Cause, Context, Effect, Exit, Option, Runtime } from "effect"
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

/** `{"error":CODE}` with its status, `Retry-After` where the spec asks for one. */
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

/** Renders the outcome of a door: client errors with their code, storage failures as 503 (logged). */
const settle = <A, R>(
  self: Effect.Effect<A, Errors.ClientError | Errors.StorageError, R>,
  ok: (a: A) => Answer,
  headers: () => Readonly<Record<string, string>>
): Effect.Effect<Answer, never, R> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) =>
    Effect.matchCauseEffect(self, {
      onSuccess: (a) => Effect.succeed(ok(a)),
      onFailure: (cause) => failureAnswer(runtime, cause, headers())
    }))

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

/**
 * `POST /v1/e` and `POST /v1/server/e` with a decoded action, for a caller that is not a fiber
 * (the fast path): `onExit` gets the answer, or the defect that stopped it. `runtime` runs what
 * must run in a fiber (a cache miss, the browser door's rate limits, `Ingest.record`).
 */
export const ingestCallback = (
  runtime: Runtime.Runtime<IngestServices>,
  door: "browser" | "server",
  action: EventInput.Action,
  facts: Facts,
  onExit: (exit: Exit.Exit<Answer>) => void
): void => {
  const service = Context.get(runtime.context, Ingest.Ingest)
  const run = Finished.runner(runtime)
  const record = (input: Ingest.RecordInput, spend?: (exit: Exit.Exit<unknown, unknown>) => void) =>
    run(service.record(input), (exit) => {
      spend?.(exit)
      answer(exit)
    })
  let cors: Record<string, string> = {}
  const answer = (exit: Exit.Exit<Ingest.IngestAnswer, Ingest.RecordError | Errors.StorageError>) =>
    onExit(
      Exit.isSuccess(exit)
        ? Exit.succeed({ status: 202, body: exit.value.body, headers: withDeprecation(cors, exit.value.deprecation) })
        : failureAnswer(runtime, exit.cause, cors)
    )
  run(service.resolveProject(action.siteKey ?? ""), (found) => {
    if (Exit.isFailure(found)) return onExit(failureAnswer(runtime, found.cause, cors))
    const project = found.value
    if (door === "server") return record({ project, action, auth: { door, serverToken: facts.serverToken } })
    if (facts.origin !== undefined) cors = Cors.actualHeaders(facts.origin, project.allowedOrigins)
    // Limits of CONTRACT §2 step 4: the IP's, then the site's budget, which only callers that pass
    // the door's authentication spend (a failing caller spends its own IP's failures).
    const limiter = Context.get(runtime.context, RateLimiter)
    const limits = { ip: facts.ip, siteKey: project.siteKey }
    run(RateLimit.beforePublicDoor(limiter, limits), (allowed) => {
      if (Exit.isFailure(allowed)) return onExit(failureAnswer(runtime, allowed.cause, cors))
      record(
        { project, action, auth: { door, origin: facts.origin, serverToken: facts.serverToken } },
        (exit) => run(RateLimit.afterPublicDoor(limiter, { ...limits, authenticated: authenticated(exit) }), () => {})
      )
    })
  })
}

/** `POST /v1/e` and `POST /v1/server/e` with a decoded action (the HttpApi handlers; the fast path calls `ingestCallback`). */
export const ingest = (
  door: "browser" | "server",
  action: EventInput.Action,
  facts: Facts
): Effect.Effect<Answer, never, IngestServices> =>
  Effect.flatMap(
    Effect.runtime<IngestServices>(),
    (runtime) => Effect.async<Answer>((resume) => ingestCallback(runtime, door, action, facts, resume))
  )

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
 * `GET /v1/state` with its query already read, for a caller that is not a fiber (the fast path):
 * `onExit` gets the answer, or the defect that stopped it, at once when nothing had to wait. With
 * a warm directory cache a read runs no fiber of its own (`StateQuery.stateCallback`); `runtime`
 * runs what must (a cache miss, the log of a storage failure).
 */
export const stateCallback = (
  runtime: Runtime.Runtime<StateServices>,
  query: StateQueryParams,
  facts: StateFacts,
  onExit: (exit: Exit.Exit<Answer>) => void
): void => {
  const texts = [query.siteKey, query.userHash, query.event, query.kind, facts.identityToken]
  if (!texts.every((t) => t === undefined || Ids.isWellFormedText(t))) {
    return onExit(Exit.succeed(errorAnswer(EventInput.uncleanText())))
  }
  const event = query.event ?? query.kind
  if (
    event === undefined || event === "" ||
    (query.kind !== undefined && query.event !== undefined && query.kind !== query.event)
  ) {
    return onExit(
      Exit.succeed(errorAnswer(new Errors.InvalidBody({ message: "event: is missing, or differs from kind" })))
    )
  }
  const read = (cors: Record<string, string>) =>
    Context.get(runtime.context, StateQuery.StateQuery).stateCallback({
      siteKey: query.siteKey,
      userHash: query.userHash,
      event,
      origin: facts.origin,
      serverToken: facts.serverToken,
      identityToken: facts.identityToken
    }, (exit) =>
      onExit(
        Exit.isSuccess(exit)
          ? Exit.succeed({ status: 200, body: exit.value.body, headers: withDeprecation(cors, exit.value.deprecation) })
          : failureAnswer(runtime, exit.cause, cors)
      ))
  const origin = facts.origin
  if (origin === undefined) return read({})
  // Only for the CORS headers: an unknown siteKey is the state query's to report, after its body
  // checks (a bad userHash is INVALID_BODY before INVALID_SITE_KEY, CONTRACT §2). A cache hit is a
  // finished `Exit`, which needs no fiber.
  Finished.runner(runtime)(Context.get(runtime.context, Ingest.Ingest).resolveProject(query.siteKey), (found) => {
    if (Exit.isSuccess(found)) return read(Cors.actualHeaders(origin, found.value.allowedOrigins))
    const error = Cause.failureOption(found.cause)
    if (Option.isSome(error) && error.value._tag === "InvalidSiteKey") return read({})
    onExit(failureAnswer(runtime, found.cause, {}))
  })
}

/**
 * How every door answers a failure (`settle` for the doors that run in a fiber, the callbacks of
 * the hot doors directly): a client error answers its code, a storage failure 503 (logged on
 * `runtime`); a defect is passed on for the caller to answer.
 */
const failureAnswer = (
  runtime: Runtime.Runtime<never>,
  cause: Cause.Cause<Errors.ClientError | Errors.StorageError>,
  headers: Readonly<Record<string, string>>
): Exit.Exit<Answer> => {
  const error = Cause.failureOption(cause)
  if (Option.isNone(error)) return Exit.failCause(cause as Cause.Cause<never>)
  if (error.value._tag !== "StorageError") return Exit.succeed(errorAnswer(error.value, headers))
  Runtime.runFork(runtime)(Effect.logError("storage failure on a public door", error.value))
  return Exit.succeed(errorAnswer(storageDown, headers))
}

/** `GET /v1/state` with its query already read (the HttpApi handler; the fast path calls `stateCallback`). */
export const state = (query: StateQueryParams, facts: StateFacts): Effect.Effect<Answer, never, StateServices> =>
  Effect.flatMap(
    Effect.runtime<StateServices>(),
    (runtime) => Effect.async<Answer>((resume) => stateCallback(runtime, query, facts, resume))
  )

/** `POST /v1/alias`: a short-lived alias token links an anonymous visitor (CONTRACT §10). */
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
