/**
 * `<streak-widget>`: a member's streak from `GET /v1/state` (count, week, next milestone, message,
 * unlocked rewards) in a shadow root, with its analytics events (docs/widget.md). The build makes this
 * file one dependency-free ES module; importing it defines the element.
 */
import * as Labels from "./internal/labels.js"
import { css } from "./internal/styles.js"

/**
 * The answer of `GET /v1/state` the widget reads (docs/api.md#read-a-members-state-get-v1state;
 * policies add the optional fields).
 */
export interface State {
  readonly meta: { readonly apiVersion: string; readonly isLive: boolean }
  readonly streak: {
    readonly mode: string
    readonly current: number
    readonly best: number
    readonly todayDone: boolean
    readonly pending: boolean
    /**
     * Programs with a policy (docs/streak-semantics.md#streak-policies): the current period's active
     * days and target.
     */
    readonly period?: { readonly done: number; readonly target: number }
  }
  readonly week: ReadonlyArray<{
    readonly isoDate: string
    readonly label: string
    readonly dayNumber: number
    readonly isToday: boolean
    readonly isCheckedIn: boolean
    readonly isFrozen?: boolean
    readonly isRestDay?: boolean
    readonly isPaused?: boolean
  }>
  readonly milestones: ReadonlyArray<{
    readonly id: string
    readonly target: number
    readonly msg: string
    readonly achieved: boolean
    readonly rewardType: string
    /** Coupon and link values only with a valid identity token (docs/api.md#reward-values-and-identity-tokens). */
    readonly rewardValue?: string
  }>
  readonly settings: {
    readonly theme: { readonly name: string }
    readonly position: string
    readonly mainMessage: string
  }
}

/** The element's name. */
export const tagName = "streak-widget"

// Where the module was loaded from: the default `api-base` (the server that serves `/widget.js`).
const scriptOrigin = new URL(import.meta.url).origin

const flame =
  "M12 2c.6 3.4-1.6 5.6-3.4 7.6C7 11.4 6 13 6 15a6 6 0 0 0 12 0c0-2.6-1.2-4.8-2.6-6.4-.1 1.9-.9 3.2-2.1 3.7.5-3.5-.1-7.4-1.3-10.3zM12 20a2.6 2.6 0 0 1-2.6-2.6c0-1.6 1.3-2.8 2.6-4.4 1.3 1.6 2.6 2.8 2.6 4.4A2.6 2.6 0 0 1 12 20z"

const h = (tag: string, attributes: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElement => {
  const element = document.createElement(tag)
  for (const name in attributes) element.setAttribute(name, attributes[name]!)
  element.append(...children)
  return element
}

const svg = (tag: string, attributes: Record<string, string>, ...children: Array<Element>): Element => {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag)
  for (const name in attributes) element.setAttribute(name, attributes[name]!)
  element.append(...children)
  return element
}

// A link reward opens only an http(s) address, never `javascript:` or the like.
const isLink = (value: string): boolean => /^https?:\/\//i.test(value)

// One constructed stylesheet for every element: unlike a <style> element, a page's CSP needs no
// 'unsafe-inline' for it. Browsers without constructable stylesheets get a <style> element.
const sheet = ((): CSSStyleSheet | undefined => {
  try {
    const sheet = new CSSStyleSheet()
    sheet.replaceSync(css)
    return sheet
  } catch {
    return undefined
  }
})()

/**
 * The custom element. Attributes: `site-key`, `user-hash`, `event` (required), `identity` (a signed
 * identity token: shows coupon and link values), `api-base` (default: the origin of this module),
 * `inline` (in the page flow instead of a fixed corner at `settings.position`).
 *
 * After each successful load it dispatches `streak-state` (`detail`: the state). On any failure it
 * shows nothing, sets `data-state="error"` and tries again when the page next becomes visible.
 */
export class StreakWidget extends HTMLElement {
  static readonly observedAttributes = ["site-key", "user-hash", "event", "identity", "api-base"]

