/**
 * V8 settings the `streaks` command applies to its own process at start (`bin.ts`):
 * allocation-site pretenuring off. An embedder's process keeps V8's defaults.
 *
 * Why: once most objects of an allocation site survive a scavenge, V8 allocates that site's
 * objects straight in the old generation, and each of them then keeps the young objects it points
 * to alive until a full collection. Effect's fibers that wait on a callback (every batch and
 * statement waits on Postgres) trip that: the server promoted about 0.9 MB per scavenge, where the
 * bare `node:http` + `pg` baseline promotes nothing. With it off, ingest promoted 0.2 MB per
 * scavenge, the peak RSS under load fell by 30–60 MB, and the production command's smaller heap
 * stopped costing CPU (figures in docs/performance.md).
 */
import { setFlagsFromString } from "node:v8"

/** Whether to turn pretenuring off: not when node was started with either setting of it. */
export const wanted = (execArgv: ReadonlyArray<string>): boolean =>
  !execArgv.some((arg) => /^--(no-?)?allocation[-_]site[-_]pretenuring$/.test(arg))

/**
 * Turns pretenuring off unless node's own flags chose. V8 reads the flag at every collection, so
 * setting it at run time works; before the server takes load is early enough.
 */
export const apply = (execArgv: ReadonlyArray<string>): void => {
  if (wanted(execArgv)) setFlagsFromString("--no-allocation-site-pretenuring")
}
