/**
 * Effects that have already finished. A cache hit or a failed check is an `Exit`, and an `Exit` is
 * an effect: a hot path can go on from one at once instead of running it in a fiber (the read path
 * of `GET /v1/state` does, inside `StateQuery.state`).
 */
import { Effect, Exit } from "effect"

/** The exit of an effect that has already finished, else `undefined`. */
export const exitOf = <A, E, R>(self: Effect.Effect<A, E, R>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(self) ? (self as unknown as Exit.Exit<A, E>) : undefined

/** `Effect.flatMap`, but without an operation when `self` has already finished. */
export const andThen = <A, E, R, B, E2, R2>(
  self: Effect.Effect<A, E, R>,
  f: (a: A) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E | E2, R | R2> => {
  const exit = exitOf(self)
  if (exit === undefined) return Effect.flatMap(self, f)
  return Exit.isSuccess(exit) ? f(exit.value) : (exit as Exit.Exit<never, E>)
}
