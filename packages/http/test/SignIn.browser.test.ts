/**
 * The sign-in page in Debian's Chromium: a person types into the fields labelled "Email" and
 * "Password" and presses "Sign in"; a wrong password shows the page again with the neutral
 * message, the right one lands on `return_to` signed in, with a cookie page scripts cannot read.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chromium } from "playwright-core"
import { refusedMessage } from "../src/AccountPages.js"
import { NodeServer } from "../src/NodeServer.js"
import { createUser, PASSWORD } from "./support/Accounts.js"
import * as Chromium from "./support/Chromium.js"
import { layer as testServer, tenant } from "./support/TestServer.js"

const browser = Chromium.executable()
if ("missing" in browser) console.warn(`Skipping the sign-in browser test: ${browser.missing}`)

layer(testServer(), { timeout: 120_000 })("the sign-in page in Chromium", (it) => {
  it.effect.skipIf("missing" in browser)(
    "a wrong password shows the neutral message; the right one lands on return_to with an HttpOnly, SameSite=Lax cookie",
    () =>
      Effect.gen(function*() {
        const { url } = yield* NodeServer
        const t = yield* tenant()
        const user = yield* createUser([{ workspaceId: t.workspaceId, role: "owner" }])
        const executablePath = "path" in browser ? browser.path : ""
        const seen = yield* Effect.acquireUseRelease(
          Effect.promise(() => chromium.launch({ executablePath, headless: true, args: Chromium.args })),
          (instance) =>
            Effect.promise(async () => {
              const context = await instance.newContext()
              const page = await context.newPage()
              await page.goto(`${url}/sign-in?return_to=${encodeURIComponent("/v1/api/me")}`)
              await page.getByLabel("Email").fill(user.email)
              await page.getByLabel("Password").fill("not the right password")
              await page.getByRole("button", { name: "Sign in" }).click()
              await page.waitForLoadState("domcontentloaded")
              const alert = await page.getByRole("alert").innerText()
              const afterWrong = new URL(page.url()).pathname
              const cookiesAfterWrong = await context.cookies()

              // The page keeps the address typed and where to go.
              expect(await page.getByLabel("Email").inputValue()).toBe(user.email)
              await page.getByLabel("Password").fill(PASSWORD)
              await Promise.all([
                page.waitForURL(`${url}/v1/api/me`),
                page.getByRole("button", { name: "Sign in" }).click()
              ])
              const me = JSON.parse(await page.locator("body").innerText())
              const cookies = await context.cookies()
              const scriptSees = String(await page.evaluate("document.cookie"))
              await context.close()
              return { alert, afterWrong, cookiesAfterWrong, me, cookies, scriptSees }
            }),
          (instance) => Effect.promise(() => instance.close())
        )
        expect(seen.alert).toBe(refusedMessage)
        expect(seen.afterWrong).toBe("/sign-in")
        expect(seen.cookiesAfterWrong).toEqual([])
        expect(seen.me.credential).toEqual({ kind: "session", userId: user.id, email: user.email })
        expect(seen.me.workspaces).toEqual([{ id: t.workspaceId, name: "Acme", plan: "starter", role: "owner" }])
        const session = seen.cookies.find((c) => c.name === "streaks_session")
        expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false, path: "/" })
        expect(session!.value).toMatch(/^sid_/)
        expect(seen.scriptSees).not.toContain("streaks_session")
      })
  )
})
