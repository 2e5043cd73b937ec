import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Ref, TestClock } from "effect"
import { DirectoryStore, IdempotencyStore, UsageStore } from "../src/Ports.js"
import type { Tenant } from "@streaks/storage-conformance/Fixtures"
import {
  api,
  at,
  browser,
  daysOf,
  drainOutbox,
  layer,
  layerFirstTransactionFails,
  layerPoisoned,
  liveTenant,
  logged,
  Nudges,
  POISON,
  rowOf,
  server,
  startExperiment,
  tenant,
  webhook
} from "./support/pipeline.js"

const NOON = at("2026-05-10T12:00:00Z")
const DAY = 86_400_000

const body = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  siteKey: t.project.siteKey,
  userHash: "u1",
  event: t.program.eventKey,
  ...extra
})

const nudges = Effect.flatMap(Nudges, Ref.get)

const statusOf = (t: Tenant) =>
  Effect.map(Effect.flatMap(DirectoryStore, (d) => d.program(t.program.id)), (p) => Option.getOrThrow(p).status)

describe("Ingest: test and live (docs/api.md#test-and-live)", () => {
  it.effect("webhook ingest on a test program counts test progress and never makes the program live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      const answer = yield* webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "u1" })
      assert.deepStrictEqual(answer, { body: { ok: true, counted: true }, deprecation: false })
      assert.strictEqual(yield* statusOf(t), "test")
      assert.deepStrictEqual(yield* daysOf(t, "u1", "test"), ["2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
    }).pipe(Effect.provide(layer)))

  it.effect("customer REST on a test program without test:true answers counted:false PROGRAM_NOT_LIVE, stores no progress, logs the action", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      assert.deepStrictEqual((yield* api(t, { userHash: "u1" })).body, { counted: false, reason: "PROGRAM_NOT_LIVE" })
      assert.strictEqual(yield* statusOf(t), "test")
      assert.isUndefined(yield* rowOf(t, "u1", "test"))
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
      assert.deepStrictEqual(yield* logged(t, "test"), [
        { date: "2026-05-10", eventType: "streak_interaction", count: 1, counted: 0 }
      ] as any)
    }).pipe(Effect.provide(layer)))

  it.effect("customer REST with test:true counts on the test ledger and the program stays test", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      assert.deepStrictEqual((yield* api(t, { userHash: "u1", test: true })).body, { counted: true })
      assert.strictEqual(yield* statusOf(t), "test")
      assert.strictEqual((yield* rowOf(t, "u1", "test"))?.run, 1)
    }).pipe(Effect.provide(layer)))

  it.effect("the first counted server-door action makes the program live and is the first action on the live ledger", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "u0" })
      assert.deepStrictEqual((yield* server(body(t))).body, { ok: true, counted: true })
      assert.strictEqual(yield* statusOf(t), "live")
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "u1", "test"))
      // From then on every door counts for real, the webhook door included.
      yield* webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "u2" })
      assert.deepStrictEqual(yield* daysOf(t, "u2", "live"), ["2026-05-10"])
      assert.deepStrictEqual((yield* api(t, { userHash: "u3" })).body, { counted: true })
      assert.deepStrictEqual(yield* daysOf(t, "u3", "live"), ["2026-05-10"])
    }).pipe(Effect.provide(layer)))

  it.effect("a browser action from an allowed origin makes a test program live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* browser(body(t))
      assert.strictEqual(yield* statusOf(t), "live")
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
    }).pipe(Effect.provide(layer)))

  it.effect("test:true on the server or browser door counts on the test ledger and never makes the program live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      assert.deepStrictEqual((yield* server(body(t, { test: true }))).body, { ok: true, counted: true })
      yield* browser(body(t, { userHash: "u2", test: true }))
      assert.strictEqual(yield* statusOf(t), "test")
      assert.deepStrictEqual(yield* daysOf(t, "u1", "test"), ["2026-05-10"])
      assert.deepStrictEqual(yield* daysOf(t, "u2", "test"), ["2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
    }).pipe(Effect.provide(layer)))

  it.effect("analytics events and display-only browser actions never make a test program live", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* browser(body(t, { eventType: "widget_impression" }))
      yield* server(body(t, { eventType: "widget_interaction" }))
      assert.strictEqual(yield* statusOf(t), "test")
      const d = yield* tenant({ project: { browserCounting: "display-only" } })
      yield* browser(body(d))
      assert.strictEqual(yield* statusOf(d), "test")
    }).pipe(Effect.provide(layer)))

  it.effect("test:true on a live program counts on the test ledger, apart from real progress", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      yield* api(t, { userHash: "u1", test: true })
      yield* server(body(t, { userHash: "u2", test: true }))
      assert.deepStrictEqual(yield* daysOf(t, "u1", "test"), ["2026-05-10"])
      assert.deepStrictEqual(yield* daysOf(t, "u2", "test"), ["2026-05-10"])
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
      assert.deepStrictEqual(yield* drainOutbox, [])
    }).pipe(Effect.provide(layer)))
})

