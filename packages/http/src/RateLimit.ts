/**
 * In-process token buckets (docs/api.md#rate-limits, docs/operations.md#rate-limits): for `/v1/e`
 * and `/v1/alias` one bucket per site and one per client address, `rate` tokens/s with a burst of
 * twice the rate; one bucket per credential on `/v1/api/*` and `/mcp`; and one budget of failed
 * authentications per client address, which only requests whose credential does not verify spend
 * and which never refuses a credential that verifies. Each replica limits on its own. Time from
 * `Clock`.
 */
import { Errors } from "@streaks/core"
import { Clock, Config, type ConfigError, Context, Effect, Layer } from "effect"

/**
 * Which bucket family a key belongs to: requests per client address, per site, per credential,
 * and failed authentications per client address.
 */
export type Kind = "ip" | "site" | "credential" | "auth"

/** The answer of `take`: allowed, or refused with the whole seconds until a token is back. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

/** Where a bucket stands: its policy and what is left of it (the `RateLimit` headers' values). */
export interface Standing {
  readonly kind: Kind
  /** Tokens the bucket holds when full. */
  readonly quota: number
  /** Seconds a drained bucket takes to fill. */
  readonly window: number
  /** Whole tokens left now. */
  readonly remaining: number
  /** Whole seconds until the bucket is full again (0: full). */
  readonly reset: number
}

export interface Options {
  /** Tokens per second per client address; burst is twice this. 0 or less disables the limit. */
  readonly ipPerSecond: number
  /** Tokens per second per siteKey; burst is twice this. 0 or less disables the site limit. */
  readonly sitePerSecond: number
  /**
   * Requests per second per credential on `/v1/api/*` and `/mcp` (default 100); burst is twice
   * this. 0 or less disables it.
   */
  readonly credentialPerSecond?: number | undefined
  /**
   * Failed authentications per minute per client address (default 30), also the burst. Each
   * request whose credential is missing or does not verify spends one; once none is left such
   * requests answer 429, while a request whose credential verifies is served as usual. 0 or less
   * disables it.
   */
  readonly authFailuresPerMinute?: number | undefined
  /** Most keys remembered per kind (default 100 000); beyond it the least recently used go. */
  readonly maxKeys?: number | undefined
}

/**
 * Defaults (docs/operations.md#configuration: `STREAKS_RATE_LIMIT_IP`, `STREAKS_RATE_LIMIT_SITE`,
 * `STREAKS_RATE_LIMIT_CREDENTIAL`, `STREAKS_RATE_LIMIT_AUTH_FAILURES`).
 */
export const defaults = {
  ipPerSecond: 50,
  sitePerSecond: 500,
  credentialPerSecond: 100,
  authFailuresPerMinute: 30
} as const

export class RateLimiter extends Context.Tag("@streaks/http/RateLimiter")<RateLimiter, {
  /** Takes one token from the bucket of `key`. Never fails; an unknown key starts full. */
  readonly take: (kind: Kind, key: string) => Effect.Effect<Decision>
  /** Whether the bucket of `key` holds a token now, without taking it. */
  readonly check: (kind: Kind, key: string) => Effect.Effect<Decision>
  /** Where the bucket of `key` stands at `now` (epoch ms); None when its kind is disabled. */
  readonly unsafeStanding: (kind: Kind, key: string, now: number) => Standing | undefined
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

  const window = Math.ceil(fullAfterMs / 1000)
  const standing = (key: string, now: number): { remaining: number; reset: number; quota: number; window: number } => {
    const b = buckets.get(key)
    const tokens = b === undefined ? burst : Math.min(burst, b.tokens + Math.max(0, now - b.at) * rate)
    return {
      quota: Math.floor(burst),
      window,
      remaining: Math.floor(tokens),
      reset: Math.ceil((burst - tokens) / rate / 1000)
    }
  }

  return { take, check, standing, enabled: ratePerSecond > 0, size: () => buckets.size }
}

