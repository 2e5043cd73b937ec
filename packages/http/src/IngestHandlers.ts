/**
 * HttpApi handlers of the public doors. They translate the request to `Doors` calls; the reference
 * server's lean fast path (`FastPath` in `@streaks/server`) serves the same routes.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Errors, EventInput } from "@streaks/core"
import { Effect, Option } from "effect"
import { Api } from "./Api.js"
import * as Doors from "./Doors.js"
import * as JsonLimits from "./JsonLimits.js"

/** The answer as an HTTP response (JSON body, headers as given). */
export const toResponse = (answer: Doors.Answer): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(JSON.stringify(answer.body), {
    status: answer.status,
    contentType: "application/json",
    headers: answer.headers
  })

const facts = Effect.map(HttpServerRequest.HttpServerRequest, (request): Doors.StateFacts => ({
  origin: request.headers["origin"],
  serverToken: request.headers["x-streak-server-token"],
  identityToken: request.headers["x-streak-identity"],
  ip: Option.getOrElse(request.remoteAddress, () => "unknown")
}))

const invalid = (e: { readonly code: string }) => Effect.succeed(toResponse(Doors.errorAnswer(e)))

/** The per-part limits (docs/api.md#order-of-checks, step 1) on a decoded body, as the fast path applies them. */
export const checkParts = (payload: unknown) =>
  JsonLimits.check(payload, (o) => new Errors.PayloadTooLarge({ message: `${o.part} is over ${o.limit} bytes` }))

export const layer = HttpApiBuilder.group(Api, "ingest", (handlers) =>
  handlers
    .handle("browser", ({ payload }) =>
      Effect.flatMap(facts, (f) =>
        checkParts(payload).pipe(
          Effect.zipRight(EventInput.fromEventRecord(payload)),
          Effect.flatMap((action) => Effect.map(Doors.ingest("browser", action, f), toResponse)),
          Effect.catchTags({ InvalidBody: invalid, PayloadTooLarge: invalid })
        )))
    .handle("server", ({ payload }) =>
      Effect.flatMap(facts, (f) =>
        checkParts(payload).pipe(
          Effect.zipRight(EventInput.fromEventRecord(payload)),
          Effect.flatMap((action) => Effect.map(Doors.ingest("server", action, f), toResponse)),
          Effect.catchTags({ InvalidBody: invalid, PayloadTooLarge: invalid })
        )))
    .handle("webhook", ({ headers, path, payload }) =>
      checkParts(payload).pipe(
        Effect.zipRight(EventInput.fromWebhookEvent(payload)),
        Effect.flatMap((action) => Doors.webhook(path.siteKey, action, headers["x-streak-webhook-secret"])),
        Effect.map(toResponse),
        Effect.catchTags({ InvalidBody: invalid, PayloadTooLarge: invalid })
      ))
    .handle("state", ({ urlParams }) =>
      Effect.flatMap(facts, (f) =>
        Effect.map(
          Doors.state(
            { siteKey: urlParams.siteKey, userHash: urlParams.userHash, event: urlParams.event, kind: urlParams.kind },
            { ...f, identityToken: f.identityToken ?? urlParams.identity }
          ),
          toResponse
        )))
    .handle("alias", ({ payload }) => Effect.flatMap(facts, (f) => Effect.map(Doors.alias(payload, f), toResponse))))
