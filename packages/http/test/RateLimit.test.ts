import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, TestClock } from "effect"
import * as RateLimit from "../src/RateLimit.js"

const takeN = (kind: RateLimit.Kind, key: string, n: number) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimit.RateLimiter
    let allowed = 0
    for (let i = 0; i < n; i++) if ((yield* limiter.take(kind, key)).allowed) allowed++
    return allowed
  })

const take = (kind: RateLimit.Kind, key: string) => Effect.flatMap(RateLimit.RateLimiter, (l) => l.take(kind, key))

const withLimits = (ipPerSecond: number, sitePerSecond: number) =>
  Effect.provide(RateLimit.layer({ ipPerSecond, sitePerSecond }))

describe("RateLimiter", () => {
  it.effect("a new key has a burst of twice the rate, then is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "1.2.3.4", 100), 100)
      assert.deepStrictEqual(yield* take("ip", "1.2.3.4"), { allowed: false, retryAfterSeconds: 1 })
      assert.strictEqual(yield* takeN("site", "site_a", 1000), 1000)
      assert.isFalse((yield* take("site", "site_a")).allowed)
    }).pipe(withLimits(50, 500)))

  it.effect("tokens refill at the rate, never beyond the burst", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "k", 200), 100)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* takeN("ip", "k", 200), 50)
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(yield* takeN("ip", "k", 200), 5)
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(yield* takeN("ip", "k", 500), 100)
    }).pipe(withLimits(50, 500)))

  it.effect("Retry-After is the whole seconds until one token is back", () =>
    Effect.gen(function*() {
      // 0.25 token/s: burst max(1, 0.5) = 1; the next token is 4 s away.
      assert.deepStrictEqual(yield* take("ip", "slow"), { allowed: true })
      assert.deepStrictEqual(yield* take("ip", "slow"), { allowed: false, retryAfterSeconds: 4 })
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(yield* take("ip", "slow"), { allowed: false, retryAfterSeconds: 1 })
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* take("ip", "slow"), { allowed: true })
      // 0.1 token/s on sites: 10 s per token.
      assert.deepStrictEqual(yield* take("site", "s"), { allowed: true })
      assert.deepStrictEqual(yield* take("site", "s"), { allowed: false, retryAfterSeconds: 10 })
      yield* TestClock.adjust("9500 millis")
      assert.deepStrictEqual(yield* take("site", "s"), { allowed: false, retryAfterSeconds: 1 })
    }).pipe(withLimits(0.25, 0.1)))

  it.effect("Retry-After rounds a partial second up", () =>
    Effect.gen(function*() {
      // 1 token/s, burst 2.
      assert.strictEqual(yield* takeN("ip", "k", 2), 2)
      assert.deepStrictEqual(yield* take("ip", "k"), { allowed: false, retryAfterSeconds: 1 })
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* take("ip", "k"), { allowed: false, retryAfterSeconds: 1 })
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* take("ip", "k"), { allowed: true })
    }).pipe(withLimits(1, 1)))

  it.effect("keys are independent, and the ip and site families are independent", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "a", 10), 4)
      assert.strictEqual(yield* takeN("ip", "b", 10), 4)
      // Same string, other family: its own bucket with its own rate.
      assert.strictEqual(yield* takeN("site", "a", 10), 6)
    }).pipe(withLimits(2, 3)))

  it.effect("a rate of 0 disables that limit", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "a", 1000), 1000)
      assert.strictEqual(yield* takeN("site", "s", 10), 2)
    }).pipe(withLimits(0, 1)))

  it.effect("layerConfig reads STREAKS_RATE_LIMIT_IP and STREAKS_RATE_LIMIT_SITE", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "a", 100), 6)
      assert.strictEqual(yield* takeN("site", "s", 100), 14)
    }).pipe(Effect.provide(RateLimit.layerConfig.pipe(Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["STREAKS_RATE_LIMIT_IP", "3"], ["STREAKS_RATE_LIMIT_SITE", "7"]]))
    ))))))

  it.effect("layerConfig defaults to 50/s per IP and 500/s per site", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* takeN("ip", "a", 1000), 100)
      assert.strictEqual(yield* takeN("site", "s", 2000), 1000)
    }).pipe(Effect.provide(RateLimit.layerConfig.pipe(Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map())
    ))))))
})

describe("RateLimit buckets memory", () => {
  it("the number of keys is capped; the least recently used key is forgotten", () => {
    const buckets = RateLimit.makeBuckets(1, 3)
    for (const key of ["a", "b", "c"]) buckets.take(key, 0)
    buckets.take("a", 10) // a is now the most recent; b the least
    buckets.take("d", 20)
    assert.strictEqual(buckets.size(), 3)
    // a kept its bucket: 2 tokens taken, 0.03 refilled since, so it is refused…
    assert.isFalse(buckets.take("a", 40).allowed)
    // …while b was forgotten and starts full again.
    assert.isTrue(buckets.take("b", 50).allowed)
    assert.isTrue(buckets.take("b", 60).allowed)
  })

  it("buckets idle long enough to be full again are dropped", () => {
    const buckets = RateLimit.makeBuckets(10, 1000) // full again 2 s after the last take
    for (let i = 0; i < 500; i++) buckets.take(`k${i}`, 0)
    assert.strictEqual(buckets.size(), 500)
    buckets.take("k0", 1000)
    assert.strictEqual(buckets.size(), 500)
    buckets.take("fresh", 2500) // every key but k0 (touched at 1 s) has been idle 2 s
    assert.strictEqual(buckets.size(), 2)
  })
})
