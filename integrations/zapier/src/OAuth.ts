/**
 * Authentication with OAuth 2 and PKCE against the Streaks authorization server: Zapier sends the
 * user to `/oauth/authorize` (adding `code_challenge` itself, since `enablePkce` is on), then
 * trades the code and its `code_verifier` at `/oauth/token` for an access token (`svc_oat_…`,
 * sent as `Authorization: Bearer`) and a refresh token, which rotates on every refresh. A 401
 * makes Zapier refresh at once (`autoRefresh`). The integration's client comes from its
 * environment: `CLIENT_ID`, `CLIENT_SECRET` and `STREAKS_BASE_URL` (`zapier env:set`).
 */
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Connection from "./Connection.js"
import * as Server from "./Server.js"

/** The tokens Zapier keeps as the connection's `authData`. */
export interface Tokens {
  readonly access_token: string
  readonly refresh_token: string
  readonly expires_in?: number
}

const client = () => ({
  client_id: process.env.CLIENT_ID ?? "",
  client_secret: process.env.CLIENT_SECRET ?? ""
})

/** `GET /oauth/authorize` with the client, Zapier's `state` and `redirect_uri`. */
export const authorizeUrl = (_z: ZObject, bundle: Bundle): string => {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client().client_id,
    state: String(bundle.inputData.state ?? ""),
    redirect_uri: String(bundle.inputData.redirect_uri ?? "")
  })
  return `${Server.baseUrl(bundle)}/oauth/authorize?${query.toString()}`
}

/**
 * One token request (`client_secret_post`). An `invalid_grant` on a refresh means the grant is
 * gone (disconnected, or a reused refresh token revoked it): the user must reconnect.
 */
const tokenRequest = async (
  z: ZObject,
  bundle: Bundle,
  form: Record<string, string>,
  refreshing: boolean
): Promise<Tokens> => {
  let response: Awaited<ReturnType<ZObject["request"]>>
  try {
    response = await z.request({
      url: `${Server.baseUrl(bundle)}/oauth/token`,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ ...form, ...client() }).toString(),
      skipThrowForStatus: true
    })
  } catch (e) {
    // With `autoRefresh` the platform turns every 401 into a RefreshAuthError before the app sees
    // it. At the token endpoint a 401 is `invalid_client`: refreshing cannot help, the integration's
    // CLIENT_ID / CLIENT_SECRET are wrong or the operator removed the client.
    if (e instanceof Error && e.name === "RefreshAuthError") {
      throw new z.errors.Error(
        "The Streaks server refused the integration's OAuth client: check CLIENT_ID and CLIENT_SECRET",
        "invalid_client",
        401
      )
    }
    throw e
  }
  if (response.status >= 400) {
    const error = Server.errorBody(response)
    const code = error?.code ?? `HTTP_${response.status}`
    const message = error?.message ?? `The token endpoint answered ${response.status} ${code}`
    if (refreshing && code === "invalid_grant") throw new z.errors.ExpiredAuthError(message)
    throw new z.errors.Error(message, code, response.status)
  }
  const tokens = response.data as Partial<Tokens>
  if (typeof tokens.access_token !== "string" || typeof tokens.refresh_token !== "string") {
    throw new z.errors.Error("The token endpoint answered without access_token or refresh_token", "invalid_response")
  }
  return {
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    ...(typeof tokens.expires_in === "number" ? { expires_in: tokens.expires_in } : {})
  }
}

/** `authorization_code` grant: the code of the redirect and the PKCE verifier Zapier generated. */
export const getAccessToken = (z: ZObject, bundle: Bundle): Promise<Tokens> =>
  tokenRequest(z, bundle, {
    grant_type: "authorization_code",
    code: String(bundle.inputData.code ?? ""),
    redirect_uri: String(bundle.inputData.redirect_uri ?? ""),
    code_verifier: String(bundle.inputData.code_verifier ?? "")
  }, false)

/** `refresh_token` grant: returns the rotated refresh token too, which replaces the used one. */
export const refreshAccessToken = (z: ZObject, bundle: Bundle): Promise<Tokens> =>
  tokenRequest(z, bundle, { grant_type: "refresh_token", refresh_token: bundle.authData.refresh_token ?? "" }, true)

export const authentication = {
  type: "oauth2" as const,
  oauth2Config: {
    authorizeUrl,
    getAccessToken,
    refreshAccessToken,
    autoRefresh: true,
    enablePkce: true
  },
  fields: [],
  test: Connection.test,
  connectionLabel: Connection.connectionLabel
}
