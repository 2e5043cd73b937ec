import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  admin,
  daysAgo,
  getState,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  webhookEvent
} from "./support/TestServer.js"

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

layer(testServer(), { timeout: 120_000 })("admin API over real HTTP", (it) => {
  it.effect("POST /admin/workspaces creates a workspace: 201 {id, name, plan}", () =>
    Effect.gen(function*() {
      const created = yield* admin("/admin/workspaces", { name: "Acme Learning", plan: "growth" })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({ id: expect.stringMatching(/^ws_/), name: "Acme Learning", plan: "growth" })
    }))

  it.effect("PATCH /admin/workspaces/{id} changes the plan, as the customer API then shows", () =>
    Effect.gen(function*() {
      const ws = (yield* admin("/admin/workspaces", { name: "Acme", plan: "starter" })).body
      const patched = yield* admin(`/admin/workspaces/${ws.id}`, { plan: "scale" }, "PATCH")
      expect(patched.status).toBe(200)
      expect(patched.body).toEqual({ id: ws.id, name: "Acme", plan: "scale" })
      const key = (yield* admin(`/admin/workspaces/${ws.id}/api-keys`, { name: "zapier" })).body
      const me = yield* request("/v1/api/me", bearer(key.key))
      expect(me.status).toBe(200)
      expect(me.body.workspace).toEqual({ id: ws.id, name: "Acme", plan: "scale" })
      const usage = yield* request("/v1/api/usage", bearer(key.key))
      expect(usage.body).toMatchObject({ plan: "scale", limit: 10_000 })
    }))

  it.effect("POST /admin/projects creates a project with its siteKey, server token and signing secret", () =>
    Effect.gen(function*() {
      const ws = (yield* admin("/admin/workspaces", { name: "Acme", plan: "starter" })).body
      const created = yield* admin("/admin/projects", {
        workspaceId: ws.id,
        name: "Acme web",
        allowedOrigins: ["https://app.example.com", "https://*.example.org"],
        timezone: "Europe/Paris"
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^prj_/),
        workspaceId: ws.id,
        siteKey: expect.stringMatching(/^site_/),
        name: "Acme web",
        allowedOrigins: ["https://app.example.com", "https://*.example.org"],
        timezone: "Europe/Paris",
        browserCounting: "count",
        legacyNoOriginIngest: false,
        serverToken: expect.stringMatching(/^sst_/),
        signingSecret: expect.stringMatching(/^ass_/)
      })
      const flags = yield* admin("/admin/projects", {
        workspaceId: ws.id,
        name: "Legacy",
        allowedOrigins: [],
        browserCounting: "display-only",
        legacyNoOriginIngest: true
      })
      expect(flags.status).toBe(201)
      expect(flags.body).toMatchObject({ timezone: "UTC", browserCounting: "display-only", legacyNoOriginIngest: true })
      expect(flags.body.siteKey).not.toBe(created.body.siteKey)
    }))

  it.effect("POST /admin/projects refuses an unknown timezone or a bad origin with 400 INVALID_BODY", () =>
    Effect.gen(function*() {
      const ws = (yield* admin("/admin/workspaces", { name: "Acme", plan: "starter" })).body
      const zone = yield* admin("/admin/projects", {
        workspaceId: ws.id,
        name: "P",
        allowedOrigins: [],
        timezone: "Mars/Base"
      })
      expect(zone.status).toBe(400)
      expect(zone.body).toEqual({ error: "INVALID_BODY" })
      const origin = yield* admin("/admin/projects", {
        workspaceId: ws.id,
        name: "P",
        allowedOrigins: ["not an origin"]
      })
      expect(origin.status).toBe(400)
      expect(origin.body).toEqual({ error: "INVALID_BODY" })
    }))

  it.effect("POST /admin/programs creates a test program with its webhook secret, milestone ids and settings", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const created = yield* admin("/admin/programs", {
        projectId: t.projectId,
        name: "Workout",
        eventKey: "workout_done",
        milestones: [
          { target: 7, msg: "A week!", rewardType: "link", rewardValue: "https://example.com/w" },
          { target: 2, msg: "Two" }
        ],
        settings: { theme: { name: "sunrise" }, position: "top-right", mainMessage: "Move!" }
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^prg_/),
        projectId: t.projectId,
        name: "Workout",
        eventKey: "workout_done",
        status: "test",
        webhookSecret: expect.stringMatching(/^whi_/),
        settings: { theme: { name: "sunrise" }, position: "top-right", mainMessage: "Move!" }
      })
      const milestones = created.body.milestones as Array<any>
      expect(milestones).toHaveLength(2)
      for (const m of milestones) expect(m.id).toMatch(/^ms_/)
      expect(milestones.map((m) => [m.target, m.msg, m.rewardType])).toEqual(
        expect.arrayContaining([[7, "A week!", "link"], [2, "Two", "message"]])
      )
      // The event key is unique within the project.
      const duplicate = yield* admin("/admin/programs", {
        projectId: t.projectId,
        name: "Again",
        eventKey: "workout_done",
        milestones: []
      })
      expect(duplicate.status).toBe(400)
      expect(duplicate.body).toEqual({ error: "INVALID_BODY" })
      // Unknown project.
      const unknown = yield* admin("/admin/programs", {
        projectId: "prj_nope",
        name: "X",
        eventKey: "x",
        milestones: []
      })
      expect(unknown.status).toBe(404)
      expect(unknown.body).toEqual({ error: "NOT_FOUND" })
    }))

  it.effect("webhook-secret rotation: the new secret works and the old one is refused afterwards", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expect((yield* webhookEvent(t, { userHash: "m", ts: daysAgo(1) })).status).toBe(202)
      const rotated = yield* admin(`/admin/programs/${t.programId}/webhook-secret`, undefined, "POST")
      expect(rotated.status).toBe(200)
      expect(rotated.body).toEqual({ webhookSecret: expect.stringMatching(/^whi_/) })
      expect(rotated.body.webhookSecret).not.toBe(t.webhookSecret)
      const old = yield* webhookEvent(t, { userHash: "m" })
      expect(old.status).toBe(401)
      expect(old.body).toEqual({ error: "WEBHOOK_SECRET_REQUIRED" })
      const fresh = yield* webhookEvent(t, { userHash: "m" }, rotated.body.webhookSecret)
      expect(fresh.status).toBe(202)
      expect(fresh.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("POST /admin/programs/{id}/status sets test or live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const live = yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      expect(live.status).toBe(200)
      expect(live.body).toMatchObject({ id: t.programId, status: "live", eventKey: "lesson_completed" })
      expect(live.body).not.toHaveProperty("webhookSecret")
      expect((yield* getState(t, "m")).body.meta.isLive).toBe(true)
      const test = yield* admin(`/admin/programs/${t.programId}/status`, { status: "test" })
      expect(test.body.status).toBe("test")
      expect((yield* getState(t, "m")).body.meta.isLive).toBe(false)
      const bad = yield* admin(`/admin/programs/${t.programId}/status`, { status: "paused" })
      expect(bad.status).toBe(400)
      expect(bad.body).toEqual({ error: "INVALID_BODY" })
      const unknown = yield* admin(`/admin/programs/prg_nope/status`, { status: "live" })
      expect(unknown.status).toBe(404)
    }))

  it.effect("api-keys: created once (201 {id, key}), reach the customer API, and stop at once when revoked (204)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const created = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "Zapier" })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^svc_api_/) })
      const me = yield* request("/v1/api/me", bearer(created.body.key))
      expect(me.status).toBe(200)
      expect(me.body).toEqual({
        workspace: { id: t.workspaceId, name: "Acme", plan: "starter" },
        credential: { type: "api_key", id: created.body.id }
      })
      const programs = yield* request("/v1/api/programs", bearer(created.body.key))
      expect(programs.body).toEqual([{
        id: t.programId,
        name: "Daily lesson",
        eventKey: "lesson_completed",
        status: "test",
        mode: "continuous",
        policy: expect.objectContaining({ cadence: "daily", target: 1 }),
        project: { id: t.projectId, siteKey: t.siteKey, name: "Acme app" }
      }])

      const revoked = yield* admin(`/admin/api-keys/${created.body.id}`, undefined, "DELETE")
      expect(revoked.status).toBe(204)
      expect(revoked.text).toBe("")
      const after = yield* request("/v1/api/me", bearer(created.body.key))
      expect(after.status).toBe(401)
      expect(after.body).toEqual({ error: "UNAUTHORIZED" })
      // Revoking again: there is nothing left to revoke.
      expect((yield* admin(`/admin/api-keys/${created.body.id}`, undefined, "DELETE")).status).toBe(404)
    }))

  it.effect("api-keys: revoking a key removes the subscriptions it created", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const a = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "A" })).body
      const b = (yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "B" })).body
      const hook = yield* request("/v1/api/hooks", {
        ...bearer(a.key),
        body: { programId: t.programId, url: "https://hooks.example.com/streaks", eventTypes: ["streak.at_risk"] }
      })
      expect(hook.status).toBe(201)
      expect(hook.body.secret).toMatch(/^whsec_/)
      expect((yield* admin(`/admin/api-keys/${a.id}`, undefined, "DELETE")).status).toBe(204)
      // The subscription went with the key: key B (same workspace) finds nothing to delete.
      const gone = yield* request(`/v1/api/hooks/${hook.body.id}`, { method: "DELETE", ...bearer(b.key) })
      expect(gone.status).toBe(404)
    }))

  it.effect("oauth-grants: created once (201 {id, accessToken}), reach the customer API, and stop when revoked (204)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      const created = yield* admin("/admin/oauth-grants", {
        workspaceIds: [t.workspaceId, other.workspaceId],
        appName: "Make"
      })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({ id: expect.any(String), accessToken: expect.stringMatching(/^svc_oat_/) })
      const me = yield* request("/v1/api/me", bearer(created.body.accessToken))
      expect(me.status).toBe(200)
      expect(me.body.credential).toEqual({ type: "oauth", id: created.body.id })
      expect(me.body.workspaces.map((w: any) => w.id).sort()).toEqual([t.workspaceId, other.workspaceId].sort())
      const programs = yield* request("/v1/api/programs", bearer(created.body.accessToken))
      expect(programs.body.map((p: any) => p.id).sort()).toEqual([t.programId, other.programId].sort())

      const revoked = yield* admin(`/admin/oauth-grants/${created.body.id}`, undefined, "DELETE")
      expect(revoked.status).toBe(204)
      const after = yield* request("/v1/api/me", bearer(created.body.accessToken))
      expect(after.status).toBe(401)
      expect(after.body).toEqual({ error: "UNAUTHORIZED" })
      expect((yield* admin("/admin/oauth-grants", { workspaceIds: [], appName: "Make" })).status).toBe(400)
      expect((yield* admin("/admin/oauth-grants", { workspaceIds: ["ws_nope"], appName: "Make" })).status).toBe(404)
    }))

  it.effect("POST /admin/jobs/due-checks runs one sweep: {atRisk, broken, freezesUsed}, each due event once", () =>
    Effect.gen(function*() {
      // Drain whatever earlier tests of this file left due.
      const drained = yield* admin("/admin/jobs/due-checks", undefined, "POST")
      expect(drained.status).toBe(200)
      expect(drained.body).toEqual({
        atRisk: expect.any(Number),
        broken: expect.any(Number),
        freezesUsed: expect.any(Number)
      })

      const t = yield* tenant()
      // Live program (the server door makes it live). at-risk: active yesterday, not yet today.
      yield* serverEvent(t, { userHash: "at-risk", ts: daysAgo(1) })
      // broken: a run that ended two days ago (yesterday was missed).
      yield* serverEvent(t, { userHash: "broken", ts: daysAgo(3) })
      yield* serverEvent(t, { userHash: "broken", ts: daysAgo(2) })
      // Safe: active today.
      yield* serverEvent(t, { userHash: "safe", ts: daysAgo(1) })
      yield* serverEvent(t, { userHash: "safe" })
      expect((yield* getState(t, "at-risk")).body.streak).toMatchObject({ current: 1, pending: true })

      const run = yield* admin("/admin/jobs/due-checks", undefined, "POST")
      expect(run.status).toBe(200)
      expect(run.body).toEqual({ atRisk: 1, broken: 1, freezesUsed: 0 })
      const again = yield* admin("/admin/jobs/due-checks", undefined, "POST")
      expect(again.body).toEqual({ atRisk: 0, broken: 0, freezesUsed: 0 })
    }))

  it.effect("POST /admin/jobs/due-checks fires nothing for test programs", () =>
    Effect.gen(function*() {
      yield* admin("/admin/jobs/due-checks", undefined, "POST")
      const t = yield* tenant()
      yield* webhookEvent(t, { userHash: "test-member", ts: daysAgo(1) })
      const run = yield* admin("/admin/jobs/due-checks", undefined, "POST")
      expect(run.body).toEqual({ atRisk: 0, broken: 0, freezesUsed: 0 })
    }))

  it.effect("POST /admin/jobs/deliveries drains the outbox once: 200 with its counts", () =>
    Effect.gen(function*() {
      const run = yield* admin("/admin/jobs/deliveries", undefined, "POST")
      expect(run.status).toBe(200)
      expect(run.body).toEqual({
        attempted: expect.any(Number),
        delivered: expect.any(Number),
        failed: expect.any(Number),
        retrying: expect.any(Number)
      })
    }))
})

