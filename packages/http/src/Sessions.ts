/**
 * Sessions over HTTP (docs/accounts.md#sign-in): who is signed in on a request, the session cookie
 * and its CSRF token, and where to send a browser that must sign in first. Other modules (the
 * console, the OAuth consent page) ask `Sessions` rather than reading the cookie themselves.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Accounts, Errors, Ports } from "@streaks/core"
import type { Domain, Ids } from "@streaks/core"
import { Context, Effect, Layer, Option } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import * as ClientAddress from "./ClientAddress.js"

/** The session cookie's name. */
export const cookieName = "streaks_session"

/** Where a signed-in browser goes when the sign-in page was not given a `return_to`. */
export const defaultLanding = "/console"

/** A workspace the signed-in user belongs to, with their role in it. */
export interface WorkspaceRole {
  readonly id: Ids.WorkspaceId
  readonly name: string
  readonly plan: Domain.Plan
  readonly role: Domain.Role
}

/** Who is signed in on a request. */
export interface SignedIn {
  readonly userId: Ids.UserId
  readonly email: string
  readonly name: string
  readonly sessionId: Ids.SessionId
  /** Required on every state-changing request made with the session (`X-CSRF-Token` or `csrfToken`). */
  readonly csrfToken: string
  readonly workspaces: ReadonlyArray<WorkspaceRole>
}

/**
 * The CSRF token of a session: an HMAC of the session's own token, so it needs no storage, changes
 * with every session, and cannot be derived by a page that cannot read the HttpOnly cookie.
 */
export const csrfOf = (sessionToken: string): string =>
  createHmac("sha256", sessionToken).update("streaks csrf v1").digest("base64url")

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a, "utf8")
  const y = Buffer.from(b, "utf8")
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The methods that change nothing: they need no CSRF token. */
export const isSafeMethod = (method: string): boolean => method === "GET" || method === "HEAD" || method === "OPTIONS"

/**
 * `raw` as a path of this origin to return to after signing in, or the default landing. Only a
 * path (`/…`, not `//…` or `/\…`, which browsers read as another host) or an absolute URL of the
 * request's own origin is accepted: anything else would make the sign-in page an open redirect.
 */
// A control character or a backslash: browsers drop or reinterpret them in a URL's host part.
const hasControlOrBackslash = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x7f || c === 0x5c) return true
  }
  return false
}

export const returnTo = (raw: string | undefined, origin: string): string => {
  if (raw === undefined || raw.length === 0 || raw.length > 2048 || hasControlOrBackslash(raw)) {
    return defaultLanding
  }
  if (raw.startsWith("/") && !raw.startsWith("//")) return raw
  try {
    const url = new URL(raw)
    return url.origin === origin ? `${url.pathname}${url.search}${url.hash}` : defaultLanding
  } catch {
    return defaultLanding
  }
}

/** The origin of the current request as the client reached it (scheme from a trusted proxy, `Host`). */
export const originOf = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const client = yield* ClientAddress.current
  return `${client.scheme}://${request.headers["host"] ?? "localhost"}`
})

/** `Set-Cookie` for a new session: HttpOnly, SameSite=Lax, Secure when the client came over https. */
export const sessionCookie = (token: string, secure: boolean, maxAgeSeconds: number): string =>
  `${cookieName}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`

/** `Set-Cookie` that removes the session cookie. */
export const clearedCookie = (secure: boolean): string =>
  `${cookieName}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`

/** The session token the request carries in its cookie, if any. */
export const tokenOf: Effect.Effect<Option.Option<string>, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => {
    const token = request.cookies[cookieName]
    return token === undefined || token.length === 0 ? Option.none() : Option.some(token)
  }
)

export class Sessions extends Context.Tag("@streaks/http/Sessions")<Sessions, {
  /** Who is signed in on the current request (None: nobody, or a session that ended). */
  readonly current: Effect.Effect<Option.Option<SignedIn>, Errors.StorageError, HttpServerRequest.HttpServerRequest>
  /** Who is signed in on a session token (as `current`, for a token read elsewhere). */
  readonly ofToken: (token: string) => Effect.Effect<Option.Option<SignedIn>, Errors.StorageError>
  /**
   * Forbidden unless `given` is the CSRF token of `signedIn`'s session (compared in constant time).
   * Call it on every state-changing request made with a session.
   */
  readonly checkCsrf: (signedIn: SignedIn, given: string | undefined) => Effect.Effect<void, Errors.Forbidden>
  /** A 303 to the sign-in page that comes back to `returnTo` (a path of this origin) once signed in. */
  readonly toSignIn: (returnTo: string) => HttpServerResponse.HttpServerResponse
}>() {}

export const make = Effect.gen(function*() {
  const accounts = yield* Accounts.Accounts
  const catalog = yield* Ports.Catalog

  const ofToken = (token: string) =>
    Effect.gen(function*() {
      const found = yield* accounts.authenticate(token)
      if (Option.isNone(found)) return Option.none<SignedIn>()
      const { session, user } = found.value
      const ids = user.memberships.map((m) => m.workspaceId)
      const workspaces = ids.length === 0 ? [] : yield* catalog.find("workspace", { id: ids })
      const byId = new Map(workspaces.map((w) => [w.id, w]))
      const signedIn: SignedIn = {
        userId: user.id,
        email: user.email,
        name: user.name,
        sessionId: session.id,
        csrfToken: csrfOf(token),
        workspaces: user.memberships.flatMap((m) => {
          const w = byId.get(m.workspaceId)
          return w === undefined ? [] : [{ id: w.id, name: w.name, plan: w.plan, role: m.role }]
        })
      }
      return Option.some(signedIn)
    })

  const forbidden = new Errors.Forbidden({ message: "missing or wrong CSRF token" })

  return Sessions.of({
    current: Effect.flatMap(tokenOf, Option.match({ onNone: () => Effect.succeedNone, onSome: ofToken })),
    ofToken,
    checkCsrf: (signedIn, given) =>
      given !== undefined && given.length > 0 && sameText(given, signedIn.csrfToken)
        ? Effect.void
        : Effect.fail(forbidden),
    toSignIn: (path) =>
      HttpServerResponse.empty({
        status: 303,
        headers: { location: `/sign-in?return_to=${encodeURIComponent(path)}`, "cache-control": "no-store" }
      })
  })
})

export const layer: Layer.Layer<Sessions, never, Accounts.Accounts | Ports.Catalog> = Layer.effect(Sessions, make)
