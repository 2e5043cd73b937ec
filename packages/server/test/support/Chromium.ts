/**
 * Debian's Chromium for the console browser tests, driven by `playwright-core`: found on the PATH, or
 * installed with apt-get where it is missing and the tests run as root (browser downloads are
 * not possible here, so Playwright's own browsers are never used).
 */
import { Context, Effect, Layer } from "effect"
import { execSync } from "node:child_process"
import { type Browser as PlaywrightBrowser, chromium } from "playwright-core"

const which = (): string | undefined => {
  try {
    return execSync("which chromium", { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || undefined
  } catch {
    return undefined
  }
}

/** The Chromium binary, installed first when missing and possible; else why the tests cannot run. */
export const find = (): { readonly path: string } | { readonly skip: string } => {
  const found = which()
  if (found !== undefined) return { path: found }
  if (process.getuid?.() !== 0) {
    return { skip: "chromium is not installed and cannot be (not root): apt-get install chromium" }
  }
  try {
    execSync("apt-get update && apt-get install -y chromium", { stdio: "ignore", timeout: 600_000 })
  } catch (error) {
    return { skip: `chromium is not installed and apt-get install chromium failed: ${String(error)}` }
  }
  const installed = which()
  return installed !== undefined
    ? { path: installed }
    : { skip: "apt-get install chromium left no chromium on the PATH" }
}

export const args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

/** One headless Chromium for a test file. */
export class Browser extends Context.Tag("@streaks/server/test/Browser")<Browser, PlaywrightBrowser>() {}

export const layer = (executablePath: string): Layer.Layer<Browser> =>
  Layer.scoped(
    Browser,
    Effect.acquireRelease(
      Effect.promise(() => chromium.launch({ executablePath, args, headless: true })),
      (browser) => Effect.promise(() => browser.close())
    )
  )
