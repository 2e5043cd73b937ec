/**
 * `<streak-widget>` in headless Chromium (docs/widget.md): the module served by a real Streaks
 * server on Postgres at `/widget.js`, on pages of another localhost origin that the project allows
 * (and of one it does not). Analytics are checked as the browser sent them and as the server's
 * reports count them.
 */
import { AxeBuilder } from "@axe-core/playwright"
import { assert, describe, expect, it, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { NodeServer } from "@streaks/http"
import { Duration, Effect, Layer } from "effect"
import { mkdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Page } from "playwright-core"
import * as Chromium from "./support/Chromium.js"
import * as Pages from "./support/Pages.js"
import * as Streaks from "./support/StreaksServer.js"

const chromium = Chromium.find()

// Screenshots go to docs/images with STREAKS_WIDGET_SCREENSHOTS=1 (to refresh the docs), else to a
// temporary directory: a test run leaves the work tree as it found it.
const screenshots = process.env["STREAKS_WIDGET_SCREENSHOTS"] === "1"
  ? fileURLToPath(new URL("../../../docs/images", import.meta.url))
  : join(tmpdir(), "streaks-widget-screenshots")
mkdirSync(screenshots, { recursive: true })

const VIEWPORT = { width: 760, height: 460 }

interface Opened {
  readonly page: Page
  /** Uncaught errors of the page (`pageerror`). */
  readonly errors: Array<Error>
  /** Bodies of the page's `POST /v1/e` requests, in order. */
  readonly sent: Array<{ eventType: string; meta?: unknown; siteKey: string; userHash: string; event: string }>
}

/** A page in a fresh browser context, closed with the test's scope. */
const open = (options: { reducedMotion?: "reduce" | "no-preference" } = {}) =>
  Effect.acquireRelease(
    Effect.flatMap(Chromium.Browser, (browser) =>
      Effect.promise(async () => {
        const context = await browser.newContext({
          viewport: VIEWPORT,
          deviceScaleFactor: 2,
          reducedMotion: options.reducedMotion ?? "no-preference"
        })
        const page = await context.newPage()
        const opened: Opened = { page, errors: [], sent: [] }
        page.on("pageerror", (error) => opened.errors.push(error))
        page.on("request", (r) => {
          if (r.method() === "POST" && new URL(r.url()).pathname === "/v1/e") opened.sent.push(r.postDataJSON())
        })
        return opened
      })),
    ({ page }) => Effect.promise(() => page.context().close())
  )

/** Waits until the widget `selector` has `data-state` = `state`. */
const settled = (page: Page, state: "ready" | "error", selector = "streak-widget") =>
  page.waitForFunction(
    ([selector, state]) => (document.querySelector(selector!) as HTMLElement | null)?.dataset["state"] === state,
    [selector, state],
    { timeout: 10_000 }
  )

/** Waits until every widget's animations have finished (colours are final, screenshots sharp). */
const calm = (page: Page) =>
  page.evaluate(() =>
    Promise.all(
      Array.from(
        document.querySelectorAll("streak-widget"),
        (w) => Promise.all(w.shadowRoot!.getAnimations().map((a) => a.finished))
      )
    ).then(() => undefined)
  )

/** Polls `f` until `ok` holds (or fails the test after `timeout`). */
const eventually = <A>(f: () => A | Promise<A>, ok: (a: A) => boolean, timeout = 10_000) =>
  Effect.promise(async () => {
    const until = Date.now() + timeout
    for (;;) {
      const a = await f()
      if (ok(a) || Date.now() > until) return a
      await new Promise((r) => setTimeout(r, 50))
    }
  })

const widget = (t: Streaks.Tenant, userHash: string, extra = "") =>
  `<streak-widget site-key="${t.siteKey}" user-hash="${userHash}" event="${Streaks.EVENT}"${extra}></streak-widget>`

/** The seven UTC dates Monday..Sunday of today's ISO week. */
const thisWeek = (): Array<string> => {
  const today = new Date(`${Streaks.utcDate(0)}T00:00:00Z`)
  const monday = today.getTime() - ((today.getUTCDay() + 6) % 7) * 86_400_000
  return Array.from({ length: 7 }, (_, i) => new Date(monday + i * 86_400_000).toISOString().slice(0, 10))
}

/** ISO weekday of a `YYYY-MM-DD` date: 1 (Monday) .. 7 (Sunday). */
const isoWeekday = (date: string): number => ((new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7) + 1

/** The server's short weekday label of a date ("Mon".."Sun"). */
const weekdayLabel = (date: string): string => ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][isoWeekday(date) - 1]!

const settings = (overrides: Partial<{ theme: { name: string }; position: string; mainMessage: string }> = {}) => ({
  theme: { name: "default" },
  position: "bottom-right",
  mainMessage: "Keep learning every day",
  ...overrides
})

/** A tenant whose project allows the `allowed` page origin, and the server's URL. */
const setup = (options: Omit<Streaks.TenantOptions, "origins"> = {}) =>
  Effect.gen(function*() {
    const pages = yield* Pages.Pages
    const server = yield* NodeServer.NodeServer
    const t = yield* Streaks.tenant({ origins: [pages.allowed], settings: settings(), ...options })
    return { pages, script: `${server.url}/widget.js`, t }
  })

const text = (page: Page, selector: string) => page.locator(selector).first().textContent()

if ("skip" in chromium) {
  describe("<streak-widget> in Chromium", () => {
    it.skip(`skipped: ${chromium.skip}`, () => {})
  })
} else {
  const TestLayer = Layer.mergeAll(Streaks.layer, Pages.layer, Chromium.layer(chromium.path))

  layer(TestLayer, { timeout: Duration.minutes(3) })("<streak-widget> in Chromium", (it) => {
    it.effect("GET /widget.js serves the built module: text/javascript, ETag (304 when it matches), public for 5 minutes, any origin", () =>
      Effect.gen(function*() {
        const first = yield* Streaks.request("/widget.js")
        expect(first.status).toBe(200)
        expect(first.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
        expect(first.headers.get("cache-control")).toBe("public, max-age=300")
        expect(first.headers.get("access-control-allow-origin")).toBe("*")
        expect(first.text).toBe(readFileSync(Streaks.widgetFile, "utf8"))
        const etag = first.headers.get("etag")!
        expect(etag).toMatch(/^"[\w-]+"$/)
        const again = yield* Streaks.request("/widget.js", { headers: { "if-none-match": etag } })
        expect(again.status).toBe(304)
        expect(again.text).toBe("")
        expect(again.headers.get("etag")).toBe(etag)
      }))

    it.scoped("renders the count in a status region, the week with today marked and checked days checked, the next milestone and the message", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [2, 1, 0])
        pages.put("/render.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/render.html`)
          await settled(page, "ready")
          const host = page.locator("streak-widget")
          return {
            count: await text(page, "streak-widget [role=status] [part=count]"),
            status: await text(page, "streak-widget [role=status]"),
            today: await text(page, "streak-widget .today"),
            days: await page.locator("streak-widget [part=day]").evaluateAll((days) =>
              days.map((d) => ({ ...(d as HTMLElement).dataset, text: d.textContent }))
            ),
            message: await text(page, "streak-widget [part=message]"),
            milestone: await text(page, "streak-widget [part=milestone]"),
            host: await host.evaluate((h) => ({
              theme: h.dataset["theme"],
              position: getComputedStyle(h).position,
              box: h.getBoundingClientRect().toJSON()
            })),
            events: await page.evaluate(() => (window as any).streakStates)
          }
        })
        expect(seen.count).toBe("3")
        expect(seen.status).toContain("3 days")
        const week = thisWeek()
        const checked = new Set([Streaks.utcDate(0), Streaks.utcDate(1), Streaks.utcDate(2)])
        expect(seen.days).toHaveLength(7)
        seen.days.forEach((day, i) => {
          expect(day, week[i]).toMatchObject({
            today: String(week[i] === Streaks.utcDate(0)),
            checked: String(checked.has(week[i]!)),
            frozen: "false",
            rest: "false"
          })
          expect(day.text).toContain(String(Number(week[i]!.slice(8))))
        })
        expect(seen.message).toBe("Keep learning every day")
        // The next milestone not achieved: seven days, four to go.
        expect(seen.milestone).toBe("Next: A full week · 4 days to go")
        expect(seen.host.theme).toBe("default")
        // settings.position: the bottom-right corner of the viewport, 16 px in.
        expect(seen.host.position).toBe("fixed")
        expect(seen.host.box.right).toBe(VIEWPORT.width - 16)
        expect(seen.host.box.bottom).toBe(VIEWPORT.height - 16)
        expect(seen.events).toHaveLength(1)
        expect(seen.events[0].streak).toMatchObject({ current: 3, todayDone: true })
        expect(errors).toEqual([])
      }))

    it.scoped("labels follow the plural rules: 1 day, 2 days, 1 day to go", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "one", [0])
        yield* Streaks.actionsOn(t, "two", [1, 0])
        pages.put(
          "/plural.html",
          Pages.html({ script, inside: widget(t, "one", " id=one inline") + widget(t, "two", " id=two inline") })
        )
        const { page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/plural.html`)
          await settled(page, "ready", "#one")
          await settled(page, "ready", "#two")
          return Promise.all(
            ["#one", "#two"].flatMap((w) => [text(page, `${w} [role=status]`), text(page, `${w} [part=milestone]`)])
          )
        })
        expect(seen).toEqual([
          expect.stringContaining("1 day"),
          "Next: Three days · 2 days to go",
          expect.stringContaining("2 days"),
          "Next: Three days · 1 day to go"
        ])
        expect(seen[0]).not.toContain("days")
      }))

    it.scoped("a daily program with a rest day and a freeze: the missed day the freeze carried the chain across is data-frozen, the rest weekday data-rest, and a screen reader hears both", () =>
      Effect.gen(function*() {
        // Days relative to today's UTC date, so that the test holds on any weekday: actions three
        // days ago and today; the day two days ago is a rest day (its ISO weekday is the policy's
        // only rest day); yesterday is missed, and the one freeze carries the chain across it
        // (kept, rest, frozen, kept: 2 days, no freeze left). The rest weekday is in every week
        // strip (on Monday and Tuesday it is a day still to come, still marked rest). Yesterday is
        // in this week's strip unless today is Monday: then the frozen day is last Sunday, no day
        // of the strip is frozen, and the spent freeze shows only in the state.
        const restWeekday = isoWeekday(Streaks.utcDate(2))
        const { pages, script, t } = yield* setup({
          policy: { restDays: [restWeekday], freezes: { initial: 1, max: 1 } }
        })
        yield* Streaks.actionsOn(t, "member-1", [3, 0])
        pages.put("/policy.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/policy.html`)
          await settled(page, "ready")
          return {
            status: await text(page, "streak-widget [role=status]"),
            today: await text(page, "streak-widget .today"),
            days: await page.locator("streak-widget [part=day]").evaluateAll((days) =>
              days.map((d): Record<string, string | undefined> => ({
                ...(d as HTMLElement).dataset,
                spoken: d.querySelector(".sr")!.textContent ?? undefined
              }))
            ),
            // The accessibility tree, as assistive technology reads it.
            tree: await page.locator("streak-widget [part=week]").ariaSnapshot(),
            events: await page.evaluate(() => (window as any).streakStates)
          }
        })
        const week = thisWeek()
        const today = Streaks.utcDate(0)
        const frozenDay = Streaks.utcDate(1)
        const checked = new Set([Streaks.utcDate(3), today])
        expect(seen.status).toContain("2 days")
        expect(seen.today).toBe("Done for today")
        expect(seen.events[0].streak).toMatchObject({ mode: "continuous", current: 2, todayDone: true, freezes: 0 })
        expect(seen.days).toHaveLength(7)
        seen.days.forEach((day, i) => {
          expect(day, week[i]).toMatchObject({
            today: String(week[i] === today),
            checked: String(checked.has(week[i]!)),
            frozen: String(week[i] === frozenDay),
            rest: String(isoWeekday(week[i]!) === restWeekday)
          })
        })
        const at = (date: string) => seen.days[week.indexOf(date)]!
        const name = (date: string) => `${weekdayLabel(date)} ${Number(date.slice(8))}`
        // Exactly one rest day in any ISO week; one frozen day unless today is Monday.
        const restDay = week.find((d) => isoWeekday(d) === restWeekday)!
        expect(seen.days.filter((d) => d.rest === "true")).toEqual([at(restDay)])
        expect(at(restDay).spoken).toBe(`${name(restDay)}, rest day`)
        if (isoWeekday(today) === 1) {
          expect(week).not.toContain(frozenDay)
          expect(seen.days.filter((d) => d.frozen === "true")).toEqual([])
        } else {
          expect(seen.days.filter((d) => d.frozen === "true")).toEqual([at(frozenDay)])
          expect(at(frozenDay).spoken).toBe(`${name(frozenDay)}, frozen`)
        }
        expect(at(today).spoken).toBe(`${name(today)}, today, done`)
        for (const day of seen.days.filter((d) => d.frozen === "false" && d.rest === "false")) {
          expect(day.spoken).not.toMatch(/frozen|rest day/)
        }
        // What is heard: each day's spoken text is the name of its list item.
        expect(seen.tree).toBe(
          [`- list "This week":`, ...week.map((d) => `  - listitem: ${at(d).spoken}`)].join("\n")
        )
        expect(errors).toEqual([])
      }))

    it.scoped("a member's paused days look paused (data-paused) and are heard as paused; nothing is owed inside", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup({ policy: {} })
        yield* Streaks.actionsOn(t, "member-1", [1])
        const pause = yield* Streaks.request(`/v1/api/programs/${t.programId}/members/member-1/pauses`, {
          headers: { authorization: `Bearer ${t.apiKey}` },
          body: { start: Streaks.utcDate(0), end: Streaks.utcDate(-2) }
        })
        expect(pause.status).toBe(201)
        pages.put("/paused.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/paused.html`)
          await settled(page, "ready")
          return {
            days: await page.locator("streak-widget [part=day]").evaluateAll((days) =>
              days.map((d): Record<string, string | undefined> => ({
                ...(d as HTMLElement).dataset,
                spoken: d.querySelector(".sr")!.textContent ?? ""
              }))
            ),
            events: await page.evaluate(() => (window as any).streakStates)
          }
        })
        const week = thisWeek()
        const paused = new Set([Streaks.utcDate(0), Streaks.utcDate(-1), Streaks.utcDate(-2)])
        expect(seen.events[0].streak).toMatchObject({ current: 1, pending: false })
        seen.days.forEach((day, i) => {
          expect(day.paused, week[i]).toBe(String(paused.has(week[i]!)))
          if (paused.has(week[i]!)) expect(day.spoken).toContain(", paused")
          else expect(day.spoken).not.toContain("paused")
        })
        expect(seen.days.filter((d) => d.paused === "true").length).toBeGreaterThan(0)
        expect(errors).toEqual([])
      }))

    it.scoped("a weekly program counts in weeks (1 week, 2 weeks, weeks to go, best) and its strip has no frozen or rest day", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup({
          policy: { cadence: "weekly", target: 2 },
          milestones: [{ target: 1, msg: "First week" }, { target: 4, msg: "Four weeks" }]
        })
        // With today's ISO weekday w, last week's Sunday and Saturday are w and w + 1 days ago,
        // those of the week before w + 7 and w + 8. Two active days keep a week; this week has one.
        const w = isoWeekday(Streaks.utcDate(0))
        yield* Streaks.actionsOn(t, "one", [w + 1, w, 0])
        yield* Streaks.actionsOn(t, "two", [w + 8, w + 7, w + 1, w, 0])
        pages.put(
          "/weekly.html",
          Pages.html({ script, inside: widget(t, "one", " id=one inline") + widget(t, "two", " id=two inline") })
        )
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/weekly.html`)
          await settled(page, "ready", "#one")
          await settled(page, "ready", "#two")
          const read = async (w: string) => ({
            count: await text(page, `${w} [part=count]`),
            today: await text(page, `${w} .today`),
            status: await text(page, `${w} [role=status]`),
            milestone: await text(page, `${w} [part=milestone]`),
            best: await text(page, `${w} [part=best]`),
            days: await page.locator(`${w} [part=day]`).evaluateAll((days) =>
              days.map((d) => ({ ...(d as HTMLElement).dataset }))
            )
          })
          return {
            one: await read("#one"),
            two: await read("#two"),
            events: await page.evaluate(() => (window as any).streakStates)
          }
        })
        const week = thisWeek()
        // Last week kept, this week one active day of two: the chain counts the weeks before it.
        // The line under the count speaks of the week, not of today.
        expect([seen.one.today, seen.two.today]).toEqual(["1 of 2 days this week", "1 of 2 days this week"])
        expect(seen.one).toMatchObject({
          count: "1",
          milestone: "Next: Four weeks · 3 weeks to go",
          best: "Best: 1 week"
        })
        expect(seen.one.status).toMatch(/1 week$/)
        expect(seen.two).toMatchObject({
          count: "2",
          milestone: "Next: Four weeks · 2 weeks to go",
          best: "Best: 2 weeks"
        })
        expect(seen.two.status).toMatch(/2 weeks$/)
        const one = seen.events.find((s: any) => s.streak.current === 1)
        expect(one.streak).toMatchObject({
          mode: "weekly",
          todayDone: true,
          pending: true,
          period: { start: week[0], end: week[6], done: 1, target: 2 }
        })
        for (const days of [seen.one.days, seen.two.days]) {
          expect(days).toHaveLength(7)
          days.forEach((day, i) => {
            expect(day, week[i]).toMatchObject({
              today: String(week[i] === Streaks.utcDate(0)),
              checked: String(week[i] === Streaks.utcDate(0)),
              frozen: "false",
              rest: "false"
            })
          })
        }
        expect(errors).toEqual([])
      }))

    it.scoped("the toggle is a keyboard-operable button with aria-expanded; each toggle sends one widget_interaction with meta.action; one impression per element and page load", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [0])
        pages.put("/toggle.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const { errors, page, sent } = yield* open()
        const toggle = page.locator("streak-widget [part=toggle]")
        const details = page.locator("streak-widget [part=details]")
        const interactions = () => sent.filter((e) => e.eventType === "widget_interaction")
        const impressions = () => sent.filter((e) => e.eventType === "widget_impression")

        yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/toggle.html`)
          await settled(page, "ready")
        })
        yield* eventually(impressions, (l) => l.length === 1)
        expect(impressions()).toEqual([
          { siteKey: t.siteKey, userHash: "member-1", event: Streaks.EVENT, eventType: "widget_impression" }
        ])
        expect(yield* Effect.promise(() => toggle.evaluate((b) => b.tagName))).toBe("BUTTON")
        expect(yield* Effect.promise(() => toggle.getAttribute("aria-expanded"))).toBe("false")
        expect(yield* Effect.promise(() => details.isVisible())).toBe(false)

        // Enter expands, Space collapses, a click expands again: one event each.
        const steps = [
          { act: () => toggle.press("Enter"), expanded: "true", action: "expand" },
          { act: () => toggle.press(" "), expanded: "false", action: "collapse" },
          { act: () => toggle.click(), expanded: "true", action: "expand" }
        ] as const
        for (const [i, step] of steps.entries()) {
          yield* Effect.promise(() => step.act())
          expect(yield* Effect.promise(() => toggle.getAttribute("aria-expanded"))).toBe(step.expanded)
          expect(yield* Effect.promise(() => details.isVisible())).toBe(step.expanded === "true")
          yield* eventually(interactions, (l) => l.length === i + 1)
          expect(interactions()).toHaveLength(i + 1)
          expect(interactions()[i]).toEqual({
            siteKey: t.siteKey,
            userHash: "member-1",
            event: Streaks.EVENT,
            eventType: "widget_interaction",
            meta: { action: step.action }
          })
        }

        // A reload of the state (an attribute changed) renders again but sends no second impression.
        yield* Effect.promise(async () => {
          const reloaded = page.waitForResponse((r) => new URL(r.url()).pathname === "/v1/state")
          await page.locator("streak-widget").evaluate((w) => w.setAttribute("identity", "not-a-token"))
          await reloaded
          await page.waitForFunction(() => (window as any).streakStates.length === 2)
        })
        // The server stored exactly these: one impression, three interactions.
        const server = yield* NodeServer.NodeServer
        const counts = yield* eventually(
          () => Effect.runPromise(Streaks.eventCounts(t).pipe(Effect.provideService(NodeServer.NodeServer, server))),
          (c) => c["widget_interaction"] === 3 && c["widget_impression"] === 1
        )
        expect(counts).toMatchObject({ widget_impression: 1, widget_interaction: 3 })
        expect(impressions()).toHaveLength(1)
        expect(errors).toEqual([])
      }))

    it.scoped("an element first rendered below the fold sends its impression only once scrolled into view", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        pages.put(
          "/below.html",
          Pages.html({ script, inside: `<div style="height:3000px"></div>${widget(t, "member-1", " inline")}` })
        )
        const { page, sent } = yield* open()
        yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/below.html`)
          await settled(page, "ready")
          await page.waitForTimeout(500)
        })
        expect(sent).toEqual([])
        yield* Effect.promise(() => page.locator("streak-widget").scrollIntoViewIfNeeded())
        const after = yield* eventually(() => sent.length, (n) => n === 1)
        expect(after).toBe(1)
        expect(sent[0]!.eventType).toBe("widget_impression")
      }))

    it.scoped("on a page of an origin the project does not allow it renders nothing, marks data-state=error and raises no page error", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [0])
        pages.put("/foreign.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        // The server refuses the origin (the browser then sees a CORS failure).
        const refused = yield* Streaks.request(
          `/v1/state?siteKey=${t.siteKey}&userHash=member-1&event=${Streaks.EVENT}`,
          { headers: { origin: pages.other } }
        )
        expect(refused.body).toEqual({ error: "FORBIDDEN_ORIGIN" })
        const { errors, page, sent } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.other}/foreign.html`)
          await settled(page, "error")
          await page.waitForTimeout(300)
          return page.locator("streak-widget").evaluate((h) => ({
            display: getComputedStyle(h).display,
            size: [h.getBoundingClientRect().width, h.getBoundingClientRect().height],
            rendered: h.shadowRoot!.querySelectorAll(":not(style)").length,
            states: (window as any).streakStates.length
          }))
        })
        expect(seen).toEqual({ display: "none", size: [0, 0], rendered: 0, states: 0 })
        expect(sent).toEqual([])
        expect(errors).toEqual([])
      }))

    it.scoped("a network failure renders nothing and raises no page error; the widget loads at the next visibilitychange to visible", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [0])
        pages.put("/offline.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.route("**/v1/state?*", (route) => route.abort("internetdisconnected"))
          await page.goto(`${pages.allowed}/offline.html`)
          await settled(page, "error")
          const failed = await page.locator("streak-widget").evaluate((h) => getComputedStyle(h).display)
          await page.unroute("**/v1/state?*")
          await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")))
          await settled(page, "ready")
          return { failed, count: await text(page, "streak-widget [part=count]") }
        })
        expect(seen).toEqual({ failed: "none", count: "1" })
        expect(errors).toEqual([])
      }))

    it.scoped("without a required attribute it renders nothing and asks the server nothing", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        pages.put(
          "/missing.html",
          Pages.html({
            script,
            widgets: `<streak-widget site-key="${t.siteKey}" event="${Streaks.EVENT}"></streak-widget>`
          })
        )
        const { errors, page } = yield* open()
        const asked: Array<string> = []
        page.on("request", (r) => void (r.url().includes("/v1/") && asked.push(r.url())))
        yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/missing.html`)
          await settled(page, "error")
        })
        expect(asked).toEqual([])
        expect(errors).toEqual([])
      }))

    it.scoped("an identity token signed with the project's secret reveals an unlocked coupon's value; without it the value stays hidden", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [2, 1, 0])
        const token = yield* Credentials.signIdentityToken(t.signingSecret, {
          userHash: "member-1",
          siteKey: t.siteKey
        })
        pages.put(
          "/identity.html",
          Pages.html({
            script,
            inside: widget(t, "member-1", " id=plain inline") +
              widget(t, "member-1", ` id=signed inline identity="${token}"`)
          })
        )
        const { page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/identity.html`)
          await settled(page, "ready", "#plain")
          await settled(page, "ready", "#signed")
          const rewards = (w: string) => page.locator(`${w} [part=reward]`).allTextContents()
          return { plain: await rewards("#plain"), signed: await rewards("#signed") }
        })
        // A message's value is public; a coupon's only with the member's token.
        expect(seen.plain).toEqual(["First day: Welcome!"])
        expect(seen.signed).toEqual(["First day: Welcome!", "Three days: THREE-OFF"])
      }))

    it.scoped("axe-core finds no accessibility violation, collapsed and expanded, in the default and dark themes", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        const dark = yield* Streaks.tenant({
          origins: [pages.allowed],
          settings: settings({ theme: { name: "dark" } })
        })
        yield* Streaks.actionsOn(t, "member-1", [1, 0])
        yield* Streaks.actionsOn(dark, "member-1", [0])
        pages.put("/a11y.html", Pages.html({ script, widgets: widget(t, "member-1", " id=light") }))
        pages.put("/a11y-dark.html", Pages.html({ script, inside: widget(dark, "member-1", " id=dark inline") }))
        const { page } = yield* open()
        const violations = yield* Effect.promise(async () => {
          const found: Array<unknown> = []
          const check = async () => found.push(...(await new AxeBuilder({ page }).analyze()).violations)
          for (const [path, id] of [["/a11y.html", "#light"], ["/a11y-dark.html", "#dark"]] as const) {
            await page.goto(`${pages.allowed}${path}`)
            await settled(page, "ready", id)
            await calm(page)
            await check()
            await page.locator(`${id} [part=toggle]`).click()
            await calm(page)
            await check()
          }
          return found
        })
        expect(violations).toEqual([])
        const darkBg = yield* Effect.promise(() =>
          page.locator("#dark section").evaluate((s) => getComputedStyle(s).backgroundColor)
        )
        expect(darkBg).toBe("rgb(28, 31, 36)")
      }))

    it.scoped("colours and font come from the --streak-* custom properties; settings.position picks the corner; inline stays in the page flow (screenshots)", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup({
          settings: settings({ position: "top-left", mainMessage: "One lesson a day keeps the rust away" }),
          milestones: [
            { target: 1, msg: "First day", rewardType: "message", rewardValue: "Welcome!" },
            { target: 3, msg: "Three days", rewardType: "coupon", rewardValue: "THREE-OFF" },
            { target: 7, msg: "A full week" }
          ]
        })
        const corner = yield* Streaks.tenant({ origins: [pages.allowed], settings: settings() })
        yield* Streaks.actionsOn(t, "member-1", [3, 2, 1, 0])
        yield* Streaks.actionsOn(corner, "member-1", [3, 2, 1, 0])
        const token = yield* Credentials.signIdentityToken(t.signingSecret, {
          userHash: "member-1",
          siteKey: t.siteKey
        })
        const custom =
          "--streak-accent:#0f766e;--streak-bg:#f0fdfa;--streak-fg:#134e4a;--streak-font:Georgia,'DejaVu Serif',serif"
        pages.put("/default.html", Pages.html({ script, widgets: widget(corner, "member-1") }))
        pages.put(
          "/custom.html",
          Pages.html({ script, widgets: widget(t, "member-1", ` style="${custom}" identity="${token}"`) })
        )
        pages.put(
          "/inline.html",
          Pages.html({ script, inside: widget(t, "member-1", " inline") + "<p>Next up: the future tense.</p>" })
        )
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/default.html`)
          await settled(page, "ready")
          await page.locator("streak-widget [part=toggle]").click()
          await calm(page)
          await page.screenshot({ path: join(screenshots, "widget-default.png") })

          await page.goto(`${pages.allowed}/custom.html`)
          await settled(page, "ready")
          await page.locator("streak-widget [part=toggle]").click()
          await calm(page)
          const host = page.locator("streak-widget")
          await host.screenshot({ path: join(screenshots, "widget-custom-properties.png") })
          const customSeen = await host.evaluate((h) => {
            const card = h.shadowRoot!.querySelector("section")!
            const checked = h.shadowRoot!.querySelector("[data-checked=true] .d")!
            return {
              bg: getComputedStyle(card).backgroundColor,
              fg: getComputedStyle(card).color,
              font: getComputedStyle(card).fontFamily,
              checked: getComputedStyle(checked).backgroundColor,
              box: h.getBoundingClientRect().toJSON()
            }
          })

          await page.goto(`${pages.allowed}/inline.html`)
          await settled(page, "ready")
          await calm(page)
          await page.screenshot({ path: join(screenshots, "widget-inline.png"), fullPage: true })
          const inlineSeen = await page.locator("streak-widget").evaluate((h) => ({
            position: getComputedStyle(h).position,
            // In the flow: between the lesson text and the paragraph after it.
            afterText: h.getBoundingClientRect().top > h.previousElementSibling!.getBoundingClientRect().bottom - 1,
            beforeNext: h.getBoundingClientRect().bottom <= h.nextElementSibling!.getBoundingClientRect().top + 1
          }))
          return { custom: customSeen, inline: inlineSeen }
        })
        expect(seen.custom).toMatchObject({
          bg: "rgb(240, 253, 250)",
          fg: "rgb(19, 78, 74)",
          checked: "rgb(15, 118, 110)",
          box: { x: 16, y: 16 }
        })
        expect(seen.custom.font).toContain("Georgia")
        expect(seen.inline).toEqual({ position: "static", afterText: true, beforeNext: true })
        expect(errors).toEqual([])
      }))

    it.scoped("under a Content-Security-Policy without inline styles and with Trusted Types it renders, styled", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        yield* Streaks.actionsOn(t, "member-1", [0])
        const streaks = new URL(script).origin
        pages.put("/csp.html", Pages.html({ script, widgets: widget(t, "member-1") }), {
          "content-security-policy":
            `default-src 'none'; script-src ${streaks} 'unsafe-inline'; connect-src ${streaks}; style-src 'self'; require-trusted-types-for 'script'`
        })
        const { errors, page } = yield* open()
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${pages.allowed}/csp.html`)
          await settled(page, "ready")
          return page.locator("streak-widget").evaluate((h) => ({
            position: getComputedStyle(h).position,
            background: getComputedStyle(h.shadowRoot!.querySelector("section")!).backgroundColor
          }))
        })
        expect(seen).toEqual({ position: "fixed", background: "rgb(255, 255, 255)" })
        expect(errors).toEqual([])
      }))

    it.scoped("prefers-reduced-motion: reduce turns every animation and transition off", () =>
      Effect.gen(function*() {
        const { pages, script, t } = yield* setup()
        pages.put("/motion.html", Pages.html({ script, widgets: widget(t, "member-1") }))
        const motion = (reducedMotion: "reduce" | "no-preference") =>
          Effect.flatMap(open({ reducedMotion }), ({ page }) =>
            Effect.promise(async () => {
              await page.goto(`${pages.allowed}/motion.html`)
              await settled(page, "ready")
              return page.locator("streak-widget").evaluate((h) => ({
                card: getComputedStyle(h.shadowRoot!.querySelector("section")!).animationName,
                chevron: getComputedStyle(h.shadowRoot!.querySelector("button")!, "::after").transitionDuration
              }))
            }))
        assert.deepStrictEqual(yield* motion("no-preference"), { card: "in", chevron: "0.2s" })
        assert.deepStrictEqual(yield* motion("reduce"), { card: "none", chevron: "0s" })
      }))
  })
}
