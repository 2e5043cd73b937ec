/**
 * Secrets and credentials (docs/api.md#secrets, #reward-values-and-identity-tokens,
 * #customer-rest-api-v1api): the token formats, how they are hashed and compared, the HS256
 * identity and alias tokens signed with a project's `ass_…` secret, and the customer REST
 * credentials (`svc_api_…`, `svc_oat_…`) with the programs they can reach, and the operator-issued
 * MCP tokens (`svc_mcp_…`) that the MCP worker accepts beside them (docs/mcp.md#tokens).
 *
 * Only hashes of compared tokens are ever stored; a token is looked up by its hash, so the
 * plaintext never reaches storage and a lookup reveals nothing about near misses.
 */
import { Context, Clock, Effect, Layer, Option, Schema } from "effect"
import { SignJWT, jwtVerify, type JWTPayload } from "jose"
import * as crypto from "node:crypto"
import type { CredentialRef, Program, Project, Workspace } from "./Domain.js"
import { NotFound, Unauthorized, type StorageError } from "./Errors.js"
import { McpTokenId, OAuthGrantId, secretPart, type ProgramId, type WorkspaceId } from "./Ids.js"
import { CredentialStore, DirectoryStore } from "./Ports.js"

// --- Token formats ------------------------------------------------------------------------------

export type TokenKind = "server" | "webhook" | "apiKey" | "oauth" | "mcp" | "subscription" | "signing"

