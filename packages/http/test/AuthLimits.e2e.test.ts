/**
 * Failed authentications over real HTTP: each client address has a budget of them per minute
 * (here 5), shared by `/admin` and `/v1/api`; past it, its requests whose credential does not verify
 * answer 429 `RATE_LIMITED` with `Retry-After`, while valid credentials are served.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ADMIN_TOKEN, admin, request, tenant, layer as testServer } from "./support/TestServer.js"

layer(testServer({ rateLimit: { ipPerSecond: 10_000, sitePerSecond: 10_000, authFailuresPerMinute: 5 } }), {
  timeout: 120_000
})("failed authentications over real HTTP", (it) => {
  it.effect("admin token guesses, then bearer guesses, from one address: 401 until the budget is spent, then 429 for wrong credentials only", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const key = yield* admin(`/admin/workspaces/${t.workspaceId}/api-keys`, { name: "probe" })
      assert.strictEqual(key.status, 201)
      // Valid credentials spend nothing.
      for (let i = 0; i < 10; i++) {
        assert.strictEqual((yield* admin("/admin/workspaces", { name: "w", plan: "starter" })).status, 201)
        assert.strictEqual(
          (yield* request("/v1/api/me", { headers: { authorization: `Bearer ${key.body.key}` } })).status,
          200
        )
      }
      for (let i = 0; i < 3; i++) {
        const guess = yield* request("/admin/workspaces", {
          headers: { "x-admin-token": `guess-${i}` },
          body: { name: "w" }
        })
        assert.deepStrictEqual([guess.status, guess.body], [401, { error: "UNAUTHORIZED" }])
      }
      for (let i = 0; i < 2; i++) {
        const guess = yield* request("/v1/api/me", { headers: { authorization: `Bearer svc_api_guess${i}` } })
        assert.deepStrictEqual([guess.status, guess.body], [401, { error: "UNAUTHORIZED" }])
      }
      const limited = [
        yield* request("/admin/workspaces", { headers: { "x-admin-token": "guess-9" }, body: { name: "w" } }),
        yield* request("/v1/api/me", { headers: { authorization: "Bearer svc_api_guess9" } })
      ]
      for (const reply of limited) {
        assert.deepStrictEqual([reply.status, reply.body], [429, { error: "RATE_LIMITED" }])
        assert.isAtLeast(Number(reply.headers.get("retry-after")), 1)
      }
      // The valid credentials, from the same address, are served as usual.
      const served = yield* request("/admin/workspaces", {
        headers: { "x-admin-token": ADMIN_TOKEN },
        body: { name: "w", plan: "starter" }
      })
      assert.strictEqual(served.status, 201)
      assert.strictEqual(
        (yield* request("/v1/api/me", { headers: { authorization: `Bearer ${key.body.key}` } })).status,
        200
      )
    }))
})
