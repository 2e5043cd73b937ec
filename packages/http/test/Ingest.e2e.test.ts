import { expect, layer } from "@effect/vitest"
import { Ports } from "@streaks/core"
import { Effect } from "effect"
import {
  actionCounts,
  browserEvent,
  daysAgo,
  getState,
  request,
  serverEvent,
  tenant,
  layer as testServer,
  utcDate,
  webhookEvent
} from "./support/TestServer.js"

layer(testServer(), { timeout: 120_000 })("ingest over real HTTP", (it) => {
  it.effect("server ingest answers 202 ok and the state shows a one-day streak", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* request("/v1/server/e", {
        headers: { "x-streak-server-token": t.serverToken },
        body: { siteKey: t.siteKey, userHash: "member-1", event: "lesson_completed" }
      })
      expect(sent.status).toBe(202)
      expect(sent.body).toMatchObject({ ok: true, counted: true })
      const state = yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=member-1&event=lesson_completed`, {
        headers: { "x-streak-server-token": t.serverToken }
      })
      expect(state.status).toBe(200)
      expect(state.body.meta).toEqual({ apiVersion: "1", isLive: true })
      expect(state.body.streak).toMatchObject({ current: 1, best: 1, todayDone: true, pending: false })
    }))

  it.effect("browser ingest from an allowed origin answers 202 ok and counts", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* browserEvent(t, { userHash: "member-1", eventType: "streak_interaction", sessionId: "s-1" })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
      const state = yield* getState(t, "member-1")
      expect(state.status).toBe(200)
      expect(state.body.streak).toMatchObject({ current: 1, todayDone: true })
    }))

  it.effect("webhook ingest answers 202 ok with the program's secret", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* webhookEvent(t, {
        userHash: "member-1",
        idempotencyKey: "completion-1",
        externalService: "zapier",
        integrationId: "zap-42",
        meta: { course: "french" }
      })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("webhook ingest accepts a body siteKey equal to the URL's", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* webhookEvent(t, { userHash: "member-1", siteKey: t.siteKey })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("test and live: webhook ingest counts test progress and keeps the program test", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expect((yield* webhookEvent(t, { userHash: "member-1" })).status).toBe(202)
      const state = yield* getState(t, "member-1")
      expect(state.body.meta).toEqual({ apiVersion: "1", isLive: false })
      // The state of a test program shows the test ledger, where the webhook action counted.
      expect(state.body.streak).toMatchObject({ current: 1, todayDone: true })
      expect(yield* actionCounts(t.programId, "test")).toMatchObject({ counted: 1 })
      expect(yield* actionCounts(t.programId, "live")).toMatchObject({ total: 0 })
    }))

  it.effect("test and live: the first real server action makes the program live, test progress stays apart", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* webhookEvent(t, { userHash: "member-1", ts: daysAgo(1) })
      yield* webhookEvent(t, { userHash: "member-1" })
      const before = yield* getState(t, "member-1")
      expect(before.body.meta.isLive).toBe(false)
      expect(before.body.streak.current).toBe(2)

      const sent = yield* serverEvent(t, { userHash: "member-2" })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
      const live = yield* getState(t, "member-2")
      expect(live.body.meta).toEqual({ apiVersion: "1", isLive: true })
      expect(live.body.streak).toMatchObject({ current: 1, todayDone: true })
      // member-1's two days were test progress: the live ledger starts empty for them.
      const member1 = yield* getState(t, "member-1")
      expect(member1.body.meta.isLive).toBe(true)
      expect(member1.body.streak).toMatchObject({ current: 0, best: 0, todayDone: false })
      // From then on the webhook door counts for real.
      expect((yield* webhookEvent(t, { userHash: "member-1" })).body).toEqual({ ok: true, counted: true })
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)
    }))

  it.effect("test and live: the first real browser action makes the program live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expect((yield* getState(t, "member-1")).body.meta.isLive).toBe(false)
      expect((yield* browserEvent(t, { userHash: "member-1" })).status).toBe(202)
      expect((yield* getState(t, "member-1")).body.meta.isLive).toBe(true)
    }))

  it.effect("test and live: a server action with test:true counts on the test ledger and keeps the program test", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* serverEvent(t, { userHash: "member-1", test: true })
      expect(sent.status).toBe(202)
      expect(sent.body).toEqual({ ok: true, counted: true })
      const state = yield* getState(t, "member-1")
      expect(state.body.meta.isLive).toBe(false)
      expect(state.body.streak.current).toBe(1)
    }))

  it.effect("kind is an alias of event on /v1/e, /v1/server/e and /v1/state", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const viaBrowser = yield* request("/v1/e", {
        headers: { origin: "https://app.example.com" },
        body: { siteKey: t.siteKey, userHash: "member-1", kind: "lesson_completed" }
      })
      expect(viaBrowser.status).toBe(202)
      expect(viaBrowser.body).toEqual({ ok: true, counted: true })
      const viaServer = yield* request("/v1/server/e", {
        headers: { "x-streak-server-token": t.serverToken },
        body: { siteKey: t.siteKey, userHash: "member-2", kind: "lesson_completed", event: "lesson_completed" }
      })
      expect(viaServer.status).toBe(202)
      const state = yield* request(`/v1/state?siteKey=${t.siteKey}&userHash=member-1&kind=lesson_completed`, {
        headers: { "x-streak-server-token": t.serverToken }
      })
      expect(state.status).toBe(200)
      expect(state.body.streak.current).toBe(1)
    }))

  it.effect("analytics-only event types: widget_impression and widget_interaction are stored but do not count", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const impression = yield* browserEvent(t, { userHash: "member-1", eventType: "widget_impression" })
      expect(impression.status).toBe(202)
      expect(impression.body).toEqual({ ok: true, counted: false })
      const interaction = yield* browserEvent(t, { userHash: "member-1", eventType: "widget_interaction" })
      expect(interaction.status).toBe(202)
      expect(interaction.body).toEqual({ ok: true, counted: false })
      const state = yield* getState(t, "member-1")
      expect(state.body.streak).toMatchObject({ current: 0, best: 0, todayDone: false })
      // An analytics event is no real progress: the program stays test.
      expect(state.body.meta.isLive).toBe(false)
      const log = yield* actionCounts(t.programId, "test")
      expect(log.byType).toEqual({ widget_impression: 1, widget_interaction: 1 })
      expect(log.counted).toBe(0)
    }))

  it.effect("per-day dedup: a second action on the same local day answers duplicate and moves nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      expect((yield* serverEvent(t, { userHash: "member-1" })).body).toEqual({ ok: true, counted: true })
      const again = yield* serverEvent(t, { userHash: "member-1" })
      expect(again.status).toBe(202)
      expect(again.body).toEqual({ ok: true, counted: true, duplicate: true })
      const viaBrowser = yield* browserEvent(t, { userHash: "member-1" })
      expect(viaBrowser.body).toEqual({ ok: true, counted: true, duplicate: true })
      const state = yield* getState(t, "member-1")
      expect(state.body.streak).toMatchObject({ current: 1, best: 1 })
      // Every action is stored, only the first one moved the streak.
      expect(yield* actionCounts(t.programId, "live")).toEqual({
        byType: { streak_interaction: 3 },
        counted: 1,
        total: 3
      })
    }))

  it.effect("per-day dedup follows the member's local day (tz), not UTC", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      // 23:30 and 00:30 UTC fall on two UTC dates but on one Tokyo date (08:30 and 09:30).
      const first = yield* serverEvent(t, { userHash: "member-1", ts: `${utcDate(3)}T23:30:00Z`, tz: "Asia/Tokyo" })
      expect(first.body).toEqual({ ok: true, counted: true })
      const second = yield* serverEvent(t, { userHash: "member-1", ts: `${utcDate(2)}T00:30:00Z`, tz: "Asia/Tokyo" })
      expect(second.body).toEqual({ ok: true, counted: true, duplicate: true })
      // 03:00 and 06:00 UTC fall on one UTC date but on two New York dates (evening, then night).
      const third = yield* serverEvent(t, {
        userHash: "member-2",
        ts: `${utcDate(2)}T03:00:00Z`,
        tz: "America/New_York"
      })
      const fourth = yield* serverEvent(t, {
        userHash: "member-2",
        ts: `${utcDate(2)}T06:00:00Z`,
        tz: "America/New_York"
      })
      expect(third.body).toEqual({ ok: true, counted: true })
      expect(fourth.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("backfill: past ts are accepted and recompute the streak", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      for (const n of [3, 2, 1]) {
        const sent = yield* serverEvent(t, { userHash: "member-1", ts: daysAgo(n) })
        expect(sent.status).toBe(202)
        expect(sent.body).toEqual({ ok: true, counted: true })
      }
      const state = yield* getState(t, "member-1")
      expect(state.body.streak).toEqual({ mode: "continuous", current: 3, best: 3, todayDone: false, pending: true })
    }))

  it.effect("idempotency replay: the same key answers the same status and body and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const first = yield* serverEvent(t, { userHash: "member-1", idempotencyKey: "order-1" })
      expect(first.status).toBe(202)
      expect(first.body).toEqual({ ok: true, counted: true })
      const replay = yield* serverEvent(t, { userHash: "member-1", idempotencyKey: "order-1" })
      expect(replay.status).toBe(first.status)
      expect(replay.text).toBe(first.text)
      // A repeat with the same key but another day still replays: nothing of it is applied.
      const other = yield* serverEvent(t, { userHash: "member-1", idempotencyKey: "order-1", ts: daysAgo(1) })
      expect(other.status).toBe(202)
      expect(other.text).toBe(first.text)
      const state = yield* getState(t, "member-1")
      expect(state.body.streak).toMatchObject({ current: 1, best: 1 })
      expect(state.body.week.filter((d: { isCheckedIn: boolean }) => d.isCheckedIn).length).toBeLessThanOrEqual(1)
      expect((yield* actionCounts(t.programId, "live")).total).toBe(1)
    }))

  it.effect("idempotency replay on the webhook door: a retried completion with the same key counts once", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const first = yield* webhookEvent(t, { userHash: "member-1", idempotencyKey: "zap-run-1" })
      expect(first.status).toBe(202)
      const replay = yield* webhookEvent(t, { userHash: "member-1", idempotencyKey: "zap-run-1" })
      expect(replay.status).toBe(202)
      expect(replay.body).toEqual(first.body)
      expect((yield* actionCounts(t.programId, "test")).total).toBe(1)
    }))

  it.effect("IDEMPOTENCY_KEY_IN_PROGRESS: a repeat while the first is still processing answers 409 with Retry-After: 1", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      // Hold the claim as a first request still being processed would.
      const store = yield* Ports.IdempotencyStore
      // Keys are scoped per door (docs/api.md): the webhook door's key is held, the server door's is not.
      const [claim] = yield* Effect.orDie(
        store.claim([{ projectId: t.projectId as never, key: "webhook:slow-1", now: new Date() }])
      )
      expect(claim!._tag).toBe("Claimed")
      const webhook = yield* webhookEvent(t, { userHash: "member-1", idempotencyKey: "slow-1" })
      expect(webhook.status).toBe(409)
      expect(webhook.body).toEqual({ error: "IDEMPOTENCY_KEY_IN_PROGRESS" })
      expect(webhook.headers.get("retry-after")).toBe("1")
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(0)
      const server = yield* serverEvent(t, { userHash: "member-1", idempotencyKey: "slow-1" })
      expect(server.status).toBe(202)
      expect((yield* getState(t, "member-1")).body.streak.current).toBe(1)
    }))

  it.effect("IDEMPOTENCY_KEY_IN_PROGRESS: 20 concurrent identical webhook calls are 202 or 409 and count once", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const replies = yield* Effect.all(
        Array.from({ length: 20 }, () => webhookEvent(t, { userHash: "member-1", idempotencyKey: "burst-1" })),
        { concurrency: "unbounded" }
      )
      const statuses = replies.map((r) => r.status)
      expect(statuses.every((s) => s === 202 || s === 409)).toBe(true)
      const accepted = replies.filter((r) => r.status === 202)
      expect(accepted.length).toBeGreaterThanOrEqual(1)
      // Only one request was processed: every 202 is its answer (none says duplicate).
      for (const r of accepted) expect(r.body).toEqual({ ok: true, counted: true })
      for (const r of replies.filter((r) => r.status === 409)) {
        expect(r.body).toEqual({ error: "IDEMPOTENCY_KEY_IN_PROGRESS" })
        expect(r.headers.get("retry-after")).toBe("1")
      }
      expect((yield* getState(t, "member-1")).body.streak).toMatchObject({ current: 1, best: 1 })
      expect(yield* actionCounts(t.programId, "test")).toEqual({
        byType: { streak_interaction: 1 },
        counted: 1,
        total: 1
      })
      // After the burst, a retry replays the stored answer.
      const retry = yield* webhookEvent(t, { userHash: "member-1", idempotencyKey: "burst-1" })
      expect(retry.status).toBe(202)
      expect(retry.body).toEqual({ ok: true, counted: true })
    }))

  it.effect("tz on an event is accepted and becomes the member's zone", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const sent = yield* serverEvent(t, { userHash: "member-1", tz: "Pacific/Kiritimati" })
      expect(sent.status).toBe(202)
      const state = yield* getState(t, "member-1")
      // The member's today is their local date in UTC+14.
      const today = new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10)
      const todayEntry = state.body.week.find((d: { isToday: boolean }) => d.isToday)
      expect(todayEntry.isoDate).toBe(today)
      expect(todayEntry.isCheckedIn).toBe(true)
    }))
})
