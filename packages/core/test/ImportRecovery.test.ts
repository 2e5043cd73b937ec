/**
 * An import whose owner went away (on the memory adapter, time from the TestClock): nothing is
 * claimed while its heartbeat is within the lease; after it, an import whose lines were all read
 * is recomputed and finished by `recover`, one still reading is `interrupted`, and an import of a
 * source that was interrupted is resumed by the next `start` of that source.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Stream, TestClock } from "effect"
import * as Imports from "../src/Imports.js"
import { StateQuery } from "../src/StateQuery.js"
import { layer, liveTenant } from "./support/pipeline.js"

const NOW = new Date("2026-03-31T15:00:00Z")
const DAY = 86_400_000
const lease = Duration.seconds(10)

const withImports = Layer.merge(layer, Imports.layerWith({ lease }).pipe(Layer.provide(layer)))

/** `userHash` active at noon UTC on each of the `days` days before NOW, one NDJSON line each. */
const days = (userHash: string, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const at = new Date(NOW.getTime() - (n - i) * DAY)
    at.setUTCHours(12, 0, 0, 0)
    return JSON.stringify({ userHash, ts: at.toISOString() })
  }).join("\n")

describe("history import recovery", () => {
  it.effect("after the lease, recover finishes a loaded import and interrupts one still reading; start resumes an interrupted source", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const t = yield* liveTenant()
      const imports = yield* Imports.Imports
      const state = yield* StateQuery

      // Loaded, then its owner went away before the recomputation.
      const loadedJob = yield* imports.start(t.program.id)
      const loaded = yield* imports.load(loadedJob, Imports.lines(Stream.make(days("ann", 4))), { format: "ndjson" })
      assert.isTrue(loaded.loaded)
      // Within the lease nothing is claimed: the owners may be alive.
      yield* TestClock.adjust(Duration.seconds(5))
      assert.deepStrictEqual(yield* imports.recover, [])
      assert.strictEqual((yield* state.memberStreak(t.program.id, "ann")).current, 0)

      yield* TestClock.adjust(Duration.seconds(10))
      const recovered = yield* imports.recover
      const byId = new Map(recovered.map((j) => [j.id, j]))
      assert.strictEqual(byId.get(loadedJob.id)?.status, "finished")
      assert.strictEqual((yield* state.memberStreak(t.program.id, "ann")).current, 4)
      // Claimed once: a second check finds nothing.
      assert.deepStrictEqual(yield* imports.recover, [])

      // A job that never read all its lines is interrupted.
      const stalled = yield* imports.start(t.program.id, "sha256:other")
      yield* TestClock.adjust(Duration.seconds(11))
      const [interrupted] = yield* imports.recover
      assert.strictEqual(interrupted?.id, stalled.id)
      assert.strictEqual(interrupted?.status, "interrupted")
      assert.strictEqual((yield* imports.get(t.program.id, stalled.id)).status, "interrupted")

      // Starting the same source again resumes the interrupted import, running again.
      const resumed = yield* imports.start(t.program.id, "sha256:other")
      assert.strictEqual(resumed.id, stalled.id)
      assert.strictEqual(resumed.status, "running")
      const done = yield* imports.finish(
        yield* imports.load(resumed, Imports.lines(Stream.make(days("cat", 2))), { format: "ndjson" })
      )
      assert.deepStrictEqual([done.status, done.imported], ["finished", 2])
      assert.strictEqual((yield* state.memberStreak(t.program.id, "cat")).current, 2)
    }).pipe(Effect.provide(withImports)))
})
