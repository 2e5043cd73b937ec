/**
 * The operator's user routes over real HTTP on Postgres: listing users, changing their workspace
 * roles and removing them, with what follows for their sessions, their OAuth grants and their hooks;
 * and the connected apps' `lastUsedAt`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { createUser, raw, type Signed, signIn, withSession } from "./support/Accounts.js"
import { NodeServer } from "../src/NodeServer.js"
import { admin, layer as testServer, request, tenant } from "./support/TestServer.js"

const REDIRECT = "http://127.0.0.1:49152/callback"

const bearer = (token: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  request(`/v1/api${path}`, { headers: { authorization: `Bearer ${token}` }, ...init })

const tokenForm = (client: { clientId: string; clientSecret: string }, form: Record<string, string>) =>
  Effect.map(
    raw("/oauth/token", {
      headers: {
        authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString("base64")}`
      },
      form
    }),
    (r) => ({ status: r.status, body: JSON.parse(r.text) as Record<string, string> })
  )

/** The user consents (with the session) to a fresh client for `workspaceIds`; its tokens. */
const consent = (session: Signed, workspaceIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const created = yield* admin("/admin/oauth-clients", { name: "Automation", redirectUris: [REDIRECT] })
    const client = { clientId: created.body.clientId as string, clientSecret: created.body.clientSecret as string }
    const verifier = randomBytes(32).toString("base64url")
    const challenge = createHash("sha256").update(verifier).digest("base64url")
    const body = new URLSearchParams({
      csrfToken: session.csrfToken,
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: REDIRECT,
      state: "s1",
      code_challenge: challenge,
      code_challenge_method: "S256",
      decision: "allow"
    })
    for (const id of workspaceIds) body.append("workspace", id)
    const server = yield* NodeServer
    const answer = yield* Effect.promise(() =>
      fetch(`${server.url}/oauth/authorize`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie: session.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: body.toString()
      })
    )
    expect(answer.status).toBe(303)
    const code = new URL(answer.headers.get("location")!).searchParams.get("code")!
    const tokens = yield* tokenForm(client, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT
    })
    expect(tokens.status).toBe(200)
    return { client, access: tokens.body["access_token"]!, refresh: tokens.body["refresh_token"]! }
  })

