/**
 * V8 settings the `streaks` command applies to its own process at start (`bin.ts`), each unless
 * node was started with a setting of its own for it. An embedder's process keeps V8's defaults.
 * Why each, with the measurements behind it: docs/operations.md ("Memory") and
 * [decisions/0009](../../../docs/decisions/0009-server-process.md).
 *
 * - Allocation-site pretenuring off. Once most objects of an allocation site survive a scavenge,
 *   V8 allocates that site's objects straight in the old generation, and each of them then keeps
 *   the young objects it points to alive until a full collection. Effect's fibers that wait on a
 *   callback (every batch and statement waits on Postgres) trip that, so the server promoted young
 *   objects by the scavenge where the bare `node:http` + `pg` baseline promotes none.
 * - The heap of `--max-semi-space-size=8 --heap-growing-percent=50`, which keeps the peak under
 *   ingest within the memory budget: the old generation's limit grows by half of what a full
 *   collection leaves instead of V8's factor, and the young generation stops growing at two 8 MB
 *   semi-spaces instead of 16. Node takes the semi-space's maximum only on its command line, so
 *   growth is stopped at run time instead: V8 reads its growth factor whenever the young
 *   generation would grow. It grows by doubling, so it may grow only while twice its size fits
 *   under the cap: after V8 has shrunk it in an idle moment it can come back at a size that does
 *   not double onto the cap, and a doubling from there would pass it. Node reports a collection a
 *   turn or two later, so two growths in quick succession can still pass the cap once. For that
 *   reason growth waits for the first report, and the command applies these settings before its
 *   other modules load (`internal/applyHeapTuning.ts`).
 * - On one or two cores, scavenges on the main thread alone (`--no-parallel-scavenge`). V8 splits
 *   each scavenge among helper threads, which on a machine this small wait for a core that the
 *   server, Postgres or its clients already hold. More cores keep V8's default.
 */
import { availableParallelism } from "node:os"
import { PerformanceObserver } from "node:perf_hooks"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/** Both semi-spaces, as with `--max-semi-space-size=8`. */
const youngBytes = 16 * 1024 * 1024

/** Whether node was started without a setting of its own for V8's flag `name` (either spelling). */
export const unset = (execArgv: ReadonlyArray<string>, name: string): boolean => {
  const flag = name.replace(/[-_]/g, "[-_]")
  const own = new RegExp(`^--(no-?)?${flag}(=.*)?$`)
  return !execArgv.some((arg) => own.test(arg))
}

/**
 * Keeps the young generation at or under `youngBytes`, and lets it grow back towards that should
 * V8 ever shrink it: after each collection, the growth factor is V8's default of 2 while twice the
 * young generation fits under the cap, and 1 otherwise.
 *
 * Growth is held from the call until node's first report of a collection. Loading the command's
 * modules is one synchronous run of allocation in which no report can arrive: left at V8's factor,
 * it grew the young generation past the cap to V8's maximum in some starts, where it stayed under
 * load for the process's life (docs/operations.md, "Memory").
 */
const capYoungGeneration = (): void => {
  let growing = false
  setFlagsFromString("--semi-space-growth-factor=1")
  new PerformanceObserver(() => {
    const young = getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0
    const grow = young * 2 <= youngBytes
    if (grow === growing) return
    growing = grow
    setFlagsFromString(`--semi-space-growth-factor=${grow ? 2 : 1}`)
  }).observe({ entryTypes: ["gc"] })
}

/** Cores up to which scavenges stay on the main thread. */
const serialScavengeCores = 2

/** Applies the settings above that node's own flags leave to it, for a machine of `cores` cores. */
export const apply = (execArgv: ReadonlyArray<string>, cores: number = availableParallelism()): void => {
  if (unset(execArgv, "allocation-site-pretenuring")) setFlagsFromString("--no-allocation-site-pretenuring")
  if (unset(execArgv, "parallel-scavenge") && cores <= serialScavengeCores) setFlagsFromString("--no-parallel-scavenge")
  if (unset(execArgv, "heap-growing-percent")) setFlagsFromString("--heap-growing-percent=50")
  if (unset(execArgv, "max-semi-space-size") && unset(execArgv, "semi-space-growth-factor")) capYoungGeneration()
}
