/**
 * The security middlewares of the API: the deployment's admin token (constant-time compare) and
 * customer bearer credentials resolved by core `Credentials` on every request, so a revoked key
 * stops working at once, and the session of a signed-in user (`Sessions`, with its CSRF token on
 * writes and the user's roles). A credential that does not verify spends one of the client address's
 * failed authentications (`RateLimit.authenticating`); once they are spent such requests answer
 * 429, while a credential that verifies is always served. A verified customer credential then
 * takes a token from its own bucket (`STREAKS_RATE_LIMIT_CREDENTIAL`), and every answer of
 * `/v1/api` says where the nearest limit stands (`RateLimit` headers). A credential store that
 * cannot be reached answers 503, never 401: the credential may well be valid.
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Credentials, Errors, Ports } from "@streaks/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AdminAuth, CustomerAuth } from "./Api.js"
import * as ClientAddress from "./ClientAddress.js"
import { HttpConfig } from "./HttpConfig.js"
import * as RateLimit from "./RateLimit.js"
import * as Sessions from "./Sessions.js"

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest()

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export const sameSecret = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected))

const unauthorized = new Errors.Unauthorized({ message: "missing or invalid admin token" })

const isUnauthorized = (e: { readonly _tag: string }) => e._tag === "Unauthorized"

const sessionUnauthorized = new Errors.Unauthorized({ message: "missing, unknown or ended session" })
const viewerWrite = new Errors.Forbidden({ message: "a viewer reads only" })

/** Adds the `RateLimit` headers of `buckets`, as they stand when the answer goes out. */
const answerWithLimits = (
  limiter: RateLimit.RateLimiter["Type"],
  buckets: ReadonlyArray<readonly [RateLimit.Kind, string]>
) =>
  HttpApp.appendPreResponseHandler((_, response) =>
    Effect.map(RateLimit.headers(limiter, buckets), (h) => HttpServerResponse.setHeaders(response, h))
  )

/** The bucket key of a verified customer credential: its kind and id, never the secret. */
export const credentialKey = (principal: Credentials.Principal): string =>
  `${principal.credential.type}:${principal.credential.id}`

export const layerAdmin = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const config = yield* HttpConfig
    const limiter = yield* RateLimit.RateLimiter
    return AdminAuth.of({
      adminToken: (given) =>
        Effect.flatMap(ClientAddress.current, (client) =>
          RateLimit.authenticating(
            limiter,
            client.address,
            Effect.suspend(() =>
              Option.match(config.adminToken, {
                onNone: () => Effect.fail(unauthorized),
                onSome: (expected) =>
                  sameSecret(Redacted.value(given), Redacted.value(expected)) && Redacted.value(given).length > 0
                    ? Effect.void
                    : Effect.fail(unauthorized)
              })
            ),
            isUnauthorized
          ))
    })
  })
)

