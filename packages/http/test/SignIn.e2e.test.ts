import { expect, layer } from "@effect/vitest"
import { Ports } from "@streaks/core"
import { Effect } from "effect"
import { refusedMessage } from "../src/AccountPages.js"
import { createUser, freshEmail, PASSWORD, raw, sessionCookieOf, signIn } from "./support/Accounts.js"
import { admin, layer as testServer, request, tenant } from "./support/TestServer.js"

const escaped = (text: string) => text.replace(/'/g, "&#39;")

layer(testServer(), { timeout: 120_000 })("users, invites and sign-in over real HTTP on Postgres", (it) => {
  it.effect("POST /admin/users: 201 with a password; short password 400, taken e-mail (any case) 409, unknown workspace 404", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const email = freshEmail()
      const created = yield* admin("/admin/users", {
        email,
        name: "Ada",
        workspaces: [{ workspaceId: t.workspaceId, role: "owner" }],
        password: PASSWORD
      })
      expect(created.status).toBe(201)
      expect(created.body.id).toMatch(/^usr_/)
      expect(created.body).toEqual({ id: created.body.id, email })
      const again = yield* admin("/admin/users", {
        email: email.toUpperCase(),
        name: "Ada again",
        workspaces: [{ workspaceId: t.workspaceId, role: "viewer" }],
        password: PASSWORD
      })
      expect(again.status).toBe(409)
      expect(again.body).toEqual({ error: "CONFLICT" })
      const short = yield* admin("/admin/users", {
        email: freshEmail(),
        name: "Short",
        workspaces: [{ workspaceId: t.workspaceId, role: "viewer" }],
        password: "elevenchars"
      })
      expect(short.status).toBe(400)
      expect(short.body).toEqual({ error: "INVALID_BODY" })
      const unknown = yield* admin("/admin/users", {
        email: freshEmail(),
        name: "Nowhere",
        workspaces: [{ workspaceId: "ws_unknown", role: "viewer" }]
      })
      expect(unknown.status).toBe(404)
      const badRole = yield* admin("/admin/users", {
        email: freshEmail(),
        name: "Role",
        workspaces: [{ workspaceId: t.workspaceId, role: "root" }]
      })
      expect(badRole.status).toBe(400)
      const noToken = yield* request("/admin/users", {
        body: { email: freshEmail(), name: "X", workspaces: [{ workspaceId: t.workspaceId, role: "owner" }] }
      })
      expect(noToken.status).toBe(401)
      // The password is stored as an argon2id PHC string, never as given.
      const catalog = yield* Ports.Catalog
      const [stored] = yield* catalog.find("user", { emailKey: email })
      expect(stored!.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
      expect(JSON.stringify(stored)).not.toContain(PASSWORD)
    }))

  it.effect("an invite link sets the password once, signs the user in, and works no more", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "admin" }], { password: null })
      expect(user.inviteUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/invite\?token=ivt_/)
      const path = new URL(user.inviteUrl!).pathname + new URL(user.inviteUrl!).search
      const token = new URL(user.inviteUrl!).searchParams.get("token")!
      const page = yield* raw(path)
      expect(page.status).toBe(200)
      expect(page.text).toContain(user.email)
      // Before a password is set, signing in is refused like a wrong password.
      expect((yield* raw("/sign-in", { form: { email: user.email, password: PASSWORD } })).status).toBe(401)
      const short = yield* raw("/invite", { form: { token, password: "too short" } })
      expect(short.status).toBe(400)
      const set = yield* raw("/invite", { form: { token, password: PASSWORD } })
      expect(set.status).toBe(303)
      expect(set.headers.get("location")).toBe("/console")
      expect(sessionCookieOf(set.headers)).toMatch(/^streaks_session=sid_/)
      expect((yield* raw(path)).status).toBe(404)
      expect((yield* raw("/invite", { form: { token, password: "another good password" } })).status).toBe(404)
      expect((yield* raw("/invite?token=ivt_nothing")).status).toBe(404)
      // The password set through the invite is the one that signs in.
      yield* signIn(user.email)
    }))

  it.effect("GET /sign-in is a form with Email, Password and Sign in; the right password answers 303 with the cookie", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "viewer" }])
      const page = yield* raw("/sign-in?return_to=%2Fconsole%2Fprograms")
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toContain("text/html")
      expect(page.headers.get("cache-control")).toBe("no-store")
      expect(page.text).toMatch(/<label for="email">Email<\/label>/)
      expect(page.text).toMatch(/<label for="password">Password<\/label>/)
      expect(page.text).toMatch(/<button type="submit">Sign in<\/button>/)
      expect(page.text).toContain(`name="return_to" value="/console/programs"`)

      const answer = yield* raw("/sign-in", {
        form: { email: user.email.toUpperCase(), password: PASSWORD, return_to: "/console/programs" }
      })
      expect(answer.status).toBe(303)
      expect(answer.headers.get("location")).toBe("/console/programs")
      const setCookie = answer.headers.getSetCookie().find((c) => c.startsWith("streaks_session="))!
      expect(setCookie).toMatch(/; HttpOnly/)
      expect(setCookie).toMatch(/; SameSite=Lax/)
      expect(setCookie).toMatch(/; Max-Age=604800/)
      // Plain http here: no Secure flag (over https it is set: TrustedProxy test).
      expect(setCookie).not.toMatch(/Secure/)
      // Only the token's hash is stored.
      const token = sessionCookieOf(answer.headers)!.slice("streaks_session=".length)
      const catalog = yield* Ports.Catalog
      const sessions = yield* catalog.find("session", { userId: user.id as never })
      expect(sessions.length).toBe(1)
      expect(JSON.stringify(sessions)).not.toContain(token)
    }))

  it.effect("return_to outside this origin lands on /console: absolute, protocol-relative and backslash forms", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "viewer" }])
      for (const target of ["https://evil.example/x", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"]) {
        const answer = yield* raw("/sign-in", { form: { email: user.email, password: PASSWORD, return_to: target } })
        expect(answer.status).toBe(303)
        expect(answer.headers.get("location")).toBe("/console")
      }
    }))

  it.effect("a wrong password and an unknown e-mail show the page again with the same neutral message", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
      const wrong = yield* raw("/sign-in", { form: { email: user.email, password: "not the password at all" } })
      const unknown = yield* raw("/sign-in", { form: { email: freshEmail(), password: PASSWORD } })
      for (const answer of [wrong, unknown]) {
        expect(answer.status).toBe(401)
        expect(sessionCookieOf(answer.headers)).toBeUndefined()
        expect(answer.text).toContain(escaped(refusedMessage))
        expect(answer.text).toMatch(/<button type="submit">Sign in<\/button>/)
      }
      expect(wrong.text.replace(user.email, "")).toBe(unknown.text.replace(/person\.[0-9a-f]+@example\.com/, ""))
      expect(wrong.text).not.toMatch(/password is wrong|no such|unknown/i)
    }))

  it.effect("after 5 failed sign-ins within 15 minutes the account refuses even the right password", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
      const other = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
      for (let i = 0; i < 4; i++) {
        expect((yield* raw("/sign-in", { form: { email: user.email, password: `wrong password ${i}` } })).status)
          .toBe(401)
      }
      // Four failures: the right password still works, and clears the count.
      yield* signIn(user.email)
      for (let i = 0; i < 5; i++) {
        expect((yield* raw("/sign-in", { form: { email: user.email, password: `wrong password ${i}` } })).status)
          .toBe(401)
      }
      const locked = yield* raw("/sign-in", { form: { email: user.email, password: PASSWORD } })
      expect(locked.status).toBe(401)
      expect(sessionCookieOf(locked.headers)).toBeUndefined()
      expect(locked.text).toContain(escaped(refusedMessage))
      // Another account is not affected.
      yield* signIn(other.email)
    }))

  it.effect("POST /sign-out needs the CSRF token (403 without), then ends the session", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
      const session = yield* signIn(user.email)
      expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const missing = yield* raw("/sign-out", { method: "POST", headers: { cookie: session.cookie } })
      expect(missing.status).toBe(403)
      expect(JSON.parse(missing.text)).toEqual({ error: "FORBIDDEN" })
      const wrong = yield* raw("/sign-out", { headers: { cookie: session.cookie }, form: { csrfToken: "nope" } })
      expect(wrong.status).toBe(403)
      expect((yield* request("/v1/api/me", { headers: { cookie: session.cookie } })).status).toBe(200)
      const out = yield* raw("/sign-out", {
        headers: { cookie: session.cookie },
        form: { csrfToken: session.csrfToken }
      })
      expect(out.status).toBe(303)
      expect(out.headers.get("location")).toBe("/sign-in")
      expect(out.headers.getSetCookie().some((c) => c.startsWith("streaks_session=;") && c.includes("Max-Age=0")))
        .toBe(true)
      expect((yield* request("/v1/api/me", { headers: { cookie: session.cookie } })).status).toBe(401)
    }))
})
