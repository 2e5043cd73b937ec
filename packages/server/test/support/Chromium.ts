/**
 * Debian's Chromium for browser tests, driven by `playwright-core`: its path, installed with apt
 * where it is missing and the tests run as root; otherwise undefined, with the reason.
 */
import { Context, Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { type Browser as PlaywrightBrowser, chromium } from "playwright-core"

const which = (): string | undefined => {
  try {
    return execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim() || undefined
  } catch {
    return undefined
  }
}

/** The flags every launch uses: no sandbox (root in CI), no GPU, and no traffic of Chromium's own. */
export const args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

/** Chromium's path, or why there is none. */
export const executable = (): { readonly path: string } | { readonly missing: string } => {
  const found = which()
  if (found !== undefined) return { path: found }
  if (process.getuid?.() !== 0) {
    return { missing: "chromium is not installed and the tests do not run as root to install it" }
  }
  try {
    execFileSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium"], {
      stdio: "ignore",
      timeout: 600_000
    })
  } catch (e) {
    return { missing: `chromium could not be installed with apt-get: ${e instanceof Error ? e.message : String(e)}` }
  }
  const installed = which()
  return installed !== undefined ? { path: installed } : { missing: "apt-get installed no chromium binary" }
}

/** One headless Chromium for a test file (the console's browser tests). */
export class Browser extends Context.Tag("@streaks/server/test/Browser")<Browser, PlaywrightBrowser>() {}

export const layer = (executablePath: string): Layer.Layer<Browser> =>
  Layer.scoped(
    Browser,
    Effect.acquireRelease(
      Effect.promise(() => chromium.launch({ executablePath, args, headless: true })),
      (browser) => Effect.promise(() => browser.close())
    )
  )
