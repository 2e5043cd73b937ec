/** `BENCH_IMPORT` alone, without the rest of `pnpm bench`: `tsx bench/src/import-only.ts 500000`. */
import * as Imports from "./imports.js"

const main = async () => Imports.print(await Imports.run(Imports.sizeOf(process.argv[2] ?? "1")!))
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
