/**
 * In-process token buckets (docs/api.md#order-of-checks, step 4; docs/operations.md#configuration):
 * for `/v1/e` and `/v1/alias` one bucket per site and one per IP, `rate` tokens/s with a burst of
 * twice the rate; and for every route that authenticates, one bucket of failed authentications per
 * IP, checked before a credential is looked up. Time from `Clock`.
 */
import { Errors } from "@streaks/core"
import { Clock, Config, type ConfigError, Context, Effect, Layer } from "effect"

/** Which bucket family a key belongs to: requests per IP, per site, failed authentications per IP. */
export type Kind = "ip" | "site" | "auth"

/** The answer of `take`: allowed, or refused with the whole seconds until a token is back. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

export interface Options {
  /** Tokens per second per IP; burst is twice this. 0 or less disables the IP limit. */
  readonly ipPerSecond: number
  /** Tokens per second per siteKey; burst is twice this. 0 or less disables the site limit. */
  readonly sitePerSecond: number
  /**
   * Failed authentications per minute per IP (default 30), also the burst: past it, requests from
   * that IP to a route that authenticates are refused (429) before any credential is looked up,
   * until the bucket refills. 0 or less disables it.
   */
  readonly authFailuresPerMinute?: number | undefined
  /** Most keys remembered per kind (default 100 000); beyond it the least recently used go. */
  readonly maxKeys?: number | undefined
}

/**
 * Defaults (docs/operations.md#configuration: `STREAKS_RATE_LIMIT_IP`, `STREAKS_RATE_LIMIT_SITE`,
 * `STREAKS_RATE_LIMIT_AUTH_FAILURES`).
 */
export const defaults = { ipPerSecond: 50, sitePerSecond: 500, authFailuresPerMinute: 30 } as const

export class RateLimiter extends Context.Tag("@streaks/http/RateLimiter")<RateLimiter, {
  /** Takes one token from the bucket of `key`. Never fails; an unknown key starts full. */
  readonly take: (kind: Kind, key: string) => Effect.Effect<Decision>
  /** Whether the bucket of `key` holds a token now, without taking it. */
  readonly check: (kind: Kind, key: string) => Effect.Effect<Decision>
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
export const makeBuckets = (ratePerSecond: number, maxKeys: number, burstTokens?: number) => {
  const rate = ratePerSecond / 1000 // tokens per millisecond
  // Below 0.5/s twice the rate is under one token; a bucket that can never hold a whole token
  // would refuse forever, so the burst is at least 1.
  const burst = Math.max(1, burstTokens ?? 2 * ratePerSecond)
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

  const refused = (tokens: number): Decision => ({
    allowed: false,
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / rate / 1000))
  })

  const check = (key: string, now: number): Decision => {
    if (!(ratePerSecond > 0)) return allowed
    const b = buckets.get(key)
    if (b === undefined) return allowed
    const tokens = Math.min(burst, b.tokens + Math.max(0, now - b.at) * rate)
    return tokens >= 1 ? allowed : refused(tokens)
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
    return refused(tokens)
  }

  return { take, check, size: () => buckets.size }
}

/** A rate limiter over in-memory buckets (per process: each replica limits on its own). */
export const make = (options: Options): RateLimiter["Type"] => {
  const maxKeys = Math.max(1, options.maxKeys ?? 100_000)
  const perMinute = options.authFailuresPerMinute ?? defaults.authFailuresPerMinute
  const families: Record<Kind, ReturnType<typeof makeBuckets>> = {
    ip: makeBuckets(options.ipPerSecond, maxKeys),
    site: makeBuckets(options.sitePerSecond, maxKeys),
    auth: makeBuckets(perMinute / 60, maxKeys, perMinute)
  }
  return {
    take: (kind, key) => Effect.map(Clock.currentTimeMillis, (now) => families[kind].take(key, now)),
    check: (kind, key) => Effect.map(Clock.currentTimeMillis, (now) => families[kind].check(key, now))
  }
}

const refusal = (d: Decision): Effect.Effect<void, Errors.RateLimited> =>
  d.allowed ? Effect.void : Effect.fail(new Errors.RateLimited({ retryAfterSeconds: d.retryAfterSeconds }))

/**
 * Before a credential of a request from `ip` is looked up or compared: refused (429) while the IP
 * has used up its failed authentications, so guessing costs the guesser, not the service.
 */
export const beforeAuthentication = (
  limiter: RateLimiter["Type"],
  ip: string
): Effect.Effect<void, Errors.RateLimited> => Effect.flatMap(limiter.check("auth", ip), refusal)

/** After a request from `ip` failed its authentication: one token from the IP's failures. */
export const authenticationFailed = (limiter: RateLimiter["Type"], ip: string): Effect.Effect<void> =>
  Effect.asVoid(limiter.take("auth", ip))

/** The codes that mean a request failed its door's authentication (docs/api.md#who-may-call). */
export const authenticationFailures: ReadonlySet<string> = new Set([
  "UNAUTHORIZED",
  "SERVER_TOKEN_REQUIRED",
  "WEBHOOK_SECRET_REQUIRED",
  "FORBIDDEN_ORIGIN",
  "INVALID_ALIAS_TOKEN"
])

/**
 * The limits of a public door (`/v1/e`, `/v1/alias`) before its work: the IP's request bucket
 * (a token taken), then the IP's failed authentications and the site's budget (checked, not taken).
 * With `afterPublicDoor`, the site's budget is spent only by requests that passed the door's
 * authentication: a caller holding only the public siteKey, failing it, spends its own IP's
 * failures, never the site's budget.
 */
export const beforePublicDoor = (
  limiter: RateLimiter["Type"],
  facts: { readonly ip: string; readonly siteKey: string }
): Effect.Effect<void, Errors.RateLimited> =>
  Effect.flatMap(limiter.take("ip", facts.ip), refusal).pipe(
    Effect.zipRight(beforeAuthentication(limiter, facts.ip)),
    Effect.zipRight(Effect.flatMap(limiter.check("site", facts.siteKey), refusal))
  )

/**
 * After a public door answered: a token from the site's budget if the request passed the door's
 * authentication, else one from its IP's failed authentications (`authenticationFailures`).
 */
export const afterPublicDoor = (
  limiter: RateLimiter["Type"],
  facts: { readonly ip: string; readonly siteKey: string; readonly authenticated: boolean }
): Effect.Effect<void> =>
  facts.authenticated ? Effect.asVoid(limiter.take("site", facts.siteKey)) : authenticationFailed(limiter, facts.ip)

export const layer = (options: Options): Layer.Layer<RateLimiter> => Layer.sync(RateLimiter, () => make(options))

/**
 * `layer` from `STREAKS_RATE_LIMIT_IP`, `STREAKS_RATE_LIMIT_SITE` and
 * `STREAKS_RATE_LIMIT_AUTH_FAILURES` (defaults 50, 500 and 30).
 */
export const layerConfig: Layer.Layer<RateLimiter, ConfigError.ConfigError> = Layer.effect(
  RateLimiter,
  Effect.map(
    Config.all({
      ipPerSecond: Config.number("STREAKS_RATE_LIMIT_IP").pipe(Config.withDefault(defaults.ipPerSecond)),
      sitePerSecond: Config.number("STREAKS_RATE_LIMIT_SITE").pipe(Config.withDefault(defaults.sitePerSecond)),
      authFailuresPerMinute: Config.number("STREAKS_RATE_LIMIT_AUTH_FAILURES").pipe(
        Config.withDefault(defaults.authFailuresPerMinute)
      )
    }),
    make
  )
)
