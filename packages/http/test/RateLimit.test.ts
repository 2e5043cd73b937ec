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

describe("failed authentications per IP", () => {
  const limits = (authFailuresPerMinute: number) =>
    Effect.provide(RateLimit.layer({ ipPerSecond: 50, sitePerSecond: 500, authFailuresPerMinute }))
  const check = (kind: RateLimit.Kind, key: string) => Effect.flatMap(RateLimit.RateLimiter, (l) => l.check(kind, key))

  it.effect("the burst is the per-minute rate, refilled over the minute; check never takes", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 100; i++) assert.isTrue((yield* check("auth", "1.2.3.4")).allowed)
      assert.strictEqual(yield* takeN("auth", "1.2.3.4", 100), 30)
      assert.deepStrictEqual(yield* check("auth", "1.2.3.4"), { allowed: false, retryAfterSeconds: 2 })
      assert.isTrue((yield* check("auth", "5.6.7.8")).allowed, "another IP is not affected")
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(yield* takeN("auth", "1.2.3.4", 100), 1)
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(yield* takeN("auth", "1.2.3.4", 100), 30)
    }).pipe(limits(30)))

  it.effect("authenticationFailed refuses once the address has no failures left, with Retry-After; 0 disables the limit", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimit.RateLimiter
      for (let i = 0; i < 3; i++) yield* RateLimit.authenticationFailed(limiter, "ip")
      const refused = yield* Effect.flip(RateLimit.authenticationFailed(limiter, "ip"))
      assert.strictEqual(refused.code, "RATE_LIMITED")
      assert.strictEqual(refused.retryAfterSeconds, 20)
      assert.isTrue((yield* check("auth", "other-ip")).allowed, "another address keeps its own budget")
    }).pipe(limits(3)))

  it.effect("authenticating: a credential that verifies is served however spent its address's budget is", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimit.RateLimiter
      const verify = (token: string) =>
        RateLimit.authenticating(
          limiter,
          "203.0.113.9",
          token === "good" ? Effect.succeed("principal") : Effect.fail({ _tag: "Unauthorized" as const }),
          (e) => e._tag === "Unauthorized"
        )
      const wrong = yield* Effect.all(Array.from({ length: 100 }, () => Effect.flip(verify("bad"))))
      assert.deepStrictEqual(
        [...new Set(wrong.map((e) => ("code" in e ? e.code : e._tag)))].sort(),
        ["RATE_LIMITED", "Unauthorized"]
      )
      assert.strictEqual(wrong.filter((e) => e._tag === "Unauthorized").length, 3)
      for (let i = 0; i < 50; i++) assert.strictEqual(yield* verify("good"), "principal")
    }).pipe(limits(3)))

  it.effect("with 0 failed authentications per minute nothing is refused", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimit.RateLimiter
      for (let i = 0; i < 100; i++) yield* RateLimit.authenticationFailed(limiter, "ip")
    }).pipe(limits(0)))

  it.effect("headers name the limit nearest to refusing, in structured-field form", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimit.RateLimiter
      for (let i = 0; i < 10; i++) yield* limiter.take("ip", "a")
      assert.deepStrictEqual(yield* RateLimit.headers(limiter, [["ip", "a"], ["site", "s"]]), {
        "ratelimit-policy": "\"address\";q=100;w=2",
        ratelimit: "\"address\";r=90;t=1"
      })
      for (let i = 0; i < 995; i++) yield* limiter.take("site", "s")
      assert.deepStrictEqual(yield* RateLimit.headers(limiter, [["ip", "a"], ["site", "s"]]), {
        "ratelimit-policy": "\"site\";q=1000;w=2",
        ratelimit: "\"site\";r=5;t=2"
      })
      assert.deepStrictEqual(yield* RateLimit.headers(limiter, [["credential", "api_key:k"]]), {
        "ratelimit-policy": "\"credential\";q=200;w=2",
        ratelimit: "\"credential\";r=200;t=0"
      })
    }).pipe(limits(30)))

  it.effect("a public door spends the site's budget only for callers that passed its authentication", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimit.RateLimiter
      // 2/s per site: a burst of 4. A hundred callers holding only the siteKey fail authentication…
      for (let i = 0; i < 100; i++) {
        const facts = { ip: `10.0.0.${i}`, siteKey: "site_a" }
        yield* RateLimit.beforePublicDoor(limiter, facts)
        yield* RateLimit.afterPublicDoor(limiter, { ...facts, authenticated: false })
      }
      // …and the site's own callers still have its whole budget.
      const own = { ip: "192.0.2.1", siteKey: "site_a" }
      for (let i = 0; i < 4; i++) {
        yield* RateLimit.beforePublicDoor(limiter, own)
        yield* RateLimit.afterPublicDoor(limiter, { ...own, authenticated: true })
      }
      const refused = yield* Effect.flip(RateLimit.beforePublicDoor(limiter, own))
      assert.strictEqual(refused.code, "RATE_LIMITED")
      // A caller that keeps failing runs out of its own failures, not the site's budget.
      const guesser = { ip: "198.51.100.7", siteKey: "site_b" }
      for (let i = 0; i < 30; i++) {
        yield* RateLimit.beforePublicDoor(limiter, guesser)
        yield* RateLimit.afterPublicDoor(limiter, { ...guesser, authenticated: false })
      }
      const spent = yield* Effect.flip(RateLimit.afterPublicDoor(limiter, { ...guesser, authenticated: false }))
      assert.strictEqual(spent.code, "RATE_LIMITED")
      // …and the same address passing the door's authentication is still served.
      yield* RateLimit.beforePublicDoor(limiter, guesser)
      yield* RateLimit.afterPublicDoor(limiter, { ...guesser, authenticated: true })
      assert.isTrue((yield* limiter.check("site", "site_b")).allowed)
    }).pipe(Effect.provide(RateLimit.layer({ ipPerSecond: 1000, sitePerSecond: 2 }))))
})
