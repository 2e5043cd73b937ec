/**
 * The client of an HTTP request as every reader sees it (rate limits, logs, absolute URLs): core
 * `ClientAddress.resolve` over the request's TCP peer and forwarding headers, under the
 * deployment's `TrustedProxies` (none when the service is absent).
 */
import { HttpServerRequest } from "@effect/platform"
import { ClientAddress } from "@streaks/core"
import { Effect, Option } from "effect"
import type { IncomingMessage } from "node:http"
import type { TLSSocket } from "node:tls"

const first = (v: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof v === "string" ? v : v === undefined ? undefined : v.join(",")

/** The client of a node:http request (the reference server's fast path). */
export const ofNode = (trust: ClientAddress.Trust, req: IncomingMessage): ClientAddress.Client =>
  ClientAddress.resolve(trust, {
    peer: req.socket.remoteAddress,
    encrypted: (req.socket as Partial<TLSSocket>).encrypted === true,
    forwarded: first(req.headers["forwarded"]),
    xForwardedFor: first(req.headers["x-forwarded-for"]),
    xForwardedProto: first(req.headers["x-forwarded-proto"])
  })

/** The client of a platform request. */
export const of = (trust: ClientAddress.Trust, request: HttpServerRequest.HttpServerRequest): ClientAddress.Client => {
  const source = request.source as Partial<IncomingMessage> | undefined
  return ClientAddress.resolveHeaders(
    trust,
    Option.getOrUndefined(request.remoteAddress),
    (source?.socket as Partial<TLSSocket> | undefined)?.encrypted === true,
    request.headers
  )
}

/** The deployment's trusted proxies, none when no `TrustedProxies` is provided. */
export const trust: Effect.Effect<ClientAddress.Trust> = Effect.map(
  Effect.serviceOption(ClientAddress.TrustedProxies),
  Option.getOrElse(() => ClientAddress.none)
)

/** The client of the current request. */
export const current: Effect.Effect<ClientAddress.Client, never, HttpServerRequest.HttpServerRequest> = Effect.zipWith(
  trust,
  HttpServerRequest.HttpServerRequest,
  of
)
