import { expect, layer } from "@effect/vitest"
import { Ids, Ports } from "@streaks/core"
import { Effect } from "effect"
import { createUser, raw, signedInAs, signIn, withSession } from "./support/Accounts.js"
import { admin, layer as testServer, request, serverEvent, tenant, webhookEvent } from "./support/TestServer.js"

const bearer = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: { authorization: `Bearer ${token}` }, ...init })

const apiKeyOf = (workspaceId: string) =>
  Effect.map(admin(`/admin/workspaces/${workspaceId}/api-keys`, { name: "ci" }), (r) => r.body.key as string)

layer(testServer(), { timeout: 120_000 })("the session as a customer REST credential, on Postgres", (it) => {
  it.effect("GET /me with a session: the user, their workspaces with roles, and a CSRF token", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant({ plan: "growth" })
      const user = yield* createUser([{ workspaceId: a.workspaceId, role: "owner" }, {
        workspaceId: b.workspaceId,
        role: "viewer"
      }])
      const session = yield* signIn(user.email)
      const me = yield* withSession(session, "/me")
      expect(me.status).toBe(200)
      expect(me.body.credential).toEqual({ kind: "session", userId: user.id, email: user.email })
      expect(me.body.csrfToken).toBe(session.csrfToken)
      expect([...me.body.workspaces].sort((x: { id: string }, y: { id: string }) => (x.id < y.id ? -1 : 1))).toEqual(
        [
          { id: a.workspaceId, name: "Acme", plan: "starter", role: "owner" },
          { id: b.workspaceId, name: "Acme", plan: "growth", role: "viewer" }
        ].sort((x, y) => (x.id < y.id ? -1 : 1))
      )
      expect((yield* withSession(session, "/programs")).body).toHaveLength(2)
      // A forged or unknown cookie is no credential.
      expect((yield* request("/v1/api/me", { headers: { cookie: "streaks_session=sid_forged" } })).status).toBe(401)
    }))

  it.effect("a viewer reads but every write answers 403 FORBIDDEN, counting an action included, and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      const viewer = yield* signedInAs(t.workspaceId, "viewer")
      expect((yield* withSession(viewer, "/programs")).status).toBe(200)
      expect((yield* withSession(viewer, `/programs/${t.programId}/members/m-1`)).status).toBe(200)
      const writes: ReadonlyArray<readonly [string, string, unknown?]> = [
        ["POST", `/programs/${t.programId}/events`, { userHash: "m-1" }],
        ["POST", `/programs/${t.programId}/members/m-1/freezes`, { count: 1 }],
        ["POST", "/hooks", { programId: t.programId, url: "http://127.0.0.1:9/h", eventTypes: ["streak.broken"] }],
        ["POST", `/programs/${t.programId}/experiments`, { holdoutPercent: 10 }],
        ["POST", `/programs/${t.programId}/experiments/current/stop`],
        ["POST", `/programs/${t.programId}/webhook-secret`],
        ["POST", "/api-keys", { name: "mine", workspaceId: t.workspaceId }],
        ["DELETE", "/hooks/sub_x"],
        ["DELETE", "/api-keys/key_x"],
        ["DELETE", "/connected-apps/oag_x"]
      ]
      for (const [method, path, body] of writes) {
        const answer = yield* withSession(viewer, path, { method, ...(body === undefined ? {} : { body }) })
        expect(answer.status, `${method} ${path}`).toBe(403)
        expect(answer.body).toEqual({ error: "FORBIDDEN" })
      }
      const member = yield* withSession(viewer, `/programs/${t.programId}/members/m-1`)
      expect(member.body.current).toBe(0)
      // A simulation is a POST that changes nothing: a viewer may run one (with the CSRF token).
      const simulated = yield* withSession(viewer, `/programs/${t.programId}/simulations`, {
        method: "POST",
        body: { policy: { cadence: "weekly" } }
      })
      expect(simulated.status).toBe(200)
      expect(
        (yield* withSession(viewer, `/programs/${t.programId}/simulations`, {
          method: "POST",
          body: { policy: { cadence: "weekly" } },
          csrf: false
        })).status
      ).toBe(403)
      expect((yield* withSession(viewer, "/hooks")).body).toEqual({ hooks: [] })
      // The same user as owner of the workspace may write.
      const owner = yield* signedInAs(t.workspaceId, "owner")
      const counted = yield* withSession(owner, `/programs/${t.programId}/events`, {
        method: "POST",
        body: { userHash: "m-1" }
      })
      expect(counted.status).toBe(202)
      expect(counted.body.counted).toBe(true)
    }))

  it.effect("a user who is viewer of one workspace and admin of another writes only in the second", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant()
      const user = yield* createUser([{ workspaceId: a.workspaceId, role: "viewer" }, {
        workspaceId: b.workspaceId,
        role: "admin"
      }])
      const session = yield* signIn(user.email)
      const inA = yield* withSession(session, `/programs/${a.programId}/members/m/freezes`, {
        method: "POST",
        body: { count: 1 }
      })
      expect(inA.status).toBe(403)
      const keyInA = yield* withSession(session, "/api-keys", {
        method: "POST",
        body: { name: "k", workspaceId: a.workspaceId }
      })
      expect(keyInA.status).toBe(403)
      const inB = yield* withSession(session, `/programs/${b.programId}/members/m/freezes`, {
        method: "POST",
        body: { count: 1 }
      })
      expect(inB.status).toBe(200)
    }))

  it.effect("a write with the session but without its CSRF token, or with another session's, answers 403", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const owner = yield* signedInAs(t.workspaceId, "owner")
      const other = yield* signedInAs(t.workspaceId, "owner")
      const body = { name: "ci", workspaceId: t.workspaceId }
      const none = yield* withSession(owner, "/api-keys", { method: "POST", body, csrf: false })
      expect(none.status).toBe(403)
      expect(none.body).toEqual({ error: "FORBIDDEN" })
      expect((yield* withSession(owner, "/api-keys", { method: "POST", body, csrf: other.csrfToken })).status).toBe(
        403
      )
      expect((yield* withSession(owner, "/api-keys", { method: "POST", body, csrf: "x" })).status).toBe(403)
      expect((yield* withSession(owner, "/api-keys")).body.apiKeys).toEqual([])
      // Reads need no token.
      expect((yield* withSession(owner, "/me", { csrf: false })).status).toBe(200)
      expect((yield* withSession(owner, "/api-keys", { method: "POST", body })).status).toBe(201)
    }))

  it.effect("an API key created with a session works on /v1/api/me, is listed without its secret, and once revoked answers 401", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const owner = yield* signedInAs(t.workspaceId, "admin")
      const created = yield* withSession(owner, "/api-keys", {
        method: "POST",
        body: { name: "Zapier", workspaceId: t.workspaceId }
      })
      expect(created.status).toBe(201)
      expect(created.body.key).toMatch(/^svc_api_/)
      const me = yield* bearer(created.body.key, "/me")
      expect(me.status).toBe(200)
      expect(me.body.workspace.id).toBe(t.workspaceId)
      const listed = yield* withSession(owner, "/api-keys")
      expect(listed.body.apiKeys).toEqual([{
        id: created.body.id,
        name: "Zapier",
        workspaceId: t.workspaceId,
        createdAt: expect.any(String)
      }])
      expect(listed.text).not.toContain(created.body.key)
      // A hook created with the key goes with it.
      const hook = yield* bearer(created.body.key, "/hooks", {
        body: { programId: t.programId, url: "http://127.0.0.1:9/h", eventTypes: ["streak.broken"] }
      })
      expect(hook.status).toBe(201)
      const revoked = yield* withSession(owner, `/api-keys/${created.body.id}`, { method: "DELETE" })
      expect(revoked.status).toBe(204)
      expect((yield* bearer(created.body.key, "/me")).status).toBe(401)
      expect((yield* withSession(owner, "/hooks")).body.hooks).toEqual([])
      expect((yield* withSession(owner, `/api-keys/${created.body.id}`, { method: "DELETE" })).status).toBe(404)
      // Another workspace's key is out of reach.
      const other = yield* tenant()
      const foreign = yield* admin(`/admin/workspaces/${other.workspaceId}/api-keys`, { name: "x" })
      expect((yield* withSession(owner, `/api-keys/${foreign.body.id}`, { method: "DELETE" })).status).toBe(404)
      expect((yield* bearer(foreign.body.key, "/me")).status).toBe(200)
      const elsewhere = yield* withSession(owner, "/api-keys", {
        method: "POST",
        body: { name: "x", workspaceId: other.workspaceId }
      })
      expect(elsewhere.status).toBe(404)
    }))

  it.effect("session-only routes answer 403 to an API key and an OAuth token", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* apiKeyOf(t.workspaceId)
      const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [t.workspaceId], appName: "Make" })
      for (const token of [key, grant.body.accessToken as string]) {
        for (
          const [method, path, body] of [
            ["GET", "/api-keys"],
            ["POST", "/api-keys", { name: "x", workspaceId: t.workspaceId }],
            ["DELETE", "/api-keys/key_x"],
            ["GET", "/connected-apps"],
            ["DELETE", `/connected-apps/${grant.body.id}`],
            ["POST", `/programs/${t.programId}/webhook-secret`]
          ] as const
        ) {
          const answer = yield* bearer(token, path, { method, ...(body === undefined ? {} : { body }) })
          expect(answer.status, `${method} ${path}`).toBe(403)
          expect(answer.body).toEqual({ error: "FORBIDDEN" })
        }
      }
      expect((yield* bearer(grant.body.accessToken, "/me")).status).toBe(200)
    }))

  it.effect("disconnecting an app stops its token at once and removes its subscriptions", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const owner = yield* signedInAs(t.workspaceId, "owner")
      const grant = yield* admin("/admin/oauth-grants", { workspaceIds: [t.workspaceId], appName: "Make" })
      const token = grant.body.accessToken as string
      const hook = yield* bearer(token, "/hooks", {
        body: { programId: t.programId, url: "http://127.0.0.1:9/h", eventTypes: ["milestone.achieved"] }
      })
      expect(hook.status).toBe(201)
      const mine = yield* withSession(owner, "/hooks", {
        method: "POST",
        body: { programId: t.programId, url: "http://127.0.0.1:9/mine", eventTypes: ["streak.broken"] }
      })
      expect(mine.status).toBe(201)
      const apps = yield* withSession(owner, "/connected-apps")
      expect(apps.body).toEqual({
        apps: [{
          grantId: grant.body.id,
          appName: "Make",
          clientId: null,
          workspaceIds: [t.workspaceId],
          createdAt: expect.any(String),
          lastUsedAt: null
        }]
      })
      const hooks = yield* withSession(owner, "/hooks")
      expect(hooks.body.hooks.map((h: { createdBy: unknown }) => h.createdBy)).toEqual([
        { kind: "oauth", id: grant.body.id },
        { kind: "user", id: owner.userId }
      ])
      expect((yield* withSession(owner, `/connected-apps/${grant.body.id}`, { method: "DELETE" })).status).toBe(204)
      expect((yield* bearer(token, "/me")).status).toBe(401)
      expect((yield* withSession(owner, "/hooks")).body.hooks.map((h: { id: string }) => h.id)).toEqual([mine.body.id])
      expect((yield* withSession(owner, "/connected-apps")).body).toEqual({ apps: [] })
      expect((yield* withSession(owner, `/connected-apps/${grant.body.id}`, { method: "DELETE" })).status).toBe(404)
    }))

  it.effect("disconnecting an app that also reaches another workspace takes only this user's workspaces from it", () =>
    Effect.gen(function*() {
      const a = yield* tenant()
      const b = yield* tenant()
      const owner = yield* signedInAs(a.workspaceId, "owner")
      const grant = yield* admin("/admin/oauth-grants", {
        workspaceIds: [a.workspaceId, b.workspaceId],
        appName: "n8n"
      })
      const token = grant.body.accessToken as string
      for (const t of [a, b]) {
        const h = yield* bearer(token, "/hooks", {
          body: { programId: t.programId, url: "http://127.0.0.1:9/h", eventTypes: ["streak.broken"] }
        })
        expect(h.status).toBe(201)
      }
      expect((yield* withSession(owner, "/connected-apps")).body.apps[0].workspaceIds).toEqual([a.workspaceId])
      expect((yield* withSession(owner, `/connected-apps/${grant.body.id}`, { method: "DELETE" })).status).toBe(204)
      const me = yield* bearer(token, "/me")
      expect(me.status).toBe(200)
      expect(me.body.workspaces.map((w: { id: string }) => w.id)).toEqual([b.workspaceId])
      expect((yield* bearer(token, `/programs/${a.programId}/members/m`)).status).toBe(404)
      const left = (yield* bearer(token, "/hooks")).body.hooks.map((h: { programId: string }) => h.programId)
      expect(left).toEqual([b.programId])
    }))

  it.effect("rotating a program's webhook secret with a session: the new one works, the old one is refused", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const admin_ = yield* signedInAs(t.workspaceId, "admin")
      expect((yield* webhookEvent(t, { userHash: "m" })).status).toBe(202)
      const rotated = yield* withSession(admin_, `/programs/${t.programId}/webhook-secret`, { method: "POST" })
      expect(rotated.status).toBe(200)
      expect(rotated.body.webhookSecret).toMatch(/^whi_/)
      const old = yield* webhookEvent(t, { userHash: "m2" })
      expect(old.status).toBe(401)
      expect(old.body).toEqual({ error: "WEBHOOK_SECRET_REQUIRED" })
      expect((yield* webhookEvent(t, { userHash: "m2" }, rotated.body.webhookSecret)).status).toBe(202)
      const other = yield* tenant()
      expect((yield* withSession(admin_, `/programs/${other.programId}/webhook-secret`, { method: "POST" })).status)
        .toBe(404)
    }))

  it.effect("hooks, deliveries and redeliver for every credential kind; other workspaces' hooks are out of reach", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* apiKeyOf(t.workspaceId)
      const owner = yield* signedInAs(t.workspaceId, "owner")
      const hook = yield* bearer(key, "/hooks", {
        body: { programId: t.programId, url: "http://127.0.0.1:9/h", eventTypes: ["milestone.achieved"] }
      })
      expect(hook.status).toBe(201)
      expect((yield* serverEvent(t, { userHash: "member-1" })).status).toBe(202)
      for (
        const read of [
          bearer(key, `/hooks/${hook.body.id}/deliveries`),
          withSession(owner, `/hooks/${hook.body.id}/deliveries`)
        ]
      ) {
        const log = yield* read
        expect(log.status).toBe(200)
        expect(log.body.deliveries).toHaveLength(1)
        expect(log.body.deliveries[0]).toMatchObject({ type: "milestone.achieved", status: "pending", attempts: [] })
      }
      const messageId = (yield* bearer(key, `/hooks/${hook.body.id}/deliveries`)).body.deliveries[0].messageId
      // Delivered once with a 500 then a 204: the log shows both attempts; redeliver queues it again.
      const outbox = yield* Ports.Outbox
      const id = Ids.unsafe("MessageId", messageId)
      const [held] = (yield* outbox.ofSubscription(Ids.unsafe("SubscriptionId", hook.body.id), 1)).map((h) => h.message)
      yield* outbox.settle(
        { id, leaseUntil: held!.nextAttemptAt },
        { _tag: "Delivered", attempts: 1, at: new Date() },
        {
          messageId: id,
          attempt: 1,
          at: new Date(),
          status: 204,
          latencyMs: 12
        } as never
      )
      const delivered = yield* withSession(owner, `/hooks/${hook.body.id}/deliveries`)
      expect(delivered.body.deliveries[0]).toMatchObject({
        status: "delivered",
        attempts: [{ attempt: 1, statusCode: 204, durationMs: 12, error: null }]
      })
      const again = yield* withSession(owner, `/hooks/${hook.body.id}/deliveries/${messageId}/redeliver`, {
        method: "POST"
      })
      expect(again.status).toBe(202)
      expect(again.body).toEqual({ messageId, status: "pending" })
      expect((yield* bearer(key, `/hooks/${hook.body.id}/deliveries`)).body.deliveries[0].status).toBe("pending")
      const byKey = yield* bearer(key, `/hooks/${hook.body.id}/deliveries/${messageId}/redeliver`, { method: "POST" })
      expect(byKey.status).toBe(202)
      expect((yield* bearer(key, `/hooks/${hook.body.id}/deliveries/msg_unknown/redeliver`, { method: "POST" })).status)
        .toBe(404)
      const list = yield* bearer(key, "/hooks")
      expect(list.body.hooks).toEqual([{
        id: hook.body.id,
        programId: t.programId,
        url: "http://127.0.0.1:9/h",
        eventTypes: ["milestone.achieved"],
        createdAt: expect.any(String),
        createdBy: { kind: "api_key", id: expect.stringMatching(/^key_/) }
      }])
      // Another workspace's credential sees none of it.
      const other = yield* tenant()
      const otherKey = yield* apiKeyOf(other.workspaceId)
      expect((yield* bearer(otherKey, "/hooks")).body).toEqual({ hooks: [] })
      expect((yield* bearer(otherKey, `/hooks/${hook.body.id}/deliveries`)).status).toBe(404)
      expect(
        (yield* bearer(otherKey, `/hooks/${hook.body.id}/deliveries/${messageId}/redeliver`, { method: "POST" }))
          .status
      ).toBe(404)
    }))

  it.effect("the audit log: writes, sign-ins and sign-outs recorded with actor and address, newest first, paged, per workspace", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const other = yield* tenant()
      const owner = yield* signedInAs(t.workspaceId, "owner")
      const created = yield* withSession(owner, "/api-keys", {
        method: "POST",
        body: { name: "audited", workspaceId: t.workspaceId }
      })
      yield* withSession(owner, `/api-keys/${created.body.id}`, { method: "DELETE" })
      // A refused write leaves no entry.
      const refused = yield* withSession(owner, "/api-keys", {
        method: "POST",
        body: { name: "", workspaceId: t.workspaceId }
      })
      expect(refused.status).toBe(400)
      yield* signedInAs(other.workspaceId, "owner")

      const log = yield* withSession(owner, "/audit")
      expect(log.status).toBe(200)
      const actions = log.body.entries.map((e: { action: string }) => e.action)
      expect(actions.slice(0, 3)).toEqual(["api_key.revoke", "api_key.create", "session.sign_in"])
      expect(actions).toContain("workspace.create")
      expect(actions).toContain("user.create")
      expect(actions.filter((a: string) => a === "api_key.create")).toHaveLength(1)
      const [revoke, create] = log.body.entries
      expect(create).toMatchObject({
        workspaceId: t.workspaceId,
        actor: { kind: "user", id: owner.userId },
        clientAddress: expect.stringMatching(/127\.0\.0\.1/),
        target: created.body.id,
        details: { name: "audited" }
      })
      expect(revoke.actor).toEqual({ kind: "user", id: owner.userId })
      const ats = log.body.entries.map((e: { at: string }) => Date.parse(e.at))
      expect([...ats].sort((x, y) => y - x)).toEqual(ats)
      expect(log.body.entries.every((e: { workspaceId: string }) => e.workspaceId === t.workspaceId)).toBe(true)
      expect(log.text).not.toContain(other.workspaceId)

      // Pages of one, following the cursor, give the same entries.
      const paged: Array<string> = []
      let cursor: string | undefined
      for (let i = 0; i < 50; i++) {
        const page = yield* withSession(owner, `/audit?limit=2${cursor === undefined ? "" : `&cursor=${cursor}`}`)
        paged.push(...page.body.entries.map((e: { id: string }) => e.id))
        cursor = page.body.nextCursor
        if (cursor === undefined) break
      }
      expect(paged).toEqual(log.body.entries.map((e: { id: string }) => e.id))
      const window = yield* withSession(
        owner,
        `/audit?from=${encodeURIComponent(create.at)}&to=${encodeURIComponent(revoke.at)}`
      )
      expect(window.body.entries.map((e: { id: string }) => e.id)).toContain(create.id)
      expect((yield* withSession(owner, "/audit?cursor=bogus")).status).toBe(400)
      expect((yield* withSession(owner, "/audit?limit=0")).status).toBe(400)

      // The operator reads everything, its own writes included.
      const all = yield* admin("/admin/audit?limit=200")
      expect(all.status).toBe(200)
      const mine = all.body.entries.filter((e: { workspaceId: string }) => e.workspaceId === other.workspaceId)
      expect(mine.map((e: { action: string }) => e.action)).toEqual(
        expect.arrayContaining([
          "session.sign_in",
          "user.create",
          "program.create",
          "project.create",
          "workspace.create"
        ])
      )
      expect(all.body.entries.find((e: { action: string }) => e.action === "workspace.create").actor).toEqual({
        kind: "admin",
        id: "admin"
      })

      // Sign-out is recorded too.
      const out = yield* raw("/sign-out", {
        method: "POST",
        headers: { cookie: owner.cookie, "x-csrf-token": owner.csrfToken }
      })
      expect(out.status).toBe(303)
      const after = yield* admin(`/admin/audit?limit=5`)
      expect(after.body.entries.map((e: { action: string }) => e.action)).toContain("session.sign_out")
    }))
})
