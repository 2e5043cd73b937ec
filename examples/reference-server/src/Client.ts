/**
 * A typed client of the Streaks server, derived from the same `Api` the server implements
 * (`HttpApiClient.make`): request and response bodies are checked by the API's schemas on both
 * sides, and every route is a method (`client.admin.createProject`, `client.ingest.server`, ...).
 */
import { FetchHttpClient, HttpApiClient, HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Api } from "@streaks/http"
import { Effect, Option } from "effect"

export interface Options {
  /** `http://127.0.0.1:8787`, no trailing slash. */
  readonly baseUrl: string
  /** Sent as `X-Admin-Token` on every request; needed by the `/admin` routes only. */
  readonly adminToken?: string | undefined
}

/**
 * The client. Answers outside 2xx fail with `HttpClientError.ResponseError` (reason
 * "StatusCode") before any decoding, so the status and the `{"error":"CODE"}` body stay readable
 * (see `errorOf`). Needs an `HttpClient`: `FetchHttpClient.layer` (below) or `NodeHttpClient`.
 */
export const make = (options: Options) =>
  HttpApiClient.make(Api.Api, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest((request) =>
          options.adminToken === undefined
            ? request
            : HttpClientRequest.setHeader(request, "x-admin-token", options.adminToken)
        ),
        HttpClient.filterStatusOk
      )
  })

export type Client = Effect.Effect.Success<ReturnType<typeof make>>

/** The HttpClient the typed client runs on: Node's global `fetch`. */
export const layer = FetchHttpClient.layer

/**
 * The status and error code of a failed call, when the server answered: `{ status: 401, code:
 * "SERVER_TOKEN_REQUIRED" }`. None for transport failures (connection refused, timeout...).
 */
export const errorOf = (
  error: unknown
): Effect.Effect<Option.Option<{ readonly status: number; readonly code: string }>> => {
  const e = error as HttpClientError.HttpClientError
  if (e?._tag !== "ResponseError") return Effect.succeed(Option.none())
  return e.response.json.pipe(
    Effect.map((body) => {
      const code = (body as { readonly error?: unknown } | null)?.error
      return Option.some({ status: e.response.status, code: typeof code === "string" ? code : "" })
    }),
    Effect.orElseSucceed(() => Option.some({ status: e.response.status, code: "" }))
  )
}
