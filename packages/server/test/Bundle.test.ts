/**
 * The production artifact: `pnpm build` bundles the server into `dist/bin.mjs`, which runs on plain
 * node (no TypeScript loader), serves, counts an action end to end and stops cleanly on SIGTERM.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer, type AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import * as PgTest from "@streaks/storage-pg/PgTest"

const root = fileURLToPath(new URL("..", import.meta.url))
const bundle = `${root}dist/bin.mjs`
const admin = "bundle-admin-token"

const freePort = () =>
  new Promise<number>((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => ok(port))
    })
  })

const post = async (base: string, path: string, headers: Record<string, string>, body: unknown) => {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })
  return { status: r.status, body: (await r.json()) as any }
}

layer(PgTest.layer, { timeout: "120 seconds" })("the bundled server", (it) => {
  it.effect("builds, runs on plain node, counts an action and stops on SIGTERM", () =>
    Effect.gen(function*() {
      execFileSync(process.execPath, ["--import", "tsx", "scripts/bundle.ts"], { cwd: root, stdio: "pipe" })
      assert.isTrue(readFileSync(bundle, "utf8").startsWith("#!/usr/bin/env node\n"))

      const url = Redacted.value(yield* PgTest.url)
      const port = yield* Effect.promise(freePort)
      const child = spawn(process.execPath, [bundle, "serve"], {
        env: { ...process.env, DATABASE_URL: url, PORT: String(port), STREAKS_ADMIN_TOKEN: admin, STREAKS_SECRET_KEY: "bundle-test-key" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (c) => (output += c))
      child.stderr.on("data", (c) => (output += c))
      const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)))
      const base = `http://127.0.0.1:${port}`
      try {
        yield* Effect.promise(async () => {
          for (let i = 0; i < 200; i++) {
            if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) return
            await new Promise((r) => setTimeout(r, 100))
          }
          throw new Error(`the bundle did not come up:\n${output}`)
        })
        const answers = yield* Effect.promise(async () => {
          const h = { "x-admin-token": admin }
          const ws = await post(base, "/admin/workspaces", h, { name: "b", plan: "pro" })
          const project = await post(base, "/admin/projects", h, { workspaceId: ws.body.id, name: "b", allowedOrigins: [] })
          await post(base, "/admin/programs", h, { projectId: project.body.id, name: "p", eventKey: "read", milestones: [{ target: 1, msg: "first" }] })
          const ingest = await post(base, "/v1/server/e", { "x-streak-server-token": project.body.serverToken }, {
            siteKey: project.body.siteKey,
            userHash: "member-1",
            event: "read"
          })
          const state = await fetch(`${base}/v1/state?siteKey=${project.body.siteKey}&userHash=member-1&event=read`, {
            headers: { "x-streak-server-token": project.body.serverToken }
          }).then((r) => r.json() as Promise<any>)
          return { ingest, state }
        })
        assert.deepStrictEqual(answers.ingest, { status: 202, body: { ok: true, counted: true } })
        assert.strictEqual(answers.state.streak.current, 1)
        assert.isTrue(answers.state.milestones[0].achieved)
      } finally {
        child.kill("SIGTERM")
      }
      assert.strictEqual(yield* Effect.promise(() => exited), 0, output)
    }))
})
