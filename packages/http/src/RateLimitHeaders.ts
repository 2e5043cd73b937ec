/**
 * The `RateLimit` headers of the limited routes' answers that no limit decided: a body or URL that
 * does not decode on `/v1/e` or `/v1/alias` names the client address's request bucket, and an
 * answer on `/v1/api/*` or `/mcp` given before its credential was judged names the address's
 * failed-authentication budget. Answers a limit decided carry that limit's headers already.
 */
import { HttpApp, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import * as ClientAddress from "./ClientAddress.js"
import * as RateLimit from "./RateLimit.js"

/** Which bucket family stands for a limited route's answers, or None for a route with no limit. */
export const kindOf = (method: string, path: string): RateLimit.Kind | undefined => {
  if (method === "POST" && (path === "/v1/e" || path === "/v1/alias")) return "ip"
  if (path.startsWith("/v1/api/") || path === "/mcp") return "auth"
  return undefined
}

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** On a limited route, adds the headers to the answer unless a limit already set them. */
export const fallback = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> => {
  const kind = kindOf(request.method, pathOf(request.url))
  if (kind === undefined) return Effect.void
  return Effect.flatMap(Effect.serviceOption(RateLimit.RateLimiter), (limiter) => {
    if (Option.isNone(limiter)) return Effect.void
    return Effect.flatMap(ClientAddress.trust, (trust) => {
      const client = ClientAddress.of(trust, request)
      return HttpApp.appendPreResponseHandler((_, response) =>
        response.headers["ratelimit"] !== undefined
          ? Effect.succeed(response)
          : Effect.map(
            RateLimit.headers(limiter.value, [[kind, client.address]]),
            (h) => HttpServerResponse.setHeaders(response, h)
          )
      )
    })
  })
}

/**
 * Sets the fallback headers of `POST /v1/e` on a node:http response before anything is written
 * (the reference server's fast path): an answer a limit decides overrides them in `writeHead`.
 */
export const presetNode = (
  res: { setHeader: (name: string, value: string) => unknown },
  limiter: RateLimit.RateLimiter["Type"],
  address: string,
  now: number
): void => {
  const h = RateLimit.headersOf([limiter.unsafeStanding("ip", address, now)])
  for (const name in h) res.setHeader(name, h[name]!)
}
