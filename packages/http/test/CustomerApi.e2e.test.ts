import { expect, layer } from "@effect/vitest"
import { Experiments, Ids, Ports } from "@streaks/core"
import { Effect } from "effect"
import { admin, layer as testServer, request, serverEvent, tenant, type Tenant } from "./support/TestServer.js"

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const api = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: bearer(token), ...init })

/** A tenant with an API key of its workspace. */
const withKey = (options: Parameters<typeof tenant>[0] = {}) =>
  Effect.gen(function*() {
    const t = yield* tenant(options)
    const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "zapier" })
    expect(key.status).toBe(201)
    return { ...t, apiKey: key.body.key as string, apiKeyId: key.body.id as string }
  })

const live = (t: Tenant) => admin(`/admin/programs/${t.programId}/status`, { status: "live" })
const hook = (token: string, programId: string, eventTypes = ["milestone.achieved"]) =>
  api(token, "/hooks", { body: { programId, url: "http://127.0.0.1:9/hook", eventTypes } })

layer(testServer(), { timeout: 120_000 })("customer REST API over real HTTP", (it) => {
  it.effect("GET /me and GET /programs describe the credential and what it reaches", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const me = yield* api(t.apiKey, "/me")
      expect(me.status).toBe(200)
      expect(me.body).toEqual({
        workspace: { id: t.workspaceId, name: "Acme", plan: "starter" },
        credential: { type: "api_key", id: t.apiKeyId }
      })
      const programs = yield* api(t.apiKey, "/programs")
      expect(programs.body).toEqual([{
        id: t.programId,
        name: "Daily lesson",
        eventKey: "lesson_completed",
        status: "test",
        mode: "continuous",
        policy: {
          cadence: "daily",
          target: 1,
          dayStartHour: 0,
          restDays: [],
          freezes: { initial: 0, max: 0, earnEvery: 0 },
          atRiskHour: 0,
          repairWindowDays: 0,
          repairsPer30Days: 1
        },
        project: { id: t.projectId, siteKey: t.siteKey, name: "Acme app" }
      }])
      const other = yield* tenant()
      const grant = yield* admin("/admin/oauth-grants", {
        workspaceIds: [t.workspaceId, other.workspaceId],
        appName: "Make"
      })
      const oauth = yield* api(grant.body.accessToken, "/me")
      expect(oauth.body.credential).toEqual({ type: "oauth", id: grant.body.id })
      expect(oauth.body.workspaces.map((w: { id: string }) => w.id).sort()).toEqual(
        [t.workspaceId, other.workspaceId].sort()
      )
      expect((yield* api(grant.body.accessToken, "/programs")).body).toHaveLength(2)
    }))

  it.effect("count-action: PROGRAM_NOT_LIVE on a test program, test:true counts as test progress, live counts", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const notLive = yield* api(t.apiKey, `/programs/${t.programId}/events`, { body: { userHash: "m-1" } })
      expect(notLive.status).toBe(202)
      expect(notLive.body).toEqual({ counted: false, reason: "PROGRAM_NOT_LIVE" })
      const asTest = yield* api(t.apiKey, `/programs/${t.programId}/events`, { body: { userHash: "m-1", test: true } })
      expect(asTest.body).toEqual({ counted: true })
      // A test program shows its test ledger; it never mixes with the live one.
      expect((yield* api(t.apiKey, `/programs/${t.programId}/members/m-1`)).body).toMatchObject({
        current: 1,
        isLive: false
      })
      yield* live(t)
      expect((yield* api(t.apiKey, `/programs/${t.programId}/members/m-1`)).body).toMatchObject({
        current: 0,
        isLive: true
      })
      const counted = yield* api(t.apiKey, `/programs/${t.programId}/events`, { body: { userHash: "m-1" } })
      expect(counted.body).toEqual({ counted: true })
      const member = yield* api(t.apiKey, `/programs/${t.programId}/members/m-1`)
      expect(member.body).toEqual({
        programId: t.programId,
        userHash: "m-1",
        current: 1,
        best: 1,
        todayDone: true,
        pending: false,
        lastActiveDate: new Date().toISOString().slice(0, 10),
        isLive: true
      })
      const unknown = yield* api(t.apiKey, `/programs/${t.programId}/members/nobody`)
      expect(unknown.status).toBe(200)
      expect(unknown.body).toMatchObject({ current: 0, best: 0, lastActiveDate: null })
      const bad = yield* api(t.apiKey, `/programs/${t.programId}/events`, { body: { userHash: "a@b.co" } })
      expect([bad.status, bad.body]).toEqual([400, { error: "INVALID_BODY" }])
    }))

  it.effect("hooks: 201 with a whsec_ secret, HTTPS only, eventTypes among the four; DELETE then 404", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const created = yield* hook(t.apiKey, t.programId, ["streak.at_risk", "reward.unlocked"])
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({
        programId: t.programId,
        url: "http://127.0.0.1:9/hook",
        eventTypes: ["streak.at_risk", "reward.unlocked"]
      })
      expect(created.body.secret).toMatch(/^whsec_/)
      const insecure = yield* api(t.apiKey, "/hooks", {
        body: { programId: t.programId, url: "http://example.com/h", eventTypes: ["streak.broken"] }
      })
      expect([insecure.status, insecure.body]).toEqual([400, { error: "INVALID_BODY" }])
      const badType = yield* api(t.apiKey, "/hooks", {
        body: { programId: t.programId, url: "https://example.com/h", eventTypes: ["streak.won"] }
      })
      expect(badType.status).toBe(400)
      expect((yield* api(t.apiKey, `/hooks/${created.body.id}`, { method: "DELETE" })).status).toBe(204)
      const again = yield* api(t.apiKey, `/hooks/${created.body.id}`, { method: "DELETE" })
      expect([again.status, again.body]).toEqual([404, { error: "NOT_FOUND" }])
    }))

  it.effect("webhook-samples: one synthetic payload of the delivery shape when nothing was delivered", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      const samples = yield* api(t.apiKey, `/programs/${t.programId}/webhook-samples?type=reward.unlocked`)
      expect(samples.status).toBe(200)
      expect(samples.body).toHaveLength(1)
      expect(samples.body[0]).toMatchObject({
        type: "reward.unlocked",
        data: {
          programId: t.programId,
          projectId: t.projectId,
          siteKey: t.siteKey,
          isTest: false,
          streak: { current: 7, best: 7 }
        }
      })
      expect(samples.body[0].data.reward).toBeDefined()
      expect((yield* api(t.apiKey, `/programs/${t.programId}/webhook-samples?type=nope`)).status).toBe(400)
    }))

  it.effect("a credential never reaches another workspace: API key and OAuth token get 404 like an unknown id", () =>
    Effect.gen(function*() {
      const mine = yield* withKey()
      const theirs = yield* withKey()
      const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [mine.workspaceId], appName: "Make" })
      for (const token of [mine.apiKey, grant.body.accessToken as string]) {
        for (const programId of [theirs.programId, "prg_unknown"]) {
          const calls = [
            api(token, `/programs/${programId}/events`, { body: { userHash: "x" } }),
            api(token, `/programs/${programId}/members/x`),
            api(token, `/programs/${programId}/webhook-samples?type=streak.broken`),
            api(token, `/programs/${programId}/experiments`, { body: { holdoutPercent: 10 } }),
            api(token, `/programs/${programId}/experiments/current`),
            hook(token, programId)
          ]
          for (const call of calls) {
            const r = yield* call
            expect([r.status, r.body]).toEqual([404, { error: "NOT_FOUND" }])
          }
        }
      }
      const theirHook = yield* hook(theirs.apiKey, theirs.programId)
      const r = yield* api(mine.apiKey, `/hooks/${theirHook.body.id}`, { method: "DELETE" })
      expect(r.status).toBe(404)
    }))

  it.effect("no, unknown or revoked bearer → 401; revoking removes the key's subscriptions and keeps others", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      expect((yield* request("/v1/api/me")).body).toEqual({ error: "UNAUTHORIZED" })
      expect((yield* api("svc_api_nope", "/me")).status).toBe(401)
      const second = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "other" })
      const doomed = yield* hook(t.apiKey, t.programId)
      const kept = yield* hook(second.body.key, t.programId)
      expect((yield* admin(`/admin/api-keys/${t.apiKeyId}`, undefined, "DELETE")).status).toBe(204)
      expect((yield* api(t.apiKey, "/me")).status).toBe(401)
      expect((yield* api(second.body.key, `/hooks/${doomed.body.id}`, { method: "DELETE" })).status).toBe(404)
      expect((yield* api(second.body.key, `/hooks/${kept.body.id}`, { method: "DELETE" })).status).toBe(204)

      const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [t.workspaceId], appName: "Make" })
      const viaApp = yield* hook(grant.body.accessToken, t.programId)
      expect((yield* admin(`/admin/oauth-grants/${grant.body.id}`, undefined, "DELETE")).status).toBe(204)
      expect((yield* api(grant.body.accessToken, "/programs")).status).toBe(401)
      expect((yield* api(second.body.key, `/hooks/${viaApp.body.id}`, { method: "DELETE" })).status).toBe(404)
    }))

  it.effect("usage and reports: counts after actions; paused over the plan limit, full again after an upgrade", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      yield* live(t)
      for (const m of ["a", "b", "c"]) {
        yield* serverEvent(t, { userHash: m, source: "automation", externalService: "zapier" })
      }
      const month = new Date().toISOString().slice(0, 7)
      expect((yield* api(t.apiKey, "/usage")).body).toEqual({
        month,
        plan: "starter",
        limit: 500,
        activeStreakers: 3,
        overLimit: false
      })
      const overview = yield* api(t.apiKey, "/reports/overview")
      expect(overview.body).toMatchObject({ paused: false, activeStreakers: 3, countedActions: 3 })
      const events = yield* api(t.apiKey, "/reports/events")
      expect(events.body.days).toEqual([{
        date: new Date().toISOString().slice(0, 10),
        eventType: "streak_interaction",
        count: 3,
        counted: 3
      }])
      const insights = yield* api(t.apiKey, "/reports/insights")
      expect(insights.body.sources).toEqual([{
        source: "automation",
        externalService: "zapier",
        integrationId: null,
        count: 3
      }])
      expect((yield* api(t.apiKey, "/reports/overview?from=2026-02-01&to=2026-01-01")).status).toBe(400)

      // Over the starter limit: 498 more active streakers this month (marked in storage directly).
      const usage = yield* Ports.UsageStore
      const workspaceId = Ids.unsafe("WorkspaceId", t.workspaceId)
      yield* usage.markActive(Array.from({ length: 498 }, (_, i) => ({ workspaceId, month, member: `bulk-${i}` })))
        .pipe(Effect.orDie)
      yield* serverEvent(t, { userHash: "while-paused" })
      for (const report of ["overview", "events", "insights"]) {
        const paused = yield* api(t.apiKey, `/reports/${report}`)
        expect(paused.status).toBe(200)
        expect(paused.body).toMatchObject({
          paused: true,
          reason: "PLAN_LIMIT_EXCEEDED",
          usage: { plan: "starter", limit: 500, activeStreakers: 502 }
        })
      }
      expect((yield* api(t.apiKey, "/usage")).body).toMatchObject({ activeStreakers: 502, overLimit: true })
      // Experiments stay readable and stoppable while paused.
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 10 } })).status)
        .toBe(201)
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).status).toBe(200)
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current/stop`, { method: "POST" })).status)
        .toBe(200)

      expect((yield* admin(`/admin/workspaces/${t.workspaceId}`, { plan: "growth" }, "PATCH")).status).toBe(200)
      const back = yield* api(t.apiKey, "/reports/overview")
      expect(back.body).toMatchObject({ paused: false, activeStreakers: 4, countedActions: 4 })
    }).pipe(Effect.orDie))

  it.effect("experiments: start, read with groups and report, stop; a running one ends when a subscription is created or deleted", () =>
    Effect.gen(function*() {
      const t = yield* withKey()
      yield* live(t)
      const started = yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 50 } })
      expect(started.status).toBe(201)
      expect(started.body).toMatchObject({ programId: t.programId, holdoutPercent: 50 })
      const second = yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 20 } })
      expect([second.status, second.body]).toEqual([400, { error: "INVALID_BODY" }])
      const members = ["p", "q", "r", "s", "t", "u"]
      for (const m of members) yield* serverEvent(t, { userHash: m })
      const current = yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)
      const control = members.filter((m) => Experiments.isControl(started.body.id, m, 50)).length
      expect(current.body.control.members).toBe(control)
      expect(current.body.treatment.members).toBe(members.length - control)
      const stopped = yield* api(t.apiKey, `/programs/${t.programId}/experiments/current/stop`, { method: "POST" })
      expect(stopped.body.endedAt).toBeDefined()
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).status).toBe(404)

      yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 10 } })
      const created = yield* hook(t.apiKey, t.programId)
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).status).toBe(404)
      yield* api(t.apiKey, `/programs/${t.programId}/experiments`, { body: { holdoutPercent: 10 } })
      yield* api(t.apiKey, `/hooks/${created.body.id}`, { method: "DELETE" })
      expect((yield* api(t.apiKey, `/programs/${t.programId}/experiments/current`)).status).toBe(404)
    }))

  it.effect("usage of another of the credential's workspaces with ?workspaceId; one outside its reach is 404", () =>
    Effect.gen(function*() {
      const first = yield* tenant({ plan: "growth" })
      const second = yield* tenant({ plan: "scale" })
      const elsewhere = yield* tenant()
      const grant = yield* admin("/admin/oauth-grants", {
        workspaceIds: [first.workspaceId, second.workspaceId],
        appName: "Usage app"
      })
      const token = grant.body.accessToken as string
      expect((yield* api(token, "/usage")).body.plan).toBe("growth")
      expect((yield* api(token, `/usage?workspaceId=${second.workspaceId}`)).body.plan).toBe("scale")
      const outside = yield* api(token, `/usage?workspaceId=${elsewhere.workspaceId}`)
      expect(outside.status).toBe(404)
    }))
})
