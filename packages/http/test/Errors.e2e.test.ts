import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  ADMIN_TOKEN,
  browserEvent,
  getState,
  type Reply,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  webhookEvent
} from "./support/TestServer.js"

/** The exact error answer of docs/api.md#errors: status and body `{"error":CODE}`, nothing else. */
const expectError = (reply: Reply, status: number, code: string) => {
  expect({ status: reply.status, text: reply.text }).toEqual({ status, text: JSON.stringify({ error: code }) })
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
}

const minutesFromNow = (m: number) => new Date(Date.now() + m * 60_000).toISOString()

layer(testServer(), { timeout: 120_000 })("error codes over real HTTP", (it) => {
  it.effect("INVALID_BODY: a body that is not JSON, on every ingest door", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const json = { "content-type": "application/json" }
      expectError(
        yield* request("/v1/e", { headers: { ...json, origin: "https://app.example.com" }, raw: "{not json" }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/v1/server/e", {
          headers: { ...json, "x-streak-server-token": t.serverToken },
          raw: "siteKey=x"
        }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request(`/v1/webhook/${t.siteKey}/e`, {
          headers: { ...json, "x-streak-webhook-secret": t.webhookSecret },
          raw: ""
        }),
        400,
        "INVALID_BODY"
      )
      // JSON, but not an object.
      expectError(
        yield* request("/v1/server/e", {
          headers: { "x-streak-server-token": t.serverToken },
          body: ["lesson_completed"]
        }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/v1/server/e", { headers: { "x-streak-server-token": t.serverToken }, body: null }),
        400,
        "INVALID_BODY"
      )
    }))

  it.effect("INVALID_BODY: a required field is missing (siteKey, userHash, event; webhook: event, userHash)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const token = { "x-streak-server-token": t.serverToken }
      expectError(
        yield* request("/v1/server/e", { headers: token, body: { userHash: "m", event: "lesson_completed" } }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/v1/server/e", { headers: token, body: { siteKey: t.siteKey, event: "lesson_completed" } }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/v1/server/e", { headers: token, body: { siteKey: t.siteKey, userHash: "m" } }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/v1/e", {
          headers: { origin: "https://app.example.com" },
          body: { siteKey: t.siteKey, userHash: "m" }
        }),
        400,
        "INVALID_BODY"
      )
      expectError(yield* webhookEvent(t, { event: undefined, userHash: "m" }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, {}), 400, "INVALID_BODY")
      // An empty string is no value either.
      expectError(yield* serverEvent(t, { userHash: "" }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", event: "" }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_BODY: fields of the wrong type", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: 42 }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", event: ["lesson_completed"] }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", siteKey: 7 }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", meta: "not an object" }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", ts: 1_700_000_000 }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", idempotencyKey: 12 }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", test: "yes" }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, { userHash: { id: "m" } }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_BODY: a bad ISO 8601 ts", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      for (
        const ts of ["yesterday", "2024-02-30T10:00:00Z", "2024-05-01", "2024-05-01T25:00:00Z", "2024-05-01T10:00:00"]
      ) {
        expectError(yield* serverEvent(t, { userHash: "m", ts }), 400, "INVALID_BODY")
      }
      expectError(yield* webhookEvent(t, { userHash: "m", ts: "not a date" }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_BODY: an unknown IANA tz", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: "m", tz: "Mars/Olympus_Mons" }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, { userHash: "m", tz: "Nowhere/City" }), 400, "INVALID_BODY")
      expectError(yield* browserEvent(t, { userHash: "m", tz: "" }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_BODY: an unknown eventType", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* browserEvent(t, { userHash: "m", eventType: "click" }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(t, { userHash: "m", eventType: "STREAK_INTERACTION" }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_BODY: a userHash that is a raw e-mail address", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: "jane.doe@example.com" }), 400, "INVALID_BODY")
      expectError(yield* browserEvent(t, { userHash: "jane@example.org" }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, { userHash: "jane@example.org" }), 400, "INVALID_BODY")
      expectError(yield* getState(t, "jane@example.org"), 400, "INVALID_BODY")
      // A hash is fine.
      expect((yield* serverEvent(t, { userHash: "b1946ac92492d2347c6235b4d2611184" })).status).toBe(202)
    }))

  it.effect("INVALID_BODY: a ts more than 5 minutes in the future; a little clock skew is accepted", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: "m", ts: minutesFromNow(10) }), 400, "INVALID_BODY")
      expectError(yield* browserEvent(t, { userHash: "m", ts: minutesFromNow(60) }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(t, { userHash: "m", ts: minutesFromNow(6) }), 400, "INVALID_BODY")
      const skewed = yield* serverEvent(t, { userHash: "m", ts: minutesFromNow(2) })
      expect(skewed.status).toBe(202)
    }))

  it.effect("INVALID_BODY: event and kind both present and different", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* serverEvent(t, { userHash: "m", kind: "other_event" }), 400, "INVALID_BODY")
      expectError(yield* browserEvent(t, { userHash: "m", kind: "lesson" }), 400, "INVALID_BODY")
      expectError(
        yield* getState(t, "m", { query: { kind: "other_event" } }),
        400,
        "INVALID_BODY"
      )
    }))

  it.effect("INVALID_BODY: /v1/state without siteKey, userHash or event", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const token = { "x-streak-server-token": t.serverToken }
      expectError(
        yield* request(`/v1/state?userHash=m&event=lesson_completed`, { headers: token }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request(`/v1/state?siteKey=${t.siteKey}&event=lesson_completed`, { headers: token }),
        400,
        "INVALID_BODY"
      )
      expectError(yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=m`, { headers: token }), 400, "INVALID_BODY")
    }))

  it.effect("check order: INVALID_BODY (step 2) comes before INVALID_SITE_KEY (step 3), with or without Origin", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const unknown = { ...t, siteKey: "site_doesnotexist000000" }
      for (const headers of [{}, { origin: "https://app.example.com" }]) {
        expectError(yield* getState(unknown, "jane@example.org", { headers }), 400, "INVALID_BODY")
        expectError(yield* getState(unknown, "m", { headers, query: { kind: "other" } }), 400, "INVALID_BODY")
      }
      expectError(yield* browserEvent(unknown, { userHash: "jane@example.org" }), 400, "INVALID_BODY")
      expectError(yield* serverEvent(unknown, { userHash: "m", tz: "Mars/Base" }), 400, "INVALID_BODY")
      expectError(yield* webhookEvent(unknown, { userHash: "m", ts: "soon" }), 400, "INVALID_BODY")
    }))

  it.effect("INVALID_SITE_KEY: an unknown siteKey on /v1/e, /v1/server/e, webhook ingest and /v1/state", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const unknown = { ...t, siteKey: "site_doesnotexist000000" }
      expectError(yield* browserEvent(unknown, { userHash: "m" }), 400, "INVALID_SITE_KEY")
      expectError(yield* serverEvent(unknown, { userHash: "m" }), 400, "INVALID_SITE_KEY")
      expectError(yield* webhookEvent(unknown, { userHash: "m" }), 400, "INVALID_SITE_KEY")
      expectError(yield* getState(unknown, "m"), 400, "INVALID_SITE_KEY")
      // Not even shaped like a siteKey.
      expectError(yield* serverEvent({ ...t, siteKey: "not-a-site-key" }, { userHash: "m" }), 400, "INVALID_SITE_KEY")
      // A malformed escape in the webhook path names no project (and must not crash the server).
      for (const segment of ["%E0%A4%A", "site_%E0%A4%A", "%"]) {
        expectError(
          yield* request(`/v1/webhook/${segment}/e`, {
            headers: { "x-streak-webhook-secret": t.webhookSecret },
            body: { event: "lesson_completed", userHash: "m" }
          }),
          400,
          "INVALID_SITE_KEY"
        )
      }
      expect((yield* request("/health")).status).toBe(200)
    }))

  it.effect("SITE_KEY_MISMATCH: a webhook body siteKey different from the URL's", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      expectError(yield* webhookEvent(t, { userHash: "m", siteKey: other.siteKey }), 400, "SITE_KEY_MISMATCH")
      expectError(yield* webhookEvent(t, { userHash: "m", siteKey: "site_whatever" }), 400, "SITE_KEY_MISMATCH")
      // Checked before the secret (step 3 before step 5).
      expectError(yield* webhookEvent(t, { userHash: "m", siteKey: other.siteKey }, null), 400, "SITE_KEY_MISMATCH")
    }))

  it.effect("INVALID_WIDGET_KIND: no program counts the event (exact match)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(yield* browserEvent(t, { userHash: "m", event: "lesson_started" }), 400, "INVALID_WIDGET_KIND")
      expectError(yield* serverEvent(t, { userHash: "m", event: "Lesson_Completed" }), 400, "INVALID_WIDGET_KIND")
      expectError(yield* serverEvent(t, { userHash: "m", event: "lesson_completed " }), 400, "INVALID_WIDGET_KIND")
      expectError(yield* getState(t, "m", { query: { event: "lesson_started" } }), 400, "INVALID_WIDGET_KIND")
    }))

  it.effect("SERVER_TOKEN_REQUIRED: no Origin and no token, or a wrong token", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      // /v1/e without Origin is a server call.
      expectError(yield* browserEvent(t, { userHash: "m" }, null), 401, "SERVER_TOKEN_REQUIRED")
      expectError(
        yield* browserEvent(t, { userHash: "m" }, null, { "x-streak-server-token": "sst_wrong" }),
        401,
        "SERVER_TOKEN_REQUIRED"
      )
      // /v1/server/e: missing, wrong, another project's token.
      expectError(
        yield* request("/v1/server/e", { body: { siteKey: t.siteKey, userHash: "m", event: "lesson_completed" } }),
        401,
        "SERVER_TOKEN_REQUIRED"
      )
      expectError(
        yield* serverEvent(t, { userHash: "m" }, { "x-streak-server-token": "sst_wrong" }),
        401,
        "SERVER_TOKEN_REQUIRED"
      )
      expectError(
        yield* serverEvent(t, { userHash: "m" }, { "x-streak-server-token": other.serverToken }),
        401,
        "SERVER_TOKEN_REQUIRED"
      )
      // /v1/state without Origin follows the same rule.
      expectError(yield* getState(t, "m", { headers: {} }), 401, "SERVER_TOKEN_REQUIRED")
      expectError(
        yield* getState(t, "m", { headers: { "x-streak-server-token": other.serverToken } }),
        401,
        "SERVER_TOKEN_REQUIRED"
      )
      // /v1/e with a valid token and no Origin is accepted.
      const ok = yield* browserEvent(t, { userHash: "m" }, null, { "x-streak-server-token": t.serverToken })
      expect(ok.status).toBe(202)
      expect(ok.headers.get("deprecation")).toBeNull()
    }))

  it.effect("WEBHOOK_SECRET_REQUIRED: a missing or wrong secret", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      expectError(yield* webhookEvent(t, { userHash: "m" }, null), 401, "WEBHOOK_SECRET_REQUIRED")
      expectError(yield* webhookEvent(t, { userHash: "m" }, "whi_wrong"), 401, "WEBHOOK_SECRET_REQUIRED")
      expectError(yield* webhookEvent(t, { userHash: "m" }, ""), 401, "WEBHOOK_SECRET_REQUIRED")
      expectError(yield* webhookEvent(t, { userHash: "m" }, other.webhookSecret), 401, "WEBHOOK_SECRET_REQUIRED")
      // The server token is not a webhook secret.
      expectError(yield* webhookEvent(t, { userHash: "m" }, t.serverToken), 401, "WEBHOOK_SECRET_REQUIRED")
    }))

  it.effect("WEBHOOK_SECRET_REQUIRED: an unknown event on the webhook door gives 401, not 400", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expectError(
        yield* webhookEvent(t, { userHash: "m", event: "no_such_event" }, null),
        401,
        "WEBHOOK_SECRET_REQUIRED"
      )
      expectError(
        yield* webhookEvent(t, { userHash: "m", event: "no_such_event" }, "whi_guess"),
        401,
        "WEBHOOK_SECRET_REQUIRED"
      )
      // Even with the secret of an existing program: the event key's existence is never revealed.
      expectError(
        yield* webhookEvent(t, { userHash: "m", event: "no_such_event" }, t.webhookSecret),
        401,
        "WEBHOOK_SECRET_REQUIRED"
      )
    }))

  it.effect("webhook secret is per program: one program's secret does not count another's event", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const second = yield* request("/admin/programs", {
        headers: { "x-admin-token": ADMIN_TOKEN },
        body: { projectId: t.projectId, name: "Workout", eventKey: "workout_done", milestones: [] }
      })
      expect(second.status).toBe(201)
      expectError(yield* webhookEvent(t, { userHash: "m", event: "workout_done" }), 401, "WEBHOOK_SECRET_REQUIRED")
      const ok = yield* webhookEvent(t, { userHash: "m", event: "workout_done" }, second.body.webhookSecret)
      expect(ok.status).toBe(202)
    }))

  it.effect("FORBIDDEN_ORIGIN: a browser origin not in the allowed origins, on /v1/e and /v1/state", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      for (
        const origin of ["https://evil.example.org", "http://app.example.com", "https://app.example.com:8443", "null"]
      ) {
        const sent = yield* browserEvent(t, { userHash: "m" }, origin)
        expectError(sent, 403, "FORBIDDEN_ORIGIN")
        expect(sent.headers.get("access-control-allow-origin")).toBeNull()
      }
      const state = yield* getState(t, "m", { headers: { origin: "https://evil.example.org" } })
      expectError(state, 403, "FORBIDDEN_ORIGIN")
      expect(state.headers.get("access-control-allow-origin")).toBeNull()
      // A server token does not make a foreign browser origin acceptable.
      expectError(
        yield* browserEvent(t, { userHash: "m" }, "https://evil.example.org", {
          "x-streak-server-token": t.serverToken
        }),
        403,
        "FORBIDDEN_ORIGIN"
      )
    }))

  it.effect("NOT_FOUND: an unknown route answers 404 {\"error\":\"NOT_FOUND\"}", () =>
    Effect.gen(function*() {
      expectError(yield* request("/v1/nope"), 404, "NOT_FOUND")
      expectError(yield* request("/v2/e", { body: {} }), 404, "NOT_FOUND")
      expectError(yield* request("/", {}), 404, "NOT_FOUND")
      expectError(yield* request("/v1/webhook/site_x/e/extra", { body: {} }), 404, "NOT_FOUND")
      // A known path with a method it does not serve.
      expectError(yield* request("/v1/e", { method: "GET" }), 404, "NOT_FOUND")
      expectError(yield* request("/v1/state", { method: "DELETE" }), 404, "NOT_FOUND")
    }))

  it.effect("UNAUTHORIZED: every admin route answers 401 without, or with a wrong, X-Admin-Token", () =>
    Effect.gen(function*() {
      const routes: ReadonlyArray<readonly [string, string, unknown]> = [
        ["POST", "/admin/alias", { siteKey: "site_x", anonymousId: "a", userHash: "u" }],
        ["POST", "/admin/workspaces", { name: "Acme", plan: "starter" }],
        ["PATCH", "/admin/workspaces/ws_x", { plan: "growth" }],
        ["POST", "/admin/projects", { workspaceId: "ws_x", name: "P", allowedOrigins: [] }],
        ["POST", "/admin/programs", { projectId: "prj_x", name: "P", eventKey: "e", milestones: [] }],
        ["POST", "/admin/programs/prg_x/webhook-secret", undefined],
        ["POST", "/admin/programs/prg_x/status", { status: "live" }],
        ["POST", "/admin/workspaces/ws_x/api-keys", { name: "k" }],
        ["DELETE", "/admin/api-keys/key_x", undefined],
        ["POST", "/admin/oauth-grants", { workspaceIds: ["ws_x"], appName: "Zapier" }],
        ["DELETE", "/admin/oauth-grants/oag_x", undefined],
        ["POST", "/admin/jobs/due-checks", undefined],
        ["POST", "/admin/jobs/deliveries", undefined]
      ]
      for (const [method, path, body] of routes) {
        for (const headers of [{}, { "x-admin-token": "wrong-token" }, { "x-admin-token": "" }]) {
          const reply = yield* request(path, { method, headers, ...(body !== undefined ? { body } : {}) })
          expect({ path, method, status: reply.status, body: reply.body }).toEqual({
            path,
            method,
            status: 401,
            body: { error: "UNAUTHORIZED" }
          })
        }
      }
    }))

  it.effect("UNAUTHORIZED: the customer REST API without or with a bad bearer token", () =>
    Effect.gen(function*() {
      expectError(yield* request("/v1/api/me"), 401, "UNAUTHORIZED")
      expectError(
        yield* request("/v1/api/me", { headers: { authorization: "Bearer svc_api_nope" } }),
        401,
        "UNAUTHORIZED"
      )
      expectError(
        yield* request("/v1/api/programs", { headers: { "x-admin-token": ADMIN_TOKEN } }),
        401,
        "UNAUTHORIZED"
      )
    }))

  it.effect("INVALID_BODY on admin routes: not JSON, missing fields, an unknown plan; NOT_FOUND for unknown ids", () =>
    Effect.gen(function*() {
      const h = { "x-admin-token": ADMIN_TOKEN }
      expectError(
        yield* request("/admin/workspaces", { headers: { ...h, "content-type": "application/json" }, raw: "{oops" }),
        400,
        "INVALID_BODY"
      )
      expectError(yield* request("/admin/workspaces", { headers: h, body: { name: "Acme" } }), 400, "INVALID_BODY")
      expectError(
        yield* request("/admin/workspaces", { headers: h, body: { name: "Acme", plan: "platinum" } }),
        400,
        "INVALID_BODY"
      )
      expectError(
        yield* request("/admin/workspaces/ws_doesnotexist", { method: "PATCH", headers: h, body: { plan: "growth" } }),
        404,
        "NOT_FOUND"
      )
      expectError(
        yield* request("/admin/projects", {
          headers: h,
          body: { workspaceId: "ws_doesnotexist", name: "P", allowedOrigins: [] }
        }),
        404,
        "NOT_FOUND"
      )
      expectError(
        yield* request("/admin/programs/prg_doesnotexist/webhook-secret", { method: "POST", headers: h }),
        404,
        "NOT_FOUND"
      )
      expectError(
        yield* request("/admin/api-keys/key_doesnotexist", { method: "DELETE", headers: h }),
        404,
        "NOT_FOUND"
      )
    }))

  it.effect("never a 500: a battery of malformed requests answers 4xx with a JSON error code", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const replies: Array<Reply> = [
        yield* request("/v1/e", {
          headers: { "content-type": "text/plain", origin: "https://app.example.com" },
          raw: "x"
        }),
        yield* request("/v1/e", { headers: { "content-type": "application/json" }, raw: "\"just a string\"" }),
        yield* request("/v1/server/e", { headers: { "content-type": "application/json" }, raw: "12" }),
        yield* request(`/v1/webhook/${encodeURIComponent("%%%")}/e`, { body: { event: "x", userHash: "m" } }),
        yield* request("/v1/webhook/%E0%A4%A/e", { body: { event: "x", userHash: "m" } }),
        yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=${"x".repeat(300)}&event=lesson_completed`),
        yield* request(`/v1/state?siteKey=%E0%A4%A&userHash=m&event=e`),
        yield* request("/v1/alias", { body: { siteKey: t.siteKey } }),
        yield* request("/v1/alias", { headers: { "content-type": "application/json" }, raw: "[" }),
        yield* serverEvent(t, { userHash: "m", error: 42 }),
        yield* serverEvent(t, { userHash: "m", source: "carrier-pigeon" })
      ]
      for (const r of replies) {
        expect(r.status).toBeGreaterThanOrEqual(400)
        expect(r.status).toBeLessThan(500)
        expect(typeof r.body?.error).toBe("string")
      }
      // Deeply nested meta within the size limits: accepted or refused, never a server error.
      for (const depth of [500, 2_040, 5_000, 30_000]) {
        const raw = `{"siteKey":"${t.siteKey}","userHash":"deep-${depth}","event":"lesson_completed","meta":{"d":${
          "[".repeat(depth)
        }${"]".repeat(depth)}}}`
        const reply = yield* request("/v1/server/e", {
          headers: { "content-type": "application/json", "x-streak-server-token": t.serverToken },
          raw
        })
        expect(reply.status).toBeLessThan(500)
      }
    }))
})