describe("Ingest: idempotency (docs/api.md#idempotency)", () => {
  it.effect("a repeat with the same idempotencyKey replays the first answer and changes nothing", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const first = yield* server(body(t, { idempotencyKey: "k1" }))
      // The repeat comes the next day: without the key it would count a second day.
      yield* TestClock.setTime(NOON + DAY - 60_000)
      const again = yield* server(body(t, { idempotencyKey: "k1" }))
      assert.deepStrictEqual(again, first)
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10"])
      assert.strictEqual((yield* logged(t, "live")).length, 1)
      // Keys are scoped per door: the same key on another door is another action, so a browser
      // call cannot claim the key of a later server or webhook delivery.
      assert.deepStrictEqual((yield* api(t, { userHash: "u9", idempotencyKey: "k1" })).body, { counted: true })
      assert.strictEqual((yield* rowOf(t, "u9", "live"))?.run, 1)
    }).pipe(Effect.provide(layer)))

  it.effect("a repeat while the first is still processing is IDEMPOTENCY_KEY_IN_PROGRESS", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      // Another replica holds the claim (keys are stored per door).
      yield* Effect.flatMap(IdempotencyStore, (s) => s.claim(t.project.id, "webhook:k1", new Date(NOON)))
      yield* TestClock.setTime(NOON + 29_000)
      const error = yield* Effect.flip(
        webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "u1", idempotencyKey: "k1" })
      )
      assert.strictEqual(error._tag, "IdempotencyKeyInProgress")
      assert.strictEqual((error as { code?: string }).code, "IDEMPOTENCY_KEY_IN_PROGRESS")
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
    }).pipe(Effect.provide(layer)))

  it.effect("a crashed claim expires after 30 seconds, then the key is processed afresh", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      yield* Effect.flatMap(IdempotencyStore, (s) => s.claim(t.project.id, "webhook:k1", new Date(NOON)))
      yield* TestClock.setTime(NOON + 30_000)
      const answer = yield* webhook(t.project.siteKey, {
        event: t.program.eventKey,
        userHash: "u1",
        idempotencyKey: "k1"
      })
      assert.deepStrictEqual(answer.body, { ok: true, counted: true })
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
    }).pipe(Effect.provide(layer)))

  it.effect("an idempotency key lives 24 hours from first receipt: a repeat after that is a new action", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      yield* server(body(t, { idempotencyKey: "k1" }))
      yield* TestClock.setTime(NOON + DAY - 1)
      yield* server(body(t, { idempotencyKey: "k1" }))
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10"])
      yield* TestClock.setTime(NOON + DAY)
      yield* server(body(t, { idempotencyKey: "k1" }))
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10", "2026-05-11"])
    }).pipe(Effect.provide(layer)))

  it.effect("concurrent repeats of one key: exactly one is processed, the others replay it or get IN_PROGRESS", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const results = yield* Effect.all(
        Array.from(
          { length: 20 },
          (_, i) => Effect.either(server(body(t, { userHash: `u${i}`, idempotencyKey: "k1" })))
        ),
        { concurrency: "unbounded" }
      )
      for (const r of results) {
        if (r._tag === "Left") assert.strictEqual(r.left._tag, "IdempotencyKeyInProgress")
        else assert.deepStrictEqual(r.right.body, { ok: true, counted: true })
      }
      assert.strictEqual((yield* logged(t, "live"))[0]?.count, 1, "one action was recorded")
    }).pipe(Effect.provide(layer)))

  it.effect("concurrent actions of one member on one day count once", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const answers = yield* Effect.all(Array.from({ length: 20 }, () => server(body(t))), { concurrency: "unbounded" })
      assert.strictEqual(answers.filter((a) => a.body.duplicate !== true).length, 1)
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
      assert.deepStrictEqual(yield* logged(t, "live"), [
        { date: "2026-05-10", eventType: "streak_interaction", count: 20, counted: 1 }
      ] as any)
    }).pipe(Effect.provide(layer)))

  for (const [store, layerFails] of [["claimed inside the transaction", layerFirstTransactionFails]] as const) {
    it.effect(`an action whose work failed frees its key at once, so the retry runs: key ${store}`, () =>
      Effect.gen(function*() {
        const t = yield* tenant({ program: { status: "live" } })
        yield* TestClock.setTime(NOON)
        const failed = yield* Effect.flip(server(body(t, { idempotencyKey: "k1" })))
        assert.strictEqual(failed._tag, "StorageError")
        assert.isUndefined(yield* rowOf(t, "u1", "live"))
        assert.deepStrictEqual((yield* server(body(t, { idempotencyKey: "k1" }))).body, { ok: true, counted: true })
        assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
      }).pipe(Effect.provide(layerFails)))
  }

  it.effect("a keyed action that fails after its key was claimed in its batch's transaction frees the key; the batch's others apply", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const [poisoned, fine] = yield* Effect.all([
        Effect.flip(server(body(t, { userHash: POISON, idempotencyKey: "kp" }))),
        server(body(t, { idempotencyKey: "k1" }))
      ], { concurrency: "unbounded" })
      assert.strictEqual(poisoned._tag, "StorageError")
      assert.deepStrictEqual(fine.body, { ok: true, counted: true })
      // Its retry runs (and fails again), rather than finding the key in progress or answered.
      assert.strictEqual(
        (yield* Effect.flip(server(body(t, { userHash: POISON, idempotencyKey: "kp" }))))._tag,
        "StorageError"
      )
      assert.deepStrictEqual((yield* server(body(t, { idempotencyKey: "k1" }))).body, { ok: true, counted: true })
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
      assert.strictEqual((yield* logged(t, "live"))[0]?.count, 1)
    }).pipe(Effect.provide(layerPoisoned)))

  it.effect("an action refused by auth takes no claim: the key stays free for the corrected request", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      const error = yield* Effect.flip(server(body(t, { idempotencyKey: "k1" }), "sst_wrong"))
      assert.strictEqual(error._tag, "ServerTokenRequired")
      assert.deepStrictEqual((yield* server(body(t, { idempotencyKey: "k1" }))).body, { ok: true, counted: true })
    }).pipe(Effect.provide(layer)))
})