/** A rate limiter over in-memory buckets (per process: each replica limits on its own). */
export const make = (options: Options): RateLimiter["Type"] => {
  const maxKeys = Math.max(1, options.maxKeys ?? 100_000)
  const perMinute = options.authFailuresPerMinute ?? defaults.authFailuresPerMinute
  const families: Record<Kind, ReturnType<typeof makeBuckets>> = {
    ip: makeBuckets(options.ipPerSecond, maxKeys),
    site: makeBuckets(options.sitePerSecond, maxKeys),
    credential: makeBuckets(options.credentialPerSecond ?? defaults.credentialPerSecond, maxKeys),
    auth: makeBuckets(perMinute / 60, maxKeys, perMinute)
  }
  return {
    take: (kind, key) => Effect.map(Clock.currentTimeMillis, (now) => families[kind].take(key, now)),
    check: (kind, key) => Effect.map(Clock.currentTimeMillis, (now) => families[kind].check(key, now)),
    unsafeStanding: (kind, key, now) =>
      families[kind].enabled ? { kind, ...families[kind].standing(key, now) } : undefined
  }
}

/** The name of each kind's policy in the `RateLimit` headers. */
export const policyNames: Readonly<Record<Kind, string>> = {
  ip: "address",
  site: "site",
  credential: "credential",
  auth: "failed-auth"
}

/**
 * The IETF `RateLimit-Policy` and `RateLimit` headers (structured fields) for the limit nearest to
 * refusing: of the buckets given, the one with the fewest tokens left. Empty when none is enabled.
 */
export const headersOf = (standings: ReadonlyArray<Standing | undefined>): Record<string, string> => {
  let nearest: Standing | undefined
  for (const s of standings) {
    if (s !== undefined && (nearest === undefined || s.remaining < nearest.remaining)) nearest = s
  }
  if (nearest === undefined) return {}
  const name = policyNames[nearest.kind]
  return {
    "ratelimit-policy": `"${name}";q=${nearest.quota};w=${nearest.window}`,
    ratelimit: `"${name}";r=${nearest.remaining};t=${nearest.reset}`
  }
}

/** `headersOf` the buckets named by `[kind, key]`, as they stand now. */
export const headers = (
  limiter: RateLimiter["Type"],
  buckets: ReadonlyArray<readonly [Kind, string]>
): Effect.Effect<Record<string, string>> =>
  Effect.map(
    Clock.currentTimeMillis,
    (now) => headersOf(buckets.map(([k, key]) => limiter.unsafeStanding(k, key, now)))
  )

const refusal = (d: Decision): Effect.Effect<void, Errors.RateLimited> =>
  d.allowed ? Effect.void : Effect.fail(new Errors.RateLimited({ retryAfterSeconds: d.retryAfterSeconds }))

/**
 * After a request from `ip` whose credential is missing or did not verify: one token from the
 * address's failed authentications, or, when none is left, 429 `RATE_LIMITED` in place of the
 * request's own 401/403. A request whose credential verifies never comes here, so a valid
 * credential is served whatever others sent from the same address.
 */
export const authenticationFailed = (
  limiter: RateLimiter["Type"],
  ip: string
): Effect.Effect<void, Errors.RateLimited> => Effect.flatMap(limiter.take("auth", ip), refusal)

/**
 * `authenticate` under the failed-authentication budget of `ip`, for any kind of credential (admin
 * token, bearer token, a session): a failure that `unverified` recognises spends one of the
 * address's failures and stays itself until none is left, then answers 429. Other failures (an
 * outage) pass through untouched.
 */
export const authenticating = <A, E, R>(
  limiter: RateLimiter["Type"],
  ip: string,
  authenticate: Effect.Effect<A, E, R>,
  unverified: (e: E) => boolean
): Effect.Effect<A, E | Errors.RateLimited, R> =>
  Effect.catchAll(
    authenticate,
    (e) => unverified(e) ? Effect.zipRight(authenticationFailed(limiter, ip), Effect.fail(e)) : Effect.fail(e)
  )

