/**
 * The OAuth 2 variant of the app against the reference server on Postgres and its authorization
 * server (docs/oauth.md). The dance as Zapier runs it: an operator-registered client for Zapier's
 * redirect URI, the app's `authorizeUrl` with Zapier's PKCE challenge added, a user who signs in
 * and clicks Allow over HTTP, then the app's `getAccessToken` with the code and the verifier,
 * calls with the token it got (connection test, trigger, action, search), a revoked access token
 * answered 401 and turned into RefreshAuthError, `refreshAccessToken` with rotation, and the reuse
 * of a used refresh token, which ends the grant. Also an operator-issued grant: a trigger from
 * subscribe to perform, and disconnecting, which removes the subscriptions it created.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import zapier from "zapier-platform-core"
import type * as Connection from "../src/Connection.js"
import OAuthApp from "../src/indexOAuth.js"
import type * as OAuth from "../src/OAuth.js"
import type * as Triggers from "../src/Triggers.js"
import * as HookReceiver from "./support/HookReceiver.js"
import * as OAuthConsent from "./support/OAuthConsent.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

// Sign-in hashes with argon2id: more than the default 5 s on a busy machine.
vi.setConfig({ testTimeout: 60_000 })

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

/** Zapier's error: a `z.errors.Error` carries its details as JSON in the message. */
const details = (e: Error) => {
  try {
    return JSON.parse(e.message)
  } catch {
    return {}
  }
}

const environment = { ...process.env }
let server: ReferenceServer.Running
let receiver: HookReceiver.HookReceiver
let customer: ReferenceServer.Customer

beforeAll(async () => {
  server = await ReferenceServer.start()
  receiver = await HookReceiver.start()
  customer = await ReferenceServer.provision(server.url)
  // An OAuth integration knows its server from its environment, not from a connection field.
  process.env.STREAKS_BASE_URL = server.url
})

afterAll(async () => {
  for (const key of ["STREAKS_BASE_URL", "CLIENT_ID", "CLIENT_SECRET"]) {
    if (environment[key] === undefined) delete process.env[key]
    else process.env[key] = environment[key]
  }
  await receiver?.close()
  await server?.dispose()
})

/** A hook the customer's API key subscribes, as a control that events fire and go out. */
const control = async (name: string, programId = customer.programId) => {
  const url = receiver.targetUrl(name)
  const answer = await ReferenceServer.call(server.url, "/v1/api/hooks", {
    headers: { authorization: `Bearer ${customer.apiKey}` },
    body: { programId, url, eventTypes: ["milestone.achieved"] }
  })
  expect(answer.status).toBe(201)
  return url
}

/** Whether the subscription still exists: deleting it with the customer's API key finds it (and removes it). */
const subscriptionExists = async (id: string) =>
  (await ReferenceServer.call(server.url, `/v1/api/hooks/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${customer.apiKey}` }
  })).status === 204

describe("with an operator-issued grant", () => {
  let grant: { id: string; accessToken: string }

  beforeAll(async () => {
    const answer = await ReferenceServer.admin(server.url, "/admin/oauth-grants", {
      workspaceIds: [customer.workspaceId],
      appName: "Zapier"
    })
    expect(answer.status).toBe(201)
    grant = answer.body
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

    const controlUrl = await control("oauth-control")

    expect((await ReferenceServer.admin(server.url, `/admin/oauth-grants/${grant.id}`, undefined, "DELETE")).status)
      .toBe(204)
    await ReferenceServer.act(server.url, customer, "lesson", "after-disconnect")
    await receiver.next(controlUrl)
    await ReferenceServer.admin(server.url, "/admin/jobs/deliveries")
    expect(receiver.caught.filter((c) => c.path === new URL(targetUrl).pathname)).toHaveLength(1)
    expect(await subscriptionExists(subscribeData.id)).toBe(false)

    // The token stopped at once: a 401, which Zapier answers by refreshing (autoRefresh).
    const e = await rejection(appTester(oauth2.test, { authData: authData() }))
    expect(e.name).toBe("RefreshAuthError")
  })
})

