/**
 * Round trips, counted on the in-memory store: every call of a storage port a batch uses waits at
 * a gate that the test opens one round trip at a time, so calls issued together (as a store that
 * pipelines sends them) pass in one opening and calls issued one after another in as many.
 */
import { Context, Deferred, Effect, Fiber, FiberId, Layer, Ref } from "effect"
import * as Aliases from "../../src/Aliases.js"
import * as DueChecks from "../../src/DueChecks.js"
import * as Ingest from "../../src/Ingest.js"
import {
  AchievementStore,
  ActionLog,
  ExperimentStore,
  IdempotencyStore,
  MemberStore,
  Outbox,
  StreakStore,
  SubscriptionStore,
  UsageStore
} from "../../src/Ports.js"
import * as StateQuery from "../../src/StateQuery.js"
import { base } from "./pipeline.js"

interface GateState {
  /** What a call waits for while `roundTrips` counts; none outside it (setting up, checking). */
  readonly open: Deferred.Deferred<void> | undefined
  /** Calls that have reached the gate, ever: the test waits for it to stop moving. */
  readonly arrived: number
  /** The port methods called while `roundTrips` counts, in order of arrival. */
  readonly calls: ReadonlyArray<string>
}

export class Gate extends Context.Tag("test/Gate")<Gate, Ref.Ref<GateState>>() {}

const pass = (gate: Ref.Ref<GateState>, name: string) =>
  Effect.flatMap(
    Ref.modify(gate, (s) => [s.open, {
      ...s,
      arrived: s.arrived + 1,
      calls: s.open === undefined ? s.calls : [...s.calls, name]
    }]),
    (open) => open === undefined ? Effect.void : Deferred.await(open)
  )

// Every method of a port, behind the gate.
const gated = <S extends object>(service: S, gate: Ref.Ref<GateState>): S =>
  Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      typeof method === "function" ? (...args: Array<unknown>) => Effect.zipRight(pass(gate, name), method(...args)) : method
    ])
  ) as S

const ports = [MemberStore, StreakStore, AchievementStore, ActionLog, SubscriptionStore, Outbox, UsageStore, ExperimentStore, IdempotencyStore]

const gates = Layer.effectContext(Effect.gen(function*() {
  const gate = yield* Gate
  let context = Context.empty() as Context.Context<never>
  for (const port of ports) {
    const service = yield* port as Context.Tag<any, object>
    context = Context.add(context, port as Context.Tag<any, object>, gated(service, gate))
  }
  return context
}))

const services = Layer.mergeAll(Ingest.layer, StateQuery.layer, Aliases.layer, DueChecks.layer)

/**
 * The services on the in-memory store, its idempotency keys through `keys` and its streak store
 * through `streaks` (say, without an optional method, as a third-party adapter may be), its ports
 * behind `Gate`.
 */
export const layerRoundTripsWith = (changes: {
  readonly keys?: (store: IdempotencyStore["Type"]) => IdempotencyStore["Type"]
  readonly streaks?: (store: StreakStore["Type"]) => StreakStore["Type"]
}) =>
  services.pipe(
    Layer.provideMerge(gates.pipe(
      Layer.provideMerge(Layer.mergeAll(
        Layer.effect(IdempotencyStore, Effect.map(IdempotencyStore, changes.keys ?? ((store) => store))),
        Layer.effect(StreakStore, Effect.map(StreakStore, changes.streaks ?? ((store) => store)))
      )),
      Layer.provideMerge(base)
    )),
    Layer.provideMerge(Layer.effect(Gate, Ref.make<GateState>({ open: undefined, arrived: 0, calls: [] })))
  )

/** The services on the in-memory store (its idempotency keys through `keys`), its ports behind `Gate`. */
export const layerRoundTripsWithKeys = (keys: (store: IdempotencyStore["Type"]) => IdempotencyStore["Type"]) =>
  layerRoundTripsWith({ keys })

/** The services on the in-memory store, its ports behind `Gate`. */
export const layerRoundTrips = layerRoundTripsWith({})

// Real time, not the test clock: the fibers of statements issued together start outside the test's
// fiber, so the test clock cannot tell when they have all reached the gate.
const pause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 2)))

/** Waits until no call has reached the gate for a few pauses: all that can go now are waiting. */
const settled = (gate: Ref.Ref<GateState>) =>
  Effect.gen(function*() {
    let last = -1
    let still = 0
    while (still < 3) {
      yield* pause
      const { arrived } = yield* Ref.get(gate)
      still = arrived === last ? still + 1 : 0
      last = arrived
    }
  })

/** Runs `effect` to its end, opening the gate once per round trip; answers its result, the round trips and the calls. */
export const roundTrips = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const gate = yield* Gate
    yield* Ref.update(gate, (s) => ({ ...s, open: Deferred.unsafeMake<void>(FiberId.none), calls: [] }))
    const fiber = yield* Effect.fork(effect)
    let trips = 0
    while (true) {
      yield* settled(gate)
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") {
        const { calls } = yield* Ref.getAndUpdate(gate, (s) => ({ ...s, open: undefined }))
        return { result: yield* done.value, trips, calls }
      }
      const next = yield* Deferred.make<void>()
      const { open } = yield* Ref.getAndUpdate(gate, (s) => ({ ...s, open: next }))
      if (open !== undefined) yield* Deferred.succeed(open, undefined)
      trips++
      if (trips > 1000) return yield* Effect.dieMessage("more than 1000 round trips: something waits outside the gate")
    }
  })