/** The prefix of each kind of secret (docs/api.md#secrets). */
export const prefixes: Record<TokenKind, string> = {
  server: "sst_",
  webhook: "whi_",
  apiKey: "svc_api_",
  oauth: "svc_oat_",
  mcp: "svc_mcp_",
  subscription: "whsec_",
  signing: "ass_"
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

// --- Customer REST credentials ----------------------------------------------------------------------

/** Who is calling the customer REST API, and which workspaces it reaches (docs/api.md#customer-rest-api-v1api). */
export interface Principal {
  /** The credential itself: subscriptions it creates are removed when it is revoked. */
  readonly credential: CredentialRef
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly kind: "api_key" | "oauth"
}

/**
 * Who is calling the MCP worker (docs/mcp.md): a customer credential of `Principal`, or an
 * operator-issued MCP token (`mcp_token`, id `mcp_…`). It reaches programs as a `Principal` does.
 */
export interface McpPrincipal {
  readonly kind: "api_key" | "oauth" | "mcp_token"
  /** The credential's id (`key_…`, `oag_…` or `mcp_…`). */
  readonly id: string
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
}

/** What decides a credential's reach: the workspaces it holds. */
export type Holder = Pick<Principal, "workspaceIds">

/** A program the principal can reach, with its project (the REST views need both). */
export interface Reach {
  readonly program: Program
  readonly project: Project
}

const notFound = new NotFound({ message: "program not found" })

/**
 * The program `programId` and its project if `principal` reaches it. Unknown ids, ids of another
 * kind and programs of other workspaces all give the same NotFound: existence is never revealed.
 */
export const reach = (
  principal: Holder,
  programId: string
): Effect.Effect<Reach, NotFound | StorageError, DirectoryStore> =>
  Effect.gen(function*() {
    const directory = yield* DirectoryStore
    const program = yield* directory.program(programId as ProgramId)
    if (Option.isNone(program)) return yield* notFound
    const project = yield* directory.project(program.value.projectId)
    if (Option.isNone(project) || !principal.workspaceIds.includes(project.value.workspaceId)) {
      return yield* notFound
    }
    return { program: program.value, project: project.value }
  })

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i

export class Credentials extends Context.Tag("@streaks/core/Credentials")<Credentials, {
  /**
   * The principal of an `Authorization: Bearer …` header. A missing or malformed header, an
   * unknown token and a revoked one all fail with Unauthorized; revocation takes effect at once
   * because every request looks the credential up again.
   */
  readonly authenticate: (
    authorizationHeader: string | undefined
  ) => Effect.Effect<Principal, Unauthorized | StorageError>
  /**
   * The caller of the MCP worker from its `Authorization: Bearer …` header: the two customer kinds
   * as `authenticate` takes them, and operator-issued `svc_mcp_…` tokens, which `authenticate`
   * refuses (they open the MCP worker only). Failures and revocation as for `authenticate`.
   */
  readonly authenticateMcp: (
    authorizationHeader: string | undefined
  ) => Effect.Effect<McpPrincipal, Unauthorized | StorageError>
  /** The program if the principal reaches it, else NotFound (whether or not it exists). */
  readonly reachableProgram: (principal: Holder, programId: string) => Effect.Effect<Program, NotFound | StorageError>
  /** Every program the principal reaches, with its project, in project then program order. */
  readonly reachablePrograms: (principal: Holder) => Effect.Effect<ReadonlyArray<Reach>, StorageError>
  /** The workspaces the principal reaches (for `GET /me`). */
  readonly workspaces: (principal: Principal) => Effect.Effect<ReadonlyArray<Workspace>, StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const store = yield* CredentialStore
  const directory = yield* DirectoryStore
  const unauthorized = new Unauthorized({ message: "missing, unknown or revoked credential" })
  const isOAuthApp = Schema.is(OAuthGrantId)
  const isMcpToken = Schema.is(McpTokenId)

  const tokenOf = (header: string | undefined): string | undefined =>
    header === undefined ? undefined : bearer.exec(header)?.[1]

  /** The unrevoked grant of `token`, if it is of the kind `isKind` accepts by its id. */
  const grantOf = (token: string, isKind: (id: string) => boolean) =>
    Effect.flatMap(
      store.grantByHash(hashToken(token)),
      (grant) =>
        Option.isNone(grant) || grant.value.revokedAt !== undefined || !isKind(grant.value.id)
          ? Effect.fail(unauthorized)
          : Effect.succeed(grant.value)
    )

  const authenticate = (header: string | undefined): Effect.Effect<Principal, Unauthorized | StorageError> => {
    const token = tokenOf(header)
    if (token === undefined) return Effect.fail(unauthorized)
    if (token.startsWith(prefixes.apiKey)) {
      return Effect.flatMap(
        store.apiKeyByHash(hashToken(token)),
        (key) =>
          Option.isNone(key) || key.value.revokedAt !== undefined
            ? Effect.fail(unauthorized)
            : Effect.succeed<Principal>({
              credential: { type: "api_key", id: key.value.id },
              workspaceIds: [key.value.workspaceId],
              kind: "api_key"
            })
      )
    }
    if (token.startsWith(prefixes.oauth)) {
      return Effect.map(grantOf(token, isOAuthApp), (grant): Principal => ({
        credential: { type: "oauth", id: grant.id },
        workspaceIds: grant.workspaceIds,
        kind: "oauth"
      }))
    }
    return Effect.fail(unauthorized)
  }

  const authenticateMcp = (header: string | undefined): Effect.Effect<McpPrincipal, Unauthorized | StorageError> => {
    const token = tokenOf(header)
    if (token !== undefined && token.startsWith(prefixes.mcp)) {
      return Effect.map(grantOf(token, isMcpToken), (grant): McpPrincipal => ({
        kind: "mcp_token",
        id: grant.id,
        workspaceIds: grant.workspaceIds
      }))
    }
    return Effect.map(authenticate(header), (principal): McpPrincipal => ({
      kind: principal.kind,
      id: principal.credential.id,
      workspaceIds: principal.workspaceIds
    }))
  }

  const reachablePrograms = (principal: Holder): Effect.Effect<ReadonlyArray<Reach>, StorageError> =>
    Effect.gen(function*() {
      const projects = yield* directory.projectsOfWorkspaces(principal.workspaceIds)
      if (projects.length === 0) return []
      const programs = yield* directory.programsOfProjects(projects.map((p) => p.id))
      const byId = new Map(projects.map((p) => [p.id, p]))
      return programs.flatMap((program) => {
        const project = byId.get(program.projectId)
        return project === undefined ? [] : [{ program, project }]
      })
    })

  const workspaces = (principal: Principal): Effect.Effect<ReadonlyArray<Workspace>, StorageError> =>
    Effect.map(
      Effect.forEach(principal.workspaceIds, (id) => directory.workspace(id)),
      (found) => found.flatMap((w) => Option.toArray(w))
    )

  return Credentials.of({
    authenticate,
    authenticateMcp,
    reachableProgram: (principal, programId) =>
      Effect.map(Effect.provideService(reach(principal, programId), DirectoryStore, directory), (r) => r.program),
    reachablePrograms,
    workspaces
  })
})

export const layer: Layer.Layer<Credentials, never, CredentialStore | DirectoryStore> = Layer.effect(Credentials, make)
