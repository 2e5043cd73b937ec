/**
 * Entry of the production bundle, `dist/bin.mjs` (`scripts/bundle.ts`): runs the server bundled in
 * `dist/server.cjs`, compiled from the V8 code cache that the build wrote beside it.
 *
 * Why a cache: compiling the bundle from source fills a parser zone that glibc keeps in the
 * process's heap once it is freed, for the process's whole life (docs/performance.md). From the
 * cache, V8 skips that parse. A cache that this node rejects (another node version, or V8 flags on
 * its command line) or a missing one costs that parse and the C heap it leaves.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { Script } from "node:vm"
import * as CodeCache from "./codeCache.js"

const file = fileURLToPath(new URL("server.cjs", import.meta.url))
// The hash below reads these bytes: hashing the string instead made a UTF-8 copy of the whole
// bundle at start, and the servers measured that way then peaked higher under load
// (docs/performance.md).
const bytes = readFileSync(file)
const source = bytes.toString("utf8")

/** V8's data from the cache file, unless it is missing or was made from another build. */
const cachedData = (): Buffer | undefined => {
  let cache: Buffer
  try {
    cache = readFileSync(`${file}.cache`)
  } catch {
    return undefined
  }
  return CodeCache.decode(bytes, cache)
}

/**
 * The bundle is one function expression taking `require` and `__import`: the build turns each
 * dynamic `import()` of a package left outside the bundle into `__import()`, since node 20 loses a
 * script's dynamic-import hook when the script comes from a code cache. (Called without arguments,
 * it returns at once: the build's way to compile it for the cache.)
 */
type Server = (require: NodeJS.Require, __import: (specifier: string) => Promise<unknown>) => void

const server: Server = new Script(source, { filename: file, cachedData: cachedData() })
  .runInThisContext()

server(createRequire(file), (specifier) => import(specifier))
