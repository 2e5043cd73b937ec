/**
 * `/docs` in a real headless Chromium with every request to another host blocked: the page must
 * render the API from this server alone. Set `UPDATE_DOCS_SCREENSHOT=1` to write what the browser
 * shows to docs/images/api-docs.png.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { copyFileSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { chromium } from "playwright-core"
import { NodeServer } from "../src/NodeServer.js"
import * as Chromium from "./support/Chromium.js"
import { layer as testServer } from "./support/TestServer.js"

const browser = Chromium.executable()
if ("missing" in browser) console.warn(`Skipping the /docs browser test: ${browser.missing}`)

const screenshot = fileURLToPath(new URL("../../../docs/images/api-docs.png", import.meta.url))

/** The ingest doors and state, as the page must list them. */
const ingestRoutes = ["/v1/e", "/v1/server/e", "/v1/webhook/{siteKey}/e", "/v1/state"]

layer(testServer(), { timeout: 120_000 })("the /docs page in Chromium", (it) => {
  it.effect.skipIf("missing" in browser)(
    "offline: with every other host blocked, /docs lists the ingest routes and no request leaves the server",
    () =>
      Effect.gen(function*() {
        const { url } = yield* NodeServer
        const executablePath = "path" in browser ? browser.path : ""
        const seen = yield* Effect.acquireUseRelease(
          Effect.promise(() => chromium.launch({ executablePath, headless: true, args: Chromium.args })),
          (instance) =>
            Effect.promise(async () => {
              const page = await instance.newPage({ viewport: { width: 1280, height: 900 } })
              const origin = new URL(url).origin
              const elsewhere: Array<string> = []
              const failed: Array<string> = []
              await page.route("**/*", (route) => {
                const target = route.request().url()
                if (new URL(target).origin === origin) return route.continue()
                elsewhere.push(target)
                return route.abort("blockedbyclient")
              })
              page.on("response", (response) => {
                if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`)
              })
              await page.goto(`${url}/docs`)
              const listed: Array<string> = []
              for (const path of ingestRoutes) {
                const row = page.locator(`.opblock-summary-path[data-path="${path}"]`).first()
                await row.waitFor({ state: "visible", timeout: 30_000 })
                // Swagger UI breaks long paths with zero-width spaces.
                listed.push((await row.innerText()).replace(/\u200b/g, ""))
              }
              const title = await page.locator(".info .title").first().innerText()
              await page.waitForLoadState("networkidle")
              const shot = join(mkdtempSync(join(tmpdir(), "streaks-docs-")), "api-docs.png")
              await page.screenshot({ path: shot })
              if (process.env.UPDATE_DOCS_SCREENSHOT === "1") copyFileSync(shot, screenshot)
              return { listed, title, elsewhere, failed }
            }),
          (instance) => Effect.promise(() => instance.close())
        )
        expect(seen.listed).toEqual(ingestRoutes)
        expect(seen.title).toMatch(/^Streaks API/)
        expect(seen.elsewhere).toEqual([])
        expect(seen.failed).toEqual([])
      })
  )
})