layer(testServer({ oauth: true }), { timeout: 120_000 })(
  "the operator's user routes over real HTTP on Postgres",
  (it) => {
    it.effect("GET /admin/users lists users with their roles and never a password hash", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "admin" }])
        const list = yield* admin("/admin/users")
        expect(list.status).toBe(200)
        const found = list.body.users.find((u: { id: string }) => u.id === user.id)
        expect(found).toEqual({
          id: user.id,
          email: user.email,
          name: "Test person",
          workspaces: [{ workspaceId: t.workspaceId, role: "admin" }],
          hasPassword: true,
          createdAt: expect.any(String)
        })
        expect(list.text).not.toContain("argon2")
        expect((yield* request("/admin/users")).status).toBe(401)
      }))

    it.effect("PATCH /admin/users/{id}: a bad role, an unknown workspace or user, an empty list change nothing", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
        const patch = (id: string, body: unknown) => admin(`/admin/users/${id}`, body, "PATCH")
        const badRole = yield* patch(user.id, { workspaces: [{ workspaceId: t.workspaceId, role: "root" }] })
        expect([badRole.status, badRole.body.error]).toEqual([400, "INVALID_BODY"])
        const empty = yield* patch(user.id, { workspaces: [] })
        expect([empty.status, empty.body.error]).toEqual([400, "INVALID_BODY"])
        const twice = yield* patch(user.id, {
          workspaces: [{ workspaceId: t.workspaceId, role: "owner" }, { workspaceId: t.workspaceId, role: "viewer" }]
        })
        expect([twice.status, twice.body.error]).toEqual([400, "INVALID_BODY"])
        const nowhere = yield* patch(user.id, { workspaces: [{ workspaceId: "ws_unknown", role: "viewer" }] })
        expect([nowhere.status, nowhere.body.error]).toEqual([404, "NOT_FOUND"])
        const nobody = yield* patch("usr_unknown", { workspaces: [{ workspaceId: t.workspaceId, role: "viewer" }] })
        expect([nobody.status, nobody.body.error]).toEqual([404, "NOT_FOUND"])
        const noToken = yield* request(`/admin/users/${user.id}`, {
          method: "PATCH",
          body: { workspaces: [{ workspaceId: t.workspaceId, role: "viewer" }] }
        })
        expect(noToken.status).toBe(401)
        const list = yield* admin("/admin/users")
        expect(list.body.users.find((u: { id: string }) => u.id === user.id).workspaces).toEqual([
          { workspaceId: t.workspaceId, role: "owner" }
        ])
      }))

    it.effect("made viewer, a signed-in owner's next write answers 403; removed from the workspace, it is out of reach; audited", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const other = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
        const session = yield* signIn(user.email)
        const key = { name: "ci", workspaceId: t.workspaceId }
        expect((yield* withSession(session, "/api-keys", { method: "POST", body: key })).status).toBe(201)

        const demoted = yield* admin(`/admin/users/${user.id}`, {
          workspaces: [{ workspaceId: t.workspaceId, role: "viewer" }, {
            workspaceId: other.workspaceId,
            role: "admin"
          }]
        }, "PATCH")
        expect(demoted.status).toBe(200)
        expect(demoted.body.workspaces).toEqual([
          { workspaceId: t.workspaceId, role: "viewer" },
          { workspaceId: other.workspaceId, role: "admin" }
        ])
        const refused = yield* withSession(session, "/api-keys", { method: "POST", body: key })
        expect([refused.status, refused.body.error]).toEqual([403, "FORBIDDEN"])
        const me = yield* withSession(session, "/me")
        expect(me.body.workspaces.map((w: { id: string; role: string }) => [w.id, w.role])).toEqual([
          [t.workspaceId, "viewer"],
          [other.workspaceId, "admin"]
        ])

        yield* admin(
          `/admin/users/${user.id}`,
          { workspaces: [{ workspaceId: other.workspaceId, role: "admin" }] },
          "PATCH"
        )
        expect((yield* withSession(session, `/programs/${t.programId}/outages`)).status).toBe(404)
        expect((yield* withSession(session, `/programs/${other.programId}/outages`)).status).toBe(200)

        const audit = yield* admin("/admin/audit?limit=200")
        const mine = audit.body.entries.filter((e: { target: string; action: string }) =>
          e.target === user.id && e.action === "user.set_roles"
        )
        expect(mine.map((e: { details: unknown }) => e.details)).toEqual(expect.arrayContaining([
          { from: "owner", to: "viewer" },
          { from: null, to: "admin" },
          { from: "viewer", to: null }
        ]))
        expect(mine.every((e: { actor: { kind: string } }) => e.actor.kind === "admin")).toBe(true)
      }))

    it.effect("DELETE /admin/users/{id}: 204, the session stops at once, the e-mail is free again; unknown 404", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
        const session = yield* signIn(user.email)
        expect((yield* withSession(session, "/me")).status).toBe(200)
        expect((yield* admin(`/admin/users/${user.id}`, undefined, "DELETE")).status).toBe(204)
        expect((yield* withSession(session, "/me")).status).toBe(401)
        expect(
          (yield* raw("/sign-in", { form: { email: user.email, password: "correct horse battery staple" } })).status
        )
          .toBe(401)
        const again = yield* admin(`/admin/users/${user.id}`, undefined, "DELETE")
        expect([again.status, again.body.error]).toEqual([404, "NOT_FOUND"])
        expect((yield* request(`/admin/users/${user.id}`, { method: "DELETE" })).status).toBe(401)
        const audit = yield* admin("/admin/audit?limit=200")
        expect(
          audit.body.entries.some((e: { target: string; action: string }) =>
            e.target === user.id && e.action === "user.delete"
          )
        ).toBe(true)
        // The address can be given to a new user.
        yield* createUser([{ workspaceId: t.workspaceId, role: "viewer" }], { email: user.email })
      }))

    it.effect("a consented grant follows its user: lastUsedAt records use; leaving a workspace takes the grant and its hooks down", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const other = yield* tenant()
        const user = yield* createUser([
          { workspaceId: t.workspaceId, role: "owner" },
          { workspaceId: other.workspaceId, role: "owner" }
        ])
        const session = yield* signIn(user.email)
        const { access } = yield* consent(session, [t.workspaceId, other.workspaceId])
        const apps = () => Effect.map(withSession(session, "/connected-apps"), (r) => r.body.apps)
        const [before] = yield* apps()
        expect(before.clientId).toMatch(/^oac_/)
        expect(before.lastUsedAt).toBeNull()
        const ahead = Date.now()
        expect((yield* bearer(access, "/me")).status).toBe(200)
        const [after] = yield* apps()
        expect(Date.parse(after.lastUsedAt)).toBeGreaterThanOrEqual(ahead - 1000)
        expect(Date.parse(after.lastUsedAt)).toBeLessThanOrEqual(Date.now())
        // Within the minute a further request writes nothing.
        expect((yield* bearer(access, "/programs")).status).toBe(200)
        expect((yield* apps())[0].lastUsedAt).toBe(after.lastUsedAt)

        const hook = yield* bearer(access, "/hooks", {
          body: { programId: t.programId, url: "https://hooks.example.com/a", eventTypes: ["milestone.achieved"] }
        })
        expect(hook.status).toBe(201)
        const sessionHook = yield* withSession(session, "/hooks", {
          method: "POST",
          body: { programId: t.programId, url: "https://hooks.example.com/b", eventTypes: ["milestone.achieved"] }
        })
        expect(sessionHook.status).toBe(201)
        const owner = yield* signIn((yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])).email)
        expect((yield* withSession(owner, "/hooks")).body.hooks).toHaveLength(2)

        // Left out of the first workspace: the grant reaches the second only, and the hooks there are gone.
        yield* admin(
          `/admin/users/${user.id}`,
          { workspaces: [{ workspaceId: other.workspaceId, role: "owner" }] },
          "PATCH"
        )
        const me = yield* bearer(access, "/me")
        expect(me.body.workspaces.map((w: { id: string }) => w.id)).toEqual([other.workspaceId])
        expect((yield* bearer(access, `/programs/${t.programId}/outages`)).status).toBe(404)
        expect((yield* withSession(owner, "/hooks")).body.hooks).toEqual([])
        // Added back, the grant does not come back to it: the user consents again for that.
        yield* admin(`/admin/users/${user.id}`, {
          workspaces: [{ workspaceId: other.workspaceId, role: "owner" }, { workspaceId: t.workspaceId, role: "owner" }]
        }, "PATCH")
        expect((yield* bearer(access, `/programs/${t.programId}/outages`)).status).toBe(404)
        expect((yield* bearer(access, `/programs/${other.programId}/outages`)).status).toBe(200)
        // Left out of the grant's last workspace: the grant is revoked, and disconnected from the list.
        yield* admin(
          `/admin/users/${user.id}`,
          { workspaces: [{ workspaceId: t.workspaceId, role: "owner" }] },
          "PATCH"
        )
        expect((yield* bearer(access, "/me")).status).toBe(401)
        expect(yield* apps()).toEqual([])
      }))

    it.effect("a refresh counts as a use of the app", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
        const session = yield* signIn(user.email)
        const { client, refresh } = yield* consent(session, [t.workspaceId])
        expect((yield* withSession(session, "/connected-apps")).body.apps[0].lastUsedAt).toBeNull()
        const ahead = Date.now()
        const refreshed = yield* tokenForm(client, { grant_type: "refresh_token", refresh_token: refresh })
        expect(refreshed.status).toBe(200)
        const [app] = (yield* withSession(session, "/connected-apps")).body.apps
        expect(Date.parse(app.lastUsedAt)).toBeGreaterThanOrEqual(ahead - 1000)
      }))

    it.effect("removing the user revokes their grant at once: the access token answers 401 and the refresh token invalid_grant", () =>
      Effect.gen(function*() {
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "admin" }])
        const session = yield* signIn(user.email)
        const { access, client, refresh } = yield* consent(session, [t.workspaceId])
        expect((yield* bearer(access, "/me")).status).toBe(200)
        expect((yield* admin(`/admin/users/${user.id}`, undefined, "DELETE")).status).toBe(204)
        expect((yield* bearer(access, "/me")).status).toBe(401)
        const refreshed = yield* tokenForm(client, { grant_type: "refresh_token", refresh_token: refresh })
        expect([refreshed.status, refreshed.body["error"]]).toEqual([400, "invalid_grant"])
      }))
  }
)
