/**
 * The server (`Main.layer`, see support/TestServer.ts) on a free port of 127.0.0.1 over a
 * throwaway Postgres, called only through the typed client, as a TypeScript consumer would.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Ids } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import { Duration, Effect, Option } from "effect"
import * as Client from "../src/Client.js"
import * as Walkthrough from "../src/Walkthrough.js"
import { ADMIN_TOKEN, layer as TestServer } from "./support/TestServer.js"

// excludeTestServices: a real server needs the real clock (dates, the 5-minute skew rule).
layer(TestServer, { excludeTestServices: true, timeout: Duration.minutes(2) })("reference server", (it) => {
  const baseUrl = Effect.map(NodeServer.NodeServer, (server) => server.url)

  describe("the typed client", () => {
    it.effect("provisions through the admin routes, records an action and reads a 1-day streak", () =>
      Effect.gen(function*() {
        const result = yield* Walkthrough.run({ baseUrl: yield* baseUrl, adminToken: ADMIN_TOKEN })
        assert.deepStrictEqual(result.recorded, { ok: true, counted: true })
        assert.deepStrictEqual(result.streak, { current: 1, best: 1, todayDone: true })
        assert.isTrue(result.isLive, "the first real action made the program live")
      }).pipe(Effect.provide(Client.layer)))

    it.effect("a second action the same day is a duplicate and the streak stays at 1", () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const first = yield* Walkthrough.run({ baseUrl: url, adminToken: ADMIN_TOKEN, userHash: "member-7" })
        const client = yield* Client.make({ baseUrl: url })
        const again = yield* client.ingest.server({
          payload: { siteKey: first.siteKey, userHash: Ids.UserHash.make("member-7"), event: "lesson_completed" },
          headers: { "x-streak-server-token": first.serverToken }
        })
        assert.deepStrictEqual(again, { ok: true, counted: true, duplicate: true })
      }).pipe(Effect.provide(Client.layer)))
  })

  describe("errors come back as status + code", () => {
    it.effect("a wrong server token: 401 SERVER_TOKEN_REQUIRED", () =>
      Effect.gen(function*() {
        const url = yield* baseUrl
        const { siteKey } = yield* Walkthrough.run({ baseUrl: url, adminToken: ADMIN_TOKEN })
        const client = yield* Client.make({ baseUrl: url })
        const error = yield* Effect.flip(client.ingest.server({
          payload: { siteKey, userHash: Ids.UserHash.make("member-42"), event: "lesson_completed" },
          headers: { "x-streak-server-token": "sst_wrong" }
        }))
        assert.deepStrictEqual(
          yield* Client.errorOf(error),
          Option.some({ status: 401, code: "SERVER_TOKEN_REQUIRED" })
        )
      }).pipe(Effect.provide(Client.layer)))

    it.effect("admin routes without the admin token: 401 UNAUTHORIZED; an unknown siteKey: 400 INVALID_SITE_KEY", () =>
      Effect.gen(function*() {
        const client = yield* Client.make({ baseUrl: yield* baseUrl })
        const unauthorized = yield* Effect.flip(
          client.admin.createWorkspace({ payload: { name: "Nope", plan: "starter" } })
        )
        assert.deepStrictEqual(yield* Client.errorOf(unauthorized), Option.some({ status: 401, code: "UNAUTHORIZED" }))
        const unknownSite = yield* Effect.flip(client.ingest.server({
          payload: { siteKey: "site_unknown", userHash: Ids.UserHash.make("member-42"), event: "lesson_completed" },
          headers: { "x-streak-server-token": "sst_whatever" }
        }))
        assert.deepStrictEqual(
          yield* Client.errorOf(unknownSite),
          Option.some({ status: 400, code: "INVALID_SITE_KEY" })
        )
      }).pipe(Effect.provide(Client.layer)))

    it.effect("the health route answers ok", () =>
      Effect.gen(function*() {
        const client = yield* Client.make({ baseUrl: yield* baseUrl })
        assert.deepStrictEqual(yield* client.meta.health(), { status: "ok" })
      }).pipe(Effect.provide(Client.layer)))
  })
})
