/**
 * The typed client against the reference server (`Main.layer`, see support/TestServer.ts) on a free
 * port over a throwaway Postgres: the committed types are what the live `/openapi.json` generates,
 * and the calls a backend makes (ingest, state, customer member) work and come back typed.
 * `UPDATE_OPENAPI_TYPES=1` rewrites src/streaks-api.d.ts from the live server instead of comparing.
 */
import { assert, expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import { Duration, Effect } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import { generate, typesFile } from "../src/generate.js"
import * as StreaksClient from "../src/StreaksClient.js"
import { provision } from "./support/Tenant.js"
import { layer as TestServer } from "./support/TestServer.js"

// excludeTestServices: a real server needs the real clock (dates, the 5-minute skew rule).
layer(TestServer, { excludeTestServices: true, timeout: Duration.minutes(2) })("the openapi-fetch client", (it) => {
  const baseUrl = Effect.map(NodeServer.NodeServer, (server) => server.url)

  it.effect("src/streaks-api.d.ts is what openapi-typescript generates from the live /openapi.json", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const generated = yield* Effect.promise(() => generate(url))
      if (process.env.UPDATE_OPENAPI_TYPES === "1") writeFileSync(typesFile, generated)
      const committed = readFileSync(typesFile, "utf8")
      assert.isTrue(
        committed === generated,
        "src/streaks-api.d.ts is out of date with the server's /openapi.json: regenerate it " +
          "(UPDATE_OPENAPI_TYPES=1 npx vitest run --project typed-client, or `pnpm generate` against a running server)"
      )
    }))

  it.effect("records an action, then reads the state and the member's streak, all typed", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const result = yield* Effect.promise(async () => {
        const tenant = await provision(StreaksClient.makeRaw(url))
        const streaks = StreaksClient.make({ baseUrl: url, serverToken: tenant.serverToken, apiKey: tenant.apiKey })
        const recorded = await streaks.recordAction({
          siteKey: tenant.siteKey,
          userHash: "member-42",
          event: tenant.eventKey
        })
        const again = await streaks.recordAction({
          siteKey: tenant.siteKey,
          userHash: "member-42",
          event: tenant.eventKey
        })
        const state = await streaks.state({ siteKey: tenant.siteKey, userHash: "member-42", event: tenant.eventKey })
        const member = await streaks.memberStreak(tenant.programId, "member-42")
        return { recorded, again, state, member, programId: tenant.programId }
      })
      assert.strictEqual(result.recorded.response.status, 202)
      assert.deepStrictEqual(result.recorded.data, { ok: true, counted: true })
      assert.deepStrictEqual(result.again.data, { ok: true, counted: true, duplicate: true })
      // `data` is typed from the document: a wrong field name would not compile.
      const state = result.state.data
      assert.isDefined(state)
      expect(state?.streak).toEqual({ mode: "continuous", current: 1, best: 1, todayDone: true, pending: false })
      expect(state?.meta).toEqual({ apiVersion: "1", isLive: true })
      expect(state?.week).toHaveLength(7)
      expect(state?.milestones.map((m) => [m.target, m.achieved])).toEqual([[1, true]])
      expect(result.member.data).toMatchObject({
        programId: result.programId,
        userHash: "member-42",
        current: 1,
        best: 1,
        todayDone: true,
        isLive: true
      })
    }))

  it.effect("errors come back typed: a wrong server token is 401 SERVER_TOKEN_REQUIRED, an unknown program 404 NOT_FOUND", () =>
    Effect.gen(function*() {
      const url = yield* baseUrl
      const { member, wrongToken } = yield* Effect.promise(async () => {
        const tenant = await provision(StreaksClient.makeRaw(url))
        const wrong = StreaksClient.make({ baseUrl: url, serverToken: "sst_wrong", apiKey: tenant.apiKey })
        return {
          wrongToken: await wrong.recordAction({
            siteKey: tenant.siteKey,
            userHash: "member-7",
            event: tenant.eventKey
          }),
          member: await wrong.memberStreak("prg_unknown", "member-7")
        }
      })
      assert.strictEqual(wrongToken.response.status, 401)
      // The union of the route's documented codes: the compiler rejects a code the route cannot answer.
      const code:
        | "INVALID_BODY"
        | "INVALID_SITE_KEY"
        | "INVALID_WIDGET_KIND"
        | "SERVER_TOKEN_REQUIRED"
        | "IDEMPOTENCY_KEY_IN_PROGRESS"
        | "RATE_LIMITED"
        | "PAYLOAD_TOO_LARGE"
        | "SERVICE_UNAVAILABLE"
        | undefined = wrongToken.error?.error
      assert.strictEqual(code, "SERVER_TOKEN_REQUIRED")
      assert.strictEqual(member.response.status, 404)
      assert.deepStrictEqual(member.error, { error: "NOT_FOUND" })
    }))
})
