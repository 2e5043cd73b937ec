/**
 * The authorization server's HTTP side (docs/oauth.md): `/oauth/authorize` with its consent page,
 * `/oauth/token`, `/oauth/revoke`, Dynamic Client Registration at `/oauth/register` (behind its
 * switch) and the RFC 8414 metadata document, mounted on the server's router beside the API. The
 * protocol's rules are core `OAuthServer`'s; who is signed in, and the CSRF token of the consent
 * form, come from `Sessions`.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Ids, OAuthServer } from "@streaks/core"
import type { StorageError } from "@streaks/core/Errors"
import { Config, type ConfigError, Context, Effect, Either, Layer, Option } from "effect"
import * as ClientAddress from "./ClientAddress.js"
import * as RateLimit from "./RateLimit.js"
import { type SignedIn, Sessions } from "./Sessions.js"

/** Deployment settings of the authorization server. */
export class OAuthConfig extends Context.Tag("@streaks/http/OAuthConfig")<OAuthConfig, {
  /**
   * The service's public base URL (`https://streaks.example.com`, no trailing slash): the issuer
   * and every absolute URL written. None: the request's scheme (from a trusted proxy) and `Host`.
   */
  readonly publicUrl: Option.Option<string>
  /** Whether clients may register themselves (RFC 7591) at `/oauth/register`, as public clients. */
  readonly dynamicRegistration: boolean
}>() {}

export const layerConfigWith = (config: OAuthConfig["Type"]): Layer.Layer<OAuthConfig> =>
  Layer.succeed(OAuthConfig, config)

/** `STREAKS_PUBLIC_URL` (optional) and `STREAKS_OAUTH_DCR` (default false). */
export const layerConfig: Layer.Layer<OAuthConfig, ConfigError.ConfigError> = Layer.effect(
  OAuthConfig,
  Config.all({
    publicUrl: Config.option(Config.map(Config.string("STREAKS_PUBLIC_URL"), (url) => url.replace(/\/+$/, ""))),
    dynamicRegistration: Config.withDefault(Config.boolean("STREAKS_OAUTH_DCR"), false)
  })
)

export const paths = {
  metadata: "/.well-known/oauth-authorization-server",
  authorize: "/oauth/authorize",
  token: "/oauth/token",
  revoke: "/oauth/revoke",
  register: "/oauth/register"
} as const

// --- Small pieces ------------------------------------------------------------------------------

/** The consent form's own fields, left out when the request goes round the sign-in page. */
const consentFields: ReadonlySet<string> = new Set(["csrfToken", "decision"])

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

/**
 * Pages of the flow are never framed (clickjacking of "Allow") and never cached. The consent form
 * posts here and is then redirected to the app, which `form-action` must allow too (browsers check
 * the redirect's target against it).
 */
