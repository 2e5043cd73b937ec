/**
 * The request parts the fast path reads outside a body, held to the same schemas as the HttpApi
 * routes declare and decode (`ApiSchemas`): the doors' credential headers, the webhook path's
 * siteKey and the state query. A part out of its bounds answers 400 `INVALID_BODY` on both paths.
 */
import { ApiSchemas } from "@streaks/http"
import { Either, Schema } from "effect"
import type { IncomingHttpHeaders } from "node:http"

const headersWithin = Schema.is(ApiSchemas.DoorHeaders)

/** Whether the credential headers of a request are within their bounds. */
export const headersOk = (headers: IncomingHttpHeaders): boolean => headersWithin(headers)

/** Whether a webhook path's siteKey is within its bounds. */
export const siteKeyOk: (siteKey: string) => boolean = Schema.is(ApiSchemas.SiteKeyParam)

const decodeState = Schema.decodeUnknownEither(ApiSchemas.StateParams, { onExcessProperty: "ignore" })

/** The state query as `GET /v1/state` decodes it (the first value of each name), or None. */
export const stateQuery = (q: URLSearchParams): ApiSchemas.StateParams | undefined => {
  const input: Record<string, string> = {}
  for (const name of ["siteKey", "userHash", "event", "kind", "identity"]) {
    const value = q.get(name)
    if (value !== null) input[name] = value
  }
  return Either.getOrUndefined(decodeState(input))
}
