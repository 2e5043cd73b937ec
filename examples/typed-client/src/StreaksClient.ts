/**
 * A typed Streaks client for TypeScript code that does not use Effect: the types are generated from
 * the server's `/openapi.json` by openapi-typescript (`streaks-api.d.ts`), the requests are made by
 * openapi-fetch. Paths, bodies, answers and error codes are all checked by the compiler.
 */
import createClient from "openapi-fetch"
import type { components, paths } from "./streaks-api.js"

/** The body of an action (`POST /v1/server/e`), as the server documents it. */
export type Action = components["schemas"]["EventRecord"]

export interface Options {
  /** Where the server listens, e.g. `http://127.0.0.1:8787`. */
  readonly baseUrl: string
  /** The project's server token (`sst_…`), for recording actions and reading state from your backend. */
  readonly serverToken?: string | undefined
  /** A customer API key (`svc_api_…`), for the customer REST API. */
  readonly apiKey?: string | undefined
}

/** The low-level client: every route of the document, typed. */
export const makeRaw = (baseUrl: string) => createClient<paths>({ baseUrl })

/**
 * The three calls most backends need. Each returns openapi-fetch's `{ data, error, response }`:
 * `data` is the typed success body, `error` the typed error body (`{ error: CODE }`, with only the
 * codes that route can answer).
 */
export const make = (options: Options) => {
  const client = makeRaw(options.baseUrl)
  const serverToken = options.serverToken ?? ""
  return {
    raw: client,
    /** Records a member's action from your backend. */
    recordAction: (action: Action) =>
      client.POST("/v1/server/e", { params: { header: { "x-streak-server-token": serverToken } }, body: action }),
    /** The member's streak, this week and milestones, as the widget shows them. */
    state: (query: { readonly siteKey: string; readonly userHash: string; readonly event: string }) =>
      client.GET("/v1/state", { params: { query, header: { "x-streak-server-token": serverToken } } }),
    /** The member's current and best streak through the customer REST API. */
    memberStreak: (programId: string, userHash: string) =>
      client.GET("/v1/api/programs/{programId}/members/{userHash}", {
        params: { path: { programId, userHash } },
        headers: { authorization: `Bearer ${options.apiKey ?? ""}` }
      })
  }
}

export type StreaksClient = ReturnType<typeof make>