describe("Ingest: counting (docs/api.md#order-of-checks, docs/streak-semantics.md#the-rules)", () => {
  it.effect("a second action on the same local day is logged but moves nothing (duplicate)", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      yield* server(body(t))
      yield* TestClock.setTime(NOON + 3_600_000)
      assert.deepStrictEqual((yield* server(body(t))).body, { ok: true, counted: true, duplicate: true })
      assert.deepStrictEqual((yield* api(t, { userHash: "u1" })).body, { counted: true, duplicate: true })
      const row = yield* rowOf(t, "u1", "live")
      assert.strictEqual(row?.run, 1)
      assert.deepStrictEqual(yield* logged(t, "live"), [
        { date: "2026-05-10", eventType: "streak_interaction", count: 3, counted: 1 }
      ] as any)
    }).pipe(Effect.provide(layer)))

  it.effect("the day of an action is local to its zone, and tz becomes the member's zone for later actions", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      // 23:30 and 00:30 in Tokyo: two local days although both are on 2026-05-10 in UTC.
      yield* TestClock.setTime(at("2026-05-10T15:30:00Z"))
      yield* server(body(t, { tz: "Asia/Tokyo", ts: "2026-05-10T14:30:00Z" }))
      yield* server(body(t, { ts: "2026-05-10T15:30:00Z" }))
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-10", "2026-05-11"])
      const row = yield* rowOf(t, "u1", "live")
      assert.strictEqual(row?.timezone, "Asia/Tokyo")
      assert.strictEqual(row?.run, 2)
    }).pipe(Effect.provide(layer)))

  it.effect("without any tz the project's zone dates the action", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" }, project: { timezone: "America/Los_Angeles" } })
      yield* TestClock.setTime(at("2026-05-10T03:00:00Z")) // 20:00 on May 9 in Los Angeles
      yield* server(body(t))
      assert.deepStrictEqual(yield* daysOf(t, "u1", "live"), ["2026-05-09"])
    }).pipe(Effect.provide(layer)))

  it.effect("a late action that fills a gap recomputes the streak from the activity days", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(at("2026-05-10T12:00:00Z"))
      yield* server(body(t, { ts: "2026-05-08T12:00:00Z" }))
      yield* server(body(t))
      assert.strictEqual((yield* rowOf(t, "u1", "live"))?.run, 1)
      assert.deepStrictEqual((yield* server(body(t, { ts: "2026-05-09T12:00:00Z" }))).body, { ok: true, counted: true })
      const row = yield* rowOf(t, "u1", "live")
      assert.deepStrictEqual([row?.lastActiveDay, row?.run, row?.best], ["2026-05-10", 3, 3])
    }).pipe(Effect.provide(layer)))

  it.effect("widget_impression and widget_interaction are logged for analytics but never counted", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(NOON)
      assert.deepStrictEqual((yield* browser(body(t, { eventType: "widget_impression" }))).body, {
        ok: true,
        counted: false
      })
      yield* server(body(t, { eventType: "widget_interaction" }))
      assert.isUndefined(yield* rowOf(t, "u1", "live"))
      assert.deepStrictEqual(yield* logged(t, "live"), [
        { date: "2026-05-10", eventType: "widget_impression", count: 1, counted: 0 },
        { date: "2026-05-10", eventType: "widget_interaction", count: 1, counted: 0 }
      ] as any)
    }).pipe(Effect.provide(layer)))

  it.effect("only counted live actions mark a member active for metering", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      yield* webhook(t.project.siteKey, { event: t.program.eventKey, userHash: "test_member" })
      yield* server(body(t, { userHash: "analytics_only", eventType: "widget_impression" }))
      yield* server(body(t, { userHash: "real_1" }))
      yield* server(body(t, { userHash: "real_2", ts: "2026-04-30T12:00:00Z" }))
      const usage = yield* UsageStore
      assert.strictEqual(yield* usage.activeCount(t.workspace.id, "2026-05"), 1)
      assert.strictEqual(
        yield* usage.activeCount(t.workspace.id, "2026-04"),
        1,
        "a late action counts in the month of its ts"
      )
    }).pipe(Effect.provide(layer)))
})

