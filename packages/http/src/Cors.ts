/**
 * Browser origin rules and CORS headers of the public routes (docs/api.md#who-may-call,
 * #cors-preflight): which origins a project allows, the preflight answer (any origin) and the
 * headers of an actual response.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { Layer } from "effect"
import { Effect } from "effect"

const defaultPort: Record<string, string> = { "http:": "80", "https:": "443" }

interface Parsed {
  readonly protocol: string
  readonly hostname: string
  /** Explicit port, or the scheme's default port: `https://a.com` and `https://a.com:443` are one origin. */
  readonly port: string
}

const parse = (origin: string): Parsed | undefined => {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return undefined
  }
  const port = defaultPort[url.protocol]
  // An origin is scheme://host[:port] and nothing else: a path, query or userinfo means the
  // string is not an origin (browsers never send one), so it never matches.
  if (
    port === undefined || url.hostname === "" || url.username !== "" || url.password !== "" ||
    url.pathname !== "/" || url.search !== "" || url.hash !== ""
  ) return undefined
  return { protocol: url.protocol, hostname: url.hostname, port: url.port === "" ? port : url.port }
}

/**
 * The canonical `scheme://host:port` form of an http(s) origin (lower-case host, IDN in
 * punycode, default port explicit), or `undefined` when the string is not an http(s) origin.
 */
export const normalizeOrigin = (origin: string): string | undefined => {
  const p = parse(origin)
  return p === undefined || p.hostname.includes("*") ? undefined : `${p.protocol}//${p.hostname}:${p.port}`
}

/** A compiled allowed-origins list. */
export type Matcher = (origin: string) => boolean

/**
 * Compiles a project's allowed origins. Entries are exact origins (`https://app.example.com`,
 * `http://localhost:3000`) or `https://*.example.com`, which matches every subdomain at any depth
 * over https on the same port, but neither `https://example.com` itself nor
 * `https://evil-example.com`. Entries that are neither never match (there is no `*` for all).
 */
export const compile = (allowed: ReadonlyArray<string>): Matcher => {
  const exact = new Set<string>()
  const wildcards: Array<{ readonly suffix: string; readonly port: string }> = []
  for (const entry of allowed) {
    const trimmed = entry.trim()
    if (/^https:\/\/\*\./i.test(trimmed)) {
      const p = parse(trimmed)
      // URL keeps "*" in the host; what follows "*" is the required suffix, starting with a dot.
      if (
        p !== undefined && p.hostname.startsWith("*.") && !p.hostname.slice(1).includes("*") && p.hostname.length > 2
      ) {
        wildcards.push({ suffix: p.hostname.slice(1), port: p.port })
      }
      continue
    }
    const normal = normalizeOrigin(trimmed)
    if (normal !== undefined) exact.add(normal)
  }
  return (origin) => {
    const p = parse(origin)
    // "*" is legal in a URL host, but no real origin has one: it must not match itself.
    if (p === undefined || p.hostname.includes("*")) return false
    if (exact.has(`${p.protocol}//${p.hostname}:${p.port}`)) return true
    if (p.protocol !== "https:") return false
    for (const w of wildcards) {
      if (p.port === w.port && p.hostname.length > w.suffix.length && p.hostname.endsWith(w.suffix)) return true
    }
    return false
  }
}

// Projects hand the same (cached) array on every request; compile each array once.
const compiled = new WeakMap<ReadonlyArray<string>, Matcher>()

/**
 * Whether a request `Origin` is in `allowed` (see `compile` for the rules). The compiled form of
 * each array is cached, so treat the array as immutable.
 */
export const isAllowedOrigin = (origin: string, allowed: ReadonlyArray<string>): boolean => {
  let matcher = compiled.get(allowed)
  if (matcher === undefined) {
    matcher = compile(allowed)
    compiled.set(allowed, matcher)
  }
  return matcher(origin)
}

/** Methods a browser may use on the CORS routes. */
export const allowMethods = "POST, GET, OPTIONS"
/** Non-safelisted request headers the widget sends. */
export const allowHeaders = "content-type, x-streak-server-token, x-streak-identity"
/** Response headers the widget may read (429 `Retry-After`, the legacy-mode `Deprecation`). */
export const exposeHeaders = "Retry-After, Deprecation"
/** How long a browser may cache a preflight answer (Chromium caps this at 2 hours). */
export const maxAgeSeconds = 7200

/** Routes whose preflight `OPTIONS` is answered with 204 (docs/api.md#cors-preflight). */
export const corsPaths: ReadonlyArray<string> = ["/v1/e", "/v1/state", "/v1/alias"]

/**
 * Headers of the 204 preflight answer. A preflight carries no siteKey, so it is answered for any
 * origin; the actual request is the one checked against the project's allowed origins.
 */
export const preflightHeaders = (origin: string | undefined): Record<string, string> => ({
  "access-control-allow-origin": origin === undefined || origin === "" ? "*" : origin,
  "access-control-allow-methods": allowMethods,
  "access-control-allow-headers": allowHeaders,
  "access-control-max-age": String(maxAgeSeconds),
  "vary": "Origin"
})

/** The 204 preflight answer for a request with this `Origin` header. */
export const preflightResponse = (origin: string | undefined): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.empty({ status: 204, headers: preflightHeaders(origin) })

/**
 * Headers of an actual response: `Access-Control-Allow-Origin: <origin>` and `Vary: Origin`
 * when `origin` is allowed, nothing otherwise (no origin, or a disallowed one).
 */
export const actualHeaders = (
  origin: string | undefined,
  allowed: ReadonlyArray<string>
): Record<string, string> =>
  origin !== undefined && isAllowedOrigin(origin, allowed)
    ? { "access-control-allow-origin": origin, "access-control-expose-headers": exposeHeaders, "vary": "Origin" }
    : {}

/** Adds `actualHeaders(origin, allowed)` to a response. */
export const withActualHeaders = (
  response: HttpServerResponse.HttpServerResponse,
  origin: string | undefined,
  allowed: ReadonlyArray<string>
): HttpServerResponse.HttpServerResponse => {
  const headers = actualHeaders(origin, allowed)
  return Object.keys(headers).length === 0 ? response : HttpServerResponse.setHeaders(response, headers)
}

/**
 * HttpApi middleware answering `OPTIONS` on `paths` (default `corsPaths`, exact path, any query)
 * with the 204 preflight, before routing: the API itself declares no OPTIONS endpoints.
 */
export const layerPreflight = (paths: ReadonlyArray<string> = corsPaths): Layer.Layer<never> => {
  const set = new Set(paths)
  return HttpApiBuilder.middleware((app) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (request.method !== "OPTIONS") return app
      const q = request.url.indexOf("?")
      const path = q === -1 ? request.url : request.url.slice(0, q)
      return set.has(path) ? Effect.succeed(preflightResponse(request.headers["origin"])) : app
    })
  )
}
