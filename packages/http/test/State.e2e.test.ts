import { expect, layer } from "@effect/vitest"
import { Credentials } from "@streaks/core"
import { Effect } from "effect"
import {
  admin,
  daysAgo,
  getState,
  serverEvent,
  tenant,
  layer as testServer,
  utcDate,
  webhookEvent
} from "./support/TestServer.js"

const LABELS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

const rewards = {
  milestones: [
    { target: 1, msg: "Day one", rewardType: "message", rewardValue: "Welcome aboard" },
    { target: 2, msg: "Two days", rewardType: "link", rewardValue: "https://example.com/bonus" },
    { target: 3, msg: "Three days", rewardType: "coupon", rewardValue: "THREE-OFF" },
    { target: 30, msg: "A month", rewardType: "coupon", rewardValue: "MONTH-OFF" }
  ]
}

layer(testServer(), { timeout: 120_000 })("GET /v1/state over real HTTP", (it) => {
  it.effect("state shape: every field of the state answer, exactly", () =>
    Effect.gen(function*() {
      const t = yield* tenant({
        program: {
          settings: { theme: { name: "midnight" }, position: "bottom-left", mainMessage: "Learn every day" }
        }
      })
      yield* serverEvent(t, { userHash: "member-1" })
      const state = yield* getState(t, "member-1")
      expect(state.status).toBe(200)
      expect(state.headers.get("content-type")).toMatch(/^application\/json/)
      expect(Object.keys(state.body).sort()).toEqual(["meta", "milestones", "settings", "streak", "week"])
      expect(state.body.meta).toEqual({ apiVersion: "1", isLive: true })
      expect(state.body.streak).toEqual({ mode: "continuous", current: 1, best: 1, todayDone: true, pending: false })
      expect(state.body.settings).toEqual({
        theme: { name: "midnight" },
        position: "bottom-left",
        mainMessage: "Learn every day"
      })
      expect(state.body.milestones).toEqual([
        { id: t.milestones[0]!.id, target: 1, msg: "First day!", achieved: true, rewardType: "message" },
        { id: t.milestones[1]!.id, target: 3, msg: "Three days", achieved: false, rewardType: "coupon" }
      ])
      expect(t.milestones[0]!.id).toMatch(/^ms_/)
    }))

  it.effect("state week: 7 entries Monday..Sunday of the current ISO week with isoDate, label, dayNumber, isToday, isCheckedIn", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(1) })
      yield* serverEvent(t, { userHash: "member-1" })
      const { week } = (yield* getState(t, "member-1")).body
      expect(week).toHaveLength(7)
      const today = utcDate(0)
      const yesterday = utcDate(1)
      week.forEach((d: any, i: number) => {
        expect(Object.keys(d).sort()).toEqual(["dayNumber", "isCheckedIn", "isToday", "isoDate", "label"])
        expect(d.label).toBe(LABELS[i])
        expect(d.isoDate).toMatch(/^\d{4}-\d{2}-\d{2}$/)
        const date = new Date(`${d.isoDate}T00:00:00Z`)
        // Monday is ISO day 1: getUTCDay() is 1 for Monday … 0 for Sunday.
        expect((date.getUTCDay() + 6) % 7).toBe(i)
        expect(d.dayNumber).toBe(date.getUTCDate())
        expect(d.isToday).toBe(d.isoDate === today)
        expect(d.isCheckedIn).toBe(d.isoDate === today || d.isoDate === yesterday)
        if (i > 0) expect(date.getTime() - new Date(`${week[i - 1].isoDate}T00:00:00Z`).getTime()).toBe(86_400_000)
      })
      expect(week.filter((d: any) => d.isToday)).toHaveLength(1)
    }))

  it.effect("state streak: current, best, todayDone and pending follow the member's days", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const empty = (yield* getState(t, "member-1")).body
      expect(empty.streak).toEqual({ mode: "continuous", current: 0, best: 0, todayDone: false, pending: false })
      expect(empty.week.every((d: any) => !d.isCheckedIn)).toBe(true)

      // An old run of 3, a gap, then yesterday: alive but owed today.
      for (const n of [6, 5, 4, 1]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const pending = (yield* getState(t, "member-1")).body.streak
      expect(pending).toEqual({ mode: "continuous", current: 1, best: 3, todayDone: false, pending: true })

      yield* serverEvent(t, { userHash: "member-1" })
      const done = (yield* getState(t, "member-1")).body.streak
      expect(done).toEqual({ mode: "continuous", current: 2, best: 3, todayDone: true, pending: false })

      // A late action that fills the gap joins the runs.
      for (const n of [3, 2]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      expect((yield* getState(t, "member-1")).body.streak).toMatchObject({ current: 7, best: 7 })
    }))

  it.effect("state streak: a missed full day breaks the run (current 0, best kept)", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      for (const n of [4, 3, 2]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const state = (yield* getState(t, "member-1")).body
      expect(state.streak).toEqual({ mode: "continuous", current: 0, best: 3, todayDone: false, pending: false })
      expect(state.week.filter((d: any) => d.isToday)[0].isCheckedIn).toBe(false)
    }))

  it.effect("state milestones: achieved once reached, with their reward type", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: rewards })
      for (const n of [2, 1, 0]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const { milestones } = (yield* getState(t, "member-1")).body
      expect(milestones.map((m: any) => [m.target, m.msg, m.rewardType, m.achieved])).toEqual([
        [1, "Day one", "message", true],
        [2, "Two days", "link", true],
        [3, "Three days", "coupon", true],
        [30, "A month", "coupon", false]
      ])
      expect(milestones.map((m: any) => m.id)).toEqual(t.milestones.map((m) => m.id))
    }))

  it.effect("coupon and link reward values are hidden without an identity token; message values are shown", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: rewards })
      for (const n of [2, 1, 0]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const { milestones } = (yield* getState(t, "member-1")).body
      expect(milestones[0].rewardValue).toBe("Welcome aboard")
      for (const m of milestones.slice(1)) expect(m).not.toHaveProperty("rewardValue")
      // Also to a browser of an allowed origin.
      const browser = yield* getState(t, "member-1", { headers: { origin: "https://app.example.com" } })
      for (const m of browser.body.milestones.slice(1)) expect(m).not.toHaveProperty("rewardValue")
    }))

  it.effect("coupon and link reward values are shown with a valid signed identity token (header or query)", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: rewards })
      for (const n of [2, 1, 0]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const identity = yield* Credentials.signIdentityToken(t.signingSecret, {
        userHash: "member-1",
        siteKey: t.siteKey
      })
      const viaHeader = yield* getState(t, "member-1", {
        headers: { origin: "https://app.example.com", "x-streak-identity": identity }
      })
      expect(viaHeader.status).toBe(200)
      expect(viaHeader.body.milestones.map((m: any) => m.rewardValue)).toEqual([
        "Welcome aboard",
        "https://example.com/bonus",
        "THREE-OFF",
        undefined // not earned yet
      ])
      const viaQuery = yield* getState(t, "member-1", {
        query: { identity },
        headers: { origin: "https://app.example.com" }
      })
      expect(viaQuery.body.milestones[2].rewardValue).toBe("THREE-OFF")
    }))

  it.effect("an invalid, expired or foreign identity token is treated as absent (200, values hidden)", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: rewards })
      const other = yield* tenant({ program: rewards })
      for (const n of [2, 1, 0]) yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
      const tokens = [
        "not-a-jwt",
        // Another member of the same project.
        yield* Credentials.signIdentityToken(t.signingSecret, { userHash: "member-2", siteKey: t.siteKey }),
        // Signed with another project's secret.
        yield* Credentials.signIdentityToken(other.signingSecret, { userHash: "member-1", siteKey: t.siteKey }),
        // For another site.
        yield* Credentials.signIdentityToken(t.signingSecret, { userHash: "member-1", siteKey: other.siteKey }),
        // Expired.
        yield* Credentials.signIdentityToken(t.signingSecret, { userHash: "member-1", siteKey: t.siteKey }, {
          expiresInSeconds: -60
        })
      ]
      for (const token of tokens) {
        const state = yield* getState(t, "member-1", {
          headers: { origin: "https://app.example.com", "x-streak-identity": token }
        })
        expect(state.status).toBe(200)
        expect(state.body.milestones[2]).not.toHaveProperty("rewardValue")
        expect(state.body.milestones[1]).not.toHaveProperty("rewardValue")
      }
    }))

  it.effect("test and live: the state shows the ledger of the program's status and meta.isLive says which", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* webhookEvent(t, { userHash: "member-1", ts: daysAgo(1) })
      yield* webhookEvent(t, { userHash: "member-1" })
      const test = (yield* getState(t, "member-1")).body
      expect(test.meta.isLive).toBe(false)
      expect(test.streak.current).toBe(2)

      // Made live by an operator: the live ledger is empty for this member.
      expect((yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })).status).toBe(200)
      const live = (yield* getState(t, "member-1")).body
      expect(live.meta.isLive).toBe(true)
      expect(live.streak.current).toBe(0)
      yield* webhookEvent(t, { userHash: "member-1" })
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)

      // Back to test: the test ledger shows again, the live one is kept.
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "test" })
      const back = (yield* getState(t, "member-1")).body
      expect(back.meta.isLive).toBe(false)
      expect(back.streak.current).toBe(2)
      yield* admin(`/admin/programs/${t.programId}/status`, { status: "live" })
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)
    }))

  it.effect("state of an unknown member is an empty streak, not an error", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const state = yield* getState(t, "never-seen")
      expect(state.status).toBe(200)
      expect(state.body.streak).toMatchObject({ current: 0, best: 0, todayDone: false, pending: false })
      expect(state.body.milestones.every((m: any) => m.achieved === false)).toBe(true)
    }))

  it.effect("state follows the member's time zone for today and the week", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ timezone: "Pacific/Kiritimati" })
      const state = (yield* getState(t, "member-1")).body
      const today = new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10)
      expect(state.week.find((d: any) => d.isToday).isoDate).toBe(today)
    }))
})