describe("Ingest: milestones and outbound events (docs/streak-semantics.md#milestones, docs/webhooks.md#event-types)", () => {
  const streakOf = (t: Tenant, user: string, days: number) =>
    Effect.gen(function*() {
      for (let i = days - 1; i >= 0; i--) {
        yield* server(body(t, { userHash: user, ts: new Date(NOON - i * DAY).toISOString() }))
      }
    })

  it.effect("milestone.achieved fires once per member and ledger with the exact delivery body", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      yield* streakOf(t, "u1", 3)
      yield* server(body(t, { userHash: "u1" })) // a duplicate of the day changes nothing
      const messages = yield* drainOutbox
      assert.strictEqual(messages.length, 1)
      const [{ body: delivery, message }] = messages as [typeof messages[number]]
      const milestone = t.program.milestones.find((m) => m.target === 3)!
      assert.strictEqual(message.type, "milestone.achieved")
      assert.strictEqual(delivery.id, message.id)
      assert.deepStrictEqual(delivery, {
        id: message.id,
        type: "milestone.achieved",
        timestamp: new Date(NOON).toISOString(),
        data: {
          programId: t.program.id,
          projectId: t.project.id,
          siteKey: t.project.siteKey,
          userHash: "u1",
          isTest: false,
          streak: { current: 3, best: 3 },
          milestone: { id: milestone.id, target: 3, msg: milestone.msg, rewardType: "message" }
        }
      })
      // A new run reaching 3 again does not re-achieve it.
      yield* TestClock.setTime(NOON + 5 * DAY)
      for (let i = 2; i >= 0; i--) yield* server(body(t, { ts: new Date(NOON + (5 - i) * DAY).toISOString() }))
      assert.deepStrictEqual(yield* drainOutbox, [])
    }).pipe(Effect.provide(layer)))

  it.effect("reward.unlocked fires only for a milestone with a reward, carrying its value", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      yield* streakOf(t, "u1", 7)
      // Messages of one instant carry no order among themselves: sort by target, then type.
      const types = (yield* drainOutbox)
        .map((m) => [m.body.type, m.body.data.milestone?.target, m.body.data.reward])
        .sort((a, b) => a[1] - b[1] || String(a[0]).localeCompare(String(b[0])))
      assert.deepStrictEqual(types, [
        ["milestone.achieved", 3, undefined],
        ["milestone.achieved", 7, undefined],
        ["reward.unlocked", 7, { type: "coupon", value: "WEEK10" }]
      ])
    }).pipe(Effect.provide(layer)))

  it.effect("no outbox messages for test programs, though milestones are still achieved on the test ledger", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(NOON)
      for (let i = 2; i >= 0; i--) {
        yield* webhook(t.project.siteKey, {
          event: t.program.eventKey,
          userHash: "u1",
          ts: new Date(NOON - i * DAY).toISOString()
        })
      }
      assert.strictEqual((yield* rowOf(t, "u1", "test"))?.run, 3)
      assert.deepStrictEqual(yield* drainOutbox, [])
    }).pipe(Effect.provide(layer)))

  it.effect("no outbox messages for members of a running Proof control group; their streaks still count", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      const { control, treatment } = yield* startExperiment(t.program)
      yield* TestClock.setTime(NOON)
      yield* streakOf(t, control, 3)
      yield* streakOf(t, treatment, 3)
      assert.strictEqual((yield* rowOf(t, control, "live"))?.run, 3)
      assert.deepStrictEqual((yield* drainOutbox).map((m) => m.body.data.userHash), [treatment])
    }).pipe(Effect.provide(layer)))

  it.effect("the dispatcher is nudged once after each commit that enqueued messages, never otherwise", () =>
    Effect.gen(function*() {
      const t = yield* liveTenant()
      yield* TestClock.setTime(NOON)
      yield* streakOf(t, "u1", 2)
      assert.strictEqual(yield* nudges, 0)
      // A late action completes 3 days: milestone 3 is reached and its message enqueued.
      yield* server(body(t, { ts: new Date(NOON - 2 * DAY).toISOString() }))
      assert.strictEqual(yield* nudges, 1)
    }).pipe(Effect.provide(layer)))
})
