/**
 * The authorization server end to end (docs/oauth.md): the reference server (`Main.layer`) on
 * Postgres, driven by `oauth4webapi` (a real OAuth client library) for discovery, the code
 * exchange, refresh and revocation; the client and redirect checks before any sign-in, PKCE,
 * code and refresh-token reuse, registration and client removal over plain HTTP.
 */
import { expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer } from "effect"
import * as oauth from "oauth4webapi"
import * as ReferenceServer from "./support/ReferenceServer.js"

const ADMIN = "oauth-e2e-admin"
const REDIRECT = "http://127.0.0.1:49152/callback"

const settings = {
  STREAKS_ADMIN_TOKEN: ADMIN,
  STREAKS_SECRET_KEY: "oauth-e2e-secret-key",
  STREAKS_DB_POOL_SIZE: "4",
  STREAKS_DIRECTORY_CACHE_TTL: "0 seconds",
  STREAKS_OAUTH_DCR: "true",
  STREAKS_RATE_LIMIT_AUTH_FAILURES: "0"
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
