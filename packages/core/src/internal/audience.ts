/**
 * Reading who hears the events of some programs (`OutboundEvents.Audience`) from the ports: each
 * program's running experiment and its subscriptions that listen to the given event types.
 */
import { Effect, Option } from "effect"
import type { Experiment, OutboundEventType, Subscription } from "../Domain.js"
import type { StorageError } from "../Errors.js"
import type { ProgramId } from "../Ids.js"
import type * as OutboundEvents from "../OutboundEvents.js"
import { ExperimentStore, SubscriptionStore } from "../Ports.js"

/** The audience of `programs` for events of `types` (a subscription listening to several is listed once). */
export const read = (
  programs: ReadonlyArray<ProgramId>,
  types: ReadonlyArray<OutboundEventType>
): Effect.Effect<OutboundEvents.Audience, StorageError, ExperimentStore | SubscriptionStore> =>
  Effect.flatMap(Effect.all([ExperimentStore, SubscriptionStore]), ([experiments, subscriptions]) =>
    Effect.map(
      Effect.forEach(programs, (program) =>
        Effect.all([
          experiments.running(program),
          Effect.forEach(types, (type) => subscriptions.forEvent(program, type))
        ])),
      (found) => {
        const running = new Map<ProgramId, Experiment>()
        const listening = new Map<ProgramId, ReadonlyArray<Subscription>>()
        programs.forEach((program, i) => {
          const [experiment, byType] = found[i]!
          if (Option.isSome(experiment)) running.set(program, experiment.value)
          const seen = new Map<string, Subscription>()
          for (const s of byType.flat()) seen.set(s.id, s)
          listening.set(program, [...seen.values()])
        })
        return { experiments: running, subscriptions: listening }
      }
    ))