const pageHeaders = (formTarget?: string) => ({
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${
    formTarget === undefined ? "" : ` ${formTarget}`
  }; frame-ancestors 'none'`,
  "referrer-policy": "no-referrer"
})

const layout = (title: string, body: string) =>
  `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
fieldset{border:1px solid #ccc;border-radius:6px;margin:1rem 0}label{display:block;margin:.4rem 0}
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.5rem}</style></head>
<body>${body}</body>
</html>`

const htmlPage = (status: number, title: string, body: string, formTarget?: string) =>
  HttpServerResponse.text(layout(title, body), {
    status,
    contentType: "text/html; charset=utf-8",
    headers: pageHeaders(formTarget)
  })

const errorPage = (status: number, message: string) =>
  htmlPage(status, "Authorization error", `<h1>Authorization error</h1><p>${escapeHtml(message)}</p>`)

const jsonAnswer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, {
    status,
    headers: { "cache-control": "no-store", pragma: "no-cache", ...headers }
  })

const oauthErrorAnswer = (e: OAuthServer.OAuthError, basicUsed: boolean) =>
  jsonAnswer(
    e.status,
    { error: e.error, error_description: e.description },
    e.status === 401 && basicUsed ? { "www-authenticate": "Basic realm=\"streaks\"" } : {}
  )

/** `redirectUri` with `params` added to its query (the registered query kept, RFC 6749 §3.1.2). */
const withParams = (redirectUri: string, params: Record<string, string | undefined>): string => {
  const url = new URL(redirectUri)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v)
  return url.toString()
}

const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store" } })

/** Parameters given once each; a parameter given twice makes the whole set invalid (RFC 6749 §3.1). */
const singleParams = (
  entries: Iterable<readonly [string, string]>
): { readonly params: Record<string, string>; readonly repeated: ReadonlyArray<string> } => {
  const params: Record<string, string> = {}
  const repeated: Array<string> = []
  for (const [k, v] of entries) {
    if (Object.hasOwn(params, k)) repeated.push(k)
    else params[k] = v
  }
  return { params, repeated }
}

const queryOf = (request: HttpServerRequest.HttpServerRequest) =>
  singleParams(new URL(request.url, "http://localhost").searchParams.entries())

const formOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(
    Effect.either(request.text),
    (text) => text._tag === "Left" ? undefined : singleParams(new URLSearchParams(text.right).entries())
  )

const isForm = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").toLowerCase().split(";")[0]!.trim() === "application/x-www-form-urlencoded"

/** The issuer: `STREAKS_PUBLIC_URL`, else the request's scheme (trusted proxies only) and `Host`. */
export const issuerOf = Effect.gen(function*() {
  const config = yield* OAuthConfig
  if (Option.isSome(config.publicUrl)) return config.publicUrl.value
  const request = yield* HttpServerRequest.HttpServerRequest
  const client = yield* ClientAddress.current
  return `${client.scheme}://${request.headers["host"] ?? "localhost"}`
})

/** The RFC 8414 document of the server at `issuer`. */
export const metadata = (issuer: string, dynamicRegistration: boolean) => ({
  issuer,
  authorization_endpoint: `${issuer}${paths.authorize}`,
  token_endpoint: `${issuer}${paths.token}`,
  revocation_endpoint: `${issuer}${paths.revoke}`,
  ...(dynamicRegistration ? { registration_endpoint: `${issuer}${paths.register}` } : {}),
  response_types_supported: ["code"],
  response_modes_supported: ["query"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  code_challenge_methods_supported: ["S256"],
  token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
  revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
  authorization_response_iss_parameter_supported: true,
  service_documentation: `${issuer}/docs`
})

/** `Authorization: Basic` credentials, each part form-decoded (RFC 6749 §2.3.1); undefined if absent or malformed. */
const basicOf = (
  header: string | undefined
): { readonly clientId: string; readonly clientSecret: string } | undefined => {
  const match = header === undefined ? null : /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header)
  if (match === null) return undefined
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return undefined
  try {
    const form = (s: string) => decodeURIComponent(s.replace(/\+/g, " "))
    return { clientId: form(decoded.slice(0, colon)), clientSecret: form(decoded.slice(colon + 1)) }
  } catch {
    return undefined
  }
}

// --- Authorization endpoint --------------------------------------------------------------------

const authorizationRequestOf = (params: Record<string, string>): OAuthServer.AuthorizationRequest => ({
  responseType: params["response_type"],
  clientId: params["client_id"],
  redirectUri: params["redirect_uri"],
  state: params["state"],
  codeChallenge: params["code_challenge"],
  codeChallengeMethod: params["code_challenge_method"]
})

