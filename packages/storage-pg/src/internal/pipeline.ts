/**
 * `pipelined`: the statements of one transaction that need no answer from each other, issued at
 * once (a store that pipelines sends them in one round trip).
 */
import { Effect, Exit, Runtime } from "effect"

/**
 * Runs statements of one transaction side by side and answers their results in order, or the first
 * failure. They are issued in order, and a store that pipelines (Postgres) sends them in one round
 * trip and runs them in that order; only statements that do not need each other's answers go
 * together. Each runs to its end even when another fails: interrupting a statement already on the
 * wire would cost a cancel request, and the transaction is rolled back anyway.
 */
// Any errors and services: the result has the union of the statements' own.
type Statements = ReadonlyArray<Effect.Effect<unknown, any, any>>
type Successes<T extends Statements> = { -readonly [K in keyof T]: Effect.Effect.Success<T[K]> }

export const pipelined = <const T extends Statements>(
  effects: T
): Effect.Effect<Successes<T>, Effect.Effect.Error<T[number]>, Effect.Effect.Context<T[number]>> =>
  // A fiber per statement on the caller's runtime (its transaction and services), joined through
  // one callback. `Effect.all` with concurrency forked one fiber more per call and kept sets,
  // arrays and scheduler tasks per statement (docs/decisions/0005-batch-statements-on-postgres.md).
  // Uninterruptible, as the statements are: the caller waits for every one of them.
  Effect.uninterruptible(Effect.flatMap(Effect.runtime<Effect.Effect.Context<T[number]>>(), (runtime) =>
    Effect.async<Successes<T>, Effect.Effect.Error<T[number]>>((resume) => {
      const exits = new Array<Exit.Exit<unknown, Effect.Effect.Error<T[number]>>>(effects.length)
      let left = effects.length
      const settle = () => {
        const failed = exits.find(Exit.isFailure) as Exit.Failure<never, Effect.Effect.Error<T[number]>> | undefined
        resume(
          failed ?? Effect.succeed(exits.map((e) =>
            (e as Exit.Success<unknown, never>).value
          ) as Successes<T>)
        )
      }
      if (left === 0) return settle()
      const run = Runtime.runCallback(runtime)
      effects.forEach((effect, i) =>
        run(effect, {
          onExit: (exit) => {
            exits[i] = exit
            if (--left === 0) settle()
          }
        })
      )
    })))
