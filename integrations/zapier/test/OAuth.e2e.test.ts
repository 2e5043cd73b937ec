/**
 * The OAuth 2 variant of the app. Against the reference server on Postgres: an access token
 * (`svc_oat_…`) as `Authorization: Bearer` on every call, the connection label, a trigger from
 * subscribe to perform, and disconnecting the grant, which removes the subscriptions it created
 * and makes the next call ask Zapier to refresh. The authorization code and refresh exchanges are
 * checked for their request shapes only, against a loopback token endpoint that records them:
 * the reference server has no `/oauth/token` route of its own.
 */
import { createHash } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import zapier from "zapier-platform-core"
import type * as Connection from "../src/Connection.js"
import OAuthApp from "../src/indexOAuth.js"
import type * as Triggers from "../src/Triggers.js"
import * as HookReceiver from "./support/HookReceiver.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const appTester = zapier.createAppTester(OAuthApp)
const triggers = OAuthApp.triggers as Record<string, any>
const oauth2 = OAuthApp.authentication as any

const rejection = async (p: Promise<unknown>) => {
  try {
    await p
  } catch (e) {
    return e as Error
  }
  throw new Error("expected a rejection")
}

const environment = { ...process.env }
afterAll(() => {
  for (const key of ["STREAKS_BASE_URL", "CLIENT_ID", "CLIENT_SECRET"]) {
    if (environment[key] === undefined) delete process.env[key]
    else process.env[key] = environment[key]
  }
})

describe("against the reference server, with an operator-issued grant", () => {
  let server: ReferenceServer.Running
  let receiver: HookReceiver.HookReceiver
  let customer: ReferenceServer.Customer
  let grant: { id: string; accessToken: string }

  beforeAll(async () => {
    server = await ReferenceServer.start()
    receiver = await HookReceiver.start()
    customer = await ReferenceServer.provision(server.url)
    const answer = await ReferenceServer.admin(server.url, "/admin/oauth-grants", {
      workspaceIds: [customer.workspaceId],
      appName: "Zapier"
    })
    expect(answer.status).toBe(201)
    grant = answer.body
    // An OAuth integration knows its server from its environment, not from a connection field.
    process.env.STREAKS_BASE_URL = server.url
  })

  afterAll(async () => {
    await receiver?.close()
    await server?.dispose()
  })

  const authData = () => ({ access_token: grant.accessToken })

  it("the connection test sends the token as a bearer and the label says OAuth", async () => {
    expect(grant.accessToken).toMatch(/^svc_oat_/)
    const me = (await appTester(oauth2.test, { authData: authData() })) as Connection.Me
    expect(me).toMatchObject({
      workspaces: [{ id: customer.workspaceId, name: "Acme" }],
      credential: { type: "oauth" }
    })
    expect(await appTester(oauth2.connectionLabel, { authData: authData(), inputData: me })).toBe("Acme (OAuth)")
  })

  it("a trigger subscribes with the token, its delivery becomes the record, and disconnecting removes it", async () => {
    const targetUrl = receiver.targetUrl("oauth-milestone")
    const subscribeData = (await appTester(triggers.milestoneAchieved.operation.performSubscribe, {
      authData: authData(),
      inputData: { programId: customer.programId },
      targetUrl
    })) as Triggers.Subscription
    receiver.secrets.set(targetUrl, subscribeData.secret)
    await ReferenceServer.act(server.url, customer, "lesson", "oauth-member")
    const [caught] = await receiver.next(targetUrl)
    expect(caught!.verified).toBe(true)
    const records = (await appTester(triggers.milestoneAchieved.operation.perform, {
      authData: authData(),
      subscribeData,
      ...HookReceiver.hookBundle(caught!)
    })) as Array<any>
    expect(records).toEqual([expect.objectContaining({ id: caught!.headers["webhook-id"], userHash: "oauth-member" })])

    // A subscription made with the API key, as a control that events still fire and go out.
    const controlUrl = receiver.targetUrl("oauth-control")
    const control = await ReferenceServer.call(server.url, "/v1/api/hooks", {
      headers: { authorization: `Bearer ${customer.apiKey}` },
      body: { programId: customer.programId, url: controlUrl, eventTypes: ["milestone.achieved"] }
    })
    expect(control.status).toBe(201)

    expect((await ReferenceServer.admin(server.url, `/admin/oauth-grants/${grant.id}`, undefined, "DELETE")).status)
      .toBe(204)
    await ReferenceServer.act(server.url, customer, "lesson", "after-disconnect")
    await receiver.next(controlUrl)
    await ReferenceServer.admin(server.url, "/admin/jobs/deliveries")
    expect(receiver.caught.filter((c) => c.path === new URL(targetUrl).pathname)).toHaveLength(1)
    const gone = await ReferenceServer.call(server.url, `/v1/api/hooks/${subscribeData.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${customer.apiKey}` }
    })
    expect(gone.status).toBe(404)

    // The token stopped at once: a 401, which Zapier answers by refreshing (autoRefresh).
    const e = await rejection(appTester(oauth2.test, { authData: authData() }))
    expect(e.name).toBe("RefreshAuthError")
  })
})

interface Recorded {
  readonly path: string
  readonly contentType: string
  readonly authorization: string | undefined
  readonly form: Record<string, string>
}