/** The codes that mean a request failed its door's authentication (docs/api.md#who-may-call). */
export const authenticationFailures: ReadonlySet<string> = new Set([
  "UNAUTHORIZED",
  "SERVER_TOKEN_REQUIRED",
  "WEBHOOK_SECRET_REQUIRED",
  "FORBIDDEN_ORIGIN",
  "INVALID_ALIAS_TOKEN"
])

/**
 * The limits of a public door (`/v1/e`, `/v1/alias`) before its work: the address's request bucket
 * (a token taken), then the site's budget (checked, not taken). With `afterPublicDoor`, the
 * site's budget is spent only by requests that passed the door's authentication: a caller holding
 * only the public siteKey, failing it, spends its own address's failures, never the site's budget.
 */
export const beforePublicDoor = (
  limiter: RateLimiter["Type"],
  facts: { readonly ip: string; readonly siteKey: string }
): Effect.Effect<void, Errors.RateLimited> =>
  Effect.flatMap(limiter.take("ip", facts.ip), refusal).pipe(
    Effect.zipRight(Effect.flatMap(limiter.check("site", facts.siteKey), refusal))
  )

/**
 * After a public door answered: a token from the site's budget if the request passed the door's
 * authentication, else one from its address's failed authentications (`authenticationFailed`,
 * which refuses once none is left).
 */
export const afterPublicDoor = (
  limiter: RateLimiter["Type"],
  facts: { readonly ip: string; readonly siteKey: string; readonly authenticated: boolean }
): Effect.Effect<void, Errors.RateLimited> =>
  facts.authenticated ? Effect.asVoid(limiter.take("site", facts.siteKey)) : authenticationFailed(limiter, facts.ip)

/** What a gate answers: whether the request goes on, when to retry if not, and the headers to send. */
export interface Gate {
  readonly allowed: boolean
  readonly retryAfterSeconds: number
  readonly headers: Record<string, string>
}

/**
 * The two limits of a route that authenticates by itself (the MCP worker), for code that cannot
 * import this package's middlewares: after a credential did not verify (`failedAuthentication`,
 * by client address) and after it did (`credential`, by the credential's kind and id).
 */
export const gate = (limiter: RateLimiter["Type"]) => {
  const decide = (kind: Kind, key: string): Effect.Effect<Gate> =>
    Effect.flatMap(limiter.take(kind, key), (d) =>
      Effect.map(headers(limiter, [[kind, key]]), (h) => ({
        allowed: d.allowed,
        retryAfterSeconds: d.allowed ? 0 : d.retryAfterSeconds,
        headers: h
      })))
  return {
    failedAuthentication: (address: string) => decide("auth", address),
    credential: (key: string) => decide("credential", key),
    standing: (address: string) => headers(limiter, [["auth", address]])
  }
}

export const layer = (options: Options): Layer.Layer<RateLimiter> => Layer.sync(RateLimiter, () => make(options))

/**
 * `layer` from `STREAKS_RATE_LIMIT_IP`, `STREAKS_RATE_LIMIT_SITE`, `STREAKS_RATE_LIMIT_CREDENTIAL`
 * and `STREAKS_RATE_LIMIT_AUTH_FAILURES` (defaults 50, 500, 100 and 30).
 */
export const layerConfig: Layer.Layer<RateLimiter, ConfigError.ConfigError> = Layer.effect(
  RateLimiter,
  Effect.map(
    Config.all({
      ipPerSecond: Config.number("STREAKS_RATE_LIMIT_IP").pipe(Config.withDefault(defaults.ipPerSecond)),
      sitePerSecond: Config.number("STREAKS_RATE_LIMIT_SITE").pipe(Config.withDefault(defaults.sitePerSecond)),
      credentialPerSecond: Config.number("STREAKS_RATE_LIMIT_CREDENTIAL").pipe(
        Config.withDefault(defaults.credentialPerSecond)
      ),
      authFailuresPerMinute: Config.number("STREAKS_RATE_LIMIT_AUTH_FAILURES").pipe(
        Config.withDefault(defaults.authFailuresPerMinute)
      )
    }),
    make
  )
)
