import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Ref, TestClock } from "effect"
import { unsafeLocalDate } from "../src/Calendar.js"
import * as Credentials from "../src/Credentials.js"
import { defaultSettings, ProgramSettings } from "../src/Domain.js"
import * as Ingest from "../src/Ingest.js"
import * as StateQuery from "../src/StateQuery.js"
import type { StateRequest } from "../src/StateQuery.js"
import { StateStore } from "../src/StateStore.js"
import { makeMilestone, type Tenant } from "@streaks/storage-conformance/Fixtures"
import {
  api,
  at,
  base,
  codeOf,
  layer,
  ORIGIN,
  server,
  SERVER_TOKEN,
  SIGNING_SECRET,
  tenant
} from "./support/pipeline.js"

// Wednesday 2026-05-13, noon UTC.
const WED = at("2026-05-13T12:00:00Z")
const DAY = 86_400_000

const request = (t: Tenant, extra: Partial<StateRequest> = {}): StateRequest => ({
  siteKey: t.project.siteKey,
  userHash: "u1",
  event: t.program.eventKey,
  origin: ORIGIN,
  serverToken: undefined,
  identityToken: undefined,
  ...extra
})

const stateOf = (t: Tenant, extra: Partial<StateRequest> = {}) =>
  Effect.flatMap(StateQuery.StateQuery, (q) => q.state(request(t, extra)))

const act = (t: Tenant, ms: number, extra: Record<string, unknown> = {}) =>
  server({
    siteKey: t.project.siteKey,
    userHash: "u1",
    event: t.program.eventKey,
    ts: new Date(ms).toISOString(),
    ...extra
  })

const rewards = [
  makeMilestone({ target: 1, msg: "Day one", rewardType: "message", rewardValue: "Welcome aboard" }),
  makeMilestone({ target: 2, msg: "Two days", rewardType: "coupon", rewardValue: "TWO10" }),
  makeMilestone({ target: 3, msg: "Three days", rewardType: "link", rewardValue: "https://x.example/gift" }),
  makeMilestone({ target: 30, msg: "A month", rewardType: "coupon", rewardValue: "MONTH50" })
]

/** The sizes of the `StateStore.standing` calls; each call yields first, as a store's round trip would. */
class StandingCalls extends Context.Tag("test/StandingCalls")<StandingCalls, Ref.Ref<ReadonlyArray<number>>>() {}

/** The most `StateStore.standing` calls out at once. */
class StandingPeak extends Context.Tag("test/StandingPeak")<StandingPeak, Ref.Ref<number>>() {}

const countedReads = Layer.effect(
  StateStore,
  Effect.gen(function*() {
    const real = yield* StateStore
    const calls = yield* StandingCalls
    const peak = yield* StandingPeak
    let out = 0
    return {
      ...real,
      standing: (refs, from, to) =>
        Effect.zipRight(
          Effect.zipRight(Ref.update(calls, (c) => [...c, refs.length]), Ref.update(peak, (p) => Math.max(p, ++out))),
          Effect.zipRight(Effect.yieldNow(), real.standing(refs, from, to))
        ).pipe(Effect.ensuring(Effect.sync(() => out--)))
    }
  })
)

/** A store whose batch read dies when it holds the member "poison" (a row it cannot read). */
const poisonedReads = Layer.effect(
  StateStore,
  Effect.map(StateStore, (real) => ({
    ...real,
    standing: (refs, from, to) =>
      Effect.zipRight(
        Effect.yieldNow(),
        refs.some((r) => r.userHash === "poison") ? Effect.die("unreadable row") : real.standing(refs, from, to)
      )
  }))
)
const layerPoisonedReads = Layer.mergeAll(Ingest.layer, StateQuery.layer).pipe(
  Layer.provideMerge(poisonedReads.pipe(Layer.provideMerge(base)))
)

const countedWith = (reads: Layer.Layer<StateQuery.StateQuery, never, StateQuery.Requirements>) =>
  Layer.mergeAll(Ingest.layer, reads).pipe(
    Layer.provideMerge(countedReads.pipe(Layer.provideMerge(base))),
    Layer.provideMerge(Layer.effect(StandingCalls, Ref.make<ReadonlyArray<number>>([]))),
    Layer.provideMerge(Layer.effect(StandingPeak, Ref.make(0)))
  )
