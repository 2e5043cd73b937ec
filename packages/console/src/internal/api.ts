/**
 * The console's only way to the server: the public HTTP API, with the session cookie the browser
 * holds and, on every write, the CSRF token the page was served with (`<meta name="csrf-token">`).
 */

/** A refused request: the API's status, error code, and the message and field it may name. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | undefined
  ) {
    super(message)
  }
}

const csrfToken = (): string => document.querySelector("meta[name=\"csrf-token\"]")?.getAttribute("content") ?? ""

/** Where a browser whose session ended goes: the sign-in page, back here afterwards. */
export const signInUrl = (): string => `/sign-in?return_to=${encodeURIComponent(location.pathname + location.search)}`

const describe = (status: number, code: string): string =>
  status === 403
    ? "Your role in this workspace does not allow this."
    : status === 404
    ? "Not found, or not within your reach."
    : status === 429
    ? "Too many requests: wait a moment and try again."
    : status >= 500
    ? "The server could not answer. Try again in a moment."
    : `The request was refused (${code}).`

/** Sends one request; resolves to the parsed JSON (undefined for 204), rejects with `ApiError`. */
export const request = async <A = any>(method: string, path: string, body?: unknown): Promise<A> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET") headers["x-csrf-token"] = csrfToken()
  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
  } catch {
    throw new ApiError(0, "NETWORK", "The server cannot be reached. Check the connection and try again.", undefined)
  }
  if (response.status === 401) {
    location.assign(signInUrl())
    throw new ApiError(401, "UNAUTHORIZED", "Your session has ended: sign in again.", undefined)
  }
  if (response.status === 204) return undefined as A
  const json: any = await response.json().catch(() => undefined)
  if (!response.ok) {
    const code = typeof json?.error === "string" ? json.error : "ERROR"
    const message = typeof json?.message === "string" ? json.message : describe(response.status, code)
    throw new ApiError(response.status, code, message, typeof json?.field === "string" ? json.field : undefined)
  }
  return json as A
}

export const get = <A = any>(path: string) => request<A>("GET", path)
export const post = <A = any>(path: string, body?: unknown) => request<A>("POST", path, body ?? {})
export const put = <A = any>(path: string, body: unknown) => request<A>("PUT", path, body)
export const del = (path: string) => request<void>("DELETE", path)

/** A path with its query, leaving out parameters that are empty. */
export const withQuery = (path: string, query: Record<string, string | undefined>): string => {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(key, value)
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

export const id = encodeURIComponent
