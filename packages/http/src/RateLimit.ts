/**
 * In-process token buckets for `/v1/e` and `/v1/alias` (CONTRACT §2 step 4, §15): one bucket per
 * site and one per IP, `rate` tokens/s with a burst of twice the rate, time from `Clock`.
 */
import { Clock, Config, type ConfigError, Context, Effect, Layer } from "effect"

/** Which bucket family a key belongs to. */
export type Kind = "ip" | "site"

/** The answer of `take`: allowed, or refused with the whole seconds until a token is back. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

export interface Options {
  /** Tokens per second per IP; burst is twice this. 0 or less disables the IP limit. */
  readonly ipPerSecond: number
  /** Tokens per second per siteKey; burst is twice this. 0 or less disables the site limit. */
  readonly sitePerSecond: number
  /** Most keys remembered per kind (default 100 000); beyond it the least recently used go. */
  readonly maxKeys?: number | undefined
}

/** Defaults of CONTRACT §15 (`STREAKS_RATE_LIMIT_IP`, `STREAKS_RATE_LIMIT_SITE`). */
export const defaults = { ipPerSecond: 50, sitePerSecond: 500 } as const

export class RateLimiter extends Context.Tag("@streaks/http/RateLimiter")<RateLimiter, {
  /** Takes one token from the bucket of `key`. Never fails; an unknown key starts full. */
  readonly take: (kind: Kind, key: string) => Effect.Effect<Decision>
}>() {}

const allowed: Decision = { allowed: true }

interface Bucket {
  tokens: number
  at: number
}

/**
 * One family of buckets: the pure core of `make`, `now` in epoch milliseconds. The Map is kept in
 * least-recently-used order (a touched key moves to the end), so idle buckets sit at the front:
 * a bucket idle for `burst / rate` is full again, the same as absent, so dropping it changes no
 * answer.
 */
export const makeBuckets = (ratePerSecond: number, maxKeys: number) => {
  const rate = ratePerSecond / 1000 // tokens per millisecond
  // Below 0.5/s twice the rate is under one token; a bucket that can never hold a whole token
  // would refuse forever, so the burst is at least 1.
  const burst = Math.max(1, 2 * ratePerSecond)
  const fullAfterMs = burst / rate
  const buckets = new Map<string, Bucket>()
  let lastSweep = 0

  const sweep = (now: number) => {
    lastSweep = now
    for (const [key, b] of buckets) {
      if (now - b.at < fullAfterMs) break // LRU order: every later bucket was touched more recently
      buckets.delete(key)
    }
  }

  const take = (key: string, now: number): Decision => {
    if (!(ratePerSecond > 0)) return allowed
    if (now - lastSweep >= fullAfterMs) sweep(now)
    const b = buckets.get(key)
    let tokens: number
    if (b === undefined) {
      tokens = burst
      if (buckets.size >= maxKeys) {
        // Under a flood of distinct keys memory wins: forget the least recently used bucket.
        const oldest = buckets.keys().next()
        if (oldest.done !== true) buckets.delete(oldest.value)
      }
    } else {
      // A wall clock stepped backwards refills nothing (and takes nothing back).
      tokens = Math.min(burst, b.tokens + Math.max(0, now - b.at) * rate)
      buckets.delete(key) // re-inserted below, at the most recent end
    }
    if (tokens >= 1) {
      buckets.set(key, { tokens: tokens - 1, at: now })
      return allowed
    }
    buckets.set(key, { tokens, at: now })
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / rate / 1000)) }
  }

  return { take, size: () => buckets.size }
}

/** A rate limiter over in-memory buckets (per process: each replica limits on its own). */
export const make = (options: Options): RateLimiter["Type"] => {
  const maxKeys = Math.max(1, options.maxKeys ?? 100_000)
  const ip = makeBuckets(options.ipPerSecond, maxKeys)
  const site = makeBuckets(options.sitePerSecond, maxKeys)
  return {
    take: (kind, key) =>
      Effect.map(Clock.currentTimeMillis, (now) => (kind === "ip" ? ip : site).take(key, now))
  }
}

export const layer = (options: Options): Layer.Layer<RateLimiter> => Layer.sync(RateLimiter, () => make(options))

/** `layer` from `STREAKS_RATE_LIMIT_IP` and `STREAKS_RATE_LIMIT_SITE` (defaults 50 and 500). */
export const layerConfig: Layer.Layer<RateLimiter, ConfigError.ConfigError> = Layer.effect(
  RateLimiter,
  Effect.map(
    Config.all({
      ipPerSecond: Config.number("STREAKS_RATE_LIMIT_IP").pipe(Config.withDefault(defaults.ipPerSecond)),
      sitePerSecond: Config.number("STREAKS_RATE_LIMIT_SITE").pipe(Config.withDefault(defaults.sitePerSecond))
    }),
    make
  )
)
