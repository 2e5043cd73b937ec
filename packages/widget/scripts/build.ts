/**
 * `pnpm build`, also run by `prepare` on install: the widget as one minified, dependency-free ES
 * module, `dist/widget.js`, and `dist/source.js`, whose default export is that module's text (what
 * a server imports to serve it at `/widget.js`; a bundler inlines it).
 */
import * as esbuild from "esbuild"
import { mkdirSync, renameSync, writeFileSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The two files `dist/` gets; their text. */
export interface Built {
  readonly widget: string
  readonly source: string
}

// Each file appears whole: a test run may build while a server of another test reads it.
const writeWhole = (path: string, text: string) => {
  const part = `${path}.${process.pid}.part`
  writeFileSync(part, text)
  renameSync(part, path)
}

/** Builds `src/StreakWidget.ts` into `dist/widget.js` and `dist/source.js`. */
export const build = async (): Promise<Built> => {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/StreakWidget.ts"],
    bundle: true,
    format: "esm",
    // Browsers with custom elements, shadow parts and private class fields.
    target: ["es2022", "chrome91", "firefox90", "safari15"],
    minify: true,
    legalComments: "none",
    write: false,
    logLevel: "warning"
  })
  const widget = result.outputFiles[0]!.text
  const source = `export default ${JSON.stringify(widget)}\n`
  mkdirSync(`${root}dist`, { recursive: true })
  writeWhole(`${root}dist/widget.js`, widget)
  writeWhole(`${root}dist/source.js`, source)
  return { widget, source }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { widget } = await build()
  console.log(`built dist/widget.js (${widget.length} bytes)`)
}
