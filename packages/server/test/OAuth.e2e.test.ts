/**
 * The authorization server end to end (docs/oauth.md): the reference server (`Main.layer`) on
 * Postgres, driven by `oauth4webapi` (a real OAuth client library) for discovery, the code
 * exchange, refresh and revocation, with sign-in and consent clicked in Debian's Chromium through
 * playwright-core; the client and redirect checks before any sign-in, PKCE, code and refresh-token
 * reuse, Deny, disconnecting, a user's role and membership changing under a grant, registration and
 * client removal; and the official MCP SDK's client running the whole flow from the server's
 * metadata (with registration) and calling a tool with its token.
 */
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer } from "effect"
import * as oauth from "oauth4webapi"
import { type Browser, chromium } from "playwright-core"
import * as Chromium from "./support/Chromium.js"
import * as OAuthFlow from "./support/OAuthFlow.js"
import { vi } from "vitest"
import * as ReferenceServer from "./support/ReferenceServer.js"

// Each browser flow signs in (argon2id) and clicks through pages: more than the default 30 s on a busy machine.
vi.setConfig({ testTimeout: 120_000 })

const ADMIN = "oauth-e2e-admin"
const REDIRECT = "http://127.0.0.1:49152/callback"

const settings = {
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_SECRET_KEY: "oauth-e2e-secret-key",
  STREAKS_DB_POOL_SIZE: "4",
  STREAKS_DIRECTORY_CACHE_TTL: "0 seconds",
  STREAKS_OAUTH_DCR: "true",
  STREAKS_RATE_LIMIT_AUTH_FAILURES: "0",
  // The hooks of these tests point at 127.0.0.1.
  STREAKS_ALLOW_INSECURE_WEBHOOK_URLS: "true"
}

const server = ReferenceServer.layer(settings).pipe(
  Layer.provideMerge(PgTest.layer),
  // Built under TestContext, whose clock stands at 1970: the server must see real time.
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

const send = async (
  url: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown; form?: Record<string, string> } = {}
): Promise<Reply> => {
  const response = await fetch(url, {
    method: init.method ?? (init.json === undefined && init.form === undefined ? "GET" : "POST"),
    redirect: "manual",
    headers: {
      ...(init.json !== undefined ? { "content-type": "application/json" } : {}),
      ...(init.form !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      ...init.headers
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    ...(init.form !== undefined ? { body: new URLSearchParams(init.form).toString() } : {})
  })
  const text = await response.text()
  let body: unknown = undefined
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: response.status, headers: response.headers, text, body }
}

const admin = (base: string, path: string, json?: unknown, method?: string) =>
  send(`${base}${path}`, { ...(method !== undefined ? { method } : {}), headers: { "x-admin-token": ADMIN }, json })

/** A workspace with one project and program, and a confidential client for `REDIRECT`. */
const setUp = async (base: string) => {
  const workspace = (await admin(base, "/admin/workspaces", { name: "Acme", plan: "starter" })).body
  const project = (await admin(base, "/admin/projects", {
    workspaceId: workspace.id,
    name: "Acme web",
    allowedOrigins: ["https://acme.example"]
  })).body
  const program = (await admin(base, "/admin/programs", {
    projectId: project.id,
    name: "Daily lesson",
    eventKey: "lesson_done"
  })).body
  const created = await admin(base, "/admin/oauth-clients", { name: "Automation", redirectUris: [REDIRECT] })
  expect(created.status).toBe(201)
  return { workspace, project, program, client: created.body as { clientId: string; clientSecret: string } }
}

const discover = async (base: string) => {
  const issuer = new URL(base)
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.allowInsecureRequests]: true })
  )
}

