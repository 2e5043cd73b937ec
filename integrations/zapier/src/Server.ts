/**
 * How the app talks to a Streaks server: where it is, the credential on every customer API call,
 * and the server's error answers turned into the errors Zapier acts on.
 */
import type { Bundle, HttpRequestOptions, HttpResponse, ZObject } from "zapier-platform-core"

/**
 * The server's address without a trailing slash: the connection's `baseUrl` field (API key
 * connections), else the `STREAKS_BASE_URL` environment variable of the integration (set with
 * `zapier env:set`; OAuth connections, whose authorization server is fixed per integration).
 */
export const baseUrl = (bundle: Pick<Bundle, "authData">): string => {
  const given = bundle.authData?.baseUrl || process.env.STREAKS_BASE_URL
  if (given === undefined || given === "") {
    throw new Error("No Streaks server address: set the connection's Server URL or STREAKS_BASE_URL")
  }
  return given.replace(/\/+$/, "")
}

/** The customer REST API under `baseUrl`. */
export const apiUrl = (bundle: Pick<Bundle, "authData">, path: string): string => `${baseUrl(bundle)}/v1/api${path}`

/** The bearer credential of the connection: an OAuth access token, else the pasted API key. */
const credential = (bundle: Bundle): string | undefined => bundle.authData?.access_token || bundle.authData?.apiKey

/**
 * `beforeRequest`: `Authorization: Bearer …` on calls to the customer REST API of this
 * connection's server only, so the credential never goes to another host or to the token endpoint.
 * Those calls also leave their 429 to `surfaceErrors` (`throwForThrottlingEarly: false`), whose
 * `ThrottledError` names the server's error code beside the `Retry-After` delay.
 */
export const addCredential = (request: HttpRequestOptions, _z: ZObject, bundle: Bundle): HttpRequestOptions => {
  const token = credential(bundle)
  if (token === undefined || request.url === undefined) return request
  let api: string
  try {
    api = `${baseUrl(bundle)}/v1/api/`
  } catch {
    return request
  }
  if (!request.url.startsWith(api)) return request
  return {
    ...request,
    headers: { ...request.headers, authorization: `Bearer ${token}` },
    throwForThrottlingEarly: false
  } as HttpRequestOptions
}

/** The `{"error": CODE, "message"?}` body of an error answer, when it has one. */
export const errorBody = (response: Pick<HttpResponse, "content">): { code: string; message?: string } | undefined => {
  try {
    const body = JSON.parse(response.content) as unknown
    if (typeof body === "object" && body !== null && typeof (body as any).error === "string") {
      const { error, message, error_description } = body as Record<string, unknown>
      const text = typeof message === "string"
        ? message
        : typeof error_description === "string"
        ? error_description
        : undefined
      return text === undefined ? { code: error as string } : { code: error as string, message: text }
    }
  } catch {
    // not JSON: the status alone describes it
  }
  return undefined
}

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date), if it has a usable one. */
export const retryAfterSeconds = (value: string | null | undefined, now: number = Date.now()): number | undefined => {
  if (value === null || value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000))
}

/**
 * Throws the error of an error answer in Zapier's terms. 401: an OAuth connection refreshes its
 * token (`RefreshAuthError`), an API key connection must be reconnected (`ExpiredAuthError`);
 * 429: `ThrottledError` with the `Retry-After` seconds, so Zapier retries then; any other 4xx:
 * `z.errors.Error` carrying the server's error code; 5xx: Zapier's own `ResponseError`.
 */
export const raise = (response: HttpResponse, z: ZObject, bundle: Bundle): void => {
  if (response.status < 400) return
  const body = errorBody(response)
  const code = body?.code ?? `HTTP_${response.status}`
  const message = body?.message ?? `The Streaks server answered ${response.status} ${code}`
  if (response.status === 401) {
    if (bundle.authData?.access_token) throw new z.errors.RefreshAuthError(message)
    throw new z.errors.ExpiredAuthError(`${message}: the API key was refused; reconnect with a valid key`)
  }
  if (response.status === 429) {
    const delay = retryAfterSeconds(response.headers.get("retry-after"))
    throw delay === undefined ? new z.errors.ThrottledError(message) : new z.errors.ThrottledError(message, delay)
  }
  if (response.status < 500) throw new z.errors.Error(message, code, response.status)
  response.throwForStatus()
}

/** `afterResponse`: `raise` for every call but those sent with `skipThrowForStatus`. */
export const surfaceErrors = (response: HttpResponse, z: ZObject, bundle: Bundle): HttpResponse => {
  if (!response.skipThrowForStatus) raise(response, z, bundle)
  return response
}
