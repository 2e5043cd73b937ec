/**
 * Work that many fibers submit at once, run in batches: each worker takes everything waiting and
 * runs it together, so what arrives while a batch is busy shares the next one (group commit).
 */
import { Cause, Context, Duration, Effect, Exit, Runtime, type Scope } from "effect"

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
   * returns, and what is still running ends with the process (its transaction never commits, and
   * its callers were never answered 2xx).
   */
  readonly closeDeadline?: Duration.DurationInput | undefined
  /**
   * How a finished batch hands each caller its answer (default: at once), once per caller, in
   * order. The next batch has started, up to its first wait, before this is called; see
   * `Ingest.BatchOptions.handOff`.
   */
  readonly handOff?: ((answer: () => void) => void) | undefined
}

/** Submits inputs: as an effect that waits for the input's batch, or with a callback, without a fiber. */
export interface Front<I, A, E> {
  (input: I): Effect.Effect<A, E>
  /**
   * Submits `input` and calls `onExit` with its exit when its batch is done (it may be at once,
   * within this call). For callers that are not fibers; should `onExit` throw, the error is logged
   * and the batch's other callers still get their answers.
   */
  readonly submit: (input: I, onExit: (exit: Exit.Exit<A, E>) => void) => void
}

interface Job<I, A, E> {
  readonly input: I
  readonly resume: (exit: Exit.Exit<A, E>) => void
}

/**
 * A front for `run`, which gets the inputs of one batch and answers one exit per input, in order.
 * A call made while no batch runs is a batch of one and waits for nothing. With more than one
 * worker, `minBatchBeside` keeps the batches that run beside another large: a worker that took
 * whatever waited split the load into small batches, each paying the same fixed cost (a
 * transaction's statements and commit), and gained nothing (docs/performance.md). Once submitted, a
 * call's work runs to its end even if the caller stops waiting; closing the scope waits for the
 * work already submitted.
 *
 * Callers wait through `Effect.async` on a plain queue rather than a `Queue` and a `Deferred` per
 * call: this sits on the path of every action, and the lighter hand-off costs less
 * (docs/decisions/0003-group-commit-queue.md).
 */
export const make = <I, A, E>(
  run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>>,
  options: Options<E>
): Effect.Effect<Front<I, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Batches run with the fiber refs of the front's maker and no services (`run` needs none): a
    // fiber's services are copied whenever a service is provided or a scope opened inside it, once
    // per SQL statement, so the smaller the cheaper.
    const runtime = yield* Effect.runtime<never>()
    const batchRuntime = Runtime.make({
      context: Context.empty(),
      fiberRefs: runtime.fiberRefs,
      runtimeFlags: runtime.runtimeFlags
    })
    const runCallback = Runtime.runCallback(batchRuntime)
    const runFork = Runtime.runFork(batchRuntime)
    const workers = Math.max(1, options.workers)
    const waiting: Array<Job<I, A, E>> = []
    const besideAt = Math.max(1, options.minBatchBeside ?? 1)
    let busy = 0
    let onIdle: (() => void) | undefined

    const handOff = options.handOff

    const batch = (jobs: ReadonlyArray<Job<I, A, E>>) =>
      run(jobs.map((j) => j.input)).pipe(
        // A defect fails the calls of its batch, never the front.
        Effect.catchAllCause((cause) => Effect.succeed(jobs.map(() => Exit.failCause(cause))))
      )

    // A callback that throws must not keep the callers after it from their answers; it is logged.
    const answer = (job: Job<I, A, E>, exit: Exit.Exit<A, E>): void => {
      try {
        job.resume(exit)
      } catch (defect) {
        runFork(Effect.logError("a caller of a batch threw while taking its answer", Cause.die(defect)))
      }
    }

    const mayStart = (): boolean => busy === 0 ? waiting.length > 0 : busy < workers && waiting.length >= besideAt

    const pump = (): void => {
      while (mayStart()) {
        const jobs = waiting.splice(0, options.maxBatch)
        busy++
        runCallback(batch(jobs), {
          onExit: (exit) => {
            busy--
            // The next batch starts first, so that what it sends can go out before this batch's
            // callers take the thread.
            pump()
            const exits = Exit.isSuccess(exit) ? exit.value : jobs.map(() => Exit.failCause(exit.cause))
            // One hand-off per caller, so that a hand-off that spreads work over time (the
            // reference server's) can spread a batch's answers too.
            for (let i = 0; i < jobs.length; i++) {
              const job = jobs[i]!
              const outcome = exits[i]!
              if (handOff === undefined) answer(job, outcome)
              else handOff(() => answer(job, outcome))
            }
          }
        })
      }
      if (busy === 0 && onIdle !== undefined) {
        const idle = onIdle
        onIdle = undefined
        idle()
      }
    }

    yield* Effect.addFinalizer(() =>
      Effect.async<void>((resume) => {
        // A real timer, not `Clock`: shutdown must end under a TestClock too.
        const timer = setTimeout(() => {
          onIdle = undefined
          resume(Effect.void)
        }, Duration.toMillis(options.closeDeadline ?? Duration.seconds(10)))
        onIdle = () => {
          clearTimeout(timer)
          resume(Effect.void)
        }
        pump()
        return Effect.sync(() => clearTimeout(timer))
      })
    )

    const maxWaiting = options.maxWaiting ?? Infinity
    const overloaded = options.overloaded
    const submit = (input: I, onExit: (exit: Exit.Exit<A, E>) => void): void => {
      if (overloaded !== undefined && waiting.length >= maxWaiting) return onExit(Exit.fail(overloaded()))
      waiting.push({ input, resume: onExit })
      pump()
    }
    return Object.assign((input: I) => Effect.async<A, E>((resume) => submit(input, resume)), { submit })
  })