const authorizeUrl = (base: string, params: Record<string, string | undefined>) => {
  const url = new URL(`${base}/oauth/authorize`)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

const withServer = <A>(f: (base: string) => Promise<A>) =>
  Effect.flatMap(NodeServer.NodeServer, (s) => Effect.promise(() => f(s.url)))

layer(server, { timeout: 120_000 })("the authorization server", (it) => {
  it.effect("metadata (RFC 8414) names this server as issuer, and the MCP resource document points at it", () =>
    withServer(async (base) => {
      const as = await discover(base)
      expect(as.issuer).toBe(base)
      expect(as.authorization_endpoint).toBe(`${base}/oauth/authorize`)
      expect(as.token_endpoint).toBe(`${base}/oauth/token`)
      expect(as.revocation_endpoint).toBe(`${base}/oauth/revoke`)
      expect(as.registration_endpoint).toBe(`${base}/oauth/register`)
      expect(as.code_challenge_methods_supported).toEqual(["S256"])
      expect(as.authorization_response_iss_parameter_supported).toBe(true)
      const resource = await send(`${base}/.well-known/oauth-protected-resource`)
      expect(resource.body.authorization_servers).toEqual([base])
    }))

  it.effect("an unknown client or a redirect_uri not registered exactly gets a 400 page, never a redirect", () =>
    withServer(async (base) => {
      const { client } = await setUp(base)
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())
      const good = {
        response_type: "code",
        client_id: client.clientId,
        redirect_uri: REDIRECT,
        state: "st",
        code_challenge: challenge,
        code_challenge_method: "S256"
      }
      for (
        const bad of [
          { client_id: "oac_unknown" },
          { client_id: undefined },
          { redirect_uri: "http://127.0.0.1:49153/callback" },
          { redirect_uri: `${REDIRECT}/` },
          { redirect_uri: `${REDIRECT}?extra=1` },
          { redirect_uri: "https://attacker.example/callback" },
          { redirect_uri: undefined }
        ]
      ) {
        const reply = await send(authorizeUrl(base, { ...good, ...bad }))
        expect([reply.status, reply.headers.get("location"), reply.headers.get("content-type")], JSON.stringify(bad))
          .toEqual([400, null, "text/html; charset=utf-8"])
        expect(reply.text).toContain("Authorization error")
      }
      // A redirect_uri given twice is no trusted place to send an error to either.
      const twice = `${authorizeUrl(base, good)}&redirect_uri=${encodeURIComponent("https://attacker.example/cb")}`
      expect((await send(twice)).status).toBe(400)
    }))

  it.effect("plain or no PKCE goes back to the app with invalid_request, state and iss; a valid request asks to sign in", () =>
    withServer(async (base) => {
      const { client } = await setUp(base)
      const as = await discover(base)
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())
      const good = {
        response_type: "code",
        client_id: client.clientId,
        redirect_uri: REDIRECT,
        state: "st-1",
        code_challenge: challenge,
        code_challenge_method: "S256"
      }
      for (
        const bad of [
          { code_challenge_method: "plain" },
          { code_challenge_method: undefined },
          { code_challenge: undefined, code_challenge_method: undefined },
          { code_challenge: "short" },
          { response_type: "token" }
        ]
      ) {
        const reply = await send(authorizeUrl(base, { ...good, ...bad }))
        expect(reply.status, JSON.stringify(bad)).toBe(303)
        const location = new URL(reply.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(REDIRECT)
        // oauth4webapi checks iss and state, then reports the error the server sent.
        const error = (() => {
          try {
            oauth.validateAuthResponse(as, { client_id: client.clientId }, location, "st-1")
            return undefined
          } catch (e) {
            return e as oauth.AuthorizationResponseError
          }
        })()
        expect(error?.error, JSON.stringify(bad)).toBe(
          bad.response_type === "token" ? "unsupported_response_type" : "invalid_request"
        )
      }
      const signIn = await send(authorizeUrl(base, good))
      expect(signIn.status).toBe(303)
      const location = new URL(signIn.headers.get("location")!, base)
      expect(location.pathname).toBe("/sign-in")
      const back = location.searchParams.get("return_to")!
      expect(back.startsWith("/oauth/authorize?")).toBe(true)
      expect(new URL(back, base).searchParams.get("code_challenge")).toBe(challenge)
    }))

  it.effect("the token endpoint answers RFC 6749 errors: invalid_client 401, invalid_grant, unsupported_grant_type, invalid_request", () =>
    withServer(async (base) => {
      const { client } = await setUp(base)
      const token = (form: Record<string, string>, headers: Record<string, string> = {}) =>
        send(`${base}/oauth/token`, { form, headers })
      const basic = (id: string, secret: string) => ({
        authorization: `Basic ${
          Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")
        }`
      })
      const wrong = await token(
        { grant_type: "authorization_code", code: "x", code_verifier: "y" },
        basic(client.clientId, "nope")
      )
      expect([wrong.status, wrong.body.error, wrong.headers.get("www-authenticate")]).toEqual([
        401,
        "invalid_client",
        "Basic realm=\"streaks\""
      ])
      expect(wrong.headers.get("cache-control")).toBe("no-store")
      const unknownCode = await token({
        grant_type: "authorization_code",
        code: "svc_ocd_unknown",
        code_verifier: "a".repeat(43),
        client_id: client.clientId,
        client_secret: client.clientSecret
      })
      expect([unknownCode.status, unknownCode.body.error]).toEqual([400, "invalid_grant"])
      const grantType = await token({ grant_type: "password" }, basic(client.clientId, client.clientSecret))
      expect([grantType.status, grantType.body.error]).toEqual([400, "unsupported_grant_type"])
      const json = await send(`${base}/oauth/token`, { json: { grant_type: "authorization_code" } })
      expect([json.status, json.body.error]).toEqual([400, "invalid_request"])
      const noVerifier = await token(
        { grant_type: "authorization_code", code: "svc_ocd_x" },
        basic(client.clientId, client.clientSecret)
      )
      expect([noVerifier.status, noVerifier.body.error]).toEqual([400, "invalid_request"])
      const both = await token(
        { grant_type: "refresh_token", refresh_token: "svc_ort_x", client_secret: client.clientSecret },
        basic(client.clientId, client.clientSecret)
      )
      expect([both.status, both.body.error]).toEqual([400, "invalid_request"])
      // Revocation: an unknown token is no error; a client that fails to authenticate is.
      const revoke = await send(`${base}/oauth/revoke`, {
        form: { token: "svc_ort_unknown" },
        headers: basic(client.clientId, client.clientSecret)
      })
      expect(revoke.status).toBe(200)
      const revokeWrong = await send(`${base}/oauth/revoke`, {
        form: { token: "svc_ort_unknown" },
        headers: basic(client.clientId, "nope")
      })
      expect([revokeWrong.status, revokeWrong.body.error]).toEqual([401, "invalid_client"])
    }))

  it.effect("clients: registration checks redirect URIs, the secret is shown once and hashed, removal answers 204 then 404", () =>
    withServer(async (base) => {
      for (
        const redirectUris of [
          [],
          ["http://app.example.com/cb"],
          ["https://app.example.com/cb#fragment"],
          ["not a uri"],
          Array.from({ length: 11 }, (_, i) => `https://app.example.com/${i}`)
        ]
      ) {
        const reply = await admin(base, "/admin/oauth-clients", { name: "Bad", redirectUris })
        expect([reply.status, reply.body.error], JSON.stringify(redirectUris)).toEqual([400, "INVALID_BODY"])
      }
      expect((await send(`${base}/admin/oauth-clients`, { json: { name: "X", redirectUris: [REDIRECT] } })).status)
        .toBe(401)
      const created = await admin(base, "/admin/oauth-clients", { name: "Make", redirectUris: [REDIRECT] })
      expect(created.body.clientId).toMatch(/^oac_/)
      expect(created.body.clientSecret).toMatch(/^svc_ocs_/)
      expect((await admin(base, `/admin/oauth-clients/${created.body.clientId}`, undefined, "DELETE")).status).toBe(204)
      expect((await admin(base, `/admin/oauth-clients/${created.body.clientId}`, undefined, "DELETE")).status).toBe(404)
      // A removed client starts no flow.
      const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())
      const reply = await send(authorizeUrl(base, {
        response_type: "code",
        client_id: created.body.clientId,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        code_challenge_method: "S256"
      }))
      expect(reply.status).toBe(400)
    }))

  it.effect("Dynamic Client Registration (RFC 7591) registers public clients only", () =>
    withServer(async (base) => {
      const registered = await send(`${base}/oauth/register`, {
        json: { client_name: "Desktop agent", redirect_uris: ["http://127.0.0.1:33418/callback"] }
      })
      expect(registered.status).toBe(201)
      expect(registered.body).toMatchObject({
        client_name: "Desktop agent",
        redirect_uris: ["http://127.0.0.1:33418/callback"],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"]
      })
      expect(registered.body.client_id).toMatch(/^oac_/)
      expect(registered.body.client_secret).toBeUndefined()
      const bad = [
        [{ redirect_uris: ["http://evil.example/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: [] }, "invalid_redirect_uri"],
        [
          { redirect_uris: ["https://a.example/cb"], token_endpoint_auth_method: "client_secret_basic" },
          "invalid_client_metadata"
        ],
        [{ redirect_uris: ["https://a.example/cb"], grant_types: ["client_credentials"] }, "invalid_client_metadata"]
      ] as const
      for (const [json, error] of bad) {
        const reply = await send(`${base}/oauth/register`, { json })
        expect([reply.status, reply.body.error], JSON.stringify(json)).toEqual([400, error])
      }
      // A public client that sends a secret is refused.
      const token = await send(`${base}/oauth/token`, {
        form: {
          grant_type: "refresh_token",
          refresh_token: "svc_ort_x",
          client_id: registered.body.client_id,
          client_secret: "svc_ocs_guess"
        }
      })
      expect([token.status, token.body.error]).toEqual([401, "invalid_client"])
    }))
})

const limited = ReferenceServer.layer({ ...settings, STREAKS_RATE_LIMIT_AUTH_FAILURES: "3" }).pipe(
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

layer(limited, { timeout: 120_000 })("the token endpoint under the failed-authentication budget", (it) => {
  it.effect("failed client authentications spend the address's budget, then 429 with Retry-After; a verified client is served", () =>
    withServer(async (base) => {
      const { client } = await setUp(base)
      const attempt = (secret: string) =>
        send(`${base}/oauth/token`, {
          form: {
            grant_type: "refresh_token",
            refresh_token: "svc_ort_unknown",
            client_id: client.clientId,
            client_secret: secret
          }
        })
      const statuses: Array<number> = []
      for (let i = 0; i < 4; i++) statuses.push((await attempt("svc_ocs_wrong")).status)
      expect(statuses).toEqual([401, 401, 401, 429])
      const refused = await attempt("svc_ocs_wrong")
      expect([refused.status, refused.body.error]).toEqual([429, "RATE_LIMITED"])
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      // A request that verifies is served from the same address at the same moment.
      const revoke = await send(`${base}/oauth/revoke`, {
        form: { token: "svc_ort_unknown", client_id: client.clientId, client_secret: client.clientSecret }
      })
      expect(revoke.status).toBe(200)
    }))
})

// --- Sign-in and consent in Chromium ---------------------------------------------------------------

const browserPath = Chromium.executable()
if ("missing" in browserPath) console.warn(`Skipping the OAuth consent browser tests: ${browserPath.missing}`)

const PASSWORD = "correct horse battery staple"

/** Two workspaces with a program each, a user who owns both, and a confidential client. */
const setUpUser = async (base: string) => {
  const acme = await setUp(base)
  const beta = (await admin(base, "/admin/workspaces", { name: "Beta", plan: "starter" })).body
  const betaProject = (await admin(base, "/admin/projects", {
    workspaceId: beta.id,
    name: "Beta web",
    allowedOrigins: ["https://beta.example"]
  })).body
  const betaProgram = (await admin(base, "/admin/programs", {
    projectId: betaProject.id,
    name: "Beta lesson",
    eventKey: "beta_done"
  })).body
  const email = `ada-${Math.random().toString(36).slice(2)}@example.com`
  const user = await admin(base, "/admin/users", {
    email,
    name: "Ada",
    workspaces: [{ workspaceId: acme.workspace.id, role: "owner" }, { workspaceId: beta.id, role: "owner" }],
    password: PASSWORD
  })
  expect(user.status).toBe(201)
  return { ...acme, beta, betaProgram, userId: user.body.id as string, email }
}

/**
 * Opens `url` in a fresh browser context, signs in on the way when asked, and on the consent page
 * leaves only `keep` ticked (all by default) and clicks `decision`. The browser's arrival at the
 * app's `redirect` is caught (nothing listens there) and its URL returned.
 */
const consentIn = async (
  browser: Browser,
  url: string,
  options: {
    readonly email: string
    readonly decision: "Allow" | "Deny"
    readonly redirect?: string
    readonly untick?: ReadonlyArray<string>
    readonly expectApp?: string
  }
): Promise<{ readonly callback: URL; readonly boxes: ReadonlyArray<{ name: string; checked: boolean }> }> => {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const redirect = options.redirect ?? REDIRECT
    let arrived: (u: URL) => void = () => {}
    const callback = new Promise<URL>((resolve) => (arrived = resolve))
    await page.route((u) => u.href.startsWith(redirect), async (route) => {
      arrived(new URL(route.request().url()))
      await route.fulfill({ status: 200, contentType: "text/plain", body: "back at the app" })
    })
    await page.goto(url)
    expect(new URL(page.url()).pathname).toBe("/sign-in")
    await page.getByLabel("Email").fill(options.email)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: `Connect ${options.expectApp ?? "Automation"}` }).waitFor()
    const checkboxes = page.getByRole("checkbox")
    const boxes: Array<{ name: string; checked: boolean }> = []
    for (let i = 0; i < (await checkboxes.count()); i++) {
      const box = checkboxes.nth(i)
      const label = (await box.locator("xpath=..").innerText()).trim()
      boxes.push({ name: label, checked: await box.isChecked() })
    }
    for (const name of options.untick ?? []) await page.getByRole("checkbox", { name }).uncheck()
    await page.getByRole("button", { name: options.decision }).click()
    return { callback: await callback, boxes }
  } finally {
    await context.close()
  }
}

