/**
 * The fast path's own answers, over real HTTP with stand-in services: a defect behind a public door
 * answers 500 `{"error":"INTERNAL"}` and a storage failure 503 `{"error":"SERVICE_UNAVAILABLE"}`,
 * each logged (the HttpApi routes do the same, see HttpErrors.test.ts of `@streaks/http`), whether the door runs on
 * callbacks (state, server ingest) or in a fiber (webhook).
 */
import { assert, describe, it } from "@effect/vitest"
import { Errors } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import { Effect, Exit, Layer, Logger } from "effect"
import * as FastPath from "../src/FastPath.js"
import * as StandIns from "./support/StandIns.js"

const logs: Array<string> = []
const captureLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ cause, message }) => logs.push(`${String(message)} ${String(cause)}`))
)

/** A server whose only routes are the fast path's; anything else answers 404. */
const serve = (failure: Exit.Exit<never, Errors.StorageError>) =>
  Effect.gen(function*() {
    const fast = yield* FastPath.front((_req, res) => {
      res.writeHead(404)
      res.end()
    })
    return yield* NodeServer.serve(fast, { port: 0 })
  }).pipe(Effect.provide(Layer.merge(StandIns.failingWith(failure), captureLogs)))

const action = JSON.stringify({ siteKey: "site_x", userHash: "u1", event: "e" })

/** `GET /v1/state`, `POST /v1/server/e` and `POST /v1/webhook/site_x/e`: status and body of each. */
const callDoors = (url: string) =>
  Effect.promise(() =>
    Promise.all([
      fetch(`${url}/v1/state?siteKey=site_x&userHash=u1&event=e`),
      fetch(`${url}/v1/server/e`, { method: "POST", headers: { "content-type": "application/json" }, body: action }),
      fetch(`${url}/v1/webhook/site_x/e`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: action
      })
    ].map(async (reply) => {
      const r = await reply
      return { status: r.status, body: await r.json() }
    }))
  )

describe("FastPath", () => {
  it.live("a defect answers 500 INTERNAL and is logged, on the callback doors and the fiber door", () =>
    Effect.gen(function*() {
      const server = yield* serve(Exit.die(new Error("broken for the test")))
      logs.length = 0
      const replies = yield* callDoors(server.url)
      assert.deepStrictEqual(replies, Array(3).fill({ status: 500, body: { error: "INTERNAL" } }))
      // The log is written by a forked fiber, after the answer.
      yield* Effect.sleep("20 millis")
      assert.strictEqual(
        logs.filter((l) => l.startsWith("defect on a public door") && l.includes("broken for the test")).length,
        3
      )
    }).pipe(Effect.scoped))

  it.live("a storage failure answers 503 SERVICE_UNAVAILABLE and is logged, on the callback doors and the fiber door", () =>
    Effect.gen(function*() {
      const server = yield* serve(Exit.fail(new Errors.StorageError({ message: "store down for the test" })))
      logs.length = 0
      const replies = yield* callDoors(server.url)
      assert.deepStrictEqual(replies, Array(3).fill({ status: 503, body: { error: "SERVICE_UNAVAILABLE" } }))
      yield* Effect.sleep("20 millis")
      assert.strictEqual(logs.filter((l) => l.startsWith("storage failure on a public door")).length, 3)
    }).pipe(Effect.scoped))
})
