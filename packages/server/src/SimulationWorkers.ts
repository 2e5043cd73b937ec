/**
 * Policy simulations replayed in worker threads (docs/operations.md#trying-a-policy-before-shipping-it):
 * the server reads the next page of histories while workers replay earlier ones with the pure
 * calculus. Workers start with the first simulation and stop after a minute without one.
 */
import * as Worker from "@effect/platform/Worker"
import { NodeWorker } from "@effect/platform-node"
import type * as Simulation from "@streaks/core/Simulation"
import { inThread, SimulationReplay } from "@streaks/core/SimulationReplay"
import { Effect, Layer, Scope } from "effect"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { availableParallelism } from "node:os"
import { pathToFileURL } from "node:url"
import * as WorkerThreads from "node:worker_threads"
import * as ReplayRequest from "./internal/replayRequest.js"

/**
 * Workers when none are configured: two on a host of four cores or more, else none (the replay in
 * the server's thread). Handing a page over costs both threads a copy of it, so workers pay only
 * where cores are free beside the server's thread and the database; past two, the server's thread
 * (reading and decoding the pages) is the limit (docs/performance.md#policy-simulation).
 */
export const defaultWorkers = (cores: number = availableParallelism()): number => (cores >= 4 ? 2 : 0)

/**
 * A worker thread running the worker's script: beside this module when compiled (`.js`), the
 * TypeScript source through tsx's API (a loader named in a worker's flags does not reach it on
 * node 20), or, in the production bundle (no `import.meta` there, a `require` of its own), the
 * worker's bundle beside it.
 */
const spawn = (): () => WorkerThreads.Worker => {
  const here: string | undefined = import.meta.url
  if (here === undefined) {
    const file = require.resolve("./simulationWorker.cjs")
    return () => new WorkerThreads.Worker(file)
  }
  if (!here.endsWith(".ts")) {
    const file = new URL("./internal/simulationWorker.js", here)
    if (!existsSync(file)) throw new Error(`the simulation worker's script is missing: ${file.href}`)
    return () => new WorkerThreads.Worker(file)
  }
  // tsx's ES module API: `require.resolve` would name its CommonJS one.
  const tsx = createRequire(here).resolve("tsx/package.json")
  const api = new URL("dist/esm/api/index.mjs", pathToFileURL(tsx)).href
  const file = new URL("./internal/simulationWorker.ts", here).href
  const code = `import(${JSON.stringify(api)}).then((tsx) => tsx.tsImport(${JSON.stringify(file)}, ${
    JSON.stringify(here)
  }))`
  return () => new WorkerThreads.Worker(code, { eval: true })
}

/** Replays pages in `workers` threads (0: in the server's thread, the core's default). */
export const layer = (workers: number): Layer.Layer<SimulationReplay> => {
  if (workers <= 0) return Layer.succeed(SimulationReplay, inThread)
  const worker = spawn()
  const replay = Effect.gen(function*() {
    // The pool is made by the first simulation that needs it (a process that never simulates
    // starts no worker), in the layer's scope, and its workers go after a minute without work.
    const scope = yield* Effect.scope
    const platform = yield* Effect.context<Worker.WorkerManager | Worker.Spawner>()
    const pool = yield* Effect.cached(
      Worker.makePool<ReplayRequest.ReplayRequest, ReadonlyArray<Simulation.Outcome>, never>({
        minSize: 0,
        maxSize: workers,
        timeToLive: "1 minute"
      }).pipe(Scope.extend(scope), Effect.provide(platform), Effect.orDie)
    )
    return {
      concurrency: workers,
      outcomes: (histories: ReadonlyArray<Simulation.History>, settings: ReadonlyArray<Simulation.Settings>) =>
        // A worker that fails to start or dies is the server's fault, not the caller's: a defect.
        Effect.flatMap(pool, (p) => Effect.orDie(p.executeEffect(ReplayRequest.encode(histories, settings))))
    }
  })
  return Layer.scoped(SimulationReplay, replay).pipe(
    Layer.provide(NodeWorker.layer(worker))
  )
}