/** An authorization request with PKCE S256, its verifier and state. */
const request = async (base: string, clientId: string, redirect = REDIRECT) => {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = authorizeUrl(base, {
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirect,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256"
  })
  return { url, verifier, state }
}

const insecure = { [oauth.allowInsecureRequests]: true } as const

/** The body of an oauth4webapi error, or undefined when `f` succeeded. */
const oauthErrorOf = async (f: () => Promise<unknown>) => {
  try {
    await f()
    return undefined
  } catch (e) {
    return (e as { error?: string }).error ?? String(e)
  }
}

const withBrowser = <A>(f: (base: string, browser: Browser, sql: SqlClient.SqlClient) => Promise<A>) =>
  Effect.gen(function*() {
    const s = yield* NodeServer.NodeServer
    const sql = yield* SqlClient.SqlClient
    const executablePath = "path" in browserPath ? browserPath.path : ""
    return yield* Effect.acquireUseRelease(
      Effect.promise(() => chromium.launch({ executablePath, headless: true, args: Chromium.args })),
      (browser) => Effect.promise(() => f(s.url, browser, sql)),
      (browser) => Effect.promise(() => browser.close())
    )
  })

const bearer = (base: string, token: string, path: string, init: { method?: string; json?: unknown } = {}) =>
  send(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${token}` } })

/** Replaces the user's workspace roles through the operator's route. */
const setMemberships = async (
  base: string,
  userId: string,
  workspaces: ReadonlyArray<{ workspaceId: string; role: string }>
) => {
  const answer = await admin(base, `/admin/users/${userId}`, { workspaces }, "PATCH")
  expect(answer.status).toBe(200)
}

layer(server, { timeout: 180_000 })("the consent form over HTTP", (it) => {
  it.effect("the consent form needs the session's CSRF token, reaches only the user's workspaces, and asks to sign in without a session", () =>
    withServer(async (base) => {
      const t = await setUpUser(base)
      const other = await setUp(base)
      const cookie = await OAuthFlow.signIn(base, t.email, PASSWORD)
      const { challenge } = OAuthFlow.pkce()
      const params = {
        response_type: "code",
        client_id: t.client.clientId,
        redirect_uri: REDIRECT,
        state: "s",
        code_challenge: challenge,
        code_challenge_method: "S256"
      }
      const page = await OAuthFlow.call(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { cookie })
      expect(page.status).toBe(200)
      const csrfToken = OAuthFlow.csrfOf(page.text)!
      const post = (extra: Record<string, string>, workspaces: ReadonlyArray<string>, withCookie = true) => {
        const form = new URLSearchParams({ ...params, decision: "allow", ...extra })
        for (const id of workspaces) form.append("workspace", id)
        return OAuthFlow.call(`${base}/oauth/authorize`, { form, ...(withCookie ? { cookie } : {}) })
      }
      for (const extra of [{}, { csrfToken: "wrong" }]) {
        const refused = await post(extra, [t.workspace.id])
        expect([refused.status, refused.location], JSON.stringify(extra)).toEqual([403, null])
        expect(refused.text).toContain("Authorization error")
      }
      const signIn = await post({ csrfToken }, [t.workspace.id], false)
      expect(signIn.status).toBe(303)
      expect(new URL(signIn.location!, base).pathname).toBe("/sign-in")
      // Another tenant's workspace in the form is dropped; only it: access_denied.
      const foreign = await post({ csrfToken }, [other.workspace.id])
      expect(new URL(foreign.location!).searchParams.get("error")).toBe("access_denied")
      const mixed = await post({ csrfToken }, [other.workspace.id, t.workspace.id])
      const code = new URL(mixed.location!).searchParams.get("code")
      expect(code).toMatch(/^svc_ocd_/)
      // The consent page itself is never framed nor cached.
      const headers = (await fetch(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { headers: { cookie } }))
        .headers
      expect(headers.get("x-frame-options")).toBe("DENY")
      expect(headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(headers.get("cache-control")).toBe("no-store")
    }))
})

layer(server, { timeout: 180_000 })("the consent flow in Chromium", (it) => {
  it.effect.skipIf("missing" in browserPath)(
    "sign in, consent to one of two workspaces, exchange with oauth4webapi, call the API, refresh, reuse detection revokes the grant",
    () =>
      withBrowser(async (base, browser) => {
        const t = await setUpUser(base)
        const as = await discover(base)
        const client: oauth.Client = { client_id: t.client.clientId }
        const clientAuth = oauth.ClientSecretBasic(t.client.clientSecret)
        const { state, url, verifier } = await request(base, t.client.clientId)
        const { boxes, callback } = await consentIn(browser, url, {
          email: t.email,
          decision: "Allow",
          untick: ["Beta"]
        })
        // A checkbox per workspace of the user, labelled with its name, ticked by default.
        expect(boxes).toEqual([{ name: "Acme", checked: true }, { name: "Beta", checked: true }])
        expect(callback.searchParams.get("iss")).toBe(base)
        const params = oauth.validateAuthResponse(as, client, callback, state)
        expect(params.get("code")).toMatch(/^svc_ocd_/)
        const tokens = await oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, insecure)
        )
        expect(tokens.access_token).toMatch(/^svc_oat_/)
        expect(tokens.refresh_token).toMatch(/^svc_ort_/)
        expect(tokens.expires_in).toBe(3600)
        expect(tokens.token_type).toBe("bearer")
        // The grant reaches the workspace ticked, not the one left out.
        const me = await bearer(base, tokens.access_token, "/v1/api/me")
        expect(me.status).toBe(200)
        expect(me.body.workspaces.map((w: { name: string }) => w.name)).toEqual(["Acme"])
        const programs = await bearer(base, tokens.access_token, "/v1/api/programs")
        expect(programs.body.map((p: { id: string }) => p.id)).toEqual([t.program.id])
        expect((await bearer(base, tokens.access_token, `/v1/api/programs/${t.betaProgram.id}/members/m1`)).status)
          .toBe(404)
        // Refresh rotates; the old refresh token presented again revokes the whole grant.
        const refreshed = await oauth.processRefreshTokenResponse(
          as,
          client,
          await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure)
        )
        expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
        expect((await bearer(base, refreshed.access_token, "/v1/api/me")).status).toBe(200)
        const reuse = await oauthErrorOf(async () =>
          oauth.processRefreshTokenResponse(
            as,
            client,
            await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure)
          )
        )
        expect(reuse).toBe("invalid_grant")
        expect((await bearer(base, refreshed.access_token, "/v1/api/me")).status).toBe(401)
        expect((await bearer(base, tokens.access_token, "/v1/api/me")).status).toBe(401)
        const afterReuse = await oauthErrorOf(async () =>
          oauth.processRefreshTokenResponse(
            as,
            client,
            await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure)
          )
        )
        expect(afterReuse).toBe("invalid_grant")
      })
  )

  it.effect.skipIf("missing" in browserPath)(
    "a code presented twice revokes what it gave; a redirect_uri that differs is invalid_grant; revocation (RFC 7009)",
    () =>
      withBrowser(async (base, browser) => {
        const t = await setUpUser(base)
        const as = await discover(base)
        const client: oauth.Client = { client_id: t.client.clientId }
        const clientAuth = oauth.ClientSecretPost(t.client.clientSecret)
        const exchange = async (params: URLSearchParams, verifier: string, redirect = REDIRECT) =>
          oauth.processAuthorizationCodeResponse(
            as,
            client,
            await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirect, verifier, insecure)
          )
        const first = await request(base, t.client.clientId)
        const params = oauth.validateAuthResponse(
          as,
          client,
          (await consentIn(browser, first.url, { email: t.email, decision: "Allow" })).callback,
          first.state
        )
        const tokens = await exchange(params, first.verifier)
        expect((await bearer(base, tokens.access_token, "/v1/api/me")).body.workspaces).toHaveLength(2)
        expect(await oauthErrorOf(() => exchange(params, first.verifier))).toBe("invalid_grant")
        expect((await bearer(base, tokens.access_token, "/v1/api/me")).status).toBe(401)

        const second = await request(base, t.client.clientId)
        const again = oauth.validateAuthResponse(
          as,
          client,
          (await consentIn(browser, second.url, { email: t.email, decision: "Allow" })).callback,
          second.state
        )
        expect(await oauthErrorOf(() => exchange(again, second.verifier, "http://127.0.0.1:49152/other"))).toBe(
          "invalid_grant"
        )
        expect(await oauthErrorOf(() => exchange(again, oauth.generateRandomCodeVerifier()))).toBe("invalid_grant")
        const kept = await exchange(again, second.verifier)
        // Revoking the access token ends it alone; revoking the refresh token ends the grant.
        const refreshed = await oauth.processRefreshTokenResponse(
          as,
          client,
          await oauth.refreshTokenGrantRequest(as, client, clientAuth, kept.refresh_token!, insecure)
        )
        await oauth.processRevocationResponse(
          await oauth.revocationRequest(as, client, clientAuth, kept.access_token, insecure)
        )
        expect((await bearer(base, kept.access_token, "/v1/api/me")).status).toBe(401)
        expect((await bearer(base, refreshed.access_token, "/v1/api/me")).status).toBe(200)
        await oauth.processRevocationResponse(
          await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure)
        )
        expect((await bearer(base, refreshed.access_token, "/v1/api/me")).status).toBe(401)
      })
  )

  it.effect.skipIf("missing" in browserPath)(
    "Deny sends the browser back with access_denied, state and iss",
    () =>
      withBrowser(async (base, browser) => {
        const t = await setUpUser(base)
        const as = await discover(base)
        const { state, url } = await request(base, t.client.clientId)
        const { callback } = await consentIn(browser, url, { email: t.email, decision: "Deny" })
        expect(callback.searchParams.get("code")).toBeNull()
        expect(callback.searchParams.get("state")).toBe(state)
        const error = await oauthErrorOf(async () =>
          oauth.validateAuthResponse(as, { client_id: t.client.clientId }, callback, state)
        )
        expect(error).toBe("access_denied")
      })
  )

  it.effect.skipIf("missing" in browserPath)(
    "the grant follows its user: made viewer it reads only, removed from a workspace it no longer reaches it (nor when added back); disconnecting ends it with its hooks",
    () =>
      withBrowser(async (base, browser, sql) => {
        const t = await setUpUser(base)
        const as = await discover(base)
        const client: oauth.Client = { client_id: t.client.clientId }
        const clientAuth = oauth.ClientSecretBasic(t.client.clientSecret)
        const { state, url, verifier } = await request(base, t.client.clientId)
        const params = oauth.validateAuthResponse(
          as,
          client,
          (await consentIn(browser, url, { email: t.email, decision: "Allow" })).callback,
          state
        )
        const tokens = await oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, insecure)
        )
        const token = tokens.access_token
        const record = (programId: string) =>
          bearer(base, token, `/v1/api/programs/${programId}/events`, { method: "POST", json: { userHash: "m1" } })
        expect((await record(t.program.id)).status).toBe(202)
        const hook = await bearer(base, token, "/v1/api/hooks", {
          json: { programId: t.betaProgram.id, url: "http://127.0.0.1:9/hook", eventTypes: ["milestone.achieved"] }
        })
        expect(hook.status).toBe(201)

        // Made viewer of Acme: reads still work there, writes answer 403; Beta is untouched.
        await setMemberships(base, t.userId, [
          { workspaceId: t.workspace.id, role: "viewer" },
          { workspaceId: t.beta.id, role: "owner" }
        ])
        expect((await bearer(base, token, "/v1/api/programs")).body).toHaveLength(2)
        const viewerWrite = await record(t.program.id)
        expect([viewerWrite.status, viewerWrite.body.error]).toEqual([403, "FORBIDDEN"])
        expect((await record(t.betaProgram.id)).status).toBe(202)
        // The same over MCP: the write tool reaches Beta only, the reads both.
        const mcp = new Client({ name: "viewer-agent", version: "1.0.0" })
        await mcp.connect(
          new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${token}` } }
          })
        )
        try {
          const call = (name: string, args: Record<string, unknown>) => mcp.callTool({ name, arguments: args })
          expect((await call("record_action", { programId: t.program.id, userHash: "m2", test: true })).isError)
            .toBe(true)
          expect((await call("record_action", { programId: t.betaProgram.id, userHash: "m2", test: true })).isError)
            .not.toBe(true)
          expect(JSON.stringify((await call("list_programs", {})).structuredContent)).toContain(t.program.id)
        } finally {
          await mcp.close()
        }

        // Removed from Acme: the grant no longer reaches it at all, and added back it still does not
        // (the user consents again for that).
        await setMemberships(base, t.userId, [{ workspaceId: t.beta.id, role: "owner" }])
        const me = await bearer(base, token, "/v1/api/me")
        expect(me.body.workspaces.map((w: { name: string }) => w.name)).toEqual(["Beta"])
        expect((await record(t.program.id)).status).toBe(404)
        await setMemberships(base, t.userId, [
          { workspaceId: t.workspace.id, role: "owner" },
          { workspaceId: t.beta.id, role: "owner" }
        ])
        expect((await record(t.program.id)).status).toBe(404)
        expect((await record(t.betaProgram.id)).status).toBe(202)

        // Disconnecting: the token stops at once and the app's subscriptions are gone.
        const grantId = me.body.credential.id as string
        expect(grantId).toMatch(/^oag_/)
        const count = () =>
          Effect.runPromise(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM streaks_subscriptions WHERE created_by_id = ${grantId}`
              .pipe(
                Effect.map((rows) => rows[0]!.n),
                Effect.orDie
              )
          )
        expect(await count()).toBe(1)
        expect((await admin(base, `/admin/oauth-grants/${grantId}`, undefined, "DELETE")).status).toBe(204)
        expect((await bearer(base, token, "/v1/api/me")).status).toBe(401)
        expect(await count()).toBe(0)
        const refresh = await oauthErrorOf(async () =>
          oauth.processRefreshTokenResponse(
            as,
            client,
            await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure)
          )
        )
        expect(refresh).toBe("invalid_grant")
      })
  )

  it.effect.skipIf("missing" in browserPath)(
    "removing the client ends every grant of it; the audit log names who did each step",
    () =>
      withBrowser(async (base, browser, sql) => {
        const t = await setUpUser(base)
        const as = await discover(base)
        const client: oauth.Client = { client_id: t.client.clientId }
        const clientAuth = oauth.ClientSecretBasic(t.client.clientSecret)
        const { state, url, verifier } = await request(base, t.client.clientId)
        const params = oauth.validateAuthResponse(
          as,
          client,
          (await consentIn(browser, url, { email: t.email, decision: "Allow" })).callback,
          state
        )
        const tokens = await oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, insecure)
        )
        expect((await bearer(base, tokens.access_token, "/v1/api/me")).status).toBe(200)
        expect((await admin(base, `/admin/oauth-clients/${t.client.clientId}`, undefined, "DELETE")).status).toBe(204)
        expect((await bearer(base, tokens.access_token, "/v1/api/me")).status).toBe(401)
        // Each step is in the audit log, in the transaction of its change, with who took it.
        const logged = await Effect.runPromise(
          sql<{ action: string; actor_kind: string }>`
            SELECT action, actor_kind FROM streaks_audit_log
            WHERE target = ${t.client.clientId} OR details->>'clientId' = ${t.client.clientId}
            ORDER BY at, id`.pipe(Effect.orDie)
        )
        expect(logged.map((r) => `${r.action} by ${r.actor_kind}`)).toEqual([
          "oauth_client.create by admin",
          "oauth.consent by user",
          "oauth.consent by user",
          "oauth_grant.create by oauth_client",
          "oauth_grant.create by oauth_client",
          "oauth_client.delete by admin"
        ])
      })
  )

  it.effect.skipIf("missing" in browserPath)(
    "an MCP client of the official SDK finds the server from /mcp, registers, runs the flow and calls a tool",
    () =>
      withBrowser(async (base, browser) => {
        const t = await setUpUser(base)
        const redirect = "http://127.0.0.1:49153/mcp-callback"
        const saved: {
          info?: OAuthClientInformationMixed
          tokens?: OAuthTokens
          verifier?: string
          authorization?: URL
        } = {}
        const provider: OAuthClientProvider = {
          get redirectUrl() {
            return redirect
          },
          get clientMetadata() {
            return {
              client_name: "E2E agent",
              redirect_uris: [redirect],
              grant_types: ["authorization_code", "refresh_token"],
              response_types: ["code"],
              token_endpoint_auth_method: "none"
            }
          },
          clientInformation: () => saved.info,
          saveClientInformation: (info) => {
            saved.info = info
          },
          tokens: () => saved.tokens,
          saveTokens: (tokens) => {
            saved.tokens = tokens
          },
          redirectToAuthorization: (url) => {
            saved.authorization = url
          },
          saveCodeVerifier: (verifier) => {
            saved.verifier = verifier
          },
          codeVerifier: () => saved.verifier!
        }
        const serverUrl = `${base}/mcp`
        expect(await auth(provider, { serverUrl })).toBe("REDIRECT")
        expect(saved.info?.client_id).toMatch(/^oac_/)
        expect(saved.authorization!.searchParams.get("code_challenge_method")).toBe("S256")
        const { callback } = await consentIn(browser, saved.authorization!.toString(), {
          email: t.email,
          decision: "Allow",
          redirect,
          expectApp: "E2E agent",
          untick: ["Beta"]
        })
        expect(await auth(provider, { serverUrl, authorizationCode: callback.searchParams.get("code")! })).toBe(
          "AUTHORIZED"
        )
        expect(saved.tokens?.access_token).toMatch(/^svc_oat_/)
        const mcp = new Client({ name: "e2e-agent", version: "1.0.0" })
        await mcp.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }))
        try {
          const result = await mcp.callTool({ name: "list_programs", arguments: {} })
          expect(result.isError).not.toBe(true)
          const listed = JSON.stringify(result.structuredContent ?? result.content)
          expect(listed).toContain(t.program.id)
          expect(listed).not.toContain(t.betaProgram.id)
        } finally {
          await mcp.close()
        }
      })
  )
})
