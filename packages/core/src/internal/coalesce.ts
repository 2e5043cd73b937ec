/**
 * Work that many fibers submit at once, run in batches: each worker takes everything waiting and
 * runs it together, so what arrives while a batch is busy shares the next one (group commit).
 */
import { Chunk, Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface Options {
  /** Batches run at the same time. */
  readonly workers: number
  /** Most inputs in one batch. */
  readonly maxBatch: number
}

interface Job<I, A, E> {
  readonly input: I
  readonly done: Deferred.Deferred<A, E>
}

/**
 * A front for `run`, which gets the inputs of one batch and answers one exit per input, in order.
 * A call made while a worker is idle is a batch of one and waits for nothing. Once submitted, a
 * call's work runs to its end even if the caller stops waiting.
 */
export const make = <I, A, E>(
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>>,
  options: Options
): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Job<I, A, E>>(), Queue.shutdown)
    const batch = (jobs: ReadonlyArray<Job<I, A, E>>) =>
      run(jobs.map((j) => j.input)).pipe(
        // A defect fails the calls of its batch, never the worker.
        Effect.catchAllCause((cause) => Effect.succeed(jobs.map(() => Exit.failCause(cause)))),
        Effect.flatMap((exits) => Effect.forEach(jobs, (j, i) => Deferred.done(j.done, exits[i]!), { discard: true }))
      )
    const worker = Effect.forever(
      Effect.flatMap(Queue.takeBetween(queue, 1, options.maxBatch), (jobs) => batch(Chunk.toReadonlyArray(jobs)))
    )
    for (let i = 0; i < Math.max(1, options.workers); i++) yield* Effect.forkScoped(worker)
    return (input: I) =>
      Effect.flatMap(Deferred.make<A, E>(), (done) =>
        Effect.zipRight(Queue.offer(queue, { input, done }), Deferred.await(done)))
  })
