/**
 * Tokens, as pure rules (docs/api.md#secrets, #reward-values-and-identity-tokens, #aliases): the
 * format of each kind of secret, how a token is hashed and compared, and the HS256 identity and
 * alias tokens signed with a project's `ass_…` secret. Time comes from `Clock`.
 *
 * Only hashes of compared tokens are ever stored; a token is looked up by its hash, so the
 * plaintext never reaches storage and a lookup reveals nothing about near misses.
 */
import { Clock, Effect, Option } from "effect"
import { type JWTPayload, jwtVerify, SignJWT } from "jose"
import * as crypto from "node:crypto"
import { secretPart } from "./Ids.js"

// --- Token formats ------------------------------------------------------------------------------

export type TokenKind =
  | "server"
  | "webhook"
  | "apiKey"
  | "oauth"
  | "oauthRefresh"
  | "oauthCode"
  | "oauthClientSecret"
  | "mcp"
  | "subscription"
  | "signing"
  | "session"
  | "invite"

/** The prefix of each kind of secret (docs/api.md#secrets). */
export const prefixes: Record<TokenKind, string> = {
  server: "sst_",
  webhook: "whi_",
  apiKey: "svc_api_",
  oauth: "svc_oat_",
  oauthRefresh: "svc_ort_",
  oauthCode: "svc_ocd_",
  oauthClientSecret: "svc_ocs_",
  mcp: "svc_mcp_",
  subscription: "whsec_",
  signing: "ass_",
  session: "sid_",
  invite: "ivt_"
}

/**
 * A fresh secret of the given kind. Every kind carries 32 random bytes except `subscription`,
 * which follows the Standard Webhooks format (`whsec_` + base64 of a 24-byte key) so that any
 * Standard Webhooks library can verify our deliveries with it.
 */
export const generate = (kind: TokenKind): string =>
  kind === "subscription"
    ? `${prefixes.subscription}${crypto.randomBytes(24).toString("base64")}`
    : `${prefixes[kind]}${secretPart()}`

// Every server-door action and widget read checks a token: the one-shot `crypto.hash` (Node
// 20.12+) takes half the time of a `Hash` object; older Node falls back to one.
const oneShot = (crypto as { readonly hash?: (algorithm: string, data: string, encoding: "buffer") => Buffer }).hash
const sha256 = (token: string): Buffer =>
  oneShot !== undefined
    ? oneShot("sha256", token, "buffer")
    : crypto.createHash("sha256").update(token, "utf8").digest()

/** SHA-256 hex of a token: enough for high-entropy secrets (docs/api.md#secrets), and what storage keeps. */
export const hashToken = (token: string): string => sha256(token).toString("hex")

/**
 * Whether `token` hashes to `hash`, compared in constant time (the comparison is on fixed-length
 * digests, so neither the token's length nor the position of a mismatch leaks). A missing token
 * never matches.
 */
export const matches = (token: string | undefined, hash: string): boolean => {
  if (token === undefined) return false
  const actual = sha256(token)
  const expected = Buffer.from(hash, "hex")
  // A malformed stored hash must not match anything; the length check only ever fails on it.
  return expected.length === actual.length && crypto.timingSafeEqual(actual, expected)
}

// --- Identity and alias tokens (HS256) ------------------------------------------------------------

/** Alias tokens are short-lived (docs/api.md#aliases): at most ten minutes from issue to expiry. */
export const maxAliasTokenSeconds = 600
/**
 * Tolerated lead of a customer's clock over ours when an alias token has no `iat` and its `exp`
 * alone must show the lifetime: without it a token issued for exactly 10 minutes by a server
 * whose clock runs a few seconds ahead would be refused.
 */
export const aliasClockSkewSeconds = 30
/** Tokens longer than this are refused before any cryptography (a JWT of these claims is ~300 bytes). */
const maxTokenLength = 4096

/** The HS256 key: the UTF-8 bytes of the whole `ass_…` string (docs/api.md#reward-values-and-identity-tokens). */
const keyOf = (signingSecret: string): Uint8Array => new TextEncoder().encode(signingSecret)

const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

/**
 * The verified claims of an HS256 token signed with `signingSecret`, or None when the signature,
 * algorithm, `exp` (checked against `Clock`, no tolerance) or one of `required` is wrong.
 */
