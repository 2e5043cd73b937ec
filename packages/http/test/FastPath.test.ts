/**
 * The fast path's own answers, over real HTTP with stand-in services: a defect behind a public door
 * answers 500 `{"error":"INTERNAL"}` and is logged (the HttpApi routes do the same, see
 * HttpErrors.test.ts), whether the door ran in a fiber (ingest) or on callbacks (state).
 */
import { assert, describe, it } from "@effect/vitest"
import { Aliases, Ingest, StateQuery } from "@streaks/core"
import { Effect, Exit, Layer, Logger } from "effect"
import * as FastPath from "../src/FastPath.js"
import * as NodeServer from "../src/NodeServer.js"
import * as RateLimit from "../src/RateLimit.js"

const broken = () => Effect.die(new Error("broken for the test"))

const services = Layer.mergeAll(
  Layer.succeed(StateQuery.StateQuery, StateQuery.StateQuery.of({
    state: broken,
    stateCallback: (_request, onExit) => onExit(Exit.die(new Error("broken for the test"))),
    memberStreak: broken
  })),
  Layer.succeed(Ingest.Ingest, {
    resolveProject: broken,
    record: broken
  } as unknown as Ingest.Ingest["Type"]),
  Layer.succeed(Aliases.Aliases, {} as Aliases.Aliases["Type"]),
  RateLimit.layer({ ipPerSecond: 100, sitePerSecond: 100 })
)

const logs: Array<string> = []
const captureLogs = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ cause, message }) => logs.push(`${String(message)} ${String(cause)}`))
)

/** A server whose only routes are the fast path's; anything else answers 404. */
const serve = Effect.gen(function*() {
  const fast = yield* FastPath.front((_req, res) => {
    res.writeHead(404)
    res.end()
  })
  return yield* NodeServer.serve(fast, { port: 0 })
}).pipe(Effect.provide(Layer.merge(services, captureLogs)))

describe("FastPath", () => {
  it.live("a defect answers 500 INTERNAL and is logged, on the callback door (state) and the fiber door (ingest)", () =>
    Effect.gen(function*() {
      const server = yield* serve
      logs.length = 0
      const state = yield* Effect.promise(() => fetch(`${server.url}/v1/state?siteKey=site_x&userHash=u1&event=e`))
      assert.strictEqual(state.status, 500)
      assert.deepStrictEqual(yield* Effect.promise(() => state.json()), { error: "INTERNAL" })
      const ingest = yield* Effect.promise(() =>
        fetch(`${server.url}/v1/server/e`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ siteKey: "site_x", userHash: "u1", event: "e" })
        })
      )
      assert.strictEqual(ingest.status, 500)
      assert.deepStrictEqual(yield* Effect.promise(() => ingest.json()), { error: "INTERNAL" })
      // The log is written by a forked fiber, after the answer.
      yield* Effect.sleep("20 millis")
      assert.strictEqual(logs.filter((l) => l.startsWith("defect on a public door") && l.includes("broken for the test")).length, 2)
    }).pipe(Effect.scoped))
})