/** The customer routes a session may write to only as owner or admin of the program's workspace. */
const programPath = /^\/v1\/api\/programs\/([^/?#]+)/

/** POST routes that change nothing (a simulation computes an answer): a viewer may call them. */
const readsByPost = /^\/v1\/api\/programs\/[^/?#]+\/simulations$/

export const layerCustomer = Layer.effect(
  CustomerAuth,
  Effect.gen(function*() {
    const credentials = yield* Credentials.Credentials
    const sessions = yield* Sessions.Sessions
    const directory = yield* Ports.DirectoryStore
    const limiter = yield* RateLimit.RateLimiter

    /** Spends one of the address's failed authentications, then fails with Unauthorized. */
    const refuse = (address: string) =>
      RateLimit.authenticating(limiter, address, Effect.fail(sessionUnauthorized), isUnauthorized).pipe(
        Effect.tapError(() => answerWithLimits(limiter, [["auth", address]]))
      )

    const bearerPrincipal = (header: string | undefined, address: string) =>
      RateLimit.authenticating(
        limiter,
        address,
        Effect.suspend(() => credentials.authenticate(header)),
        isUnauthorized
      ).pipe(Effect.tapError(() => answerWithLimits(limiter, [["auth", address]])))

    /**
     * The principal of a session: the user's workspaces with the user's role. A state-changing
     * request needs the CSRF token, and reaches only the workspaces where the user is owner or
     * admin; a viewer's write answers 403 (docs/accounts.md#the-session-as-a-credential).
     */
    const sessionPrincipal = (token: string, address: string) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const signedIn = yield* sessions.ofToken(token)
        if (Option.isNone(signedIn)) return yield* refuse(address)
        const user = signedIn.value
        const all = user.workspaces.map((w) => w.id)
        const readOnly = user.workspaces.filter((w) => w.role === "viewer").map((w) => w.id)
        const writable = all.filter((id) => !readOnly.includes(id))
        const unsafe = !Sessions.isSafeMethod(request.method)
        if (unsafe) yield* sessions.checkCsrf(user, request.headers["x-csrf-token"])
        const writing = unsafe && !readsByPost.test(new URL(request.url, "http://localhost").pathname)
        if (writing) {
          if (writable.length === 0) return yield* viewerWrite
          const program = programPath.exec(new URL(request.url, "http://localhost").pathname)?.[1]
          if (program !== undefined && readOnly.length > 0) {
            const reached = yield* Effect.option(
              Effect.provideService(
                Credentials.reach({ workspaceIds: all }, decodeURIComponent(program)),
                Ports.DirectoryStore,
                directory
              )
            )
            if (Option.isSome(reached) && readOnly.includes(reached.value.project.workspaceId)) {
              return yield* viewerWrite
            }
          }
        }
        const principal: Credentials.Principal = {
          credential: { type: "user", id: user.userId },
          workspaceIds: writing ? writable : all,
          kind: "session",
          readOnlyWorkspaceIds: readOnly,
          user: { id: user.userId, email: user.email }
        }
        return principal
      })

    /**
     * A consented OAuth grant reaches no more than its user: where the user is a viewer, the grant
     * reads only (docs/oauth.md#what-a-grant-reaches). A write to such a workspace's program answers
     * 403, and a write elsewhere reaches only the other workspaces.
     */
    const bearerWrites = (principal: Credentials.Principal) =>
      Effect.gen(function*() {
        const readOnly = principal.readOnlyWorkspaceIds ?? []
        const request = yield* HttpServerRequest.HttpServerRequest
        if (readOnly.length === 0 || Sessions.isSafeMethod(request.method)) return principal
        const writable = principal.workspaceIds.filter((id) => !readOnly.includes(id))
        if (writable.length === 0) return yield* viewerWrite
        const program = programPath.exec(new URL(request.url, "http://localhost").pathname)?.[1]
        if (program !== undefined) {
          const reached = yield* Effect.option(
            Effect.provideService(
              Credentials.reach(principal, decodeURIComponent(program)),
              Ports.DirectoryStore,
              directory
            )
          )
          if (Option.isSome(reached) && readOnly.includes(reached.value.project.workspaceId)) {
            return yield* viewerWrite
          }
        }
        const limited: Credentials.Principal = { ...principal, workspaceIds: writable, readOnlyWorkspaceIds: [] }
        return limited
      })

    // Both schemes of the middleware run this one decision (a bearer header wins over a cookie);
    // the platform tries the second scheme when the first fails, and then only repeats the first's
    // answer, so a request is judged and charged once.
    const failures = new WeakMap<
      object,
      Errors.Unauthorized | Errors.Forbidden | Errors.RateLimited | Errors.StorageError
    >()

    const decide = (bearer: string) =>
      Effect.gen(function*() {
        const client = yield* ClientAddress.current
        const cookie = yield* Sessions.tokenOf
        const principal = bearer.length === 0 && Option.isSome(cookie)
          ? yield* sessionPrincipal(cookie.value, client.address)
          : yield* Effect.flatMap(
            bearerPrincipal(bearer.length === 0 ? undefined : `Bearer ${bearer}`, client.address),
            bearerWrites
          )
        const key = credentialKey(principal)
        yield* answerWithLimits(limiter, [["credential", key]])
        const decision = yield* limiter.take("credential", key)
        if (!decision.allowed) return yield* new Errors.RateLimited({ retryAfterSeconds: decision.retryAfterSeconds })
        return principal
      })

    return CustomerAuth.of({
      // A StorageError passes through: 503 SERVICE_UNAVAILABLE (logged by HttpErrors).
      bearer: (token) =>
        Effect.flatMap(
          HttpServerRequest.HttpServerRequest,
          (request) =>
            Effect.tapError(decide(Redacted.value(token).trim()), (e) => Effect.sync(() => failures.set(request, e)))
        ),
      session: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const failed = failures.get(request)
          return failed === undefined ? decide("") : Effect.fail(failed)
        })
    })
  })
)
