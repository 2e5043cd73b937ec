import { expect, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { Effect } from "effect"
import {
  actionCounts,
  browserEvent,
  getState,
  type Reply,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  webhookEvent
} from "./support/TestServer.js"

const preflight = (path: string, origin: string, method = "POST") =>
  request(path, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "content-type, x-streak-identity"
    }
  })

const expectCors = (reply: Reply, origin: string) => {
  expect(reply.headers.get("access-control-allow-origin")).toBe(origin)
  expect(reply.headers.get("vary") ?? "").toMatch(/\bOrigin\b/)
}

const expectNoCors = (reply: Reply) => {
  expect(reply.headers.get("access-control-allow-origin")).toBeNull()
}

layer(testServer(), { timeout: 120_000 })("CORS and browser rules over real HTTP", (it) => {
  it.effect("preflight OPTIONS /v1/e answers 204 with the allow headers", () =>
    Effect.gen(function*() {
      const reply = yield* preflight("/v1/e", "https://app.example.com")
      expect(reply.status).toBe(204)
      expect(reply.text).toBe("")
      expectCors(reply, "https://app.example.com")
      expect(reply.headers.get("access-control-allow-methods")).toMatch(/POST/)
      const allowed = (reply.headers.get("access-control-allow-headers") ?? "").toLowerCase()
      expect(allowed).toContain("content-type")
      expect(allowed).toContain("x-streak-identity")
      expect(Number(reply.headers.get("access-control-max-age"))).toBeGreaterThan(0)
    }))

  it.effect("preflight of /v1/state and /v1/alias answers 204 too, for any origin (it carries no siteKey)", () =>
    Effect.gen(function*() {
      const state = yield* preflight("/v1/state", "https://widget.example.net", "GET")
      expect(state.status).toBe(204)
      expectCors(state, "https://widget.example.net")
      expect(state.headers.get("access-control-allow-methods")).toMatch(/GET/)
      const alias = yield* preflight("/v1/alias", "https://app.example.com")
      expect(alias.status).toBe(204)
      expectCors(alias, "https://app.example.com")
      // With a query string as well.
      expect((yield* preflight("/v1/state?siteKey=site_x", "https://app.example.com", "GET")).status).toBe(204)
    }))

  it.effect("actual responses carry Access-Control-Allow-Origin: <origin> and Vary: Origin for allowed origins only", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ origins: ["https://app.example.com", "http://localhost:3000"] })
      const ok = yield* browserEvent(t, { userHash: "m" }, "https://app.example.com")
      expect(ok.status).toBe(202)
      expectCors(ok, "https://app.example.com")
      expect(ok.headers.get("access-control-expose-headers") ?? "").toMatch(/Retry-After/i)
      const local = yield* browserEvent(t, { userHash: "m2" }, "http://localhost:3000")
      expect(local.status).toBe(202)
      expectCors(local, "http://localhost:3000")

      const state = yield* getState(t, "m", { headers: { origin: "https://app.example.com" } })
      expect(state.status).toBe(200)
      expect(state.body.streak.current).toBe(1)
      expectCors(state, "https://app.example.com")

      // A refused origin gets no CORS header; a call without Origin neither.
      const evil = yield* browserEvent(t, { userHash: "m" }, "https://evil.example.org")
      expect(evil.status).toBe(403)
      expectNoCors(evil)
      const server = yield* serverEvent(t, { userHash: "m" })
      expect(server.status).toBe(202)
      expectNoCors(server)
      const serverState = yield* getState(t, "m")
      expectNoCors(serverState)
    }))

  it.effect("errors to an allowed origin carry the CORS headers, so the widget can read them", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const wrongEvent = yield* browserEvent(t, { userHash: "m", event: "nope" })
      expect(wrongEvent.status).toBe(400)
      expect(wrongEvent.body).toEqual({ error: "INVALID_WIDGET_KIND" })
      expectCors(wrongEvent, "https://app.example.com")
      const stateError = yield* getState(t, "m", {
        query: { event: "nope" },
        headers: { origin: "https://app.example.com" }
      })
      expect(stateError.status).toBe(400)
      expectCors(stateError, "https://app.example.com")
    }))

  it.effect("origins match exactly: scheme, host and port; default ports and case do not matter", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ origins: ["https://app.example.com"] })
      expect((yield* browserEvent(t, { userHash: "m" }, "https://app.example.com:443")).status).toBe(202)
      expect((yield* browserEvent(t, { userHash: "m" }, "https://APP.example.com")).status).toBe(202)
      for (
        const origin of [
          "http://app.example.com",
          "https://app.example.com:8443",
          "https://sub.app.example.com",
          "https://example.com"
        ]
      ) {
        const reply = yield* browserEvent(t, { userHash: "m" }, origin)
        expect({ origin, status: reply.status, body: reply.body }).toEqual({
          origin,
          status: 403,
          body: { error: "FORBIDDEN_ORIGIN" }
        })
      }
    }))

  it.effect("wildcard https://*.example.com allows every https subdomain, not the apex, http or look-alikes", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ origins: ["https://*.example.com"] })
      for (const origin of ["https://shop.example.com", "https://a.b.example.com"]) {
        const reply = yield* browserEvent(t, { userHash: "m" }, origin)
        expect({ origin, status: reply.status }).toEqual({ origin, status: 202 })
        expectCors(reply, origin)
        const state = yield* getState(t, "m", { headers: { origin } })
        expect(state.status).toBe(200)
        expectCors(state, origin)
      }
      for (
        const origin of [
          "https://example.com",
          "http://shop.example.com",
          "https://evil-example.com",
          "https://example.com.evil.org",
          "https://shop.example.com:8443"
        ]
      ) {
        const reply = yield* browserEvent(t, { userHash: "m" }, origin)
        expect({ origin, status: reply.status, body: reply.body }).toEqual({
          origin,
          status: 403,
          body: { error: "FORBIDDEN_ORIGIN" }
        })
        expectNoCors(reply)
      }
    }))

  it.effect("legacy no-origin mode (legacyNoOriginIngest) lets no-origin calls through with Deprecation: true", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ legacyNoOriginIngest: true })
      const sent = yield* browserEvent(t, { userHash: "m" }, null)
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
      expect(sent.headers.get("deprecation")).toBe("true")
      const state = yield* getState(t, "m", { headers: {} })
      expect(state.status).toBe(200)
      expect(state.body.streak.current).toBe(1)
      expect(state.headers.get("deprecation")).toBe("true")
      // With the server token, or from an allowed browser origin, the call is not deprecated.
      const withToken = yield* browserEvent(t, { userHash: "m" }, null, { "x-streak-server-token": t.serverToken })
      expect(withToken.status).toBe(202)
      expect(withToken.headers.get("deprecation")).toBeNull()
      const fromBrowser = yield* browserEvent(t, { userHash: "m" })
      expect(fromBrowser.headers.get("deprecation")).toBeNull()
      // The legacy mode does not open /v1/server/e, nor foreign origins.
      const server = yield* serverEvent(t, { userHash: "m" }, { "x-streak-server-token": "" })
      expect(server.status).toBe(401)
      expect(server.body).toEqual({ error: "SERVER_TOKEN_REQUIRED" })
      expect((yield* browserEvent(t, { userHash: "m" }, "https://evil.example.org")).status).toBe(403)
    }))

  it.effect("without legacy mode a no-origin call without token is refused and never says Deprecation", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ legacyNoOriginIngest: false })
      const sent = yield* browserEvent(t, { userHash: "m" }, null)
      expect(sent.status).toBe(401)
      expect(sent.body).toEqual({ error: "SERVER_TOKEN_REQUIRED" })
      expect(sent.headers.get("deprecation")).toBeNull()
    }))

  it.effect("browserCounting display-only: a browser action answers 202 counted:false BROWSER_COUNTING_DISABLED", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ browserCounting: "display-only" })
      const sent = yield* browserEvent(t, { userHash: "m" })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: false, reason: "BROWSER_COUNTING_DISABLED" })
      expectCors(sent, "https://app.example.com")
      const state = yield* getState(t, "m", { headers: { origin: "https://app.example.com" } })
      expect(state.status).toBe(200)
      expect(state.body.streak).toMatchObject({ current: 0, todayDone: false })
      // Stored for analytics, but no progress: the program stays test.
      expect(state.body.meta.isLive).toBe(false)
      expect(yield* actionCounts(t.programId, "test")).toMatchObject({ total: 1, counted: 0 })
      // Server-to-server counting still goes through the server and webhook doors.
      expect((yield* webhookEvent(t, { userHash: "m" })).body).toEqual({ ok: true, counted: true })
      expect((yield* serverEvent(t, { userHash: "m" })).body).toEqual({ ok: true, counted: true })
      const after = yield* getState(t, "m")
      expect(after.body.meta.isLive).toBe(true)
      expect(after.body.streak.current).toBe(1)
    }))

  it.effect("/v1/alias from an allowed origin carries the CORS headers", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const token = yield* Credentials.signAliasToken(t.signingSecret, {
        userHash: "member-1",
        anonymousId: "anon-1",
        siteKey: t.siteKey
      })
      const reply = yield* request("/v1/alias", {
        headers: { origin: "https://app.example.com" },
        body: { siteKey: t.siteKey, token }
      })
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ ok: true })
      expectCors(reply, "https://app.example.com")
    }))
})