const layerCounted = countedWith(StateQuery.layer)

/**
 * Twelve members, member i active on the last i % `spread` days so that the answers differ, read
 * one after another, then twice each all at once: both answers, and the sizes of the storage
 * reads made all at once.
 */
const readAloneThenTogether = (spread: number) =>
  Effect.gen(function*() {
    const t = yield* tenant({ program: { status: "live" } })
    yield* TestClock.setTime(WED)
    const members = Array.from({ length: 12 }, (_, i) => `m${i}`)
    for (const [i, m] of members.entries()) {
      for (let back = 1; back <= i % spread; back++) yield* act(t, WED - back * DAY, { userHash: m })
    }
    const alone = yield* Effect.forEach(members, (m) => stateOf(t, { userHash: m }))
    const calls = yield* StandingCalls
    yield* Ref.set(calls, [])
    const together = yield* Effect.forEach([...members, ...members], (m) => stateOf(t, { userHash: m }), {
      concurrency: "unbounded"
    })
    return { alone, members, sizes: yield* Ref.get(calls), together }
  })

describe("StateQuery", () => {
  it.effect("a fresh member gets exactly the documented shape: zeros, the ISO week Mon..Sun, milestones, settings", () =>
    Effect.gen(function*() {
      const t = yield* tenant({
        program: {
          settings: new ProgramSettings({ theme: { name: "dark" }, position: "top-left", mainMessage: "Go!" })
        }
      })
      yield* TestClock.setTime(WED)
      const answer = yield* stateOf(t)
      const [three, seven] = t.program.milestones
      const day = (isoDate: string, label: string, dayNumber: number) => ({
        isoDate: unsafeLocalDate(isoDate),
        label,
        dayNumber,
        isToday: isoDate === "2026-05-13",
        isCheckedIn: false
      })
      assert.deepStrictEqual(answer, {
        deprecation: false,
        body: {
          meta: { apiVersion: "1", isLive: false },
          streak: { mode: "continuous", current: 0, best: 0, todayDone: false, pending: false },
          week: [
            day("2026-05-11", "Mon", 11),
            day("2026-05-12", "Tue", 12),
            day("2026-05-13", "Wed", 13),
            day("2026-05-14", "Thu", 14),
            day("2026-05-15", "Fri", 15),
            day("2026-05-16", "Sat", 16),
            day("2026-05-17", "Sun", 17)
          ],
          milestones: [
            { id: three!.id, target: 3, msg: three!.msg, achieved: false, rewardType: "message" },
            { id: seven!.id, target: 7, msg: "A week!", achieved: false, rewardType: "coupon" }
          ],
          settings: { theme: { name: "dark" }, position: "top-left", mainMessage: "Go!" }
        }
      })
    }).pipe(Effect.provide(layer)))

  it.effect("current, best, todayDone and pending follow the member's days; the week marks checked-in days", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(WED)
      yield* act(t, WED - 2 * DAY)
      yield* act(t, WED - DAY)
      const pending = (yield* stateOf(t)).body
      assert.deepStrictEqual(pending.streak, {
        mode: "continuous",
        current: 2,
        best: 2,
        todayDone: false,
        pending: true
      })
      assert.deepStrictEqual(pending.week.filter((d) => d.isCheckedIn).map((d) => d.isoDate), [
        "2026-05-11",
        "2026-05-12"
      ])
      yield* act(t, WED)
      assert.deepStrictEqual((yield* stateOf(t)).body.streak, {
        mode: "continuous",
        current: 3,
        best: 3,
        todayDone: true,
        pending: false
      })
      yield* TestClock.setTime(WED + 2 * DAY)
      assert.deepStrictEqual((yield* stateOf(t)).body.streak, {
        mode: "continuous",
        current: 0,
        best: 3,
        todayDone: false,
        pending: false
      })
    }).pipe(Effect.provide(layer)))

  it.effect("state shows the ledger matching the program's status, and meta.isLive says which", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      yield* TestClock.setTime(WED)
      yield* api(t, { userHash: "u1", test: true, ts: new Date(WED - DAY).toISOString() })
      const testState = (yield* stateOf(t)).body
      assert.isFalse(testState.meta.isLive)
      assert.strictEqual(testState.streak.current, 1)
      yield* act(t, WED, { userHash: "u2" }) // the first real action: the program goes live
      const liveState = (yield* stateOf(t)).body
      assert.isTrue(liveState.meta.isLive)
      assert.strictEqual(liveState.streak.current, 0, "test progress never shows as real progress")
    }).pipe(Effect.provide(layer)))

  it.effect("today is the member's local date: their stored zone, else the project's", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" }, project: { timezone: "America/New_York" } })
      yield* TestClock.setTime(at("2026-05-17T23:30:00Z")) // Monday 08:30 in Tokyo, Sunday 19:30 in New York
      assert.strictEqual(
        (yield* stateOf(t, { userHash: "nyc" })).body.week.find((d) => d.isToday)?.isoDate,
        "2026-05-17"
      )
      yield* act(t, at("2026-05-17T23:00:00Z"), { tz: "Asia/Tokyo" })
      const tokyo = (yield* stateOf(t)).body
      assert.strictEqual(tokyo.week.find((d) => d.isToday)?.isoDate, "2026-05-18")
      assert.strictEqual(tokyo.week[0]?.isoDate, "2026-05-18")
      assert.isTrue(tokyo.streak.todayDone)
    }).pipe(Effect.provide(layer)))

  it.effect("coupon and link values show only to the member's valid identity token and once earned; message values always show", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live", milestones: rewards } })
      yield* TestClock.setTime(WED)
      for (let i = 2; i >= 0; i--) yield* act(t, WED - i * DAY)
      const sign = (userHash: string, secret = SIGNING_SECRET, expiresInSeconds = 600) =>
        Credentials.signIdentityToken(secret, { userHash, siteKey: t.project.siteKey }, { expiresInSeconds })
      const values = (identityToken: string | undefined) =>
        Effect.map(
          stateOf(t, { identityToken }),
          (s) => s.body.milestones.map((m) => [m.target, m.achieved, m.rewardValue])
        )
      const hidden = [[1, true, "Welcome aboard"], [2, true, undefined], [3, true, undefined], [30, false, undefined]]
      assert.deepStrictEqual(yield* values(undefined), hidden)
      assert.deepStrictEqual(yield* values(yield* sign("someone_else")), hidden)
      assert.deepStrictEqual(yield* values(yield* sign("u1", "ass_wrong_secret")), hidden)
      assert.deepStrictEqual(yield* values("not.a.jwt"), hidden)
      const token = yield* sign("u1")
      assert.deepStrictEqual(yield* values(token), [
        [1, true, "Welcome aboard"],
        [2, true, "TWO10"],
        [3, true, "https://x.example/gift"],
        [30, false, undefined]
      ])
      yield* TestClock.adjust("11 minutes")
      assert.deepStrictEqual(yield* values(token), hidden, "an expired token is treated as absent")
    }).pipe(Effect.provide(layer)))

  it.effect("state follows the browser rule of /v1/e: FORBIDDEN_ORIGIN, SERVER_TOKEN_REQUIRED, legacy mode with Deprecation", () =>
    Effect.gen(function*() {
      const t = yield* tenant()
      const legacy = yield* tenant({ project: { legacyNoOriginIngest: true } })
      yield* TestClock.setTime(WED)
      assert.strictEqual(yield* codeOf(stateOf(t, { origin: "https://evil.example" })), "FORBIDDEN_ORIGIN")
      assert.strictEqual(yield* codeOf(stateOf(t, { origin: undefined })), "SERVER_TOKEN_REQUIRED")
      assert.isFalse((yield* stateOf(t, { origin: undefined, serverToken: SERVER_TOKEN })).deprecation)
      assert.isTrue((yield* stateOf(legacy, { origin: undefined })).deprecation)
      assert.strictEqual(yield* codeOf(stateOf(t, { siteKey: "site_unknown" })), "INVALID_SITE_KEY")
      assert.strictEqual(yield* codeOf(stateOf(t, { event: "no_such_event" })), "INVALID_WIDGET_KIND")
      assert.strictEqual(yield* codeOf(stateOf(t, { userHash: "jane@example.com" })), "INVALID_BODY")
    }).pipe(Effect.provide(layer)))

  it.effect("memberStreak: the customer REST view, zeros and a null lastActiveDate for an unknown member", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live", settings: defaultSettings } })
      yield* TestClock.setTime(WED)
      const q = yield* StateQuery.StateQuery
      assert.deepStrictEqual(yield* q.memberStreak(t.program.id, "nobody"), {
        programId: t.program.id,
        userHash: "nobody",
        current: 0,
        best: 0,
        todayDone: false,
        pending: false,
        lastActiveDate: null,
        isLive: true
      })
      yield* act(t, WED - DAY)
      assert.deepStrictEqual(yield* q.memberStreak(t.program.id, "u1"), {
        programId: t.program.id,
        userHash: "u1",
        current: 1,
        best: 1,
        todayDone: false,
        pending: true,
        lastActiveDate: "2026-05-12",
        isLive: true
      })
      assert.strictEqual(yield* codeOf(q.memberStreak("prg_missing", "u1")), "NOT_FOUND")
    }).pipe(Effect.provide(layer)))
  it.effect("concurrent reads share storage reads, and each still gets its own member's answer", () =>
    Effect.gen(function*() {
      const { alone, members, sizes, together } = yield* readAloneThenTogether(4)
      assert.deepStrictEqual(together, [...alone, ...alone])
      assert.deepStrictEqual(alone.map((a) => a.body.streak.current), members.map((_, i) => i % 4))
      assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 24)
      assert.isBelow(sizes.length, 24 / 2)
      assert.strictEqual(yield* Ref.get(yield* StandingPeak), 1, "one read batch at a time by default")
    }).pipe(Effect.provide(layerCounted)))

  it.effect("layerWith runs a second read batch beside the first once minBatchBeside reads wait, each read still answered as alone", () =>
    Effect.gen(function*() {
      const { alone, members, sizes, together } = yield* readAloneThenTogether(3)
      assert.deepStrictEqual(together, [...alone, ...alone])
      assert.deepStrictEqual(alone.map((a) => a.body.streak.current), members.map((_, i) => i % 3))
      assert.strictEqual(yield* Ref.get(yield* StandingPeak), 2, "two read batches were out at once")
      assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 24)
      assert.deepStrictEqual(sizes.slice(0, 2), [1, 4], "a lone first read, then a batch beside it once four waited")
    }).pipe(Effect.provide(countedWith(StateQuery.layerWith({ workers: 2, minBatchBeside: 4 })))))

  it.effect("a read that cannot be answered fails alone: the others of its batch get their answers", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(WED)
      yield* act(t, WED, { userHash: "m1" })
      const results = yield* Effect.forEach(
        ["m0", "m1", "poison", "m2"],
        (m) => Effect.exit(stateOf(t, { userHash: m })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.map((r) => r._tag), ["Success", "Success", "Failure", "Success"])
      assert.deepStrictEqual(results.map((r) => Exit.isSuccess(r) ? r.value.body.streak.current : -1), [0, 1, -1, 0])
    }).pipe(Effect.provide(layerPoisonedReads)))

  it.effect("layerWith bounds a read batch: with maxBatch 5, 12 concurrent reads take at least 3 storage reads of at most 5", () =>
    Effect.gen(function*() {
      const t = yield* tenant({ program: { status: "live" } })
      yield* TestClock.setTime(WED)
      yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => `m${i}`), (m) => stateOf(t, { userHash: m }), {
        concurrency: "unbounded"
      })
      const sizes = yield* Ref.get(yield* StandingCalls)
      assert.strictEqual(sizes.reduce((a, b) => a + b, 0), 12)
      assert.isAtLeast(sizes.length, 3)
      assert.isAtMost(Math.max(...sizes), 5)
    }).pipe(Effect.provide(countedWith(StateQuery.layerWith({ maxBatch: 5 })))))
})