const consentPage = (
  valid: Extract<OAuthServer.AuthorizationCheck, { _tag: "Valid" }>,
  user: SignedIn
) => {
  const hidden = (name: string, value: string | undefined) =>
    value === undefined ? "" : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`
  const boxes = user.workspaces.map((w) =>
    `<label><input type="checkbox" name="workspace" value="${escapeHtml(w.id)}" checked> ${escapeHtml(w.name)}</label>`
  ).join("\n")
  const name = escapeHtml(valid.client.name)
  const body = `<h1>Connect ${name}</h1>
<p><strong>${name}</strong> asks to reach the projects of these workspaces with your role in each:</p>
<form method="post" action="${paths.authorize}">
${hidden("csrfToken", user.csrfToken)}
${hidden("response_type", "code")}
${hidden("client_id", valid.client.id)}
${hidden("redirect_uri", valid.redirectUri)}
${hidden("state", valid.state)}
${hidden("code_challenge", valid.codeChallenge)}
${hidden("code_challenge_method", "S256")}
<fieldset><legend>Workspaces</legend>
${boxes.length > 0 ? boxes : "<p>You belong to no workspace.</p>"}
</fieldset>
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`
  return htmlPage(200, `Connect ${valid.client.name}`, body, new URL(valid.redirectUri).origin)
}

/** The checks common to the authorization request and the consent form, with where to go next. */
const checked = (params: Record<string, string>, repeated: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const oauth = yield* OAuthServer.OAuthServer
    const check = yield* oauth.checkAuthorization(authorizationRequestOf(params))
    if (check._tag === "Refused") return { _tag: "Answer", response: errorPage(400, check.message) } as const
    const issuer = yield* issuerOf
    if (check._tag === "RedirectError") {
      return {
        _tag: "Answer",
        response: seeOther(withParams(check.redirectUri, {
          error: check.error,
          error_description: check.description,
          state: check.state,
          iss: issuer
        }))
      } as const
    }
    if (repeated.length > 0) {
      return {
        _tag: "Answer",
        response: seeOther(withParams(check.redirectUri, {
          error: "invalid_request",
          error_description: `parameter given more than once: ${repeated.join(", ")}`,
          state: check.state,
          iss: issuer
        }))
      } as const
    }
    return { _tag: "Valid", check, issuer } as const
  })

const authorizeGet = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const sessions = yield* Sessions
  const { params, repeated } = queryOf(request)
  // A repeated client_id or redirect_uri leaves no trusted place to send an error to.
  if (repeated.includes("client_id") || repeated.includes("redirect_uri")) {
    return errorPage(400, "The request names its client or redirect address more than once.")
  }
  const result = yield* checked(params, repeated)
  if (result._tag === "Answer") return result.response
  const user = yield* sessions.current
  if (Option.isNone(user)) return sessions.toSignIn(request.url)
  return consentPage(result.check, user.value)
})

const authorizePost = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const sessions = yield* Sessions
  const oauth = yield* OAuthServer.OAuthServer
  if (!isForm(request)) return errorPage(400, "The consent form was not sent as a form.")
  const body = yield* Effect.flatMap(
    Effect.either(request.text),
    (text) => Effect.succeed(text._tag === "Left" ? undefined : text.right)
  )
  if (body === undefined) return errorPage(400, "The consent form could not be read.")
  const entries = [...new URLSearchParams(body).entries()]
  const workspaceIds = entries.filter(([k]) => k === "workspace").map(([, v]) => v)
  const { params, repeated } = singleParams(entries.filter(([k]) => k !== "workspace"))
  if (repeated.includes("client_id") || repeated.includes("redirect_uri")) {
    return errorPage(400, "The request names its client or redirect address more than once.")
  }
  const result = yield* checked(params, repeated)
  if (result._tag === "Answer") return result.response
  const { check, issuer } = result
  const user = yield* sessions.current
  if (Option.isNone(user)) {
    const query = new URLSearchParams(
      Object.entries(params).filter(([k]) => !consentFields.has(k))
    ).toString()
    return sessions.toSignIn(`${paths.authorize}?${query}`)
  }
  if (Either.isLeft(yield* Effect.either(sessions.checkCsrf(user.value, params["csrfToken"])))) {
    return errorPage(403, "This consent form has expired. Go back to the application and start again.")
  }
  const back = (extra: Record<string, string>) =>
    seeOther(withParams(check.redirectUri, { ...extra, state: check.state, iss: issuer }))
  if (params["decision"] !== "allow") {
    return back({ error: "access_denied", error_description: "the user denied access" })
  }
  const reachable = new Set<string>(user.value.workspaces.map((w) => w.id))
  const chosen = [...new Set(workspaceIds)].filter((id) => reachable.has(id))
  if (chosen.length === 0) {
    return back({ error: "access_denied", error_description: "no workspace was chosen" })
  }
  const code = yield* oauth.issueCode({
    clientId: check.client.id,
    redirectUri: check.redirectUri,
    codeChallenge: check.codeChallenge,
    userId: user.value.userId,
    workspaceIds: chosen.map((id) => Ids.unsafe("WorkspaceId", id))
  }, { actor: { kind: "user", id: user.value.userId }, clientAddress: (yield* ClientAddress.current).address })
  return back({ code })
})

// --- Token, revocation, registration -------------------------------------------------------------

const clientAuthOf = (
  request: HttpServerRequest.HttpServerRequest,
  params: Record<string, string>
): OAuthServer.ClientAuthentication => ({
  basic: basicOf(request.headers["authorization"]),
  clientId: params["client_id"],
  clientSecret: params["client_secret"]
})

const invalidRequest = (description: string) =>
  jsonAnswer(400, { error: "invalid_request", error_description: description })

/** A form request's parameters, or the answer refusing it. */
const formParams = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!isForm(request)) return Option.none<Record<string, string>>()
  const form = yield* formOf(request)
  if (form === undefined || form.repeated.length > 0) return Option.none<Record<string, string>>()
  return Option.some(form.params)
})

/** Client authentication failures and bad grants spend the address's failed-authentication budget. */
const spendsBudget = (e: unknown) =>
  e instanceof OAuthServer.OAuthError && (e.error === "invalid_client" || e.error === "invalid_grant")

const rateLimited = (e: { readonly retryAfterSeconds: number }) =>
  jsonAnswer(429, { error: "RATE_LIMITED" }, { "retry-after": String(Math.max(1, Math.ceil(e.retryAfterSeconds))) })

const underBudget = <A>(
  effect: Effect.Effect<A, OAuthServer.OAuthError | StorageError, OAuthServer.OAuthServer>,
  onSuccess: (a: A) => HttpServerResponse.HttpServerResponse,
  basicUsed: boolean
) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimit.RateLimiter
    const client = yield* ClientAddress.current
    const result = yield* Effect.either(RateLimit.authenticating(limiter, client.address, effect, spendsBudget))
    if (result._tag === "Right") return onSuccess(result.right)
    const e = result.left
    if (e._tag === "RateLimited") return rateLimited(e)
    if (e._tag === "OAuthError") return oauthErrorAnswer(e, basicUsed)
    return yield* e
  })

const tokenPost = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const oauth = yield* OAuthServer.OAuthServer
  const form = yield* formParams
  if (Option.isNone(form)) {
    return invalidRequest("the body must be application/x-www-form-urlencoded, each parameter once")
  }
  const params = form.value
  const auth = clientAuthOf(request, params)
  return yield* underBudget(
    oauth.token(auth, {
      grantType: params["grant_type"],
      code: params["code"],
      codeVerifier: params["code_verifier"],
      redirectUri: params["redirect_uri"],
      refreshToken: params["refresh_token"]
    }, (yield* ClientAddress.current).address),
    (answer) => jsonAnswer(200, answer),
    auth.basic !== undefined
  )
})

const revokePost = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const oauth = yield* OAuthServer.OAuthServer
  const form = yield* formParams
  if (Option.isNone(form)) {
    return invalidRequest("the body must be application/x-www-form-urlencoded, each parameter once")
  }
  const auth = clientAuthOf(request, form.value)
  return yield* underBudget(
    oauth.revoke(auth, form.value["token"], (yield* ClientAddress.current).address),
    () => HttpServerResponse.empty({ status: 200, headers: { "cache-control": "no-store" } }),
    auth.basic !== undefined
  )
})

const registrationError = (error: "invalid_redirect_uri" | "invalid_client_metadata", description: string) =>
  jsonAnswer(400, { error, error_description: description })

const registerPost = Effect.gen(function*() {
  const config = yield* OAuthConfig
  if (!config.dynamicRegistration) return HttpServerResponse.unsafeJson({ error: "NOT_FOUND" }, { status: 404 })
  const request = yield* HttpServerRequest.HttpServerRequest
  const oauth = yield* OAuthServer.OAuthServer
  const text = yield* Effect.either(request.text)
  let body: unknown
  try {
    body = text._tag === "Right" ? JSON.parse(text.right) : undefined
  } catch {
    body = undefined
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return registrationError("invalid_client_metadata", "the body must be a JSON object")
  }
  const m = body as Record<string, unknown>
  const uris = m["redirect_uris"]
  if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => typeof u !== "string")) {
    return registrationError("invalid_redirect_uri", "redirect_uris must be a non-empty array of URIs")
  }
  const method = m["token_endpoint_auth_method"] ?? "none"
  if (method !== "none") {
    return registrationError(
      "invalid_client_metadata",
      "only public clients register here: token_endpoint_auth_method must be none"
    )
  }
  const listOf = (field: string, allowed: ReadonlyArray<string>) => {
    const value = m[field]
    return value === undefined || (Array.isArray(value) && value.every((v) => allowed.includes(v as string)))
  }
  if (!listOf("grant_types", ["authorization_code", "refresh_token"])) {
    return registrationError("invalid_client_metadata", "grant_types may hold authorization_code and refresh_token")
  }
  if (!listOf("response_types", ["code"])) {
    return registrationError("invalid_client_metadata", "response_types may hold code")
  }
  const rawName = m["client_name"]
  if (rawName !== undefined && typeof rawName !== "string") {
    return registrationError("invalid_client_metadata", "client_name must be a string")
  }
  const name = rawName === undefined || rawName.trim() === "" ? "Unnamed client" : rawName
  const registered = yield* Effect.either(
    oauth.registerClient(
      { name, redirectUris: uris as ReadonlyArray<string>, confidential: false },
      // The registering party has no identity yet: the log names the registration endpoint.
      { actor: { kind: "registration", id: paths.register }, clientAddress: (yield* ClientAddress.current).address }
    )
  )
  if (registered._tag === "Left") {
    const e = registered.left
    if (e._tag === "StorageError") return yield* e
    return e.message.startsWith("redirectUris")
      ? registrationError("invalid_redirect_uri", e.message)
      : registrationError("invalid_client_metadata", e.message)
  }
  const c = registered.right.client
  return jsonAnswer(201, {
    client_id: c.id,
    client_id_issued_at: Math.floor(c.createdAt.getTime() / 1000),
    client_name: c.name,
    redirect_uris: c.redirectUris,
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"]
  })
})

const metadataGet = Effect.gen(function*() {
  const config = yield* OAuthConfig
  const issuer = yield* issuerOf
  return HttpServerResponse.unsafeJson(metadata(issuer, config.dynamicRegistration), {
    headers: { "access-control-allow-origin": "*" }
  })
})

/** What the routes need besides the request. */
export type Requirements = OAuthServer.OAuthServer | OAuthConfig | RateLimit.RateLimiter | Sessions

/** The routes on the server's router (`Http.layerServer`'s `routes`), behind its error mapping and body limit. */
export const layerRoutes: Layer.Layer<never, never, HttpApiBuilder.Router | Requirements> = HttpApiBuilder.Router.use(
  (routes) =>
    Effect.gen(function*() {
      const context = yield* Effect.context<Requirements>()
      const mount = <E>(
        effect: Effect.Effect<
          HttpServerResponse.HttpServerResponse,
          E,
          Requirements | HttpServerRequest.HttpServerRequest
        >
      ) => Effect.provide(effect, context)
      yield* routes.get(paths.metadata, mount(metadataGet))
      yield* routes.get(paths.authorize, mount(authorizeGet))
      yield* routes.post(paths.authorize, mount(authorizePost))
      yield* routes.post(paths.token, mount(tokenPost))
      yield* routes.post(paths.revoke, mount(revokePost))
      yield* routes.post(paths.register, mount(registerPost))
    })
)
