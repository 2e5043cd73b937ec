import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request, tenant, layer as testServer } from "./support/TestServer.js"

layer(testServer(), { timeout: 120_000 })("ingest over real HTTP", (it) => {
  it.effect("server ingest answers 202 ok and the state shows a one-day streak", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* request("/v1/server/e", {
        headers: { "x-streak-server-token": t.serverToken },
        body: { siteKey: t.siteKey, userHash: "member-1", event: "lesson_completed" }
      })
      expect(sent.status).toBe(202)
      expect(sent.body).toMatchObject({ ok: true, counted: true })
      const state = yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=member-1&event=lesson_completed`, {
        headers: { "x-streak-server-token": t.serverToken }
      })
      expect(state.status).toBe(200)
      expect(state.body.meta).toEqual({ apiVersion: "1", isLive: true })
      expect(state.body.streak).toMatchObject({ current: 1, best: 1, todayDone: true, pending: false })
    }))
})
