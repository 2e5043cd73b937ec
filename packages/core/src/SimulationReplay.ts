/**
 * Where a policy simulation replays its pages of histories
 * (docs/operations.md#trying-a-policy-before-shipping-it): in the calling thread, a page at a time,
 * unless the service is given a replay that hands pages to other threads (the server's workers).
 */
import { Context, Effect, Scheduler } from "effect"
import * as Simulation from "./Simulation.js"

export interface Replay {
  /** Pages replayed at the same time (at least 1); a simulation reads up to two more ahead. */
  readonly concurrency: number
  /** The outcome of one page under each of `settings`, in their order. */
  readonly outcomes: (
    histories: ReadonlyArray<Simulation.History>,
    settings: ReadonlyArray<Simulation.Settings>
  ) => Effect.Effect<ReadonlyArray<Simulation.Outcome>>
}

/**
 * A few turns of the event loop (not of Effect's queue of fibers alone), so that the read of the
 * next page reaches its socket before a replay in this thread holds it.
 */
const sendTurns = Effect.yieldNow().pipe(Effect.withScheduler(Scheduler.timer(0)), Effect.repeatN(2))

/** Replays each page in the calling thread with the pure calculus, one page at a time. */
export const inThread: Replay = {
  concurrency: 1,
  outcomes: (histories, settings) =>
    Effect.zipRight(sendTurns, Effect.sync(() => settings.map((s) => Simulation.outcome(histories, s))))
}

/** The replay `StreakPolicies` uses; `inThread` unless a layer provides another. */
export class SimulationReplay extends Context.Reference<SimulationReplay>()("@streaks/core/SimulationReplay", {
  defaultValue: (): Replay => inThread
}) {}
