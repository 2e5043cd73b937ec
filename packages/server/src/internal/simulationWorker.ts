/**
 * A simulation worker thread (`SimulationWorkers`): replays the pages of histories it is sent with
 * the pure calculus, `Simulation.outcome`, and answers each page's outcomes.
 */
import * as WorkerRunner from "@effect/platform/WorkerRunner"
import { NodeRuntime, NodeWorkerRunner } from "@effect/platform-node"
import * as Simulation from "@streaks/core/Simulation"
import { Effect, Layer } from "effect"
import { type ReplayRequest, settingsOf } from "./replayRequest.js"

const replay = (request: ReplayRequest) =>
  Effect.sync(() => request.settings.map((s) => Simulation.outcome(request.histories, settingsOf(s))))

WorkerRunner.launch(WorkerRunner.layer(replay).pipe(Layer.provide(NodeWorkerRunner.layer))).pipe(
  NodeRuntime.runMain
)