describe("the OAuth dance as Zapier runs it, against the server's authorization server", () => {
  // The shape of the redirect URI Zapier gives a CLI integration (`zapier-platform describe`).
  const REDIRECT = "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/"
  const PASSWORD = "correct horse battery staple"
  let client: { clientId: string; clientSecret: string }
  let cookie: string

  beforeAll(async () => {
    const created = await ReferenceServer.admin(server.url, "/admin/oauth-clients", {
      name: "Zapier",
      redirectUris: [REDIRECT]
    })
    expect(created.status).toBe(201)
    client = created.body
    process.env.CLIENT_ID = client.clientId
    process.env.CLIENT_SECRET = client.clientSecret
    const email = `zapier-user-${Math.random().toString(36).slice(2)}@example.com`
    const user = await ReferenceServer.admin(server.url, "/admin/users", {
      email,
      name: "Ada",
      workspaces: [{ workspaceId: customer.workspaceId, role: "owner" }],
      password: PASSWORD
    })
    expect(user.status).toBe(201)
    cookie = await OAuthConsent.signIn(server.url, email, PASSWORD)
  })

  /**
   * Zapier's side of the redirect: the app's `authorizeUrl` with Zapier's `state` and redirect
   * URI, Zapier's PKCE challenge added, the user's Allow, and the code Zapier reads off its
   * redirect URI. Returns the code with the verifier Zapier kept.
   */
  const authorize = async () => {
    const state = `st-${Math.random().toString(36).slice(2)}`
    const { challenge, verifier } = OAuthConsent.pkce()
    const url = (await appTester(oauth2.oauth2Config.authorizeUrl, {
      inputData: { state, redirect_uri: REDIRECT }
    })) as string
    expect(url.startsWith(`${server.url}/oauth/authorize?`)).toBe(true)
    const back = await OAuthConsent.allow(OAuthConsent.withChallenge(url, challenge), {
      cookie,
      workspaceIds: [customer.workspaceId]
    })
    expect(`${back.url.origin}${back.url.pathname}`).toBe(REDIRECT)
    expect(back.params).toMatchObject({ state, iss: server.url })
    expect(back.params.code).toMatch(/^svc_ocd_/)
    return { code: back.params.code!, verifier }
  }

  const exchange = (code: string, verifier: string) =>
    appTester(oauth2.oauth2Config.getAccessToken, {
      inputData: { code, redirect_uri: REDIRECT, code_verifier: verifier }
    }) as Promise<OAuth.Tokens>

  // What Zapier keeps as the connection's authData: the tokens, as strings.
  const refresh = (tokens: Pick<OAuth.Tokens, "access_token" | "refresh_token">) =>
    appTester(oauth2.oauth2Config.refreshAccessToken, {
      authData: { access_token: tokens.access_token, refresh_token: tokens.refresh_token }
    }) as Promise<OAuth.Tokens>

  const search = (accessToken: string, userHash: string) =>
    appTester((OAuthApp.searches as Record<string, any>).findMemberStreak.operation.perform, {
      authData: { access_token: accessToken },
      inputData: { programId: customer.programId, userHash }
    }) as Promise<Array<any>>

  let first: OAuth.Tokens
  let second: OAuth.Tokens
  let subscription: { targetUrl: string; subscribeData: Triggers.Subscription }

  it("getAccessToken trades the code and the PKCE verifier; the token runs the test, a trigger, the action and the search", async () => {
    const { code, verifier } = await authorize()
    first = await exchange(code, verifier)
    expect(first.access_token).toMatch(/^svc_oat_/)
    expect(first.refresh_token).toMatch(/^svc_ort_/)
    expect(first.expires_in).toBe(3600)
    const authData = { access_token: first.access_token, refresh_token: first.refresh_token }

    const me = (await appTester(oauth2.test, { authData })) as Connection.Me
    expect(me).toMatchObject({
      workspaces: [{ id: customer.workspaceId, name: "Acme" }],
      credential: { type: "oauth" }
    })
    expect(await appTester(oauth2.connectionLabel, { authData, inputData: me })).toBe("Acme (OAuth)")

    const targetUrl = receiver.targetUrl("oauth-dance-milestone")
    const subscribeData = (await appTester(triggers.milestoneAchieved.operation.performSubscribe, {
      authData,
      inputData: { programId: customer.programId },
      targetUrl
    })) as Triggers.Subscription
    receiver.secrets.set(targetUrl, subscribeData.secret)
    subscription = { targetUrl, subscribeData }

    // The action counts the member's first day, which reaches the 1-day milestone: the trigger fires.
    const counted = await appTester((OAuthApp.creates as Record<string, any>).recordMemberAction.operation.perform, {
      authData,
      inputData: { programId: customer.programId, userHash: "oauth-zapped" }
    })
    expect(counted).toMatchObject({ userHash: "oauth-zapped", counted: true, duplicate: false })
    const [caught] = await receiver.next(targetUrl)
    expect(caught!.verified).toBe(true)
    const records = (await appTester(triggers.milestoneAchieved.operation.perform, {
      authData,
      subscribeData,
      ...HookReceiver.hookBundle(caught!)
    })) as Array<any>
    expect(records).toEqual([expect.objectContaining({ id: caught!.headers["webhook-id"], userHash: "oauth-zapped" })])

    expect(await search(first.access_token, "oauth-zapped")).toEqual([
      expect.objectContaining({ userHash: "oauth-zapped", current: 1, best: 1, todayDone: true })
    ])
  })

  it("a revoked access token answers 401, which the platform turns into RefreshAuthError; refreshAccessToken gets a new pair that carries on", async () => {
    expect((await OAuthConsent.revoke(server.url, first.access_token, client)).status).toBe(200)
    const stale = await rejection(search(first.access_token, "oauth-zapped"))
    // The platform's own stale-auth check (autoRefresh) raised it, before the app's error handling
    // (whose RefreshAuthError names the server's code): Zapier refreshes on either.
    expect(stale.name).toBe("RefreshAuthError")
    expect(stale.message).not.toContain("UNAUTHORIZED")
    const withoutAutoRefresh = zapier.createAppTester({
      ...OAuthApp,
      authentication: { ...oauth2, oauth2Config: { ...oauth2.oauth2Config, autoRefresh: false } }
    })
    const own = await rejection(
      withoutAutoRefresh((OAuthApp.searches as Record<string, any>).findMemberStreak.operation.perform, {
        authData: { access_token: first.access_token },
        inputData: { programId: customer.programId, userHash: "oauth-zapped" }
      })
    )
    expect(own.name).toBe("RefreshAuthError")
    expect(own.message).toContain("UNAUTHORIZED")

    // What Zapier does on that error: refreshAccessToken with the connection's authData, then the call again.
    second = await refresh({ access_token: first.access_token, refresh_token: first.refresh_token })
    expect(second.access_token).toMatch(/^svc_oat_/)
    expect(second.access_token).not.toBe(first.access_token)
    expect(second.refresh_token).toMatch(/^svc_ort_/)
    expect(second.refresh_token).not.toBe(first.refresh_token)
    expect(second.expires_in).toBe(3600)
    expect(await search(second.access_token, "oauth-zapped")).toEqual([expect.objectContaining({ current: 1 })])

    // Revoking an access token ends that token only: the grant's subscription still delivers.
    await ReferenceServer.act(server.url, customer, "lesson", "after-refresh")
    const caught = await receiver.next(subscription.targetUrl, 2)
    expect(JSON.parse(caught[1]!.content)).toMatchObject({ data: { userHash: "after-refresh" } })
  })

  it("rotation: the used refresh token is refused (reconnect), and its reuse ends the grant, its tokens and its subscriptions", async () => {
    const reused = await rejection(refresh({ access_token: second.access_token, refresh_token: first.refresh_token }))
    expect(reused.name).toBe("ExpiredAuthError")
    // The reuse revoked the whole grant (docs/oauth.md, "Refresh"): the rotated pair stops too.
    expect((await rejection(search(second.access_token, "oauth-zapped"))).name).toBe("RefreshAuthError")
    expect((await rejection(refresh(second))).name).toBe("ExpiredAuthError")
    expect(await subscriptionExists(subscription.subscribeData.id)).toBe(false)
  })

  it("a wrong PKCE verifier is invalid_grant, and a wrong client secret is invalid_client, not a refresh", async () => {
    const { code } = await authorize()
    const wrong = await rejection(exchange(code, OAuthConsent.pkce().verifier))
    expect(wrong.name).toBe("AppError")
    expect(details(wrong)).toMatchObject({ code: "invalid_grant", status: 400 })

    const again = await authorize()
    process.env.CLIENT_SECRET = "svc_ocs_wrong"
    try {
      const refused = await rejection(exchange(again.code, again.verifier))
      expect(refused.name).toBe("AppError")
      expect(details(refused)).toMatchObject({ code: "invalid_client", status: 401 })
    } finally {
      process.env.CLIENT_SECRET = client.clientSecret
    }
    // The code was not spent by the refused client: the right one still trades it.
    expect((await exchange(again.code, again.verifier)).access_token).toMatch(/^svc_oat_/)
  })
})
