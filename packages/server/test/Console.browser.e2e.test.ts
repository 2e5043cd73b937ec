/**
 * The console (docs/console.md) in Debian's Chromium against the reference server on Postgres: a
 * user signs in through the sign-in page; every page renders with data, passes axe-core with no
 * violation and asks no other host; the flows a user relies on work end to end (API keys, webhook
 * secret rotation, connected apps, the policy editor, Proof experiments), the key creation by
 * keyboard alone. Each page's screenshot is kept in docs/images/console-*.png.
 */
import { AxeBuilder } from "@axe-core/playwright"
import { describe, expect, layer } from "@effect/vitest"
import { NodeServer } from "@streaks/http"
import { Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { BrowserContext, Page } from "playwright-core"
import * as Chromium from "./support/Chromium.js"
import { call, EMAIL, PASSWORD, seed, server, type World } from "./support/ConsoleWorld.js"

const images = fileURLToPath(new URL("../../../docs/images/", import.meta.url))
const chromium = Chromium.executable()

interface Signed {
  readonly world: World
  readonly context: BrowserContext
}

let signed: Promise<Signed> | undefined

/** The world seeded and a browser context signed in through the sign-in page, once for the file. */
const signedIn = Effect.gen(function*() {
  const browser = yield* Chromium.Browser
  const { url } = yield* NodeServer.NodeServer
  if (signed === undefined) {
    const world = yield* seed(url)
    signed = (async () => {
      const context = await browser.newContext({ colorScheme: "light", viewport: { width: 1200, height: 900 } })
      const page = await context.newPage()
      await page.goto(`${url}/console`)
      // Not signed in: the sign-in page, which comes back to the console.
      expect(new URL(page.url()).pathname).toBe("/sign-in")
      expect(new URL(page.url()).searchParams.get("return_to")).toBe("/console")
      await page.getByLabel("Email").fill(EMAIL)
      await page.getByLabel("Password").fill(PASSWORD)
      await page.getByRole("button", { name: "Sign in" }).click()
      await page.waitForURL(`${url}/console`)
      await page.getByRole("heading", { level: 1, name: "Programs" }).waitFor()
      await page.close()
      return { world, context }
    })()
  }
  return yield* Effect.promise(() => signed!)
})

/** A page of the context that records every request to another origin and every script error. */
const watched = async (context: BrowserContext, origin: string) => {
  const page = await context.newPage()
  const foreign: Array<string> = []
  const errors: Array<string> = []
  page.on("request", (r) => {
    const u = new URL(r.url())
    if (u.protocol !== "data:" && u.origin !== origin) foreign.push(r.url())
  })
  page.on("pageerror", (e) => errors.push(String(e)))
  return { page, foreign, errors }
}

/** Waits until nothing on the page is loading any more. */
const settled = async (page: Page) => {
  await page.waitForFunction(() => document.querySelector(".loading") === null && document.querySelector("h1") !== null)
}

const axe = async (page: Page) => (await new AxeBuilder({ page }).analyze()).violations.map((v) => `${v.id}: ${v.help}`)

const shot = (page: Page, name: string) => page.screenshot({ path: `${images}console-${name}.png`, fullPage: true })

const onLedger = (world: World, userHash: string) =>
  call(world.url, `/v1/api/programs/${world.programId}/members/${userHash}/ledger`, {
    headers: { authorization: `Bearer ${world.apiKey}` }
  })

const suite = "missing" in chromium ? describe.skip : describe
if ("missing" in chromium) console.warn(`console browser tests skipped: ${chromium.missing}`)

suite("the console", () => {
  layer(
    Layer.mergeAll(server, Chromium.layer("path" in chromium ? chromium.path : "chromium")),
    { timeout: "240 seconds" }
  )("in Chromium against the reference server", (it) => {
    it.effect(
      "every page renders with data, has no axe violation and asks no other host",
      () =>
        Effect.gen(function*() {
          const { context, world } = yield* signedIn
          mkdirSync(images, { recursive: true })
          const result = yield* Effect.promise(async () => {
            const { page, foreign, errors } = await watched(context, world.url)
            const violations: Record<string, Array<string>> = {}
            const visit = async (name: string, path: string, check: () => Promise<unknown>) => {
              await page.goto(`${world.url}${path}`)
              await settled(page)
              await check()
              await settled(page)
              violations[name] = await axe(page)
              await shot(page, name)
            }
            const program = `/console/programs/${world.programId}`
            await visit("programs", "/console", async () => {
              await page.getByRole("link", { name: "Daily lesson" }).waitFor()
              expect(await page.getByRole("row").filter({ hasText: "Daily lesson" }).textContent()).toContain("Live")
            })
            await visit("overview", `${program}/overview`, async () => {
              await page.getByRole("img", { name: /Members by current streak length/ }).waitFor()
              expect(Number(await page.locator(".figures dd").first().textContent())).toBeGreaterThan(10)
            })
            await visit("events", `${program}/events`, async () => {
              await page.getByRole("img", { name: /Live actions per day/ }).waitFor()
              const table = page.getByRole("region", { name: "Actions per day and event type" })
              await table.waitFor()
              expect(await table.getByRole("row").count()).toBeGreaterThan(10)
            })
            await visit("insights", `${program}/insights`, async () => {
              await page.getByRole("cell", { name: "zap_onboarding" }).waitFor()
            })
            await visit("policy", `${program}/policy`, async () => {
              expect(await page.getByLabel("Most freezes held").inputValue()).toBe("3")
            })
            await visit("members", `${program}/members`, async () => {
              await page.getByLabel("Member (userHash)").fill("ada")
              await page.getByRole("button", { name: "Look up" }).click()
              await page.getByRole("table", { name: "Ledger, day by day" }).waitFor()
              await settled(page)
              expect(await page.getByRole("table", { name: "Ledger, day by day" }).textContent()).toContain("Kept")
            })
            await visit("proof", `${program}/proof`, async () => {
              await page.getByRole("button", { name: "Start experiment" }).waitFor()
              await page.locator("details summary").first().click()
              await page.getByRole("img", { name: /Retention difference per horizon/ }).waitFor()
            })
            await visit("usage", "/console/usage", async () => {
              await page.getByRole("meter").waitFor()
              expect(await page.locator(".figures").textContent()).toContain("growth")
              // The other workspace, over its plan.
              await page.getByLabel("Workspace").selectOption({ label: "Beta" })
              await page.getByRole("button", { name: "Show" }).click()
              await page.getByText("Over the plan: reports are paused").waitFor()
            })
            await visit("paused", `/console/programs/${world.pausedProgramId}/overview`, async () => {
              await page.getByText(/Paused/).waitFor()
              expect(await page.locator(".notice.paused").textContent()).toContain("raise the plan")
            })
            await visit("webhooks", `${program}/webhooks`, async () => {
              await page.getByRole("button", { name: "Recent deliveries" }).click()
              await page.getByRole("button", { name: "Redeliver" }).first().waitFor()
              expect(await page.getByRole("region", { name: /Recent deliveries/ }).getByRole("row").count()).toBe(11)
              await page.getByRole("button", { name: /Show all \d+ deliveries/ }).click()
              const deliveries = await page.getByRole("region", { name: /Recent deliveries/ }).textContent()
              expect(deliveries).toContain("Delivered")
              // The receiver refuses every fifth message: pending again (or failed), its answer shown.
              expect(deliveries).toMatch(/Pending|Failed/)
              expect(deliveries).toContain("500")
            })
            await visit("connections", `${program}/connections`, async () => {
              await page.getByText("Zapier").waitFor()
              await page.getByRole("button", { name: "Revoke" }).first().waitFor()
            })
            await visit("audit", "/console/audit", async () => {
              await page.getByRole("region", { name: "Audit log" }).waitFor()
            })
            await page.close()

            // Dark and on a phone: the same pages follow the system's colours and fit a narrow screen.
            const dark = await context.browser()!.newContext({
              colorScheme: "dark",
              viewport: { width: 390, height: 844 },
              storageState: await context.storageState()
            })
            const phone = await watched(dark, world.url)
            for (
              const [name, path] of [["dark-phone-overview", `${program}/overview`], [
                "dark-phone-members",
                `${program}/members`
              ]]
            ) {
              await phone.page.goto(`${world.url}${path}`)
              await settled(phone.page)
              if (name.endsWith("members")) {
                await phone.page.getByLabel("Member (userHash)").fill("ada")
                await phone.page.getByRole("button", { name: "Look up" }).click()
                await phone.page.getByRole("table", { name: "Ledger, day by day" }).waitFor()
                await settled(phone.page)
              }
              violations[name!] = await axe(phone.page)
              const width = await phone.page.evaluate(() => document.documentElement.scrollWidth)
              expect(width).toBeLessThanOrEqual(390)
              await shot(phone.page, name!)
            }
            await dark.close()
            return { violations, foreign: [...foreign, ...phone.foreign], errors: [...errors, ...phone.errors] }
          })
          for (const [name, found] of Object.entries(result.violations)) expect(found, name).toEqual([])
          expect(result.foreign).toEqual([])
          expect(result.errors).toEqual([])
        }),
      180_000
    )

    it.effect(
      "by keyboard alone: create an API key, which works on /v1/api/me, then revoke it: 401",
      () =>
        Effect.gen(function*() {
          const { context, world } = yield* signedIn
          const key = yield* Effect.promise(async () => {
            const { page } = await watched(context, world.url)
            await page.goto(`${world.url}/console/programs/${world.programId}/connections`)
            await settled(page)
            // Tab from the top of the page until the key name field has the focus.
            for (let i = 0; i < 40; i++) {
              await page.keyboard.press("Tab")
              if (await page.evaluate(() => document.activeElement?.id === "key-name")) break
            }
            expect(await page.evaluate(() => document.activeElement?.id)).toBe("key-name")
            await page.keyboard.type("keyboard key")
            // The first workspace is preselected; Tab reaches the select, then the button.
            for (let i = 0; i < 5; i++) {
              await page.keyboard.press("Tab")
              if (await page.evaluate(() => document.activeElement?.textContent === "Create API key")) break
            }
            const focusRing = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)
            expect(focusRing).not.toBe("none")
            await page.keyboard.press("Enter")
            const shown = page.getByRole("group", { name: /API key "keyboard key"/ })
            await shown.waitFor()
            const value = await shown.getByRole("textbox").inputValue()
            // The copy button is next in the tab order.
            await page.keyboard.press("Tab")
            await page.keyboard.press("Tab")
            expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Copy")
            await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: world.url })
            await page.keyboard.press("Enter")
            await page.getByText("Copied to the clipboard.").waitFor()
            expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(value)
            await page.close()
            return value
          })
          expect(key).toMatch(/^svc_api_/)
          const me = yield* Effect.promise(() =>
            call(world.url, "/v1/api/me", { headers: { authorization: `Bearer ${key}` } })
          )
          expect(me.status).toBe(200)
          expect(me.body.workspace.id).toBe(world.workspaceId)

          yield* Effect.promise(async () => {
            const { page } = await watched(context, world.url)
            await page.goto(`${world.url}/console/programs/${world.programId}/connections`)
            await settled(page)
            const item = page.getByRole("listitem").filter({ hasText: "keyboard key" })
            await item.getByRole("button", { name: "Revoke" }).focus()
            await page.keyboard.press("Enter")
            await page.getByText("Revoked \"keyboard key\"").waitFor()
            await page.close()
          })
          const after = yield* Effect.promise(() =>
            call(world.url, "/v1/api/me", { headers: { authorization: `Bearer ${key}` } })
          )
          expect(after.status).toBe(401)
        }),
      60_000
    )

    it.effect(
      "rotate the webhook secret: the new one is shown once and the old one is refused",
      () =>
        Effect.gen(function*() {
          const { context, world } = yield* signedIn
          const secret = yield* Effect.promise(async () => {
            const { page } = await watched(context, world.url)
            await page.goto(`${world.url}/console/programs/${world.programId}/webhooks`)
            await settled(page)
            await page.getByRole("button", { name: "Rotate webhook secret" }).click()
            const shown = page.getByRole("group", { name: /New webhook secret/ })
            await shown.waitFor()
            const value = await shown.getByRole("textbox").inputValue()
            await page.close()
            return value
          })
          const send = (s: string) =>
            Effect.promise(() =>
              call(world.url, `/v1/webhook/${world.siteKey}/e`, {
                headers: { "x-streak-webhook-secret": s },
                body: { siteKey: world.siteKey, userHash: "hooked-member", event: "lesson_completed" }
              })
            )
          expect(secret).not.toBe(world.webhookSecret)
          expect((yield* send(world.webhookSecret)).status).toBe(401)
          expect((yield* send(secret)).status).toBe(202)
        }),
      60_000
    )

    it.effect("disconnect a connected app: its token stops working", () =>
      Effect.gen(function*() {
        const { context, world } = yield* signedIn
        const before = yield* Effect.promise(() =>
          call(world.url, "/v1/api/me", { headers: { authorization: `Bearer ${world.grantToken}` } })
        )
        expect(before.status).toBe(200)
        yield* Effect.promise(async () => {
          const { page } = await watched(context, world.url)
          await page.goto(`${world.url}/console/programs/${world.programId}/connections`)
          await settled(page)
          await page.getByRole("listitem").filter({ hasText: "Zapier" }).getByRole("button", { name: "Disconnect" })
            .click()
          await page.getByText("Disconnected \"Zapier\"").waitFor()
          await page.close()
        })
        const after = yield* Effect.promise(() =>
          call(world.url, "/v1/api/me", { headers: { authorization: `Bearer ${world.grantToken}` } })
        )
        expect(after.status).toBe(401)
      }), 60_000)

    it.effect(
      "members: grant a freeze, repair a missed period, pause the streak and remove the pause",
      () =>
        Effect.gen(function*() {
          const { context, world } = yield* signedIn
          const before = (yield* Effect.promise(() => onLedger(world, "bo"))).body
          const missed = before.periods.find((p: { status: string }) => p.status === "missed")
          expect(missed).toBeDefined()
          yield* Effect.promise(async () => {
            const { page } = await watched(context, world.url)
            await page.goto(`${world.url}/console/programs/${world.programId}/members`)
            await settled(page)
            await page.getByLabel("Member (userHash)").fill("bo")
            await page.getByRole("button", { name: "Look up" }).click()
            await page.getByRole("table", { name: "Ledger, day by day" }).waitFor()
            await page.getByRole("button", { name: "Grant freeze" }).click()
            await page.getByText(/Granted: the member now holds \d+ freezes/).waitFor()
            await page.getByLabel("Day of the period").fill(missed.start)
            await page.getByLabel("Reason").fill("support ticket 1234")
            await page.getByRole("button", { name: "Repair" }).click()
            await page.getByText("Repaired: the period counts as kept.").waitFor()
            await page.getByRole("button", { name: "Pause", exact: true }).click()
            const pause = page.getByRole("listitem").filter({ hasText: " to " })
            await pause.waitFor()
            const pauses = await call(world.url, `/v1/api/programs/${world.programId}/members/bo/pauses`, {
              headers: { authorization: `Bearer ${world.apiKey}` }
            })
            expect(pauses.body.pauses).toHaveLength(1)
            await pause.getByRole("button", { name: "Remove" }).click()
            await page.getByText("No pause.").waitFor()
            await page.close()
          })
          const after = (yield* Effect.promise(() => onLedger(world, "bo"))).body
          expect(after.periods.find((p: { start: string }) => p.start === missed.start).status).toBe("repaired")
        }),
      60_000
    )

    it.effect(
      "edit the policy: an invalid field shows its message beside it; a valid policy changes the ledger",
      () =>
        Effect.gen(function*() {
          const { context, world } = yield* signedIn
          const before = yield* Effect.promise(() => onLedger(world, "ada"))
          expect(before.body.policy.cadence).toBe("daily")
          yield* Effect.promise(async () => {
            const { page } = await watched(context, world.url)
            await page.goto(`${world.url}/console/programs/${world.programId}/policy`)
            await settled(page)
            await page.getByLabel("Most freezes held").fill("99")
            await page.getByRole("button", { name: "Save policy" }).click()
            const field = page.getByLabel("Most freezes held")
            await page.locator("#policy-max-error").waitFor()
            expect(await field.getAttribute("aria-invalid")).toBe("true")
            expect(await page.locator("#policy-max-error").textContent()).toContain("from 0 to 10")
            // The refused field has the focus and its message is part of its description.
            expect(await page.evaluate(() => document.activeElement?.id)).toBe("policy-max")
            expect(await field.evaluate((el) => el.getAttribute("aria-describedby"))).toContain("policy-max-error")
            await page.screenshot({ path: `${images}console-policy-invalid.png`, fullPage: true })

            await field.fill("3")
            await page.getByLabel("Cadence").selectOption("weekly")
            await page.getByLabel("Target").fill("2")
            // Tried on the history first: nothing is written.
            await page.getByRole("button", { name: "Try on the history" }).click()
            const tried = page.getByRole("table", { name: "The program's history under each policy" })
            await tried.waitFor()
            expect(await tried.textContent()).toContain("Streaks broken")
            // The two length histograms side by side, each naming its numbers.
            for (const name of ["Streak lengths under the current policy", "Streak lengths under this policy"]) {
              expect(await page.getByRole("img", { name: new RegExp(`^${name}: 0 \\d+`) }).count()).toBe(1)
            }
            expect((await onLedger(world, "ada")).body.policy.cadence).toBe("daily")
            await page.getByRole("button", { name: "Save policy" }).click()
            await page.getByText("Policy saved.").waitFor()
            await page.close()
          })
          const after = yield* Effect.promise(() => onLedger(world, "ada"))
          expect(after.body.policy).toMatchObject({ cadence: "weekly", target: 2 })
          expect(after.body.periods).not.toEqual(before.body.periods)
          // A week runs Monday to Sunday.
          for (const period of after.body.periods) expect(new Date(`${period.start}T00:00:00Z`).getUTCDay()).toBe(1)
        }),
      60_000
    )

    it.effect("start an experiment, read its report, stop it", () =>
      Effect.gen(function*() {
        const { context, world } = yield* signedIn
        const experiments = (yield* Effect.promise(async () => {
          const { page } = await watched(context, world.url)
          await page.goto(`${world.url}/console/programs/${world.programId}/proof`)
          await settled(page)
          await page.getByLabel("Holdout percent").fill("20")
          await page.getByRole("button", { name: "Start experiment" }).click()
          await page.getByRole("heading", { name: "Running experiment" }).waitFor()
          expect(await page.locator(".figures").first().textContent()).toContain("20 %")
          const running = await call(world.url, `/v1/api/programs/${world.programId}/experiments/current`, {
            headers: { authorization: `Bearer ${world.apiKey}` }
          })
          expect(running.status).toBe(200)
          await page.getByRole("button", { name: "Stop experiment" }).click()
          await page.getByRole("heading", { name: "Start an experiment" }).waitFor()
          await page.close()
          return call(world.url, `/v1/api/programs/${world.programId}/experiments`, {
            headers: { authorization: `Bearer ${world.apiKey}` }
          })
        })).body.experiments
        expect(experiments[0]).toMatchObject({ holdoutPercent: 20 })
        expect(experiments[0].endedAt).toBeDefined()
      }), 60_000)
  })
})
