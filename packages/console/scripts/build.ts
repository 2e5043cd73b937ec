/**
 * `pnpm build`, also run by `prepare` on install: the console as one minified ES module,
 * `dist/console.js`, its style sheet `dist/console.css`, and `dist/source.js`, whose default export
 * holds both as text (what the reference server imports to serve them under `/console/assets/`).
 */
import * as esbuild from "esbuild"
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** What `dist/` gets. */
export interface Built {
  readonly script: string
  readonly style: string
}

// Each file appears whole: a test run may build while a server of another test reads it.
const writeWhole = (path: string, text: string) => {
  const part = `${path}.${process.pid}.part`
  writeFileSync(part, text)
  renameSync(part, path)
}

/** Builds `src/Console.tsx` and `src/console.css` into `dist/`. */
export const build = async (): Promise<Built> => {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/Console.tsx"],
    bundle: true,
    format: "esm",
    target: ["es2022", "chrome100", "firefox100", "safari15"],
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "none",
    write: false,
    logLevel: "warning"
  })
  const script = result.outputFiles[0]!.text
  const css = await esbuild.transform(readFileSync(`${root}src/console.css`, "utf8"), { loader: "css", minify: true })
  const style = css.code
  mkdirSync(`${root}dist`, { recursive: true })
  writeWhole(`${root}dist/console.js`, script)
  writeWhole(`${root}dist/console.css`, style)
  writeWhole(`${root}dist/source.js`, `export default ${JSON.stringify({ script, style })}\n`)
  return { script, style }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { script, style } = await build()
  console.log(`built dist/console.js (${script.length} bytes) and dist/console.css (${style.length} bytes)`)
}
