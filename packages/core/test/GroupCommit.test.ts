/**
 * The group-commit front of `Ingest` and of state reads: what arrives while a batch runs shares the
 * next batch, each caller gets its own answer, a defect fails only its batch, and closing waits
 * for work in flight.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as GroupCommit from "../src/internal/groupCommit.js"

/** A `run` that records each batch and waits for `gate` before answering `input * 10`. */
const recorder = (gate: Deferred.Deferred<void>) => {
  const batches: Array<ReadonlyArray<number>> = []
  const run = (inputs: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      batches.push(inputs)
      if (inputs.includes(13)) return yield* Effect.die("unlucky batch")
      yield* Deferred.await(gate)
      return inputs.map((n) => Exit.succeed(n * 10))
    })
  return { batches, run }
}

/** A front over `recorder` whose first batch, `[1]`, has started and waits for `gate`. */
const firstBatchRunning = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const { batches, run } = recorder(gate)
  const submit = yield* GroupCommit.make(run, { workers: 1, maxBatch: 100 })
  const first = yield* Effect.fork(submit(1))
  yield* Effect.sleep("20 millis")
  return { batches, first, gate, submit }
})

describe("GroupCommit", () => {
  it.live("closing waits for submitted work, but no longer than closeDeadline", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { run } = recorder(gate)
      const scope = yield* Scope.make()
      const submit = yield* GroupCommit.make(run, { workers: 1, maxBatch: 100, closeDeadline: "100 millis" }).pipe(
        Scope.extend(scope)
      )
      yield* Effect.fork(submit(1))
      yield* Effect.sleep("20 millis")
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      const waited = Date.now() - started
      assert.isAtLeast(waited, 80, "it waited for the running batch")
      assert.isBelow(waited, 2_000, "and stopped at the deadline")
    }))

  it.live("past maxWaiting inputs, a submission fails at once with the overload error; the waiting ones still run", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, run } = recorder(gate)
      const submit = yield* GroupCommit.make<number, number, string>(run, {
        workers: 1,
        maxBatch: 100,
        maxWaiting: 2,
        overloaded: () => "overloaded"
      })
      const first = yield* Effect.fork(submit(1))
      yield* Effect.sleep("20 millis")
      const waiting = yield* Effect.fork(Effect.all([2, 3].map(submit), { concurrency: "unbounded" }))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(yield* Effect.flip(submit(4)), "overloaded")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Fiber.join(waiting), [20, 30])
      assert.deepStrictEqual(batches, [[1], [2, 3]])
      assert.strictEqual(yield* submit(5), 50, "room again once the queue drained")
    }).pipe(Effect.scoped))

  it.live("a lone call is a batch of one; calls made while it runs share the next batch, each with its own answer", () =>
    Effect.gen(function*() {
      const { batches, first, gate, submit } = yield* firstBatchRunning
      const rest = yield* Effect.fork(Effect.all([2, 3, 4].map(submit), { concurrency: "unbounded" }))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[1]], "the first batch started alone and the others wait for it")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Fiber.join(rest), [20, 30, 40])
      assert.deepStrictEqual(batches, [[1], [2, 3, 4]])
    }).pipe(Effect.scoped))

  it.live("two workers: a batch starts beside a running one only once minBatchBeside inputs wait; fewer wait for it", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, run } = recorder(gate)
      const submit = yield* GroupCommit.make(run, { workers: 2, minBatchBeside: 3, maxBatch: 100 })
      const calls = yield* Effect.fork(Effect.all([1, 2, 3].map(submit), { concurrency: "unbounded" }))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[1]], "two waiting are fewer than three: no batch beside the first")
      const more = yield* Effect.fork(submit(4))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[1], [2, 3, 4]], "three waiting: a second batch runs beside the first")
      const third = yield* Effect.fork(submit(5))
      yield* Effect.sleep("20 millis")
      assert.strictEqual(batches.length, 2, "two workers at most")
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(calls), [10, 20, 30])
      assert.deepStrictEqual([yield* Fiber.join(more), yield* Fiber.join(third)], [40, 50])
      assert.deepStrictEqual(batches, [[1], [2, 3, 4], [5]], "with none running, a batch takes whatever waits")
    }).pipe(Effect.scoped))

  it.live("two workers without minBatchBeside: the second batch starts at once", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, run } = recorder(gate)
      const submit = yield* GroupCommit.make(run, { workers: 2, maxBatch: 100 })
      const calls = yield* Effect.fork(Effect.all([1, 2, 3].map(submit), { concurrency: "unbounded" }))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[1], [2]])
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(calls), [10, 20, 30])
    }).pipe(Effect.scoped))

  it.live("maxBatch bounds a batch; a defect fails the calls of its batch and no other", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      yield* Deferred.succeed(gate, undefined)
      const { batches, run } = recorder(gate)
      const submit = yield* GroupCommit.make(run, { workers: 1, maxBatch: 2 })
      const exits = yield* Effect.all([10, 11, 12, 13, 14].map((n) => Effect.exit(submit(n))), {
        concurrency: "unbounded"
      })
      assert.isTrue(batches.every((b) => b.length <= 2))
      const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [[10, 11, 12, 13, 14][i]] : []))
      const unlucky = batches.find((b) => b.includes(13))!
      assert.deepStrictEqual(failed, [...unlucky], "exactly the calls that shared the failing batch fail")
      assert.deepStrictEqual(
        exits.filter(Exit.isSuccess).map((e) => e.value),
        [10, 11, 12, 13, 14].filter((n) => !unlucky.includes(n)).map((n) => n * 10)
      )
      // The front keeps working after a defect.
      assert.strictEqual(yield* submit(5), 50)
    }).pipe(Effect.scoped))

  it.live("a caller that stops waiting does not stop its work: the batch runs its input to the end", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, run } = recorder(gate)
      const finished: Array<number> = []
      const submit = yield* GroupCommit.make(
        (inputs: ReadonlyArray<number>) => Effect.tap(run(inputs), () => Effect.sync(() => finished.push(...inputs))),
        { workers: 1, maxBatch: 100 }
      )
      const caller = yield* Effect.fork(submit(7))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[7]], "the call's batch has started")
      yield* Fiber.interrupt(caller)
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(finished, [7], "Ingest relies on this: a submitted action commits")
    }).pipe(Effect.scoped))

  it.live("a finished batch starts the next one before its callers resume", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, run } = recorder(gate)
      const submit = yield* GroupCommit.make(run, { workers: 1, maxBatch: 100 })
      const first = yield* Effect.fork(Effect.map(submit(1), (answer) => [answer, batches.length]))
      yield* Effect.sleep("20 millis")
      const rest = yield* Effect.fork(Effect.all([2, 3].map(submit), { concurrency: "unbounded" }))
      yield* Effect.sleep("20 millis")
      assert.deepStrictEqual(batches, [[1]], "2 and 3 wait for the first batch")
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(first), [10, 2], "the caller of 1 resumed once [2, 3] had started")
      assert.deepStrictEqual(yield* Fiber.join(rest), [20, 30])
      assert.deepStrictEqual(batches, [[1], [2, 3]])
    }).pipe(Effect.scoped))

  it.live("closing the scope waits for the batch in flight, whose caller still gets its answer", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { run } = recorder(gate)
      const scope = yield* Scope.make()
      const submit = yield* GroupCommit.make(run, { workers: 1, maxBatch: 100 }).pipe(Scope.extend(scope))
      const call = yield* Effect.fork(submit(7))
      yield* Effect.sleep("20 millis")
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* Effect.sleep("20 millis")
      assert.isTrue((yield* Fiber.poll(closing))._tag === "None", "close returned while a batch was running")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(closing)
      assert.strictEqual(yield* Fiber.join(call), 70)
    }))
})
