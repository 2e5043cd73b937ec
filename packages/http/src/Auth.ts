/**
 * The security middlewares of the API: the deployment's admin token (constant-time compare) and
 * customer bearer credentials resolved by core `Credentials` on every request, so a revoked key
 * stops working at once. Failed authentications are counted per client IP (`RateLimit`): past the
 * limit an IP is refused (429) before its credential is looked up or compared. A credential store
 * that cannot be reached answers 503, never 401: the credential may well be valid.
 */
import { HttpServerRequest } from "@effect/platform"
import { Credentials, Errors } from "@streaks/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AdminAuth, CustomerAuth } from "./Api.js"
import { HttpConfig } from "./HttpConfig.js"
import * as RateLimit from "./RateLimit.js"

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest()

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export const sameSecret = (given: string, expected: string): boolean => timingSafeEqual(digest(given), digest(expected))

const unauthorized = new Errors.Unauthorized({ message: "missing or invalid admin token" })

/** The TCP peer of the request being authenticated (as the public doors' limits use it). */
const clientIp = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => Option.getOrElse(request.remoteAddress, () => "unknown")
)

/**
 * `authenticate` behind the failed-authentication limit of the client's IP: refused while the IP
 * has none left, and an `Unauthorized` it fails with spends one.
 */
const limited = <A, E extends { readonly _tag: string }>(
  limiter: RateLimit.RateLimiter["Type"],
  authenticate: Effect.Effect<A, E>
): Effect.Effect<A, E | Errors.RateLimited, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(clientIp, (ip) =>
    Effect.zipRight(
      RateLimit.beforeAuthentication(limiter, ip),
      Effect.tapError(authenticate, (e) =>
        e._tag === "Unauthorized" ? RateLimit.authenticationFailed(limiter, ip) : Effect.void)
    ))

export const layerAdmin: Layer.Layer<AdminAuth, never, HttpConfig | RateLimit.RateLimiter> = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const config = yield* HttpConfig
    const limiter = yield* RateLimit.RateLimiter
    return AdminAuth.of({
      adminToken: (given) =>
        limited(
          limiter,
          Effect.suspend(() =>
            Option.match(config.adminToken, {
              onNone: () => Effect.fail(unauthorized),
              onSome: (expected) =>
                sameSecret(Redacted.value(given), Redacted.value(expected)) && Redacted.value(given).length > 0
                  ? Effect.void
                  : Effect.fail(unauthorized)
            })
          )
        )
    })
  })
)

export const layerCustomer: Layer.Layer<CustomerAuth, never, Credentials.Credentials | RateLimit.RateLimiter> = Layer
  .effect(
    CustomerAuth,
    Effect.gen(function*() {
      const credentials = yield* Credentials.Credentials
      const limiter = yield* RateLimit.RateLimiter
      return CustomerAuth.of({
        // A StorageError passes through: 503 SERVICE_UNAVAILABLE (logged by HttpErrors).
        bearer: (token) =>
          limited(limiter, Effect.suspend(() => credentials.authenticate(`Bearer ${Redacted.value(token)}`)))
      })
    })
  )
