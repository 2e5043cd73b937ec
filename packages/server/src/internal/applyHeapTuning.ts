/**
 * Applies the `streaks` command's heap settings (`HeapTuning`) as a module of its own, so that
 * `bin.ts` can import it before every other module: the settings must govern the allocation of
 * loading them.
 */
import * as HeapTuning from "../HeapTuning.js"

HeapTuning.apply(process.execArgv)
