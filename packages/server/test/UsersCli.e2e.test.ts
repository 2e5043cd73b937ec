/**
 * `streaks users invite` as an operator runs it, on a fresh Postgres database: it prints the new
 * user's one-time invite link, a second user with the same address (in any case) is refused with a
 * non-zero exit, and the link works on the running server.
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

layer(server, { timeout: 120_000 })("streaks users invite", (it) => {
  it.effect("prints a one-time invite link that sets the password on the server; a taken e-mail exits 1", () =>
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
    }))
})
