/**
 * Work that many fibers submit at once, run in batches: what arrives while a batch is busy shares
 * the next one (group commit). Callers wait on a `Deferred`; batches run in fibers of their own.
 */
import {
  Chunk,
  Context,
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberId,
  FiberSet,
  MutableQueue,
  Runtime,
  type Scope
} from "effect"

export interface Options<E = never> {
  /** Batches run at the same time. */
  readonly workers: number
  /**
   * With more than one worker, the fewest inputs for a batch that starts beside a running one
   * (default 1); fewer wait to share a later batch. A batch that starts with none running takes
   * whatever waits.
   */
  readonly minBatchBeside?: number | undefined
  /** Most inputs in one batch. */
  readonly maxBatch: number
  /** Most inputs waiting for a batch; past it a submission fails at once with `overloaded()`. */
  readonly maxWaiting?: number | undefined
  readonly overloaded?: (() => E) | undefined
  /**
   * How long closing the scope waits for the work submitted before (default 10 seconds); then it
   * returns, and what is still running is interrupted (its transaction never commits, and its
   * callers were never answered 2xx).
   */
  readonly closeDeadline?: Duration.DurationInput | undefined
}

interface Job<I, A, E> {
  readonly input: I
  readonly answer: Deferred.Deferred<A, E>
}

/**
 * A submit function for `run`, which gets the inputs of one batch and answers one exit per input,
 * in order. A call made while no batch runs is a batch of one and waits for nothing. With more than
 * one worker, `minBatchBeside` keeps the batches that run beside another large: a worker that took
 * whatever waited split the load into small batches, each paying the same fixed cost (a
 * transaction's statements and commit), and gained nothing (docs/performance.md).
 *
 * A batch that ends takes the next one in its own fiber before it completes its callers' deferreds:
 * the callers resume once that fiber waits on the next batch's first statement, so the database
 * works while they write their answers. Once submitted, a call's work runs to its end even if the
 * caller stops waiting; closing the scope waits for the work already submitted
 * (docs/decisions/0014-planners-and-an-effect-native-hot-path.md).
 */
export const make = <I, A, E>(
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>>,
  options: Options<E>
): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const fibers = yield* FiberSet.make<void>()
    // Batches run with the fiber refs of the maker and no services (`run` needs none): a fiber's
    // services are copied whenever a service is provided or a scope opened inside it, once per SQL
    // statement, so the smaller the cheaper.
    const runtime = yield* Effect.runtime<never>()
    const fork = Runtime.runFork(Runtime.make({
      context: Context.empty(),
      fiberRefs: runtime.fiberRefs,
      runtimeFlags: runtime.runtimeFlags
    }))
    const workers = Math.max(1, options.workers)
    const besideAt = Math.max(1, options.minBatchBeside ?? 1)
    const waiting = MutableQueue.bounded<Job<I, A, E>>(options.maxWaiting ?? Number.MAX_SAFE_INTEGER)
    let busy = 0
    let idle: Deferred.Deferred<void> | undefined

    const mayStart = (): boolean =>
      busy === 0 ? !MutableQueue.isEmpty(waiting) : busy < workers && MutableQueue.length(waiting) >= besideAt

    /** The next batch, if one may start now; it counts as busy from here. */
    const take = (): ReadonlyArray<Job<I, A, E>> | undefined => {
      if (!mayStart()) return undefined
      busy++
      return Chunk.toReadonlyArray(MutableQueue.pollUpTo(waiting, options.maxBatch))
    }

    /** Runs `jobs`, then each next batch this fiber may take, answering each batch's callers in turn. */
    const drive = (jobs: ReadonlyArray<Job<I, A, E>>): Effect.Effect<void> =>
      Effect.flatMap(
        // A defect fails the calls of its batch, never the front.
        Effect.catchAllCause(
          run(jobs.map((j) => j.input)),
          (cause) => Effect.succeed(jobs.map(() => Exit.failCause(cause)))
        ),
        (exits) => {
          busy--
          const next = take()
          return Effect.zipRight(
            Effect.forEach(jobs, (job, i) => Deferred.done(job.answer, exits[i]!), { discard: true }),
            Effect.suspend(() => {
              startBeside()
              if (next !== undefined) return drive(next)
              return busy === 0 && idle !== undefined ? Deferred.succeed(idle, undefined) : Effect.void
            })
          )
        }
      )

    /** Starts every batch that may start now, each in a fiber of its own. */
    const startBeside = (): void => {
      for (let jobs = take(); jobs !== undefined; jobs = take()) FiberSet.unsafeAdd(fibers, fork(drive(jobs)))
    }

    // Closing waits for the submitted work first (finalizers run last added first), then the fiber
    // set interrupts what is left.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        if (busy === 0 && MutableQueue.isEmpty(waiting)) return Effect.void
        const done = Deferred.unsafeMake<void>(FiberId.none)
        idle = done
        // A real timer, not `Clock`: shutdown must end under a TestClock too.
        const timer = setTimeout(
          () => Deferred.unsafeDone(done, Effect.void),
          Duration.toMillis(options.closeDeadline ?? Duration.seconds(10))
        )
        startBeside()
        return Effect.ensuring(Deferred.await(done), Effect.sync(() => clearTimeout(timer)))
      })
    )

    const overloaded = options.overloaded
    return (input: I): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const answer = Deferred.unsafeMake<A, E>(FiberId.none)
        if (!MutableQueue.offer(waiting, { input, answer })) {
          if (overloaded !== undefined) return Effect.fail(overloaded())
          return Effect.dieMessage("groupCommit: too many inputs wait")
        }
        startBeside()
        return Deferred.await(answer)
      })
  })
