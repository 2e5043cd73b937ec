/**
 * `BENCH_IMPORT` alone, without the rest of `pnpm bench`: `tsx bench/src/import-only.ts 500000`,
 * with the bundle of `pnpm build` (or `BENCH_SERVER=packages/server/src/bin.ts`: the sources).
 */
import * as Imports from "./imports.js"

const entry = process.env.BENCH_SERVER ?? "packages/server/dist/bin.mjs"
const main = async () => Imports.print(await Imports.run(Imports.sizeOf(process.argv[2] ?? "1")!, entry))
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
