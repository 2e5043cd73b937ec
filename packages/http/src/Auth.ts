/**
 * The security middlewares of the API: the deployment's admin token (constant-time compare) and
 * customer bearer credentials resolved by core `Credentials` on every request, so a revoked key
 * stops working at once. A credential that does not verify spends one of the client address's
 * failed authentications (`RateLimit.authenticating`); once they are spent such requests answer
 * 429, while a credential that verifies is always served. A verified customer credential then
 * takes a token from its own bucket (`STREAKS_RATE_LIMIT_CREDENTIAL`), and every answer of
 * `/v1/api` says where the nearest limit stands (`RateLimit` headers). A credential store that
 * cannot be reached answers 503, never 401: the credential may well be valid.
 */
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Credentials, Errors } from "@streaks/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AdminAuth, CustomerAuth } from "./Api.js"
import * as ClientAddress from "./ClientAddress.js"
import { HttpConfig } from "./HttpConfig.js"
import * as RateLimit from "./RateLimit.js"

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest()

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export const sameSecret = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected))

const unauthorized = new Errors.Unauthorized({ message: "missing or invalid admin token" })

const isUnauthorized = (e: { readonly _tag: string }) => e._tag === "Unauthorized"

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

export const layerCustomer = Layer.effect(
  CustomerAuth,
  Effect.gen(function*() {
    const credentials = yield* Credentials.Credentials
    const limiter = yield* RateLimit.RateLimiter
    return CustomerAuth.of({
      // A StorageError passes through: 503 SERVICE_UNAVAILABLE (logged by HttpErrors).
      bearer: (token) =>
        Effect.gen(function*() {
          const client = yield* ClientAddress.current
          const principal = yield* RateLimit.authenticating(
            limiter,
            client.address,
            Effect.suspend(() => credentials.authenticate(`Bearer ${Redacted.value(token)}`)),
            isUnauthorized
          ).pipe(Effect.tapError(() => answerWithLimits(limiter, [["auth", client.address]])))
          const key = credentialKey(principal)
          yield* answerWithLimits(limiter, [["credential", key]])
          const decision = yield* limiter.take("credential", key)
          if (!decision.allowed) return yield* new Errors.RateLimited({ retryAfterSeconds: decision.retryAfterSeconds })
          return principal
        })
    })
  })
)
