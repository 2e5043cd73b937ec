/**
 * `streaks users invite` as an operator runs it, on a fresh Postgres database: it prints the new
 * user's one-time invite link, a second user with the same address (in any case) is refused with a
 * non-zero exit, and the link works on the running server; `users set-role` and `users remove`
 * change the user's roles and remove the user, the session ending at once.
 */
import { assert, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import * as PgTest from "@streaks/storage-pg/PgTest"
import { Clock, Effect, Layer, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as ReferenceServer from "./support/ReferenceServer.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const ADMIN = "users-cli-admin-token"
const KEY = "users-cli-secret-key"

const server = ReferenceServer.layer({ STREAKS_ADMIN_TOKEN: ADMIN, STREAKS_SECRET_KEY: KEY }).pipe(
  Layer.provideMerge(PgTest.layer),
  Layer.provideMerge(Layer.setClock(Clock.make()))
)

const cli = (databaseUrl: string, args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, ["--import", "tsx", "src/bin.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, DATABASE_URL: databaseUrl, STREAKS_SECRET_KEY: KEY, STREAKS_ADMIN_TOKEN: ADMIN }
  })

// Eight runs of the command, each a process that compiles its sources first: beyond the default
// test timeout on a loaded machine.
layer(server, { timeout: 180_000 })("streaks users invite, set-role and remove", (it) => {
  it.effect(
    "invite prints a one-time link that sets the password; set-role replaces the roles; remove ends the session; mistakes exit non-zero",
    () =>
      Effect.gen(function*() {
        const { url } = yield* NodeServer.NodeServer
        const databaseUrl = Redacted.value(yield* PgTest.url)
        const workspace = yield* Effect.promise(() =>
          fetch(`${url}/admin/workspaces`, {
            method: "POST",
            headers: { "x-admin-token": ADMIN, "content-type": "application/json" },
            body: JSON.stringify({ name: "Acme", plan: "starter" })
          }).then((r) => r.json() as Promise<{ id: string }>)
        )
        const invited = cli(databaseUrl, [
          "users",
          "invite",
          "--email",
          "Ada@Example.com",
          "--name",
          "Ada",
          "--workspace",
          `${workspace.id}:owner`,
          "--base-url",
          url
        ])
        assert.strictEqual(invited.status, 0, invited.stderr)
        const printed = JSON.parse(invited.stdout) as { id: string; email: string; inviteUrl: string }
        assert.match(printed.id, /^usr_/)
        assert.strictEqual(printed.email, "Ada@Example.com")
        assert.isTrue(printed.inviteUrl.startsWith(`${url}/invite?token=ivt_`))

        const again = cli(databaseUrl, [
          "users",
          "invite",
          "--email",
          "ada@example.com",
          "--name",
          "Ada",
          "--workspace",
          `${workspace.id}:admin`
        ])
        assert.notStrictEqual(again.status, 0)
        assert.include(again.stdout + again.stderr, "a user with this e-mail address exists")
        const badRole = cli(databaseUrl, [
          "users",
          "invite",
          "--email",
          "b@example.com",
          "--name",
          "B",
          "--workspace",
          `${workspace.id}:root`
        ])
        assert.notStrictEqual(badRole.status, 0)

        // The link sets the password and signs in; then the password signs in.
        const token = new URL(printed.inviteUrl).searchParams.get("token")!
        const set = yield* Effect.promise(() =>
          fetch(`${url}/invite`, {
            method: "POST",
            redirect: "manual",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ token, password: "correct horse battery staple" }).toString()
          })
        )
        assert.strictEqual(set.status, 303)
        const signIn = yield* Effect.promise(() =>
          fetch(`${url}/sign-in`, {
            method: "POST",
            redirect: "manual",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ email: "ada@example.com", password: "correct horse battery staple" }).toString()
          })
        )
        assert.strictEqual(signIn.status, 303)
        assert.isTrue(signIn.headers.getSetCookie().some((c) => c.startsWith("streaks_session=sid_")))
        const cookie = signIn.headers.getSetCookie().find((c) => c.startsWith("streaks_session="))!.split(";")[0]!

        // set-role by e-mail replaces the roles; an unknown user or a bad role exits non-zero.
        const demoted = cli(databaseUrl, [
          "users",
          "set-role",
          "--user",
          "ADA@example.com",
          "--workspace",
          `${workspace.id}:viewer`
        ])
        assert.strictEqual(demoted.status, 0, demoted.stderr)
        const listed = yield* Effect.promise(() =>
          fetch(`${url}/admin/users`, { headers: { "x-admin-token": ADMIN } }).then((r) =>
            r.json() as Promise<{ users: Array<{ id: string; workspaces: unknown }> }>
          )
        )
        assert.deepStrictEqual(listed.users.find((u) => u.id === printed.id)!.workspaces, [
          { workspaceId: workspace.id, role: "viewer" }
        ])
        const nobody = cli(databaseUrl, [
          "users",
          "set-role",
          "--user",
          "nobody@example.com",
          "--workspace",
          `${workspace.id}:owner`
        ])
        assert.notStrictEqual(nobody.status, 0)
        assert.include(nobody.stdout + nobody.stderr, "user not found")
        const wrongRole = cli(databaseUrl, [
          "users",
          "set-role",
          "--user",
          printed.id,
          "--workspace",
          `${workspace.id}:root`
        ])
        assert.notStrictEqual(wrongRole.status, 0)

        // remove ends the session at once; a second remove exits non-zero.
        const removed = cli(databaseUrl, ["users", "remove", "--user", printed.id])
        assert.strictEqual(removed.status, 0, removed.stderr)
        const me = yield* Effect.promise(() => fetch(`${url}/v1/api/me`, { headers: { cookie } }))
        assert.strictEqual(me.status, 401)
        const twice = cli(databaseUrl, ["users", "remove", "--user", printed.id])
        assert.notStrictEqual(twice.status, 0)
      }),
    { timeout: 240_000 }
  )
})