const verified = (
  token: string,
  signingSecret: string,
  required: ReadonlyArray<string>
): Effect.Effect<Option.Option<JWTPayload>> =>
  token.length === 0 || token.length > maxTokenLength || signingSecret.length === 0
    ? Effect.succeed(Option.none())
    : Effect.flatMap(Clock.currentTimeMillis, (ms) =>
      Effect.tryPromise(() =>
        jwtVerify(token, keyOf(signingSecret), {
          algorithms: ["HS256"],
          requiredClaims: ["exp", ...required],
          currentDate: new Date(ms)
        })
      ).pipe(
        Effect.map((result) => Option.some(result.payload)),
        Effect.orElseSucceed(() => Option.none())
      ))

const stringClaim = (payload: JWTPayload, name: string): string | undefined => {
  const value = payload[name]
  return typeof value === "string" && value.length > 0 && value.length <= 256 ? value : undefined
}

/**
 * Whether `token` is a valid signed identity token (docs/api.md#reward-values-and-identity-tokens)
 * for this member of this project: HS256 with the project's signing secret, `sub` = userHash,
 * `site` = siteKey, `exp` in the future. Anything invalid is simply `false`: an invalid identity is
 * treated as absent.
 */
export const verifyIdentityToken = (
  token: string,
  signingSecret: string,
  expect: { readonly userHash: string; readonly siteKey: string }
): Effect.Effect<boolean> =>
  Effect.map(
    verified(token, signingSecret, ["sub", "site"]),
    Option.match({
      onNone: () => false,
      onSome: (p) => p.sub === expect.userHash && p["site"] === expect.siteKey
    })
  )

/**
 * The member and anonymous id of a valid alias token (docs/api.md#aliases) for this project, or None.
 * Besides signature, `site` and `exp`, the token must be short-lived: `exp − iat` at most 600 s
 * when it has an `iat`, and in every case `exp` at most 600 s (+ {@link aliasClockSkewSeconds})
 * ahead of now, so a token without `iat` cannot outlive the limit either.
 */
export const verifyAliasToken = (
  token: string,
  signingSecret: string,
  siteKey: string
): Effect.Effect<Option.Option<{ readonly userHash: string; readonly anonymousId: string }>> =>
  Effect.gen(function*() {
    const claims = yield* verified(token, signingSecret, ["sub", "anon", "site"])
    if (Option.isNone(claims)) return Option.none()
    const p = claims.value
    const now = yield* nowSeconds
    const exp = p.exp as number // required and checked numeric by jose
    if (p.iat !== undefined && exp - p.iat > maxAliasTokenSeconds) return Option.none()
    if (exp - now > maxAliasTokenSeconds + aliasClockSkewSeconds) return Option.none()
    const userHash = stringClaim(p, "sub")
    const anonymousId = stringClaim(p, "anon")
    if (p["site"] !== siteKey || userHash === undefined || anonymousId === undefined) return Option.none()
    return Option.some({ userHash, anonymousId })
  })

const sign = (signingSecret: string, claims: JWTPayload, expiresInSeconds: number): Effect.Effect<string> =>
  Effect.flatMap(nowSeconds, (now) =>
    Effect.promise(() =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuedAt(now)
        .setExpirationTime(now + expiresInSeconds)
        .sign(keyOf(signingSecret))
    ))

/**
 * An identity token for `userHash` (what a customer's server hands its page so that `/v1/state`
 * reveals coupon and link values). Issued now (`Clock`), valid for `expiresInSeconds` (default 1 h).
 */
export const signIdentityToken = (
  signingSecret: string,
  claims: { readonly userHash: string; readonly siteKey: string },
  options?: { readonly expiresInSeconds?: number }
): Effect.Effect<string> =>
  sign(signingSecret, { sub: claims.userHash, site: claims.siteKey }, options?.expiresInSeconds ?? 3600)

/**
 * An alias token linking `anonymousId` to `userHash`, issued now (`Clock`), valid for
 * `expiresInSeconds` (default 5 min). Verification refuses lifetimes over 600 s.
 */
export const signAliasToken = (
  signingSecret: string,
  claims: { readonly userHash: string; readonly anonymousId: string; readonly siteKey: string },
  options?: { readonly expiresInSeconds?: number }
): Effect.Effect<string> =>
  sign(
    signingSecret,
    { sub: claims.userHash, anon: claims.anonymousId, site: claims.siteKey },
    options?.expiresInSeconds ?? 300
  )