layer(testServer(), { timeout: 120_000 })("health, readiness and documentation over real HTTP", (it) => {
  it.effect("GET /health answers 200", () =>
    Effect.gen(function*() {
      const reply = yield* request("/health")
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ status: "ok" })
    }))

  it.effect("GET /ready answers 200 when storage is reachable", () =>
    Effect.gen(function*() {
      const reply = yield* request("/ready")
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ status: "ok" })
    }))

  it.effect("GET /openapi.json lists the public, admin and customer REST routes", () =>
    Effect.gen(function*() {
      const reply = yield* request("/openapi.json")
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toMatch(/json/)
      expect(reply.body.openapi).toMatch(/^3\./)
      const paths = Object.keys(reply.body.paths)
      for (
        const p of [
          "/v1/e",
          "/v1/server/e",
          "/v1/webhook/{siteKey}/e",
          "/v1/state",
          "/v1/alias",
          "/admin/alias",
          "/admin/workspaces",
          "/admin/projects",
          "/admin/programs",
          "/admin/jobs/due-checks",
          "/health",
          "/ready"
        ]
      ) expect(paths).toContain(p)
      const api = paths.filter((p) => p.startsWith("/v1/api/"))
      expect(api).toEqual(
        expect.arrayContaining([
          "/v1/api/me",
          "/v1/api/programs",
          "/v1/api/hooks",
          "/v1/api/programs/{programId}/events"
        ])
      )
    }))

  it.effect("GET /docs answers 200 with an HTML page whose viewer files all come from this server", () =>
    Effect.gen(function*() {
      const reply = yield* request("/docs")
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toMatch(/text\/html/)
      expect(reply.text.toLowerCase()).toContain("<html")
      const urls = Array.from(reply.text.matchAll(/(?:src|href)="([^"]+)"/g), (m) => m[1]!)
      expect(urls).toEqual(["docs/favicon-32x32.png", "docs/swagger-ui.css", "docs/swagger-ui-bundle.js"])
      for (const url of urls) {
        const asset = yield* request(`/${url}`)
        expect({ url, status: asset.status, etag: asset.headers.has("etag") }).toEqual({ url, status: 200, etag: true })
      }
      expect((yield* request("/docs/swagger-ui-bundle.js")).headers.get("content-type")).toMatch(/^text\/javascript/)
      // Only the page's own files: nothing else of the package, and no path out of it.
      expect((yield* request("/docs/package.json")).status).toBe(404)
      expect((yield* request("/docs/..%2F..%2Fpackage.json")).status).toBe(404)
    }))
})
