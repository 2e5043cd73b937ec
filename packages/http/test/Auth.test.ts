/**
 * The auth middlewares: failed authentications are limited per client address, and only requests
 * whose credential does not verify are refused once the budget is spent; a credential store that
 * cannot be reached is a 503 (`StorageError`), never a 401.
 */
import { HttpServerRequest } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Credentials, Errors, Ports } from "@streaks/core"
import { Effect, Layer, Option, Redacted, TestClock } from "effect"
import { AdminAuth, CustomerAuth } from "../src/Api.js"
import * as Auth from "../src/Auth.js"
import * as HttpConfig from "../src/HttpConfig.js"
import * as RateLimit from "../src/RateLimit.js"
import * as Sessions from "../src/Sessions.js"

/** Credentials whose answer depends on the token. */
const credentials = Layer.succeed(
  Credentials.Credentials,
  Credentials.Credentials.of(
    {
      authenticate: (header: string | undefined) => {
        if (header === "Bearer svc_api_good") {
          return Effect.succeed(
            { credential: { type: "api_key", id: "key_1" }, workspaceIds: [], kind: "api_key" } as Credentials.Principal
          )
        }
        return header === "Bearer svc_api_down"
          ? Effect.fail(new Errors.StorageError({ message: "connection refused" }))
          : Effect.fail(new Errors.Unauthorized({ message: "unknown" }))
      },
      authenticateMcp: () => Effect.fail(new Errors.Unauthorized({ message: "unknown" })),
      reachableProgram: () => Effect.die("unused"),
      reachablePrograms: () => Effect.die("unused"),
      workspaces: () => Effect.die("unused")
    } as unknown as Credentials.Credentials["Type"]
  )
)

const limits = RateLimit.layer({ ipPerSecond: 50, sitePerSecond: 500, authFailuresPerMinute: 3 })
const config = HttpConfig.layer({
  adminToken: Option.some(Redacted.make("admin-secret")),
  allowInsecureWebhookUrls: false
})
// No request here carries a session cookie: these stand in for what the bearer path never asks.
const noSessions = Layer.mergeAll(
  Layer.succeed(Sessions.Sessions, { ofToken: () => Effect.die("unused") } as unknown as Sessions.Sessions["Type"]),
  Layer.succeed(Ports.DirectoryStore, {} as Ports.DirectoryStore["Type"])
)
const services = Layer.mergeAll(
  Auth.layerCustomer.pipe(Layer.provide(credentials), Layer.provide(noSessions)),
  Auth.layerAdmin.pipe(Layer.provide(config))
).pipe(Layer.provide(limits))

/**
 * Runs a middleware's check as on a request: it reads only the request (its client address) of
 * what the router provides.
 */
const onRequest = <A, E>(self: Effect.Effect<A, E, unknown>) =>
  Effect.provideService(
    self as Effect.Effect<A, E, HttpServerRequest.HttpServerRequest>,
    HttpServerRequest.HttpServerRequest,
    HttpServerRequest.fromWeb(new Request("http://localhost/"))
  )
const customer = (token: string) => Effect.flatMap(CustomerAuth, (auth) => onRequest(auth.bearer(Redacted.make(token))))
const bearer = (token: string) => Effect.flip(customer(token))
const admin = (token: string) =>
  Effect.either(Effect.flatMap(AdminAuth, (auth) => onRequest(auth.adminToken(Redacted.make(token)))))

describe("Auth", () => {
  it.effect("a credential store that cannot be reached fails with StorageError (503), not Unauthorized, and spends no failure", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* bearer("svc_api_down"))._tag, "StorageError")
      assert.strictEqual((yield* bearer("svc_api_bad"))._tag, "Unauthorized")
    }).pipe(Effect.provide(services)))

  it.effect("past the address's failed authentications, a wrong bearer answers 429 while a valid one is served", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* bearer(`svc_api_guess${i}`))._tag, "Unauthorized")
      const refused = yield* bearer("svc_api_guess3")
      assert.strictEqual(refused._tag, "RateLimited")
      for (let i = 0; i < 20; i++) assert.strictEqual((yield* customer("svc_api_good")).credential.id, "key_1")
      assert.strictEqual((yield* bearer("svc_api_guess4"))._tag, "RateLimited")
      yield* TestClock.adjust("20 seconds")
      assert.strictEqual((yield* bearer("svc_api_guess5"))._tag, "Unauthorized", "the budget refills")
    }).pipe(Effect.provide(services)))

  it.effect("admin token guesses spend the address's budget; the right token is never refused by it", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) {
        const guess = yield* admin(`guess-${i}`)
        assert.isTrue(guess._tag === "Left" && guess.left._tag === "Unauthorized")
      }
      const blocked = yield* admin("guess-3")
      assert.isTrue(blocked._tag === "Left" && blocked.left._tag === "RateLimited")
      for (let i = 0; i < 10; i++) assert.strictEqual((yield* admin("admin-secret"))._tag, "Right")
      const still = yield* admin("guess-4")
      assert.isTrue(still._tag === "Left" && still.left._tag === "RateLimited")
    }).pipe(Effect.provide(services)))
})