  readonly #root: ShadowRoot = this.attachShadow({ mode: "open" })
  // Always in the shadow root: the styles hide the host until a state is rendered, and after a failure.
  readonly #style: Array<Node> = sheet !== undefined ? [] : [h("style", {}, css)]
  // Number of the latest load: the answer of an older one is dropped.
  #load = 0
  #scheduled = false
  #expanded = false
  #impressed = false
  #visibility: IntersectionObserver | undefined
  #toggle: HTMLElement | undefined
  #details: HTMLElement | undefined

  constructor() {
    super()
    if (sheet !== undefined) this.#root.adoptedStyleSheets = [sheet]
    this.#root.replaceChildren(...this.#style)
  }

  connectedCallback(): void {
    document.addEventListener("visibilitychange", this.#onVisibility)
    this.#schedule()
  }

  disconnectedCallback(): void {
    document.removeEventListener("visibilitychange", this.#onVisibility)
    this.#visibility?.disconnect()
    this.#visibility = undefined
    this.#load++
  }

  attributeChangedCallback(_name: string, before: string | null, after: string | null): void {
    if (before !== after) this.#schedule()
  }

  readonly #onVisibility = (): void => {
    if (document.visibilityState === "visible" && this.dataset.state === "error") this.#schedule()
  }

  // The attributes of one element arrive one callback each: load once after the last of them.
  #schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => {
      this.#scheduled = false
      if (this.isConnected) void this.#refresh()
    })
  }

  #base(): string {
    return (this.getAttribute("api-base") ?? scriptOrigin).replace(/\/+$/, "")
  }

  #member(): { siteKey: string; userHash: string; event: string } | undefined {
    const siteKey = this.getAttribute("site-key")
    const userHash = this.getAttribute("user-hash")
    const event = this.getAttribute("event")
    return siteKey && userHash && event ? { siteKey, userHash, event } : undefined
  }

  async #refresh(): Promise<void> {
    const load = ++this.#load
    if (this.dataset.state !== "ready") this.dataset.state = "loading"
    let state: State
    try {
      const member = this.#member()
      if (member === undefined) throw new Error("site-key, user-hash and event are required")
      const identity = this.getAttribute("identity")
      const response = await fetch(`${this.#base()}/v1/state?${new URLSearchParams(member)}`, {
        headers: identity ? { "x-streak-identity": identity } : {},
        credentials: "omit"
      })
      if (!response.ok) throw new Error(`state: ${response.status}`)
      state = await response.json()
      if (load !== this.#load) return
      this.#render(state)
    } catch {
      if (load !== this.#load) return
      this.#root.replaceChildren(...this.#style)
      this.#toggle = this.#details = undefined
      this.dataset.state = "error"
      return
    }
    this.dataset.state = "ready"
    this.#watchImpression()
    this.dispatchEvent(new CustomEvent("streak-state", { detail: state }))
  }

  #render(state: State): void {
    const { milestones, settings, streak, week } = state
    const mode = streak.mode
    const expanded = String(this.#expanded)
    const toggle = h("button", {
      part: "toggle",
      type: "button",
      "aria-expanded": expanded,
      "aria-controls": "details"
    }, "Details")
    toggle.addEventListener("click", () => this.#flip())

    const days = week.map((day) =>
      h(
        "li",
        {
          part: "day",
          "data-today": String(day.isToday),
          "data-checked": String(day.isCheckedIn),
          "data-frozen": String(day.isFrozen === true),
          "data-rest": String(day.isRestDay === true),
          "data-paused": String(day.isPaused === true)
        },
        h("span", { "aria-hidden": "true" }, day.label),
        h("span", { class: "d", "aria-hidden": "true" }, String(day.dayNumber)),
        h(
          "span",
          { class: "sr" },
          `${day.label} ${day.dayNumber}${day.isToday ? ", today" : ""}${day.isCheckedIn ? ", done" : ""}${
            day.isFrozen ? ", frozen" : ""
          }${day.isRestDay ? ", rest day" : ""}${day.isPaused ? ", paused" : ""}`
        )
      )
    )

    const details = h("div", { part: "details", id: "details" })
    details.hidden = !this.#expanded
    const next = milestones.filter((m) => !m.achieved).sort((a, b) => a.target - b.target)[0]
    if (next !== undefined) {
      const left = next.target - streak.current
      details.append(
        h(
          "p",
          { part: "milestone" },
          "Next: ",
          h("b", {}, next.msg),
          left > 0 ? ` · ${Labels.count(left, mode)} to go` : ""
        )
      )
    }
    details.append(h("p", { part: "best" }, `Best: ${Labels.count(streak.best, mode)}`))
    const rewards = milestones.filter((m) => m.achieved && m.rewardValue)
    if (rewards.length > 0) {
      details.append(
        h("p", {}, "Your rewards"),
        h(
          "ul",
          {},
          ...rewards.map((m) => {
            const value = m.rewardValue!
            if (m.rewardType === "link") {
              return h(
                "li",
                { part: "reward" },
                isLink(value) ? h("a", { href: value, target: "_blank", rel: "noopener" }, m.msg) : m.msg
              )
            }
            return h("li", { part: "reward" }, `${m.msg}: `, m.rewardType === "coupon" ? h("code", {}, value) : value)
          })
        )
      )
    }

    this.dataset.theme = settings.theme.name
    this.dataset.position = settings.position
    this.#toggle = toggle
    this.#details = details
    const icon = svg(
      "svg",
      { viewBox: "0 0 24 24", "aria-hidden": "true" },
      svg("path", { "fill-rule": "evenodd", d: flame })
    )
    this.#root.replaceChildren(
      ...this.#style,
      h(
        "section",
        { part: "card", "aria-label": "Streak" },
        h(
          "div",
          { class: "top" },
          h(
            "p",
            { role: "status" },
            h("span", { class: "cap" }, "Your streak"),
            icon,
            " ",
            h("span", { part: "count" }, String(streak.current)),
            " ",
            h("span", { class: "unit" }, Labels.unit(streak.current, mode))
          ),
          toggle
        ),
        h(
          "p",
          { class: "today" },
          Labels.progress(streak, mode, week.some((d) => d.isToday && d.isRestDay === true))
        ),
        h("ol", { part: "week", "aria-label": "This week" }, ...days),
        h("p", { part: "message" }, settings.mainMessage),
        details
      )
    )
  }

  #flip(): void {
    this.#expanded = !this.#expanded
    this.#toggle?.setAttribute("aria-expanded", String(this.#expanded))
    if (this.#details !== undefined) this.#details.hidden = !this.#expanded
    this.#send("widget_interaction", { action: this.#expanded ? "expand" : "collapse" })
  }

  // One impression per element and page load, when the rendered widget first enters the viewport.
  #watchImpression(): void {
    if (this.#impressed || this.#visibility !== undefined) return
    if (typeof IntersectionObserver !== "function") return this.#impress()
    this.#visibility = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) this.#impress()
    })
    this.#visibility.observe(this)
  }

  #impress(): void {
    this.#impressed = true
    this.#visibility?.disconnect()
    this.#visibility = undefined
    this.#send("widget_impression")
  }

  // Analytics never fail the page: an answer or error is ignored.
  #send(eventType: "widget_impression" | "widget_interaction", meta?: { action: "expand" | "collapse" }): void {
    const member = this.#member()
    if (member === undefined) return
    fetch(`${this.#base()}/v1/e`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "omit",
      body: JSON.stringify({ ...member, eventType, ...(meta ? { meta } : {}) })
    }).catch(() => {})
  }
}

if (typeof customElements !== "undefined" && customElements.get(tagName) === undefined) {
  customElements.define(tagName, StreakWidget)
}