describe("the token exchanges' request shapes, against a loopback recorder", () => {
  let recorder: Server
  let base = ""
  const requests: Array<Recorded> = []
  const verifier = "dBjftJeZ4CVP-mJ92K9m1xZ0A5ThXrI6Ks8Pw1EE4Ar7cxD3h4pN"
  const challenge = createHash("sha256").update(verifier).digest("base64url")
  let liveRefresh = "svc_ort_first"

  beforeAll(async () => {
    recorder = createServer((req, res) => {
      let raw = ""
      req.on("data", (c) => (raw += c)).on("end", () => {
        const form = Object.fromEntries(new URLSearchParams(raw))
        requests.push({
          path: req.url ?? "",
          contentType: String(req.headers["content-type"]),
          authorization: req.headers.authorization,
          form
        })
        const json = (status: number, body: unknown) =>
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
        if (form.client_id !== "client-1" || form.client_secret !== "secret-1") {
          return json(401, { error: "invalid_client" })
        }
        if (form.grant_type === "authorization_code") {
          const s256 = createHash("sha256").update(form.code_verifier ?? "").digest("base64url")
          if (form.code !== "code-1" || s256 !== challenge) return json(400, { error: "invalid_grant" })
          return json(200, {
            access_token: "svc_oat_one",
            token_type: "Bearer",
            expires_in: 3600,
            refresh_token: liveRefresh
          })
        }
        if (form.grant_type === "refresh_token") {
          if (form.refresh_token !== liveRefresh) {
            return json(400, { error: "invalid_grant", error_description: "refresh token already used" })
          }
          liveRefresh = `svc_ort_${requests.length}`
          return json(200, {
            access_token: "svc_oat_two",
            token_type: "Bearer",
            expires_in: 3600,
            refresh_token: liveRefresh
          })
        }
        return json(400, { error: "unsupported_grant_type" })
      })
    })
    await new Promise<void>((resolve) => recorder.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`
    process.env.STREAKS_BASE_URL = base
    process.env.CLIENT_ID = "client-1"
    process.env.CLIENT_SECRET = "secret-1"
  })

  afterAll(async () => {
    recorder?.closeAllConnections()
    await new Promise<void>((resolve) => recorder ? recorder.close(() => resolve()) : resolve())
  })

  it("authorizeUrl names the client, Zapier's state and redirect_uri, on the server's /oauth/authorize", async () => {
    const url = new URL(
      await appTester(oauth2.oauth2Config.authorizeUrl, {
        inputData: { state: "st-1", redirect_uri: "https://zapier.com/dashboard/auth/oauth/return/App1CLIAPI/" }
      }) as string
    )
    expect(`${url.origin}${url.pathname}`).toBe(`${base}/oauth/authorize`)
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      client_id: "client-1",
      state: "st-1",
      redirect_uri: "https://zapier.com/dashboard/auth/oauth/return/App1CLIAPI/"
    })
  })

  it("getAccessToken posts the code with its PKCE verifier (client_secret_post) and keeps both tokens", async () => {
    const tokens = await appTester(oauth2.oauth2Config.getAccessToken, {
      inputData: { code: "code-1", redirect_uri: "https://zapier.example/return", code_verifier: verifier }
    })
    expect(tokens).toEqual({ access_token: "svc_oat_one", refresh_token: "svc_ort_first", expires_in: 3600 })
    const sent = requests.at(-1)!
    expect(sent.path).toBe("/oauth/token")
    expect(sent.contentType).toContain("application/x-www-form-urlencoded")
    expect(sent.authorization).toBeUndefined()
    expect(sent.form).toEqual({
      grant_type: "authorization_code",
      code: "code-1",
      redirect_uri: "https://zapier.example/return",
      code_verifier: verifier,
      client_id: "client-1",
      client_secret: "secret-1"
    })
  })

  it("refreshAccessToken sends the refresh token, returns the rotated one, and a reused one asks to reconnect", async () => {
    const first = (await appTester(oauth2.oauth2Config.refreshAccessToken, {
      authData: { access_token: "svc_oat_one", refresh_token: "svc_ort_first" }
    })) as { refresh_token: string }
    expect(first).toMatchObject({ access_token: "svc_oat_two" })
    expect(first.refresh_token).not.toBe("svc_ort_first")
    const sent = requests.at(-1)!
    // The old access token is not sent to the token endpoint.
    expect(sent.authorization).toBeUndefined()
    expect(sent.form).toEqual({
      grant_type: "refresh_token",
      refresh_token: "svc_ort_first",
      client_id: "client-1",
      client_secret: "secret-1"
    })
    const reused = await rejection(
      appTester(oauth2.oauth2Config.refreshAccessToken, { authData: { refresh_token: "svc_ort_first" } })
    )
    expect(reused.name).toBe("ExpiredAuthError")
    expect(reused.message).toContain("refresh token already used")
  })

  it("a wrong code is an error with the RFC 6749 code", async () => {
    const e = await rejection(
      appTester(oauth2.oauth2Config.getAccessToken, {
        inputData: { code: "code-2", redirect_uri: "https://zapier.example/return", code_verifier: verifier }
      })
    )
    expect(JSON.parse(e.message)).toMatchObject({ code: "invalid_grant", status: 400 })
  })
})
