/**
 * The security middlewares of the API: the deployment's admin token (constant-time compare) and
 * customer bearer credentials resolved by core `Credentials` on every request, so a revoked key
 * stops working at once.
 */
import { Credentials, Errors } from "@streaks/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { timingSafeEqual, createHash } from "node:crypto"
import { AdminAuth, CustomerAuth } from "./Api.js"
import { HttpConfig } from "./HttpConfig.js"

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest()

/** Constant-time equality of two secrets of any length (compares their SHA-256 digests). */
export const sameSecret = (given: string, expected: string): boolean =>
  timingSafeEqual(digest(given), digest(expected))

const unauthorized = new Errors.Unauthorized({ message: "missing or invalid admin token" })

export const layerAdmin: Layer.Layer<AdminAuth, never, HttpConfig> = Layer.effect(
  AdminAuth,
  Effect.map(HttpConfig, (config) =>
    AdminAuth.of({
      adminToken: (given) =>
        Option.match(config.adminToken, {
          onNone: () => Effect.fail(unauthorized),
          onSome: (expected) =>
            sameSecret(Redacted.value(given), Redacted.value(expected)) && Redacted.value(given).length > 0
              ? Effect.void
              : Effect.fail(unauthorized)
        })
    }))
)

export const layerCustomer: Layer.Layer<CustomerAuth, never, Credentials.Credentials> = Layer.effect(
  CustomerAuth,
  Effect.map(Credentials.Credentials, (credentials) =>
    CustomerAuth.of({
      bearer: (token) =>
        credentials.authenticate(`Bearer ${Redacted.value(token)}`).pipe(
          Effect.catchTag("StorageError", () => Effect.fail(new Errors.Unauthorized({ message: "credential check unavailable" })))
        )
    }))
)
